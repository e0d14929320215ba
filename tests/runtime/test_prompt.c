/* test_prompt.c: feedback texts (sg_feedback) and prompt rendering
 * (sg_prompt): every status, caps, the placeholder syntax and its errors,
 * user overrides, and one full refine prompt against a golden file
 * (tests/runtime/data/refine_prompt.golden; SG_UPDATE_GOLDEN=1 rewrites it,
 * so a change to the templates shows up in review as a diff of that file). */
#include "sg_test.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "core/sg_search.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"
#include "run/sg_feedback.h"
#include "run/sg_prompt.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DATA SG_SOURCE_ROOT "/tests/runtime/data"

/* ---- helpers ----------------------------------------------------------- */

static bool valid_utf8_json(const char *s) {
  json_t *j = json_string(s); /* NULL for invalid UTF-8 */
  bool ok = j != NULL;
  json_decref(j);
  return ok;
}

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static sg_eval_result result_of(sg_eval_status st, const char *msg) {
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = st;
  r.message = msg ? sg_strdup(msg) : NULL;
  return r;
}

static sg_task *load_task(void) {
  sg_err err = {0};
  char *text = NULL;
  size_t len = 0;
  SG_CHECK_OK(sg_file_read(DATA "/prompt_task/task.json", 1 << 20, &text, &len,
                           &err),
              err);
  sg_task *t = NULL;
  SG_CHECK_OK(sg_task_parse("task.json", DATA "/prompt_task", text, len, &t,
                            &err),
              err);
  free(text);
  return t;
}

static char *make_tmpdir(void) {
  char tmpl[] = "/tmp/sg_prompt_test_XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  return sg_strdup(tmpl);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char *p = sg_asprintf("%s/%s", dir, name);
  sg_err err = {0};
  SG_CHECK_OK(sg_file_write(p, text, strlen(text), &err), err);
  free(p);
}

/* ---- feedback ---------------------------------------------------------- */

static void test_feedback_ok_gives_both_times_and_speedup(void) {
  sg_eval_result r = result_of(SG_EVAL_OK, "correct on 3 random input sets");
  r.ref_ms = 30.4;
  r.cand_ms = 2.53;
  r.ref_mean_ms = 30.9;
  r.cand_mean_ms = 2.61;
  r.speedup = 30.4 / 2.53;
  r.max_abs_err = 0.0;
  r.max_rel_err = 1.5e-7;
  char *t = sg_feedback_validation(&r);
  SG_CHECK_CONTAINS(t, "Correct on every input set");
  SG_CHECK_CONTAINS(t, "max abs error 0, max rel error 1.5e-07");
  SG_CHECK_CONTAINS(t, "reference 30.4 ms, kernel 2.53 ms");
  SG_CHECK_CONTAINS(t, "(means 30.9 ms and 2.61 ms)");
  SG_CHECK_CONTAINS(t, "speedup 12x");
  free(t);
  sg_eval_result_free(&r);
}

static void test_feedback_numerical_gives_errors_and_first_index(void) {
  sg_eval_result r = result_of(
      SG_EVAL_NUMERICAL_ERROR,
      "output out: element 17 (index [17] of shape 4096) is 3.5, expected 1.25");
  r.max_abs_err = 2.25;
  r.max_rel_err = 1.8;
  r.first_mismatch = 17;
  char *t = sg_feedback_validation(&r);
  SG_CHECK_CONTAINS(t, "Wrong result");
  SG_CHECK_CONTAINS(t, "is 3.5, expected 1.25");
  SG_CHECK_CONTAINS(t, "max abs error 2.25, max rel error 1.8, first "
                       "mismatching element at flat index 17");
  free(t);
  sg_eval_result_free(&r);
  /* no figures at all: said so, not invented */
  r = result_of(SG_EVAL_NUMERICAL_ERROR, "an input changed");
  t = sg_feedback_validation(&r);
  SG_CHECK_CONTAINS(t, "no error figures were reported");
  SG_CHECK(strstr(t, "max abs") == NULL);
  free(t);
  sg_eval_result_free(&r);
}

/* Every status: its lead sentence and its message. */
static void test_feedback_every_status_has_lead_and_message(void) {
  static const struct {
    sg_eval_status st;
    const char *lead;
    bool shows_message;
  } cases[] = {
      {SG_EVAL_OK, "Correct on every input set", false},
      {SG_EVAL_COMPILE_ERROR, "Compile error", true},
      {SG_EVAL_RUNTIME_ERROR, "Runtime error", true},
      {SG_EVAL_NUMERICAL_ERROR, "Wrong result", true},
      {SG_EVAL_TIMEOUT, "Timeout", true},
      {SG_EVAL_REJECTED, "Rejected: the kernel broke a rule", true},
      {SG_EVAL_ABORTED, "not the kernel's fault", false},
      {SG_EVAL_INFRA_ERROR, "specgen or the machine failed", true},
  };
  SG_CHECK_EQ_INT(sizeof cases / sizeof cases[0], SG_EVAL__COUNT);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sg_eval_result r = result_of(cases[i].st, "MESSAGE-MARK popen: processes");
    char *t = sg_feedback_validation(&r);
    SG_CHECK_CONTAINS(t, cases[i].lead);
    SG_CHECK_MSG((strstr(t, "MESSAGE-MARK") != NULL) == cases[i].shows_message,
                 "status %s: message shown %d", sg_eval_status_name(cases[i].st),
                 strstr(t, "MESSAGE-MARK") != NULL);
    SG_CHECK(valid_utf8_json(t));
    free(t);
    sg_eval_result_free(&r);
    /* a NULL message is fine too */
    r = result_of(cases[i].st, NULL);
    t = sg_feedback_validation(&r);
    SG_CHECK_CONTAINS(t, cases[i].lead);
    free(t);
    sg_eval_result_free(&r);
  }
}

