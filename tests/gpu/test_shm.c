/* test_shm.c: which /dev/shm files are a process's (sg_shm.h), and their
 * removal, in a scratch directory. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_shm.h"
#include "sg_test.h"
#include "tmpfiles.h"

#include <stdlib.h>
#include <unistd.h>

static void test_names(void) {
  SG_CHECK(sg_shm_owned_by("torch_1891_2636304087_0", 1891));
  SG_CHECK(sg_shm_owned_by("cuda.shm.0.763.1", 0x763)); /* 1891, as seen on an H100 */
  SG_CHECK(sg_shm_owned_by("cuda.shm.3.1a2b.17", 0x1a2b));
  SG_CHECK(!sg_shm_owned_by("torch_18910_2636304087_0", 1891));
  SG_CHECK(!sg_shm_owned_by("torch_189_2636304087_0", 1891));
  SG_CHECK(!sg_shm_owned_by("cuda.shm.0.7630.1", 0x763));
  SG_CHECK(!sg_shm_owned_by("cuda.shm.0.763", 0x763)); /* no sequence after it */
  SG_CHECK(!sg_shm_owned_by("torch_-1891_1_0", -1891));
  SG_CHECK(!sg_shm_owned_by("torch_+1891_1_0", 1891));
  SG_CHECK(!sg_shm_owned_by("sem.torch_1891_1_0", 1891));
  SG_CHECK(!sg_shm_owned_by("torch_1891_1_0", 0));
  SG_CHECK(!sg_shm_owned_by(NULL, 1891));
}

static void test_remove(void) {
  char *d = tmp_dir("sg-shm");
  put_file(d, "torch_1891_2636304087_0", "");
  put_file(d, "cuda.shm.0.763.1", "");
  put_file(d, "torch_1892_1_0", "");          /* another process's */
  put_file(d, "cuda.shm.0.764.1", "");
  put_file(d, "other", "");
  SG_CHECK_EQ_INT(sg_shm_remove_owned(d, 1891), 2);
  char *p = sg_asprintf("%s/torch_1891_2636304087_0", d);
  SG_CHECK(access(p, F_OK) != 0);
  free(p);
  const char *kept[] = {"torch_1892_1_0", "cuda.shm.0.764.1", "other"};
  for (int i = 0; i < 3; i++) {
    p = sg_asprintf("%s/%s", d, kept[i]);
    SG_CHECK_MSG(access(p, F_OK) == 0, "%s went", kept[i]);
    free(p);
  }
  /* the directory from the environment when none is given */
  setenv("SPECGEN_SHM_DIR", d, 1);
  SG_CHECK_EQ_INT(sg_shm_remove_owned(NULL, 1892), 2); /* torch_1892_1_0, cuda.shm.0.764.1 */
  unsetenv("SPECGEN_SHM_DIR");
  SG_CHECK_EQ_INT(sg_shm_remove_owned("/nonexistent-dir", 1), 0);
  sg_err err;
  sg_rm_rf(d, &err);
  free(d);
}

/* A judge's list of its processes (itself and its servers): the files of
 * each pid listed go, nothing else; the list ends at anything not a pid. */
static void test_remove_listed(void) {
  char *d = tmp_dir("sg-shm-listed");
  put_file(d, "torch_1891_1_0", "");
  put_file(d, "cuda.shm.0.764.1", "");        /* 1892's */
  put_file(d, "torch_1893_1_0", "");          /* listed after the garbage */
  put_file(d, "torch_1894_1_0", "");          /* not listed */
  put_file(d, "pids", "1891 1892\nx 1893\n");
  char *pids = sg_asprintf("%s/pids", d);
  SG_CHECK_EQ_INT(sg_shm_remove_listed(d, pids), 2);
  char *p = sg_asprintf("%s/torch_1893_1_0", d);
  SG_CHECK(access(p, F_OK) == 0);
  free(p);
  put_file(d, "pids", "0 -1893\n");
  SG_CHECK_EQ_INT(sg_shm_remove_listed(d, pids), 0);
  put_file(d, "pids", "18931 1893");
  SG_CHECK_EQ_INT(sg_shm_remove_listed(d, pids), 1); /* torch_1893_1_0 */
  p = sg_asprintf("%s/torch_1894_1_0", d);
  SG_CHECK(access(p, F_OK) == 0);
  free(p);
  free(pids);
  SG_CHECK_EQ_INT(sg_shm_remove_listed(d, "/nonexistent-file"), 0);
  SG_CHECK_EQ_INT(sg_shm_remove_listed(d, NULL), 0);
  sg_err err;
  sg_rm_rf(d, &err);
  free(d);
}

SG_TEST_MAIN({"names", test_names}, {"remove", test_remove},
             {"remove_listed", test_remove_listed})
