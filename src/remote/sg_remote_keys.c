/* sg_remote_keys.c: the names both sides of a remote run agree on: keys,
 * run ids and remote device names (docs/remote.md, "Keys"). */
#include "remote/sg_remote.h"

#include "common/sg_alloc.h"

#include <string.h>
#include <unistd.h>

bool sg_remote_is_device(const char *device) {
  return sg_pool_device_remote(device);
}

int sg_remote_run_id_check(const char *id, sg_err *err) {
  size_t n = id ? strlen(id) : 0;
  if (n < 1 || n > 64)
    return sg_err_set(err, SG_EINVAL, "run id: 1 to 64 characters expected");
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      return sg_err_set(err, SG_EINVAL,
                        "run id: character %zu is not one of A-Z a-z 0-9 . _ -",
                        i + 1);
  }
  return 0;
}

char *sg_remote_key_requests(const char *run, const char *kind) {
  return sg_asprintf("specgen:%s:req:%s", run, kind);
}

char *sg_remote_key_replies(const char *run, const char *slot_device) {
  return sg_asprintf("specgen:%s:res:%s", run, slot_device);
}

char *sg_remote_key_heartbeat(const char *run, const char *consumer) {
  return sg_asprintf("specgen:%s:hb:%s", run, consumer);
}

char *sg_remote_key_control(const char *run, const char *consumer) {
  return sg_asprintf("specgen:%s:ctl:%s", run, consumer);
}

char *sg_remote_consumer(const char *host, const char *device) {
  return sg_asprintf("%s/%s/%ld", host, device, (long)getpid());
}

char *sg_remote_key_workers(const char *run) {
  return sg_asprintf("specgen:%s:workers", run);
}

char *sg_remote_url_hide(char *arg) {
  char *copy = sg_strdup(arg);
  char *start = strstr(arg, "://");
  start = start ? start + 3 : arg;
  char *slash = strchr(start, '/');
  char *at = NULL;
  for (char *q = start; *q && (!slash || q < slash); q++)
    if (*q == '@')
      at = q;
  for (char *q = start; at && q < at; q++)
    *q = '*';
  return copy;
}