static void test_feedback_caps_huge_compiler_output(void) {
  sg_buf b;
  sg_buf_init(&b, 0);
  for (int i = 1; i <= 2000; i++) {
    sg_buf_printf(&b, "candidate.c:%d:5: error: 'x%d' undeclared ", i, i);
    for (int k = 0; k < 100; k++)
      sg_buf_puts(&b, "blah ");
    sg_buf_puts(&b, "\n");
  }
  sg_eval_result r = result_of(SG_EVAL_COMPILE_ERROR, sg_buf_str(&b));
  sg_buf_free(&b);
  char *t = sg_feedback_validation(&r);
  SG_CHECK(strlen(t) <= SG_FEEDBACK_MAX_BYTES);
  SG_CHECK_CONTAINS(t, "candidate.c:1:5: error: 'x1' undeclared");
  /* long lines: the byte budget stops first; shown + cut = all lines */
  size_t shown = 0;
  for (const char *q = t; (q = strstr(q, "candidate.c:")) != NULL; q++)
    shown++;
  const char *note = strstr(t, "[... ");
  while (note && strstr(note + 1, "[... "))
    note = strstr(note + 1, "[... ");
  unsigned long cut = 0;
  SG_CHECK(note && sscanf(note, "[... %lu more lines cut]", &cut) == 1);
  SG_CHECK_EQ_INT(shown + cut, 2000);
  SG_CHECK(shown >= 10 && shown <= SG_FEEDBACK_COMPILE_MAX_LINES);
  /* each long line was cut to its width and stays one line */
  SG_CHECK_CONTAINS(t, "bytes cut]\ncandidate.c:2:5:");
  SG_CHECK(count_lines(t) <= SG_FEEDBACK_COMPILE_MAX_LINES + 3);
  free(t);
  sg_eval_result_free(&r);
  /* short lines: the line count stops first; blank lines do not count */
  sg_buf_init(&b, 0);
  for (int i = 1; i <= 100; i++)
    sg_buf_printf(&b, "candidate.c:%d:1: error: e%d\n\n", i, i);
  r = result_of(SG_EVAL_COMPILE_ERROR, sg_buf_str(&b));
  sg_buf_free(&b);
  t = sg_feedback_validation(&r);
  SG_CHECK_CONTAINS(t, "candidate.c:30:1: error: e30\n[... 70 more lines "
                       "cut]");
  SG_CHECK(strstr(t, "candidate.c:31:") == NULL);
  free(t);
  sg_eval_result_free(&r);
}

static void test_feedback_long_runtime_message_keeps_head_and_tail(void) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_puts(&b, "killed by SIGSEGV during correctness check 1 of 3\n");
  for (int i = 0; i < 5000; i++)
    sg_buf_puts(&b, "stderr noise line\n");
  sg_buf_puts(&b, "LAST-STDERR-LINE");
  sg_eval_result r = result_of(SG_EVAL_RUNTIME_ERROR, sg_buf_str(&b));
  sg_buf_free(&b);
  char *t = sg_feedback_validation(&r);
  SG_CHECK(strlen(t) <= SG_FEEDBACK_MAX_BYTES);
  SG_CHECK(strlen(t) <= SG_FEEDBACK_MESSAGE_MAX_BYTES + 200);
  SG_CHECK_CONTAINS(t, "killed by SIGSEGV");
  SG_CHECK_CONTAINS(t, "LAST-STDERR-LINE");
  SG_CHECK_CONTAINS(t, "bytes cut ...]");
  free(t);
  sg_eval_result_free(&r);
}

static void test_cap_cuts_on_utf8_boundaries_and_cleans_bytes(void) {
  /* 300 three-byte characters: every cut point falls inside one somewhere */
  sg_buf b;
  sg_buf_init(&b, 0);
  for (int i = 0; i < 300; i++)
    sg_buf_puts(&b, "\xe2\x82\xac"); /* the euro sign */
  for (size_t max = 64; max < 200; max++) {
    for (int head_only = 0; head_only < 2; head_only++) {
      char *c = sg_feedback_cap(b.data, b.len, max, head_only);
      SG_CHECK(strlen(c) <= max);
      SG_CHECK_MSG(valid_utf8_json(c), "max %zu head_only %d", max, head_only);
      SG_CHECK_CONTAINS(c, "bytes cut");
      free(c);
    }
  }
  sg_buf_free(&b);
  /* invalid UTF-8, controls, CR: replaced or dropped; newline and tab kept */
  const char bad[] = "a\xff\xc3(b\x01\x1b[31mc\r\n\td\xed\xa0\x80";
  char *c = sg_feedback_cap(bad, sizeof bad - 1, 4096, 0);
  SG_CHECK_STR_EQ(c, "a?" "?(b?" "?[31mc\n\td?" "?" "?");
  SG_CHECK(valid_utf8_json(c));
  free(c);
  /* short text passes unchanged */
  c = sg_feedback_cap("short", 5, 64, 0);
  SG_CHECK_STR_EQ(c, "short");
  free(c);
}

