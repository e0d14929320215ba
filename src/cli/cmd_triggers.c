/* cmd_triggers.c: `specgen triggers`: where speculation would fork in a
 * reasoning trace.
 *
 * Reads a trace (a file, or standard input as it arrives), feeds it to the
 * trigger scanner in chunks and prints each trigger: human lines and a
 * summary of counts per class, or JSON Lines with --json. With --extract it
 * also runs candidate extraction on the whole text and prints the outcome.
 * With --eval DIR it measures the scanner on annotated traces instead
 * (cmd_triggers_eval.c).
 */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include "cli/cmd_triggers_eval.h"
#include "core/sg_triggers_eval.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "core/sg_extract.h"
#include "core/sg_triggers.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_BYTES (256u << 20)  /* text kept for --extract */

typedef struct out_state {
  bool json;
  bool ann;                 /* --propose: annotation lines */
  uint64_t counts[SG_TRIGGER__COUNT];
} out_state;

static void usage(FILE *f) {
  sg_scanner_opts d;
  sg_scanner_opts_default(&d);
  fprintf(f,
          "usage: specgen triggers (FILE | -) [options]\n"
          "       specgen triggers --eval DIR [--json] [--window N] [options]\n"
          "\n"
          "Scans a reasoning trace for the points where speculative generation\n"
          "would fork (docs/triggers.md) and prints one line per trigger.\n"
          "\n"
          "  --json            one JSON object per trigger and line\n"
          "                    (offset, class, text)\n"
          "  --class CLS,...   only these classes: design, fence, kernel, phrase\n"
          "  --min-gap N       drop a trigger closer than N bytes to the last\n"
          "                    (default %llu; 0 keeps all)\n"
          "  --chunk N         feed the scanner N bytes at a time (default 4096);\n"
          "                    the triggers do not depend on it\n"
          "  --extract LANG    also extract the candidate (c, cuda or python)\n"
          "  --entry NAME      with --extract: the function it must define\n"
          "  --eval DIR        measure against DIR's NAME.txt traces and their\n"
          "                    NAME.ann annotations: precision, recall and offset\n"
          "                    error per model family and class (docs/triggers.md)\n"
          "  --window N        with --eval: a match is within N bytes (default %u)\n"
          "  --propose         print the triggers as an annotation file for\n"
          "                    --eval, for a reader to correct\n"
          "  -h, --help        this help\n"
          "\n"
          "Exit status: 0 done, 1 read error, 2 bad usage or unreadable FILE.\n",
          (unsigned long long)d.min_gap_bytes, SG_TRIG_EVAL_WINDOW_BYTES);
}

/* Text for a terminal or JSON: control bytes and invalid UTF-8 become '?'. */
static void sanitize(const char *in, char *out, size_t cap) {
  const unsigned char *s = (const unsigned char *)in;
  size_t o = 0, i = 0, n = strlen(in);
  while (i < n && o + 5 < cap) {
    unsigned char c = s[i];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                            : (c >> 3) == 30 ? 4 : 0;
    bool ok = k > 0 && i + k <= n;
    for (size_t j = 1; ok && j < k; j++)
      ok = (s[i + j] & 0xC0) == 0x80;
    if (ok && k == 2 && c < 0xC2)
      ok = false;  /* overlong */
    if (!ok || (k == 1 && (c < 0x20 || c == 0x7F))) {
      out[o++] = '?';
      i++;
      continue;
    }
    memcpy(out + o, s + i, k);
    o += k;
    i += k;
  }
  out[o] = '\0';
}

static void on_trigger(void *user, const sg_trigger *t) {
  out_state *st = user;
  st->counts[t->cls]++;
  char text[SG_TRIGGER_TEXT_MAX * 2];
  sanitize(t->text, text, sizeof text);
  if (st->ann) {
    printf("%llu\t%s\t%s\n", (unsigned long long)t->offset,
           sg_trigger_class_name(t->cls), text);
  } else if (st->json) {
    json_t *o = json_pack("{s:I, s:s, s:s}", "offset", (json_int_t)t->offset,
                          "class", sg_trigger_class_name(t->cls), "text", text);
    char *line = json_dumps(o, JSON_COMPACT);
    printf("%s\n", line);
    free(line);
    json_decref(o);
  } else {
    printf("%10llu  %-6s  %s\n", (unsigned long long)t->offset,
           sg_trigger_class_name(t->cls), text);
  }
  fflush(stdout);
}

