/* sg_dashboard.h: the live dashboard: the report's page served over HTTP
 * (libmicrohttpd) from a run directory while the run writes it.
 *
 * Routes (GET and HEAD only; anything else is 405): "/" the page, which
 * polls "/data.json" every second and redraws when the data changed;
 * "/candidate/ID.json" one kernel's source and evaluations. The server runs
 * in its own thread (libmicrohttpd's internal polling thread, one for all
 * connections, so the read-only SQLite connection is used by one thread)
 * and never writes: the run's loop does not wait for it. It binds to
 * loopback unless told otherwise; the page holds what the report holds (no
 * environment, no keys).
 */
#ifndef SG_DASHBOARD_H
#define SG_DASHBOARD_H

#include "common/sg_error.h"

/* The address when none is given: loopback only. */
#define SG_DASHBOARD_DEFAULT_ADDR "127.0.0.1:8750"

typedef struct sg_dashboard sg_dashboard;

/* Parses "ADDR:PORT", "[IPV6]:PORT", ":PORT" (loopback) or "PORT" into a
 * numeric host (at least 64 bytes) and a port (0: any free one). SG_EINVAL
 * naming the text otherwise. */
int sg_dashboard_parse_addr(const char *spec, char *host, size_t host_size, int *port,
                            sg_err *err);

/* Starts serving dir (a run directory, or a sim campaign) on addr (NULL:
 * SG_DASHBOARD_DEFAULT_ADDR). The run store may not exist yet: requests
 * then answer 503 until it does. */
int sg_dashboard_start(const char *dir, const char *addr, sg_dashboard **out, sg_err *err);
/* "http://HOST:PORT/" (borrowed). */
const char *sg_dashboard_url(const sg_dashboard *d);
void sg_dashboard_stop(sg_dashboard *d);

#endif
