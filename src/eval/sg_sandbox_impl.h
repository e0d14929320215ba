/* sg_sandbox_impl.h: what the sandbox's parent side (sg_sandbox.c) and its
 * child side (sg_sandbox_child.c) share; not for other modules. */
#ifndef SG_SANDBOX_IMPL_H
#define SG_SANDBOX_IMPL_H

#include "eval/sg_sandbox.h"

#include <sys/types.h>

/* The child's result descriptor after setup (0, 1 and 2 are stdio), then
 * the setup channel (a socket pair: the parent answers on it). */
#define SG_RESULT_FD 3
#define SG_SETUP_FD 4

/* What isolation the child got. */
enum {
  SG_ISO_NET = 1,
  SG_ISO_USER = 2,
  SG_ISO_MOUNT = 4,
  SG_ISO_PID = 8,
  SG_ISO_IPC = 16,
  SG_ISO_UNPRIV = 32,
};

/* A message from the child on the setup channel. */
typedef struct sg_setup_msg {
  int type;        /* 'M' map my user namespace, 'P' the program's pid,
                      'S' setup done (ok) or failed, 'E' exec failed */
  int ok;
  int pid;         /* 'P': the program's pid as the parent numbers it */
  unsigned iso;    /* 'S': SG_ISO_* */
  char text[480];  /* the failure, or notes about what was refused */
} sg_setup_msg;

/* The parent's answer to 'M': the ids to switch to (-1: the map failed). */
typedef struct sg_setup_reply {
  int uid, gid;
} sg_setup_reply;

/* Everything between fork and the candidate, in the child; returns in the
 * process that is to run the candidate (with a PID namespace, a grandchild:
 * the forked child stays behind as its waiter and mirrors its end). fds: the
 * child ends of the stdout, stderr, result pipes and the setup socket.
 * allowed_exec: the one execve path pointer the filter lets through;
 * prebuilt (or NULL): that filter built by the parent for a process whose
 * pid is prebuilt_self, loaded when the child's is. */
struct sock_fprog;
void sg_sandbox_child_setup(const sg_sandbox_limits *lim, int out_w, int err_w,
                            int res_w, int setup_w, uint64_t allowed_exec,
                            const struct sock_fprog *prebuilt, pid_t prebuilt_self);

/* The pid of the first process of a new PID namespace: the candidate's,
 * where the sandbox made one. */
#define SG_SANDBOX_NS_PID 1

void sg_sandbox_write_all(int fd, const void *p, size_t n);

#endif