static void test_feedback_profile_gpu_gives_roofline_verdict(void) {
  sg_eval_result r = result_of(SG_EVAL_OK, NULL);
  r.ref_ms = 19.6;
  r.cand_ms = 9.8;
  r.speedup = 2.0;
  json_error_t je;
  r.metrics = json_loads(
      "{\"kernels\": [{\"name\": \"small\", \"compute_sol_pct\": 5, "
      "\"memory_sol_pct\": 7, \"verdict\": \"latency-bound\"}, "
      "{\"name\": \"matmul_bt\", \"compute_sol_pct\": 89.2, "
      "\"memory_sol_pct\": 90.4, \"dram_pct\": 9.1, "
      "\"achieved_occupancy_pct\": 99, \"verdict\": \"memory-bound\", "
      "\"memory_level\": \"on-chip\"}], \"total_duration_ns\": 19566600, "
      "\"dominant_kernel\": \"matmul_bt\", \"verdict\": \"memory-bound\"}",
      0, &je);
  SG_CHECK(r.metrics != NULL);
  r.profile_text = sg_strdup("matmul_bt: 19566.6 us, memory-bound. Hint: "
                             "more outputs per thread.");
  char *t = sg_feedback_profile(&r);
  SG_CHECK_CONTAINS(t, "reference 19.6 ms, kernel 9.8 ms");
  SG_CHECK_CONTAINS(t, "speedup 2x");
  SG_CHECK_CONTAINS(t, "Roofline: memory-bound (on-chip");
  SG_CHECK_CONTAINS(t, "compute SOL 89%, memory SOL 90%, DRAM 9%, achieved "
                       "occupancy 99%");
  SG_CHECK_CONTAINS(t, "2 kernel launches profiled, 19566.6 us in all");
  SG_CHECK_CONTAINS(t, "Hint: more outputs per thread.");
  SG_CHECK(strstr(t, "No hardware counters") == NULL);
  free(t);
  sg_eval_result_free(&r);
}

static void test_feedback_profile_cpu_gives_timing_only(void) {
  sg_eval_result r = result_of(SG_EVAL_OK, NULL);
  r.ref_ms = 23.1;
  r.cand_ms = 7.74;
  r.speedup = 23.1 / 7.74;
  char *t = sg_feedback_profile(&r);
  SG_CHECK_CONTAINS(t, "reference 23.1 ms, kernel 7.74 ms");
  SG_CHECK_CONTAINS(t, "speedup 2.98x");
  SG_CHECK_CONTAINS(t, "No hardware counters");
  SG_CHECK(strstr(t, "Roofline") == NULL);
  free(t);
  sg_eval_result_free(&r);
  /* not timed: says so instead of printing nan */
  r = result_of(SG_EVAL_OK, NULL);
  t = sg_feedback_profile(&r);
  SG_CHECK_CONTAINS(t, "reference not measured, kernel not measured");
  SG_CHECK(strstr(t, "nan") == NULL);
  free(t);
  sg_eval_result_free(&r);
}

static void test_feedback_extract_reason_and_fallbacks(void) {
  SG_CHECK_STR_EQ(sg_feedback_extract(SG_EXTRACT_NONE, "c", "the reason"),
                  "the reason");
  SG_CHECK_CONTAINS(sg_feedback_extract(SG_EXTRACT_NONE, "c", NULL), "```c");
  SG_CHECK_CONTAINS(sg_feedback_extract(SG_EXTRACT_NONE, "cuda", NULL),
                    "```cuda");
  SG_CHECK_CONTAINS(sg_feedback_extract(SG_EXTRACT_WRONG_LANG, "python", NULL),
                    "Python module");
  SG_CHECK_CONTAINS(sg_feedback_extract(SG_EXTRACT_INCOMPLETE, "c", NULL),
                    "before its code was complete");
  /* the extractor's own sentence passes through unchanged */
  sg_extracted x;
  sg_extract_candidate("no code here", 12, "c", "f", &x);
  SG_CHECK_EQ_INT(x.outcome, SG_EXTRACT_NONE);
  SG_CHECK_STR_EQ(sg_feedback_extract(x.outcome, "c", x.reason), x.reason);
}

/* ---- the template syntax ----------------------------------------------- */

static char *expand(const char *text, const sg_prompt_var *v, size_t n,
                    int *rc, sg_err *err) {
  sg_buf b;
  sg_buf_init(&b, 0);
  *rc = sg_prompt_expand("t.txt", text, v, n, &b, err);
  return sg_buf_steal(&b);
}

static void test_expand_placeholders_and_sections(void) {
  sg_prompt_var v[] = {{"a", "A"}, {"b", ""}, {"code", "x = {{a}};"}};
  sg_err err = {0};
  int rc;
  char *o = expand("1 {{a}} {{ a }} {{b}}.", v, 3, &rc, &err);
  SG_CHECK_OK(rc, err);
  SG_CHECK_STR_EQ(o, "1 A A .");
  free(o);
  /* a value is never scanned again */
  o = expand("{{code}}", v, 3, &rc, &err);
  SG_CHECK_OK(rc, err);
  SG_CHECK_STR_EQ(o, "x = {{a}};");
  free(o);
  /* sections: shown when not empty; standalone tags leave no blank line */
  o = expand("x\n{{#a}}\nin a {{a}}\n{{/a}}\n{{#b}}\nin b\n{{/b}}\ny "
             "{{#a}}[{{a}}]{{/a}}{{#b}}<b>{{/b}}\n",
             v, 3, &rc, &err);
  SG_CHECK_OK(rc, err);
  SG_CHECK_STR_EQ(o, "x\nin a A\ny [A]\n");
  free(o);
  /* nested sections of the same name */
  o = expand("{{#a}}1{{#a}}2{{/a}}3{{/a}}4", v, 3, &rc, &err);
  SG_CHECK_OK(rc, err);
  SG_CHECK_STR_EQ(o, "1234");
  free(o);
  /* single braces and a lone "}}" are text */
  o = expand("int f() { return 0; } }}", v, 3, &rc, &err);
  SG_CHECK_OK(rc, err);
  SG_CHECK_STR_EQ(o, "int f() { return 0; } }}");
  free(o);
}

