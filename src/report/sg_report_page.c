/* sg_report_page.c: the one HTML page of a report or a dashboard.
 *
 * The page is static text plus three inlined parts: Chart.js (read from
 * Debian's libjs-chart.js at run time: one copy on the system, updated by
 * the package manager, and no 200 KB blob in our sources), the page's own
 * script and style (assets/, compiled in), and the data as JSON script
 * blocks. Nothing is fetched at view time: the Content-Security-Policy
 * allows no source but the page itself ('self' for the dashboard's
 * data.json). Text from the run reaches the page only inside the JSON
 * blocks, with '<' escaped, and is rendered with textContent. */
#include "report/sg_report.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern const unsigned char sg_report_asset_js[];
extern const size_t sg_report_asset_js_len;
extern const unsigned char sg_report_asset_css[];
extern const size_t sg_report_asset_css_len;

#define CHARTJS_MAX ((size_t)8 << 20)

/* Where Debian puts Chart.js's UMD build: libjs-chart.js (Debian 12) and
 * the node-chart.js layout of later releases. */
static const char *chartjs_paths[] = {
    "/usr/share/javascript/chart.js/chart.min.js",
    "/usr/share/javascript/chart.js/chart.umd.js",
    "/usr/share/nodejs/chart.js/dist/chart.umd.js",
    "/usr/share/nodejs/chart.js/dist/chart.min.js",
};

int sg_report_chartjs_path(char **path, sg_err *err) {
  *path = NULL;
  const char *env = getenv("SPECGEN_CHARTJS");
  struct stat st;
  if (env && *env) {
    if (stat(env, &st) != 0 || !S_ISREG(st.st_mode))
      return sg_err_set(err, SG_ENOENT, "SPECGEN_CHARTJS=%s: no such file", env);
    *path = sg_strdup(env);
    return 0;
  }
  sg_buf looked;
  sg_buf_init(&looked, 0);
  for (size_t i = 0; i < sizeof chartjs_paths / sizeof chartjs_paths[0]; i++) {
    if (stat(chartjs_paths[i], &st) == 0 && S_ISREG(st.st_mode)) {
      sg_buf_free(&looked);
      *path = sg_strdup(chartjs_paths[i]);
      return 0;
    }
    sg_buf_printf(&looked, "%s%s", i ? ", " : "", chartjs_paths[i]);
  }
  sg_err_set(err, SG_ENOENT,
             "Chart.js not found (looked at %s and $SPECGEN_CHARTJS); install Debian's "
             "libjs-chart.js (scripts/setup.sh does)", sg_buf_str(&looked));
  sg_buf_free(&looked);
  return SG_ENOENT;
}

char *sg_report_json_for_script(const json_t *v) {
  char *text = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(10) | JSON_ENCODE_ANY);
  if (!text)
    return sg_strdup("null");
  size_t n = 0;
  for (const char *p = text; *p; p++)
    n += *p == '<';
  if (n == 0)
    return text;
  char *out = sg_malloc(strlen(text) + 5 * n + 1), *q = out;
  for (const char *p = text; *p; p++) {
    if (*p == '<') {
      memcpy(q, "\\u003c", 6);
      q += 6;
    } else {
      *q++ = *p;
    }
  }
  *q = '\0';
  free(text);
  return out;
}

static const char head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "connect-src 'self'\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<meta name=\"referrer\" content=\"no-referrer\">\n"
    "<title>specgen report</title>\n<style>\n";

/* Appends a script block of JSON (id) holding v. */
static void json_block(sg_buf *b, const char *id, const json_t *v) {
  char *text = sg_report_json_for_script(v);
  sg_buf_printf(b, "<script type=\"application/json\" id=\"%s\">", id);
  sg_buf_puts(b, text);
  sg_buf_puts(b, "</script>\n");
  free(text);
}

int sg_report_page(const json_t *data, char **html, size_t *len, sg_err *err) {
  *html = NULL;
  char *path = NULL, *chart = NULL;
  size_t chart_len = 0;
  int rc = sg_report_chartjs_path(&path, err);
  if (rc == 0)
    rc = sg_file_read(path, CHARTJS_MAX, &chart, &chart_len, err);
  /* Either would change how the HTML parser reads the script block. */
  if (rc == 0 && (strstr(chart, "</script") != NULL || strstr(chart, "<!--") != NULL))
    rc = sg_err_set(err, SG_EPARSE, "%s: holds \"</script\" or \"<!--\"; it cannot be "
                    "inlined", path);
  free(path);
  if (rc < 0) {
    free(chart);
    return rc;
  }
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_puts(&b, head);
  sg_buf_append(&b, sg_report_asset_css, sg_report_asset_css_len);
  sg_buf_printf(&b, "</style>\n</head>\n<body data-mode=\"%s\">\n"
                    "<header><h1 id=\"title\">specgen report</h1>"
                    "<p id=\"subtitle\"></p></header>\n<main id=\"app\"></main>\n",
                data ? "static" : "live");
  if (data) {
    /* The details (sources, whole messages) in their own block, parsed on
     * the first click only: the charts need none of them. */
    json_t *rest = json_copy((json_t *)data);
    json_t *det = json_object_get(rest, "details");
    json_incref(det);
    json_object_del(rest, "details");
    json_block(&b, "sg-data", rest);
    if (det)
      json_block(&b, "sg-details", det);
    json_decref(det);
    json_decref(rest);
  }
  sg_buf_puts(&b, "<script>\n");
  sg_buf_append(&b, chart, chart_len);
  sg_buf_puts(&b, "\n</script>\n<script>\n");
  sg_buf_append(&b, sg_report_asset_js, sg_report_asset_js_len);
  sg_buf_puts(&b, "\n</script>\n</body>\n</html>\n");
  free(chart);
  *len = b.len;
  *html = sg_buf_steal(&b);
  return 0;
}

int sg_report_write(const char *dir, const char *out_path, char **written, sg_err *err) {
  if (written)
    *written = NULL;
  sg_report_src *s = NULL;
  int rc = sg_report_open(dir, &s, err);
  if (rc < 0)
    return rc;
  json_t *data = NULL;
  rc = sg_report_data_json(s, true, &data, err);
  sg_report_close(s);
  if (rc < 0)
    return rc;
  char *html = NULL;
  size_t len = 0;
  rc = sg_report_page(data, &html, &len, err);
  json_decref(data);
  if (rc < 0)
    return rc;
  char *path = out_path ? sg_strdup(out_path) : sg_asprintf("%s/report.html", dir);
  /* a --out into a directory that does not exist is bad input, said so */
  const char *slash = strrchr(path, '/');
  char *parent = slash == path ? sg_strdup("/")
                 : slash       ? sg_strndup(path, (size_t)(slash - path))
                               : sg_strdup(".");
  struct stat st;
  if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
    rc = sg_err_set(err, SG_ENOENT, "%s: the directory %s does not exist", path, parent);
  free(parent);
  if (rc == 0)
    rc = sg_file_write(path, html, len, err);
  free(html);
  if (rc == 0 && written)
    *written = path;
  else
    free(path);
  return rc;
}
