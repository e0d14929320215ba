/* sg_shm.h: the shared-memory files a device process leaves behind.
 *
 * PyTorch's CUDA IPC (a judge sharing its inputs with its servers) makes
 * files in /dev/shm named for the process: its reference-count segments
 * torch_<pid>_<random>_<n> and the driver's cuda.shm.<device>.<pid in
 * hex>.<n>. The process's exit handlers remove them; one killed (a runner
 * ended before its go, a row cut off by a stop or a time limit) never
 * runs them, and each stays until the machine restarts.
 *
 * A judge's servers are processes of their own (forked by the judge), with
 * files of their own; a judge killed never removes theirs. So the judge
 * lists its own pid and its servers' in SG_SHM_PIDS_FILE in its working
 * directory as soon as it has forked them, and whoever ends it removes the
 * files of every pid listed there (sg_shm_remove_listed). */
#ifndef SG_SHM_H
#define SG_SHM_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the file name is one of pid's (above). */
bool sg_shm_owned_by(const char *name, long pid);

/* Removes pid's files from dir ($SPECGEN_SHM_DIR when dir is NULL, else
 * /dev/shm); returns how many went. Call it once pid has ended. */
size_t sg_shm_remove_owned(const char *dir, long pid);

/* The file, in a judge's working directory, that lists its processes. */
#define SG_SHM_PIDS_FILE "specgen-ipc-pids"

/* Removes from dir (as above) the files of every pid listed in the file
 * pids_path (decimal numbers separated by white space; anything else ends
 * the list); returns how many went. A missing file removes nothing. Call
 * it once those processes have ended. */
size_t sg_shm_remove_listed(const char *dir, const char *pids_path);

#endif