static void test_expand_errors_name_file_and_line(void) {
  static const struct {
    const char *text;
    const char *msg;
  } cases[] = {
      {"one\ntwo\nthree {{best.sorce}}\n", "t.txt:3: unknown placeholder "
                                           "{{best.sorce}}"},
      {"one\n{{#nope}}x{{/nope}}", "t.txt:2: unknown placeholder {{#nope}}"},
      {"one\ntwo {{a\n}}", "t.txt:2: '{{' without '}}'"},
      {"{{a}}\n\n{{#a}} never closed", "t.txt:3: section {{#a}} is never "
                                       "closed"},
      {"x\n{{/a}}", "t.txt:2: {{/a}} closes no open section"},
      {"{{}}", "t.txt:1: empty or too long tag"},
      {"{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}"
       "{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}",
       "nested deeper than 8"},
  };
  sg_prompt_var v[] = {{"a", "A"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sg_err err = {0};
    int rc;
    char *o = expand(cases[i].text, v, 1, &rc, &err);
    SG_CHECK_EQ_INT(rc, SG_EPARSE);
    SG_CHECK_CONTAINS(err.msg, cases[i].msg);
    free(o);
    /* the check-only mode finds the same error */
    sg_err err2 = {0};
    SG_CHECK_EQ_INT(sg_prompt_expand("t.txt", cases[i].text, v, 1, NULL, &err2),
                    SG_EPARSE);
    SG_CHECK_STR_EQ(err2.msg, err.msg);
  }
  /* check-only mode looks inside sections whose value is empty */
  sg_prompt_var e[] = {{"a", ""}};
  sg_err err = {0};
  SG_CHECK_EQ_INT(
      sg_prompt_expand("t.txt", "{{#a}}\n{{typo}}{{/a}}", e, 1, NULL, &err),
      SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "t.txt:2: unknown placeholder {{typo}}");
}

static void test_expand_cap_is_an_error(void) {
  sg_prompt_var v[] = {{"a", "0123456789"}};
  sg_buf b;
  sg_buf_init(&b, 25);
  sg_err err = {0};
  SG_CHECK_EQ_INT(sg_prompt_expand("t.txt", "{{a}}{{a}}{{a}}", v, 1, &b, &err),
                  SG_EFULL);
  SG_CHECK_CONTAINS(err.msg, "t.txt: the rendered text exceeds its cap of 25");
  sg_buf_free(&b);
}

/* ---- loading and overriding -------------------------------------------- */

static void test_builtin_templates_load(void) {
  unsetenv("SPECGEN_PROMPTS_DIR");
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  static const char *const names[] = {
      "system.txt",    "think.txt",      "task.txt",       "refine.txt",
      "kernel.txt",    "failure.txt",    "rules_cpu.txt",
      "rules_cuda.txt", "rules_kernelbench.txt"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *p = sg_prompt_template_path(t, names[i]);
    SG_CHECK(p != NULL);
    char *want = sg_asprintf("%s/%s", sg_prompt_builtin_dir(), names[i]);
    SG_CHECK_STR_EQ(p, want);
    free(want);
  }
  SG_CHECK(sg_prompt_template_path(t, "nope.txt") == NULL);
  sg_prompt_templates_free(t);
}

static void test_user_template_overrides_builtin(void) {
  char *dir = make_tmpdir();
  write_file(dir, "system.txt", "SYSTEM for {{task.name}} in {{task.language}}");
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(dir, &t, &err), err);
  char *want = sg_asprintf("%s/system.txt", dir);
  SG_CHECK_STR_EQ(sg_prompt_template_path(t, "system.txt"), want);
  free(want);
  SG_CHECK_CONTAINS(sg_prompt_template_path(t, "task.txt"),
                    sg_prompt_builtin_dir());
  sg_task *task = load_task();
  sg_history h;
  sg_history_init(&h);
  sg_prompt p = {0};
  sg_prompt_text pt;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 0, &pt, &err), err);
  SG_CHECK_STR_EQ(pt.system, "SYSTEM for vector_scale in c");
  SG_CHECK_CONTAINS(pt.user, "# Task: vector_scale");
  sg_prompt_text_free(&pt);
  sg_history_free(&h);
  sg_task_free(task);
  sg_prompt_templates_free(t);
  /* SPECGEN_PROMPTS_DIR moves the built-in directory itself */
  setenv("SPECGEN_PROMPTS_DIR", dir, 1);
  SG_CHECK_STR_EQ(sg_prompt_builtin_dir(), dir);
  SG_CHECK_EQ_INT(sg_prompt_templates_load(NULL, &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "task.txt");
  unsetenv("SPECGEN_PROMPTS_DIR");
  sg_err e2 = {0};
  sg_rm_rf(dir, &e2);
  free(dir);
}

