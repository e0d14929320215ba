/* sg_run_remote.c: a run's remote device slots (`--remote N`, docs/remote.md).
 * They are appended to the run's devices as "redis:KIND/I", so the scheduler
 * counts them as devices and the pool starts a slot proxy for each; the
 * proxies learn the Redis URL and the run id from their environment. */
#include "runtime/sg_run_priv.h"

#include "common/sg_alloc.h"
#include "remote/sg_redis.h"
#include "remote/sg_remote.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

int sg_run_remote_devices(run *r, sg_err *err) {
  int n = r->cfg->remote;
  /* The URL leaves this process's environment at once: only the slot
   * proxies get it (the pool's remote_env), not the local workers, the
   * model's server or a candidate that reads /proc/self/environ. */
  const char *got = getenv(SG_REMOTE_ENV_URL);
  char *url = got ? sg_strdup(got) : NULL;
  unsetenv(SG_REMOTE_ENV_URL);
  if (n <= 0) {
    free(url);
    return 0;
  }
  if (url) {
    r->remote_url_env = sg_asprintf("%s=%s", SG_REMOTE_ENV_URL, url);
    memset(url, 0, strlen(url));
    free(url);
    url = strchr(r->remote_url_env, '=') + 1;
  }
  if (!url || !*url)
    return sg_err_set(err, SG_EINVAL,
                      "--remote %d: no Redis to reach the worker hosts through "
                      "(give --redis URL or set %s)", n, SG_REMOTE_ENV_URL);
  sg_redis_url u;
  int rc = sg_redis_url_parse(url, &u, err);
  if (rc < 0)
    return sg_err_prefix(err, "--redis");
  sg_redis_url_free(&u);
  char *copy = sg_strdup(r->dir);
  char *id = sg_strdup(basename(copy));
  free(copy);
  if ((rc = sg_remote_run_id_check(id, err)) < 0) {
    sg_err_prefix(err, "--remote: the run directory's name '%.80s' is the run id "
                  "the workers serve", id);
    free(id);
    return rc;
  }
  r->remote_env = sg_asprintf("%s=%s", SG_REMOTE_ENV_RUN, id);
  free(id);
  r->devices = sg_realloc(r->devices, (r->ndevices + (size_t)n) * sizeof *r->devices);
  for (int i = 0; i < n; i++)
    r->devices[r->ndevices++] =
        sg_asprintf("%s%s/%d", SG_REMOTE_DEVICE_PREFIX, r->device_kind, i);
  return 0;
}
