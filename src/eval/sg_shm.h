/* sg_shm.h: the shared-memory files a device process leaves behind.
 *
 * PyTorch's CUDA IPC (a judge sharing its inputs with its servers) makes
 * files in /dev/shm named for the process: its reference-count segments
 * torch_<pid>_<random>_<n> and the driver's cuda.shm.<device>.<pid in
 * hex>.<n>. The process's exit handlers remove them; one killed (a runner
 * ended before its go, a row cut off by a stop or a time limit) never
 * runs them, and each stays until the machine restarts. */
#ifndef SG_SHM_H
#define SG_SHM_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the file name is one of pid's (above). */
bool sg_shm_owned_by(const char *name, long pid);

/* Removes pid's files from dir ($SPECGEN_SHM_DIR when dir is NULL, else
 * /dev/shm); returns how many went. Call it once pid has ended. */
size_t sg_shm_remove_owned(const char *dir, long pid);

#endif