static void test_user_template_unknown_placeholder_names_file_line(void) {
  char *dir = make_tmpdir();
  write_file(dir, "refine.txt", "Improve:\n{{best.source}}\nsee {{best.sorce}}\n");
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_EQ_INT(sg_prompt_templates_load(dir, &t, &err), SG_EPARSE);
  SG_CHECK(t == NULL);
  char *want = sg_asprintf("%s/refine.txt:3: unknown placeholder {{best.sorce}}",
                           dir);
  SG_CHECK_CONTAINS(err.msg, want);
  SG_CHECK_CONTAINS(err.msg, "best.source");  /* the known ones are listed */
  free(want);
  /* a placeholder of another scope is unknown too: kernel.* outside items */
  write_file(dir, "refine.txt", "{{kernel.source}}");
  SG_CHECK_EQ_INT(sg_prompt_templates_load(dir, &t, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "refine.txt:1: unknown placeholder "
                             "{{kernel.source}}");
  /* and task.rules inside a rules template (it would be itself) */
  write_file(dir, "refine.txt", "{{best.source}}");
  write_file(dir, "rules_cpu.txt", "{{task.rules}}");
  SG_CHECK_EQ_INT(sg_prompt_templates_load(dir, &t, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "rules_cpu.txt:1: unknown placeholder");
  sg_err e2 = {0};
  sg_rm_rf(dir, &e2);
  free(dir);
}

static void test_user_dir_typo_and_missing_dir_are_errors(void) {
  char *dir = make_tmpdir();
  write_file(dir, "refin.txt", "x");
  write_file(dir, "notes.md", "not a template, not a .txt: ignored");
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_EQ_INT(sg_prompt_templates_load(dir, &t, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "refin.txt: not a template name");
  SG_CHECK_CONTAINS(err.msg, "refine.txt");
  char *gone = sg_asprintf("%s/missing", dir);
  SG_CHECK_EQ_INT(sg_prompt_templates_load(gone, &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, gone);
  free(gone);
  sg_err e2 = {0};
  sg_rm_rf(dir, &e2);
  free(dir);
}

/* ---- rendering --------------------------------------------------------- */

static const char k_fast[] =
    "void vector_scale(const float *x, float *out, float alpha, int n) {\n"
    "  for (int i = 0; i < n; i++)\n"
    "    out[i] = alpha * x[i];\n"
    "}\n";

/* Adds a kernel whose validation gave r (through sg_feedback). */
static uint64_t add_validated(sg_history *h, uint32_t it, const char *src,
                              sg_eval_result *r) {
  sg_kernel *k = sg_history_add(h, it, SG_GEN_MAIN, it + 1, 0,
                                SG_EXTRACT_FOUND, src, strlen(src));
  uint64_t id = k->id;
  char *fb = sg_feedback_validation(r);
  sg_history_validated(h, id, r->status, r->speedup, fb);
  free(fb);
  return id;
}

/* A history with a profiled best and one failure of each kind. */
static void build_history(sg_history *h) {
  sg_history_init(h);
  sg_eval_result r = result_of(SG_EVAL_OK, NULL);
  r.ref_ms = 1.2;
  r.cand_ms = 0.4;
  r.speedup = 3.0;
  r.max_abs_err = 0;
  r.max_rel_err = 0;
  uint64_t best = add_validated(h, 0, k_fast, &r);
  char *prof = sg_feedback_profile(&r);
  sg_history_profiled(h, best, 3.0, prof);
  free(prof);
  sg_eval_result_free(&r);

  r = result_of(SG_EVAL_COMPILE_ERROR,
                "candidate.c:2:3: error: expected ';' before 'for'");
  add_validated(h, 1, "void vector_scale(const float *x, float *out, float "
                      "alpha, int n) {\n  int i = 0\n  for (;;) {}\n}\n",
                &r);
  sg_eval_result_free(&r);

  sg_history_add(h, 1, SG_GEN_SPEC, 2, 100, SG_EXTRACT_INCOMPLETE, NULL, 0);

  r = result_of(SG_EVAL_NUMERICAL_ERROR,
                "output out: element 4095 (index [4095] of shape 4096) was "
                "never written");
  r.max_abs_err = INFINITY;
  r.first_mismatch = 4095;
  add_validated(h, 2, "void vector_scale(const float *x, float *out, float "
                      "alpha, int n) {\n  for (int i = 0; i < n - 1; i++)\n"
                      "    out[i] = alpha * x[i];\n}\n",
                &r);
  sg_eval_result_free(&r);
}

/* answer: attempt #3 was the answer at a main's length cap, not a fork. */
static void render_refine_of(const sg_prompt_templates *t, bool answer, sg_prompt_text *pt) {
  sg_task *task = load_task();
  sg_history h;
  build_history(&h);
  h.v[2].answer = answer;
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  sg_search *s = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_search_new(&reg, "refine", 1, &s, &err), err);
  sg_search_plan plan;
  SG_CHECK_OK(sg_search_next(s, &h, 3, &plan, &err), err);
  SG_CHECK_EQ_INT(plan.n, 1);
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &plan.prompts[0], 3, pt, &err),
              err);
  sg_search_free(s);
  sg_history_free(&h);
  sg_task_free(task);
}

static void render_refine(const sg_prompt_templates *t, sg_prompt_text *pt) {
  render_refine_of(t, false, pt);
}

/* The model is told where an attempt came from: an answer at the length
 * cap is named as such, not as a speculative generation. */
static void test_refine_prompt_names_an_answer_at_the_cap(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_prompt_text pt;
  render_refine_of(t, true, &pt);
  SG_CHECK_CONTAINS(pt.user, "### Attempt #3 (iteration 1, from the answer asked of the main "
                             "reasoning generation at its length cap): no candidate");
  sg_prompt_text_free(&pt);
  sg_prompt_templates_free(t);
}

static void test_first_prompt_is_task_with_interface_and_rules(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_task *task = load_task();
  sg_history h;
  sg_history_init(&h);
  sg_prompt p = {0};
  sg_prompt_text pt;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 0, &pt, &err), err);
  SG_CHECK_CONTAINS(pt.system, "```c code block");
  SG_CHECK_CONTAINS(pt.system, "`vector_scale`");
  /* the request to reason first is rendered apart, for prompted reasoning,
   * and names the block the answer must still end with */
  SG_CHECK(strstr(pt.system, "<think>") == NULL);
  SG_CHECK_CONTAINS(pt.think, "<think>");
  SG_CHECK_CONTAINS(pt.think, "</think>");
  SG_CHECK_CONTAINS(pt.think, "```c code block");
  SG_CHECK_CONTAINS(pt.user, "Scale a vector: out[i] = alpha * x[i]");
  SG_CHECK_CONTAINS(pt.user, "    void vector_scale(const float *x, float "
                             "*out, float alpha, int n)");
  SG_CHECK_CONTAINS(pt.user, "- x: input, float32, shape [4096]\n");
  SG_CHECK_CONTAINS(pt.user, "- alpha: scalar, float32, value 2.5 (passed as "
                             "this argument: read it, do not #define it)\n");
  SG_CHECK_CONTAINS(pt.user, "atol 1e-06, rtol 1e-05");
  SG_CHECK_CONTAINS(pt.user, "no threads (`pthread_create`");   /* cpu rules */
  SG_CHECK_CONTAINS(pt.user, "never call the reference");
  /* the reference itself, fenced in its own language, before the rules */
  SG_CHECK_CONTAINS(pt.user, "## Reference\n");
  SG_CHECK_CONTAINS(pt.user, "```c\n/* The golden prompt test's task: a "
                             "vector scaled by a constant. */\nvoid "
                             "vector_scale(const float *x, float *out, float "
                             "alpha, int n) {\n");
  SG_CHECK_CONTAINS(pt.user, "    out[i] = alpha * x[i];\n}\n```\n");
  SG_CHECK(strstr(pt.user, "## Reference") < strstr(pt.user, "## Rules"));
  SG_CHECK(strstr(pt.user, "Recent failed attempts") == NULL);
  SG_CHECK(strstr(pt.user, "{{") == NULL);
  SG_CHECK(strstr(pt.user, "\n\n\n") == NULL);
  sg_prompt_text_free(&pt);
  /* a first prompt after failures only (no best yet) shows them */
  sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_NONE, NULL, 0);
  p.items[0].kind = SG_ITEM_FAILURE;
  p.items[0].kernel = 1;
  p.n_items = 1;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 1, &pt, &err), err);
  SG_CHECK_CONTAINS(pt.user, "## Recent failed attempts (newest first)");
  SG_CHECK_CONTAINS(pt.user, "### Attempt #1 (iteration 0, from the main "
                             "reasoning generation): no candidate in the "
                             "answer");
  SG_CHECK_CONTAINS(pt.user, "the answer held no code");
  SG_CHECK(strstr(pt.user, "```c\n\n```") == NULL); /* no empty code block */
  sg_prompt_text_free(&pt);
  sg_history_free(&h);
  sg_task_free(task);
  sg_prompt_templates_free(t);
}

