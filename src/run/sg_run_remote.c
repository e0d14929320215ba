/* sg_run_remote.c: a run's remote device slots (`--remote N`, docs/remote.md).
 * They are appended to the run's devices as "redis:KIND/I", so the scheduler
 * counts them as devices and the pool starts a slot proxy for each; the
 * proxies learn the Redis URL and the run id from their environment. */
#include "run/sg_run_priv.h"

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
  char *copy = sg_strdup(r->dir);
  char *id = sg_strdup(basename(copy));
  free(copy);
  if ((rc = sg_remote_run_id_check(id, err)) < 0) {
    sg_err_prefix(err, "--remote: the run directory's name '%.80s' is the run id "
                  "the workers serve", id);
    free(id);
    sg_redis_url_free(&u);
    return rc;
  }
  /* Reached and authenticated before anything starts: a wrong password or
   * a server that is not there fails the run now with the server's reason
   * (SG_ECONN: exit 1), not each request after its hang deadline. */
  rc = sg_redis_check(&u, 10, err);
  sg_redis_url_free(&u);
  if (rc < 0) {
    free(id);
    return sg_err_prefix(err, "--redis");
  }
  r->remote_env = sg_asprintf("%s=%s", SG_REMOTE_ENV_RUN, id);
  free(id);
  r->devices = sg_realloc(r->devices, (r->ndevices + (size_t)n) * sizeof *r->devices);
  for (int i = 0; i < n; i++)
    r->devices[r->ndevices++] =
        sg_asprintf("%s%s/%d", SG_REMOTE_DEVICE_PREFIX, r->device_kind, i);
  return 0;
}

/* The run's end, after its slot proxies exited: what it put in Redis goes
 * (docs/remote.md, "Keys"). A failure leaves keys, never the run failed. */
int sg_run_remote_cleanup(run *r, sg_err *err) {
  if (!r->remote_url_env || !r->remote_env)
    return 0;
  const char *url = strchr(r->remote_url_env, '=') + 1;
  const char *id = strchr(r->remote_env, '=') + 1;
  size_t n = 0;
  const char **slots = sg_calloc(r->ndevices ? r->ndevices : 1, sizeof *slots);
  for (size_t i = 0; i < r->ndevices; i++)
    if (sg_remote_is_device(r->devices[i]))
      slots[n++] = r->devices[i];
  int rc = sg_remote_run_cleanup(url, id, r->device_kind, slots, n, err);
  free(slots);
  return rc;
}
