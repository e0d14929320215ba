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

static int parse_u64(const char *flag, const char *arg, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (errno || end == arg || *end != '\0' || arg[0] == '-') {
    fprintf(stderr, "specgen triggers: %s: '%s' is not a whole number of bytes\n",
            flag, arg);
    return -1;
  }
  *out = v;
  return 0;
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

int sg_cmd_triggers(int argc, char **argv) {
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
  out_state st;
  memset(&st, 0, sizeof st);
  sg_scanner_opts opts;
  sg_scanner_opts_default(&opts);
  uint64_t chunk = 4096;
  const char *extract = NULL, *entry = NULL, *eval_dir = NULL;
  uint64_t window = SG_TRIG_EVAL_WINDOW_BYTES;
  bool window_set = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case 'j':
      st.json = true;
      break;
    case 'c':
      if (parse_classes(optarg, &opts.classes) < 0)
        return SG_EXIT_USAGE;
      break;
    case 'g':
      if (parse_u64("--min-gap", optarg, &opts.min_gap_bytes) < 0)
        return SG_EXIT_USAGE;
      break;
    case 'k':
      if (parse_u64("--chunk", optarg, &chunk) < 0)
        return SG_EXIT_USAGE;
      if (chunk == 0 || chunk > (64u << 20)) {
        fprintf(stderr, "specgen triggers: --chunk: must be 1 to %u bytes\n",
                64u << 20);
        return SG_EXIT_USAGE;
      }
      break;
    case 'x':
      if (strcmp(optarg, "c") != 0 && strcmp(optarg, "cuda") != 0 &&
          strcmp(optarg, "python") != 0) {
        fprintf(stderr,
                "specgen triggers: --extract: unknown language '%s' (c, cuda, "
                "python)\n",
                optarg);
        return SG_EXIT_USAGE;
      }
      extract = optarg;
      break;
    case 'e':
      entry = optarg;
      break;
    case 'E':
      eval_dir = optarg;
      break;
    case 'p':
      st.ann = true;
      break;
    case 'w':
      if (parse_u64("--window", optarg, &window) < 0)
        return SG_EXIT_USAGE;
      window_set = true;
      break;
    case 'h':
      usage(stdout);
      return SG_EXIT_OK;
    default:
      return sg_cli_bad_option("triggers", argv);
    }
  }
  if (entry && !extract) {
    fprintf(stderr, "specgen triggers: --entry needs --extract LANG\n");
    return SG_EXIT_USAGE;
  }
  if (st.ann && (st.json || extract || eval_dir)) {
    fprintf(stderr, "specgen triggers: --propose prints annotation lines only "
                    "(no --json, --extract or --eval)\n");
    return SG_EXIT_USAGE;
  }
  if (window_set && !eval_dir) {
    fprintf(stderr, "specgen triggers: --window needs --eval DIR\n");
    return SG_EXIT_USAGE;
  }
  if (eval_dir) {
    if (extract || optind != argc) {
      fprintf(stderr, "specgen triggers: --eval DIR takes no FILE and no "
                      "--extract\n");
      return SG_EXIT_USAGE;
    }
    return sg_cmd_triggers_eval(eval_dir, st.json, &opts, window);
  }
  if (optind != argc - 1)
    return sg_cli_usage_error("triggers", "expected one trace FILE (or - for standard input)");
  const char *path = argv[optind];
  FILE *in = stdin;
  if (strcmp(path, "-") != 0) {
    in = fopen(path, "rb");
    if (in == NULL) {
      fprintf(stderr, "specgen triggers: %s: %s\n", path, strerror(errno));
      return SG_EXIT_USAGE;
    }
  }

  if (st.ann)
    printf("# family: unknown\n# source: proposed by specgen triggers --propose; "
           "to be corrected by a reader\n");
  sg_scanner *s = sg_scanner_new(&opts);
  sg_buf text;
  sg_buf_init(&text, TRACE_MAX_BYTES);
  char *buf = sg_malloc(chunk);
  int rc = SG_EXIT_OK;
  for (;;) {
    size_t n = fread(buf, 1, chunk, in);
    if (n > 0) {
      sg_scanner_feed(s, buf, n, on_trigger, &st);
      if (extract)
        sg_buf_append(&text, buf, n);
    }
    if (n < chunk) {
      if (ferror(in)) {
        fprintf(stderr, "specgen triggers: %s: read error: %s\n",
                in == stdin ? "standard input" : path, strerror(errno));
        rc = SG_EXIT_FAILED;
      }
      if (feof(in) || ferror(in))
        break;
    }
  }
  sg_scanner_finish(s, on_trigger, &st);
  uint64_t total = sg_scanner_offset(s);
  if (rc == SG_EXIT_OK && extract) {
    if (text.truncated)
      fprintf(stderr, "specgen triggers: %s: only the first %u bytes were "
                      "searched for a candidate\n", path, TRACE_MAX_BYTES);
    sg_extracted x;
    sg_extract_candidate(text.data ? text.data : "", text.len, extract, entry, &x);
    print_extract(&st, &x, &text);
  }
  if (!st.json && !st.ann) {
    uint64_t all = 0;
    for (int k = 0; k < SG_TRIGGER__COUNT; k++)
      all += st.counts[k];
    printf("%llu trigger%s in %llu bytes:", (unsigned long long)all,
           all == 1 ? "" : "s", (unsigned long long)total);
    for (int k = 0; k < SG_TRIGGER__COUNT; k++)
      printf(" %s %llu%s", sg_trigger_class_name(k),
             (unsigned long long)st.counts[k], k + 1 < SG_TRIGGER__COUNT ? "," : "\n");
  }
  free(buf);
  sg_buf_free(&text);
  sg_scanner_free(s);
  if (in != stdin)
    fclose(in);
  return rc;
}