/* A reference longer than the cap is shown cut, with a note, never whole;
 * a Python reference is fenced as Python; none at all leaves no section. */
static void test_reference_is_capped_and_fenced_by_language(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_task *task = load_task();
  size_t big = SG_PROMPT_REFERENCE_MAX * 2;
  char *saved_src = task->reference_source, *saved_path = task->reference_path;
  task->reference_source = sg_malloc(big + 1);
  memset(task->reference_source, 'x', big);
  task->reference_source[big] = '\0';
  task->reference_path = (char *)"/tasks/model.py";
  sg_history h;
  sg_history_init(&h);
  sg_prompt p = {0};
  sg_prompt_text pt;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 0, &pt, &err), err);
  SG_CHECK_CONTAINS(pt.user, "```python\nxxx");
  SG_CHECK_CONTAINS(pt.user, "bytes cut]");
  SG_CHECK(strlen(pt.user) < SG_PROMPT_REFERENCE_MAX + 8192);
  sg_prompt_text_free(&pt);
  free(task->reference_source);
  task->reference_source = NULL;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 0, &pt, &err), err);
  SG_CHECK(strstr(pt.user, "## Reference") == NULL);
  SG_CHECK(strstr(pt.user, "\n\n\n") == NULL);
  sg_prompt_text_free(&pt);
  task->reference_source = saved_src;
  task->reference_path = saved_path;
  sg_history_free(&h);
  sg_task_free(task);
  sg_prompt_templates_free(t);
}