static int parse_classes(const char *arg, unsigned *mask) {
  char *copy = sg_strdup(arg), *save = NULL;
  *mask = 0;
  int rc = 0;
  for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    int c = sg_trigger_class_parse(w);
    if (c < 0) {
      fprintf(stderr,
              "specgen triggers: --class: unknown class '%s' (design, fence, "
              "kernel, phrase)\n",
              w);
      rc = -1;
      break;
    }
    *mask |= 1u << c;
  }
  if (rc == 0 && *mask == 0) {
    fprintf(stderr, "specgen triggers: --class: no class given\n");
    rc = -1;
  }
  free(copy);
  return rc;
}

static void print_extract(const out_state *st, const sg_extracted *x,
                          const sg_buf *text) {
  if (st->json) {
    json_t *o = json_pack("{s:s}", "extract", sg_extract_outcome_name(x->outcome));
    if (x->outcome == SG_EXTRACT_FOUND) {
      json_object_set_new(o, "start", json_integer((json_int_t)x->start));
      json_object_set_new(o, "len_bytes", json_integer((json_int_t)x->len));
    } else {
      json_object_set_new(o, "reason", json_string(x->reason));
    }
    char *line = json_dumps(o, JSON_COMPACT);
    printf("%s\n", line);
    free(line);
    json_decref(o);
    return;
  }
  if (x->outcome == SG_EXTRACT_FOUND) {
    printf("candidate: bytes %zu..%zu (%zu bytes)\n", x->start,
           x->start + x->len, x->len);
    fwrite(text->data + x->start, 1, x->len, stdout);
    if (x->len == 0 || text->data[x->start + x->len - 1] != '\n')
      printf("\n");
  } else {
    printf("candidate: %s: %s\n", sg_extract_outcome_name(x->outcome),
           x->reason);
  }
}

/* A flag's value as a whole number of bytes; -1 with the message printed. */
static int parse_bytes(const char *flag, const char *arg, uint64_t *out) {
  unsigned long long v;
  if (!sg_cli_parse_ull(arg, UINT64_MAX, &v)) {
    fprintf(stderr, "specgen triggers: %s: '%s' is not a whole number of bytes\n", flag, arg);
    return -1;
  }
  *out = v;
  return 0;
}

typedef struct trig_args {
  out_state st;
  sg_scanner_opts opts;
  uint64_t chunk, window;
  bool window_set;
  const char *extract, *entry, *eval_dir;
} trig_args;

/* One flag with a value (c its getopt_long code) into a; -1 with the
 * message printed. */
static int take_value(int c, const char *arg, trig_args *a) {
  switch (c) {
  case 'c': return parse_classes(arg, &a->opts.classes);
  case 'g': return parse_bytes("--min-gap", arg, &a->opts.min_gap_bytes);
  case 'k':
    if (parse_bytes("--chunk", arg, &a->chunk) < 0)
      return -1;
    if (a->chunk == 0 || a->chunk > (64u << 20)) {
      fprintf(stderr, "specgen triggers: --chunk: must be 1 to %u bytes\n", 64u << 20);
      return -1;
    }
    return 0;
  case 'x': {
    const char *lang = arg; /* a task language, not an evaluator */
    if (strcmp(lang, "c") != 0 && strcmp(lang, "cuda") != 0 && strcmp(lang, "python") != 0) {
      fprintf(stderr,
              "specgen triggers: --extract: unknown language '%s' (c, cuda, "
              "python)\n",
              lang);
      return -1;
    }
    a->extract = lang;
    return 0;
  }
  case 'w':
    a->window_set = true;
    return parse_bytes("--window", arg, &a->window);
  case 'e': a->entry = arg; return 0;
  case 'E': a->eval_dir = arg; return 0;
  }
  return 0;
}

/* The flags that exclude or need each other: 0, or -1 with the message
 * printed. */
static int check_combinations(const trig_args *a) {
  const char *msg = NULL;
  if (a->entry && !a->extract)
    msg = "--entry needs --extract LANG";
  else if (a->st.ann && (a->st.json || a->extract || a->eval_dir))
    msg = "--propose prints annotation lines only (no --json, --extract or --eval)";
  else if (a->window_set && !a->eval_dir)
    msg = "--window needs --eval DIR";
  if (msg)
    fprintf(stderr, "specgen triggers: %s\n", msg);
  return msg ? -1 : 0;
}

