/* forge_result_pipe: kind 2: writes a complete fake 'ok' report with a guessed nonce to the old result descriptor (3). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  const char *fake = "{\"status\":\"ok\",\"nonce\":\"0000\",\"ref_ns\":[1000000],\"cand_ns\":[1]}\n";
  SYS3(NR_write, 3, fake, adv_strlen(fake));
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
}