static void test_rules_follow_the_evaluator(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_task *task = load_task();
  static const struct {
    const char *evaluator;
    const char *needle;
  } cases[] = {{"cpu", "pthread_create"},
               {"cuda", "cuBLAS"},
               {"kernelbench", "ModelNew"}};
  char *saved = task->evaluator;
  for (size_t i = 0; i < 3; i++) {
    task->evaluator = (char *)cases[i].evaluator;
    sg_history h;
    sg_history_init(&h);
    sg_prompt p = {0};
    sg_prompt_text pt;
    SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 0, &pt, &err), err);
    SG_CHECK_CONTAINS(pt.user, cases[i].needle);
    for (size_t j = 0; j < 3; j++)
      if (j != i && strcmp(cases[j].needle, "cuBLAS") != 0)
        SG_CHECK(strstr(pt.user, cases[j].needle) == NULL);
    sg_prompt_text_free(&pt);
    sg_history_free(&h);
  }
  task->evaluator = saved;
  sg_task_free(task);
  sg_prompt_templates_free(t);
}

/* Each failing status, through refine's plan and failure.txt: its status and
 * its lead sentence reach the prompt; aborted and infra-failed kernels are
 * not the kernel's fault and do not appear. */
static void test_every_status_renders_through_refine(void) {
  static const struct {
    sg_eval_status st;
    const char *lead;
    bool shown;
  } cases[] = {
      {SG_EVAL_COMPILE_ERROR, "Compile error", true},
      {SG_EVAL_RUNTIME_ERROR, "Runtime error", true},
      {SG_EVAL_NUMERICAL_ERROR, "Wrong result", true},
      {SG_EVAL_TIMEOUT, "Timeout", true},
      {SG_EVAL_REJECTED, "Rejected", true},
      {SG_EVAL_ABORTED, "withdrawn", false},
      {SG_EVAL_INFRA_ERROR, "machine failed", false},
  };
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_task *task = load_task();
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sg_history h;
    sg_history_init(&h);
    sg_eval_result r = result_of(cases[i].st, "STATUS-MESSAGE");
    add_validated(&h, 0, "/* FAILING-SOURCE */\n", &r);
    sg_eval_result_free(&r);
    sg_search *s = NULL;
    SG_CHECK_OK(sg_search_new(&reg, "refine", 1, &s, &err), err);
    sg_search_plan plan;
    SG_CHECK_OK(sg_search_next(s, &h, 1, &plan, &err), err);
    sg_prompt_text pt;
    SG_CHECK_OK(sg_prompt_render(t, task, &h, &plan.prompts[0], 1, &pt, &err),
                err);
    const char *name = sg_eval_status_name(cases[i].st);
    char *head = sg_asprintf("### Attempt #1 (iteration 0, from the main "
                             "reasoning generation): %s\n",
                             name);
    SG_CHECK_MSG((strstr(pt.user, head) != NULL) == cases[i].shown,
                 "status %s: shown %d", name, cases[i].shown);
    SG_CHECK_MSG((strstr(pt.user, cases[i].lead) != NULL) == cases[i].shown,
                 "status %s: lead", name);
    SG_CHECK((strstr(pt.user, "/* FAILING-SOURCE */") != NULL) ==
             cases[i].shown);
    SG_CHECK(strstr(pt.user, "{{") == NULL);
    free(head);
    sg_prompt_text_free(&pt);
    sg_search_free(s);
    sg_history_free(&h);
  }
  sg_task_free(task);
  sg_prompt_templates_free(t);
}

static void test_refine_prompt_shows_best_profile_and_failures(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_prompt_text pt;
  render_refine(t, &pt);
  const char *u = pt.user;
  SG_CHECK_CONTAINS(u, "## The best kernel so far (#1, iteration 0, speedup "
                       "3x)");
  SG_CHECK_CONTAINS(u, k_fast);
  SG_CHECK_CONTAINS(u, "Correct on every input set");
  SG_CHECK_CONTAINS(u, "Its profile:\nMedian time: reference 1.2 ms, kernel "
                       "0.4 ms; speedup 3x.");
  SG_CHECK_CONTAINS(u, "No hardware counters");
  /* the failures, newest first: numerical, extraction, compile */
  const char *num = strstr(u, "### Attempt #4");
  const char *ext = strstr(u, "### Attempt #3");
  const char *cmp = strstr(u, "### Attempt #2");
  SG_CHECK(num && ext && cmp && num < ext && ext < cmp);
  SG_CHECK_CONTAINS(num, "numerical_error");
  SG_CHECK_CONTAINS(num, "was never written");
  SG_CHECK_CONTAINS(num, "max abs error inf, first mismatching element at "
                         "flat index 4095");
  SG_CHECK_CONTAINS(ext, "from a speculative generation): no candidate");
  SG_CHECK_CONTAINS(ext, "before its code was complete");
  SG_CHECK_CONTAINS(cmp, "compile_error");
  SG_CHECK_CONTAINS(cmp, "candidate.c:2:3: error: expected ';' before 'for'");
  SG_CHECK_CONTAINS(cmp, "  int i = 0\n");  /* the source the lines refer to */
  SG_CHECK(strstr(u, "## Other kernels") == NULL);
  SG_CHECK(strstr(u, "{{") == NULL);
  sg_prompt_text_free(&pt);
  sg_prompt_templates_free(t);
}

