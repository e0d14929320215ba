/* cmd_report.c: `specgen report DIR [--out FILE.html]`: the HTML report of a
 * run directory (finished or running) or of a `specgen sim --out` campaign
 * (src/report). */
#include "cli/commands.h"

#include "report/sg_report.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: specgen report DIR [--out FILE.html] [--json]\n\n"
             "Writes one self-contained HTML page (no network needed to view it) that\n"
             "draws the run in DIR, finished or still running, or the campaigns that\n"
             "`specgen sim --out DIR` saved: best speedup over time and iterations,\n"
             "requests in flight, device utilization, per-task bars and every\n"
             "iteration's kernels (docs/report.md).\n\n"
             "  --out FILE   where to write the page (default DIR/report.html)\n"
             "  --json       print {\"report\": FILE} instead of a sentence\n"
             "  -h, --help   this help\n");
}

int sg_cmd_report(int argc, char **argv) {
  const char *dir = NULL, *out = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return SG_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--out") == 0) {
      if (i + 1 >= argc)
        return sg_cli_usage_error("report", "--out needs a file name");
      out = argv[++i];
    } else if (argv[i][0] == '-' || dir) {
      return sg_cli_usage_error("report", "unexpected argument '%s'", argv[i]);
    } else {
      dir = argv[i];
    }
  }
  if (!dir)
    return sg_cli_usage_error("report", "which run or campaign directory? (specgen report DIR)");
  sg_err err;
  sg_err_clear(&err);
  char *written = NULL;
  int rc = sg_report_write(dir, out, &written, &err);
  if (rc < 0) {
    fprintf(stderr, "specgen report: %s\n", err.msg);
    return rc == SG_ENOENT || rc == SG_EPARSE || rc == SG_EUNSUPPORTED ? SG_EXIT_USAGE
                                                                        : SG_EXIT_FAILED;
  }
  if (json) {
    json_t *o = json_pack("{s:s}", "report", written);
    char *text = json_dumps(o, JSON_COMPACT);
    printf("%s\n", text);
    free(text);
    json_decref(o);
  } else {
    printf("report written to %s\n", written);
  }
  free(written);
  return SG_EXIT_OK;
}
