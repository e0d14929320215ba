/* sg_dashboard.c: the live dashboard (see sg_dashboard.h).
 *
 * One libmicrohttpd polling thread serves every request, so the source (a
 * read-only SQLite connection) and the cached data.json text are touched by
 * that thread only and need no lock. data.json is rebuilt only when SQLite's
 * data_version says another connection committed since the last build: a
 * page polling every second costs one PRAGMA while the run is quiet. */
#include "report/sg_dashboard.h"

#include "common/sg_alloc.h"
#include "report/sg_report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct sg_dashboard {
  struct MHD_Daemon *daemon;
  char *dir;
  char *url;
  char *page;            /* the live page, built once */
  size_t page_len;
  sg_report_src *src;    /* opened on the first request that finds the store */
  char *data;            /* the latest data.json text */
  size_t data_len;
  int64_t data_version;
};

int sg_dashboard_parse_addr(const char *spec, char *host, size_t host_size, int *port,
                            sg_err *err) {
  const char *colon = strrchr(spec, ':');
  const char *h = spec, *p = spec;
  size_t hlen = 0;
  if (colon) {
    h = spec;
    hlen = (size_t)(colon - spec);
    p = colon + 1;
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
      h++;
      hlen -= 2;
    }
  }
  char *end = NULL;
  errno = 0;
  long v = strtol(p, &end, 10);
  if (*p == '\0' || *end != '\0' || errno || v < 0 || v > 65535)
    return sg_err_set(err, SG_EINVAL, "dashboard address \"%s\": expected ADDR:PORT with a "
                      "port in 0..65535", spec);
  if (hlen == 0) {
    h = "127.0.0.1";
    hlen = strlen(h);
  }
  if (hlen >= host_size)
    return sg_err_set(err, SG_EINVAL, "dashboard address \"%s\": host too long", spec);
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
    return sg_err_set(err, SG_EINVAL, "dashboard address \"%s\": \"%s\" is not a numeric "
                      "IPv4 or IPv6 address", spec, host);
  *port = (int)v;
  return 0;
}

/* ---- responses ---------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                            const void *body, size_t len) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; script-src 'unsafe-inline'; style-src "
                          "'unsafe-inline'; img-src data:; connect-src 'self'");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg) {
  json_t *j = json_pack("{s:s}", "error", msg);
  char *text = sg_report_json_for_script(j);
  json_decref(j);
  enum MHD_Result r = reply(c, status, "application/json", text, strlen(text));
  free(text);
  return r;
}

static unsigned status_of(int rc) {
  return rc == SG_ENOENT ? 404 : rc == SG_EAGAIN ? 503 : 500;
}

/* Opens the source once the store is there (a run begins a moment after
 * the dashboard starts). */
static int source(sg_dashboard *d, sg_err *err) {
  if (d->src)
    return 0;
  return sg_report_open(d->dir, &d->src, err);
}

static enum MHD_Result serve_data(sg_dashboard *d, struct MHD_Connection *c) {
  sg_err err;
  sg_err_clear(&err);
  int64_t v = 0;
  int rc = source(d, &err);
  if (rc == 0)
    rc = sg_report_version(d->src, &v, &err);
  if (rc == 0 && (!d->data || v != d->data_version)) {
    json_t *data = NULL;
    rc = sg_report_data_json(d->src, false, &data, &err);
    if (rc == 0) {
      json_object_set_new(data, "version", json_integer(v));
      free(d->data);
      d->data = sg_report_json_for_script(data);
      d->data_len = strlen(d->data);
      d->data_version = v;
      json_decref(data);
    }
  }
  if (rc < 0)
    return send_error(c, rc == SG_ENOENT ? 503 : status_of(rc), err.msg);
  return reply(c, 200, "application/json", d->data, d->data_len);
}

static enum MHD_Result serve_candidate(sg_dashboard *d, struct MHD_Connection *c,
                                       const char *rest) {
  char *end = NULL;
  errno = 0;
  long long id = strtoll(rest, &end, 10);
  if (end == rest || strcmp(end, ".json") != 0 || errno || id <= 0)
    return send_error(c, 404, "no such page");
  sg_err err;
  sg_err_clear(&err);
  json_t *cand = NULL;
  int rc = source(d, &err);
  if (rc == 0)
    rc = sg_report_candidate_json(d->src, id, &cand, &err);
  if (rc < 0)
    return send_error(c, status_of(rc), err.msg);
  char *text = sg_report_json_for_script(cand);
  json_decref(cand);
  enum MHD_Result r = reply(c, 200, "application/json", text, strlen(text));
  free(text);
  return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **state) {
  (void)version;
  (void)upload;
  sg_dashboard *d = cls;
  if (*state == NULL) { /* headers only so far: answer at the next call */
    *state = d;
    return MHD_YES;
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return send_error(c, 405, "read-only: GET and HEAD only");
  if (*upload_size > 0) {
    *upload_size = 0; /* a GET with a body: ignored */
    return MHD_YES;
  }
  if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
    return reply(c, 200, "text/html; charset=utf-8", d->page, d->page_len);
  if (strcmp(url, "/data.json") == 0)
    return serve_data(d, c);
  if (strncmp(url, "/candidate/", 11) == 0)
    return serve_candidate(d, c, url + 11);
  return send_error(c, 404, "no such page");
}

/* ---- lifetime ----------------------------------------------------------------- */

int sg_dashboard_start(const char *dir, const char *addr, sg_dashboard **out, sg_err *err) {
  *out = NULL;
  char host[64];
  int port = 0;
  int rc = sg_dashboard_parse_addr(addr ? addr : SG_DASHBOARD_DEFAULT_ADDR, host, sizeof host,
                                   &port, err);
  if (rc < 0)
    return rc;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  bool v6 = strchr(host, ':') != NULL;
  if (!v6) {
    inet_pton(AF_INET, host, &a4->sin_addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
  } else {
    inet_pton(AF_INET6, host, &a6->sin6_addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    flags |= MHD_USE_IPv6;
  }
  sg_dashboard *d = sg_calloc(1, sizeof *d);
  d->dir = sg_strdup(dir);
  if ((rc = sg_report_page(NULL, &d->page, &d->page_len, err)) < 0) {
    sg_dashboard_stop(d);
    return rc;
  }
  d->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, d, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 64u,
                               MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d->daemon) {
    int e = errno;
    sg_dashboard_stop(d);
    return sg_err_set(err, SG_EIO, "dashboard: cannot listen on %s port %d: %s", host, port,
                      e ? strerror(e) : "libmicrohttpd failed to start");
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(d->daemon, MHD_DAEMON_INFO_BIND_PORT);
  d->url = sg_asprintf(v6 ? "http://[%s]:%d/" : "http://%s:%d/", host,
                       di ? (int)di->port : port);
  *out = d;
  return 0;
}

const char *sg_dashboard_url(const sg_dashboard *d) { return d->url; }

void sg_dashboard_stop(sg_dashboard *d) {
  if (!d)
    return;
  if (d->daemon)
    MHD_stop_daemon(d->daemon);
  sg_report_close(d->src);
  free(d->data);
  free(d->page);
  free(d->url);
  free(d->dir);
  free(d);
}