static void test_other_kernels_and_failure_source_cap(void) {
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_task *task = load_task();
  sg_history h;
  build_history(&h);
  /* a second correct kernel, profiled, shown as "other" with its profile */
  sg_eval_result r = result_of(SG_EVAL_OK, NULL);
  r.ref_ms = 1.2;
  r.cand_ms = 0.6;
  r.speedup = 2.0;
  uint64_t other = add_validated(&h, 3, "/* OTHER */\n", &r);
  sg_history_profiled(&h, other, 2.0, "OTHER-PROFILE");
  sg_eval_result_free(&r);
  /* a huge failing source: cut in the prompt */
  sg_buf big;
  sg_buf_init(&big, 0);
  for (int i = 0; i < 5000; i++)
    sg_buf_puts(&big, "/* padding padding */\n");
  r = result_of(SG_EVAL_TIMEOUT, "the kernel ran for more than 60 s");
  uint64_t huge = add_validated(&h, 3, sg_buf_str(&big), &r);
  sg_eval_result_free(&r);
  sg_buf_free(&big);
  sg_prompt p = {0};
  p.base_kernel = 1;
  sg_prompt_item items[] = {{SG_ITEM_KERNEL, 1},     {SG_ITEM_KERNEL, other},
                            {SG_ITEM_PROFILE, other}, {SG_ITEM_FAILURE, huge}};
  memcpy(p.items, items, sizeof items);
  p.n_items = 4;
  sg_prompt_text pt;
  SG_CHECK_OK(sg_prompt_render(t, task, &h, &p, 4, &pt, &err), err);
  SG_CHECK_CONTAINS(pt.user, "## Other kernels");
  SG_CHECK_CONTAINS(pt.user, "### Kernel #5 (iteration 3, ok, speedup 2x)");
  SG_CHECK_CONTAINS(pt.user, "/* OTHER */");
  SG_CHECK_CONTAINS(pt.user, "Profile:\nOTHER-PROFILE");
  SG_CHECK_CONTAINS(pt.user, "Timeout:");
  SG_CHECK_CONTAINS(pt.user, "bytes cut]");
  /* the best has no PROFILE item in this plan: its profile is not shown */
  SG_CHECK(strstr(pt.user, "Its profile:") == NULL);
  SG_CHECK(strlen(pt.user) < strlen(k_fast) + SG_PROMPT_FAILURE_SOURCE_MAX +
                                 16 * 1024);
  sg_prompt_text_free(&pt);
  sg_history_free(&h);
  sg_task_free(task);
  sg_prompt_templates_free(t);
}

static void test_refine_prompt_matches_golden_file(void) {
  unsetenv("SPECGEN_PROMPTS_DIR");
  sg_prompt_templates *t = NULL;
  sg_err err = {0};
  SG_CHECK_OK(sg_prompt_templates_load(NULL, &t, &err), err);
  sg_prompt_text pt;
  render_refine(t, &pt);
  char *got = sg_asprintf("=== system ===\n%s\n=== user ===\n%s", pt.system,
                          pt.user);
  const char *path = DATA "/refine_prompt.golden";
  if (getenv("SG_UPDATE_GOLDEN") != NULL)
    SG_CHECK_OK(sg_file_write(path, got, strlen(got), &err), err);
  char *want = NULL;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &want, NULL, &err), err);
  if (strcmp(got, want) != 0) {
    size_t i = 0;
    while (got[i] && got[i] == want[i])
      i++;
    SG_FAIL("the refine prompt differs from %s at byte %zu: got \"%.60s\", "
            "want \"%.60s\" (SG_UPDATE_GOLDEN=1 rewrites it; review the diff)",
            path, i, got + i, want + i);
  }
  free(want);
  free(got);
  sg_prompt_text_free(&pt);
  sg_prompt_templates_free(t);
}

SG_TEST_MAIN(SG_TEST(test_feedback_ok_gives_both_times_and_speedup),
             SG_TEST(test_feedback_numerical_gives_errors_and_first_index),
             SG_TEST(test_feedback_every_status_has_lead_and_message),
             SG_TEST(test_feedback_caps_huge_compiler_output),
             SG_TEST(test_feedback_long_runtime_message_keeps_head_and_tail),
             SG_TEST(test_cap_cuts_on_utf8_boundaries_and_cleans_bytes),
             SG_TEST(test_feedback_profile_gpu_gives_roofline_verdict),
             SG_TEST(test_feedback_profile_cpu_gives_timing_only),
             SG_TEST(test_feedback_extract_reason_and_fallbacks),
             SG_TEST(test_expand_placeholders_and_sections),
             SG_TEST(test_expand_errors_name_file_and_line),
             SG_TEST(test_expand_cap_is_an_error),
             SG_TEST(test_builtin_templates_load),
             SG_TEST(test_user_template_overrides_builtin),
             SG_TEST(test_user_template_unknown_placeholder_names_file_line),
             SG_TEST(test_user_dir_typo_and_missing_dir_are_errors),
             SG_TEST(test_first_prompt_is_task_with_interface_and_rules),
             SG_TEST(test_reference_is_capped_and_fenced_by_language),
             SG_TEST(test_rules_follow_the_evaluator),
             SG_TEST(test_every_status_renders_through_refine),
             SG_TEST(test_refine_prompt_shows_best_profile_and_failures),
             SG_TEST(test_refine_prompt_names_an_answer_at_the_cap),
             SG_TEST(test_other_kernels_and_failure_source_cap),
             SG_TEST(test_refine_prompt_matches_golden_file))
