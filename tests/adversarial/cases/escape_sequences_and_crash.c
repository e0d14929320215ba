/* escape_sequences_and_crash: output: prints terminal escape sequences and bytes that are not text, then crashes (the message must come back printable). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  adv_print("\x1b]0;owned\x07\x1b[2J\x1b[31mred\r\x01\x02\xff\xfe text\n");
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
  *(volatile int *)0 = 1;
}