/* Parses the flags into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, trig_args *a) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},
      {"class", required_argument, NULL, 'c'},
      {"min-gap", required_argument, NULL, 'g'},
      {"chunk", required_argument, NULL, 'k'},
      {"extract", required_argument, NULL, 'x'},
      {"entry", required_argument, NULL, 'e'},
      {"eval", required_argument, NULL, 'E'},
      {"window", required_argument, NULL, 'w'},
      {"propose", no_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  memset(a, 0, sizeof *a);
  sg_scanner_opts_default(&a->opts);
  a->chunk = 4096;
  a->window = SG_TRIG_EVAL_WINDOW_BYTES;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == 'j') {
      a->st.json = true;
    } else if (c == 'p') {
      a->st.ann = true;
    } else if (c == 'h') {
      usage(stdout);
      return SG_EXIT_OK;
    } else if (c == '?') {
      return sg_cli_flag_refused("triggers", c, argv);
    } else if (take_value(c, optarg, a) < 0) {
      return SG_EXIT_USAGE;
    }
  }
  return check_combinations(a) < 0 ? SG_EXIT_USAGE : -1;
}

/* Feeds in to the scanner chunk by chunk, printing each trigger, keeping the
 * text for --extract; SG_EXIT_OK, or SG_EXIT_FAILED on a read error. */
static int scan(FILE *in, const char *path, trig_args *a, sg_scanner *s, sg_buf *text) {
  char *buf = sg_malloc(a->chunk);
  int rc = SG_EXIT_OK;
  for (;;) {
    size_t n = fread(buf, 1, a->chunk, in);
    if (n > 0) {
      sg_scanner_feed(s, buf, n, on_trigger, &a->st);
      if (a->extract)
        sg_buf_append(text, buf, n);
    }
    if (n < a->chunk) {
      if (ferror(in)) {
        fprintf(stderr, "specgen triggers: %s: read error: %s\n",
                in == stdin ? "standard input" : path, strerror(errno));
        rc = SG_EXIT_FAILED;
      }
      if (feof(in) || ferror(in))
        break;
    }
  }
  free(buf);
  sg_scanner_finish(s, on_trigger, &a->st);
  return rc;
}

/* The last line of the human output: triggers per class. */
static void print_counts(const out_state *st, uint64_t total) {
  uint64_t all = 0;
  for (int k = 0; k < SG_TRIGGER__COUNT; k++)
    all += st->counts[k];
  printf("%llu trigger%s in %llu bytes:", (unsigned long long)all, all == 1 ? "" : "s",
         (unsigned long long)total);
  for (int k = 0; k < SG_TRIGGER__COUNT; k++)
    printf(" %s %llu%s", sg_trigger_class_name(k), (unsigned long long)st->counts[k],
           k + 1 < SG_TRIGGER__COUNT ? "," : "\n");
}

/* Scans the trace at path (- for standard input) and prints what a asks. */
static int triggers_of(const char *path, trig_args *a) {
  FILE *in = stdin;
  if (strcmp(path, "-") != 0) {
    in = fopen(path, "rb");
    if (in == NULL) {
      fprintf(stderr, "specgen triggers: %s: %s\n", path, strerror(errno));
      return SG_EXIT_USAGE;
    }
  }
  if (a->st.ann)
    printf("# family: unknown\n# source: proposed by specgen triggers --propose; "
           "to be corrected by a reader\n");
  sg_scanner *s = sg_scanner_new(&a->opts);
  sg_buf text;
  sg_buf_init(&text, TRACE_MAX_BYTES);
  int rc = scan(in, path, a, s, &text);
  if (rc == SG_EXIT_OK && a->extract) {
    if (text.truncated)
      fprintf(stderr, "specgen triggers: %s: only the first %u bytes were "
                      "searched for a candidate\n", path, TRACE_MAX_BYTES);
    sg_extracted x;
    sg_extract_candidate(text.data ? text.data : "", text.len, a->extract, a->entry, &x);
    print_extract(&a->st, &x, &text);
  }
  if (!a->st.json && !a->st.ann)
    print_counts(&a->st, sg_scanner_offset(s));
  sg_buf_free(&text);
  sg_scanner_free(s);
  if (in != stdin)
    fclose(in);
  return rc;
}

int sg_cmd_triggers(int argc, char **argv) {
  trig_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  if (a.eval_dir) {
    if (a.extract || optind != argc) {
      fprintf(stderr, "specgen triggers: --eval DIR takes no FILE and no --extract\n");
      return SG_EXIT_USAGE;
    }
    return sg_cmd_triggers_eval(a.eval_dir, a.st.json, &a.opts, a.window);
  }
  if (optind != argc - 1)
    return sg_cli_usage_error("triggers", "expected one trace FILE (or - for standard input)");
  return triggers_of(argv[optind], &a);
}
