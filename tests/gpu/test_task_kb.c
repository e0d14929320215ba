/* test_task_kb.c: KernelBench files as tasks (sg_task_kb.h): one file by
 * path, a folder of them, kernelbench:LEVEL/N through $SPECGEN_KERNELBENCH in
 * both layouts, the defaults, and the errors. Files written here in
 * KernelBench's format. Needs no GPU and no torch. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_task.h"
#include "eval/sg_task_kb.h"
#include "sg_test.h"
#include "tmpfiles.h"

#include <stdlib.h>
#include <unistd.h>

static const char kb_relu[] =
    "import torch\nimport torch.nn as nn\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "    def forward(self, x):\n        return torch.relu(x)\n\n"
    "batch_size = 16\ndim = 16384\n\n"
    "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
    "def get_init_inputs():\n    return []\n";

static void test_file_is_a_task(void) {
  char *d = tmp_dir("sg-kb");
  put_file(d, "19_ReLU.py", kb_relu);
  char *p = sg_asprintf("%s/19_ReLU.py", d);
  SG_CHECK(sg_task_kb_is_ref(p));
  SG_CHECK(!sg_task_kb_is_ref("cuda/hinge_loss"));
  sg_task *t = NULL;
  sg_err err;
  /* through the general loader, as `specgen eval --task FILE` does */
  SG_CHECK_OK(sg_task_load(p, &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "19_ReLU");
  SG_CHECK_STR_EQ(t->evaluator, "kernelbench");
  SG_CHECK_STR_EQ(t->language, "python");
  SG_CHECK_STR_EQ(t->entry, "ModelNew");
  SG_CHECK_NEAR(t->atol, 1e-2, 0);
  SG_CHECK_NEAR(t->rtol, 1e-2, 0);
  SG_CHECK(strstr(t->reference_path, "/19_ReLU.py") != NULL);
  SG_CHECK(t->reference_path[0] == '/');
  /* the whole file is the specification the prompt shows */
  SG_CHECK_CONTAINS(t->reference_source, "class Model(nn.Module)");
  SG_CHECK_CONTAINS(t->reference_source, "def get_inputs");
  SG_CHECK_CONTAINS(t->description, "ModelNew");
  sg_task_free(t);
  free(p);
  sg_rm_rf(d, &err);
  free(d);
}

static void test_not_a_kernelbench_file(void) {
  char *d = tmp_dir("sg-kb");
  put_file(d, "x.py", "import torch\nclass Model:\n    pass\ndef get_inputs():\n    return []\n");
  char *p = sg_asprintf("%s/x.py", d);
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_EQ_INT(sg_task_load(p, &t, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "get_init_inputs");
  SG_CHECK_CONTAINS(err.msg, "x.py");
  free(p);
  p = sg_asprintf("%s/missing.py", d);
  SG_CHECK_EQ_INT(sg_task_load(p, &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "missing.py");
  free(p);
  sg_rm_rf(d, &err);
  free(d);
}

static void test_folder_in_problem_order(void) {
  char *d = tmp_dir("sg-kb");
  put_file(d, "10_B.py", kb_relu);
  put_file(d, "2_A.py", kb_relu);
  put_file(d, "utils.py", "def f():\n    return 1\n");
  put_file(d, "notes.txt", "not python");
  sg_task **ts = NULL;
  size_t n = 0;
  sg_err err;
  SG_CHECK_OK(sg_task_kb_list(d, &ts, &n, &err), err);
  SG_CHECK_EQ_INT(n, 2);
  if (n == 2) {
    SG_CHECK_STR_EQ(ts[0]->name, "2_A");
    SG_CHECK_STR_EQ(ts[1]->name, "10_B");
  }
  sg_task_list_free(ts, n);
  SG_CHECK_EQ_INT(sg_task_kb_number("19_ReLU.py"), 19);
  SG_CHECK_EQ_INT(sg_task_kb_number("level1/7_x.py"), 7);
  SG_CHECK_EQ_INT(sg_task_kb_number("ReLU.py"), -1);
  char *empty = sg_asprintf("%s/empty", d);
  SG_CHECK_OK(sg_mkdir_p(empty, &err), err);
  SG_CHECK_EQ_INT(sg_task_kb_list(empty, &ts, &n, &err), SG_ENOENT);
  free(empty);
  sg_rm_rf(d, &err);
  free(d);
}

static void test_named_by_setting(void) {
  char *d = tmp_dir("sg-kb");
  sg_err err;
  /* the repository's layout: KernelBench/level1/ */
  char *lvl = sg_asprintf("%s/KernelBench/level1", d);
  SG_CHECK_OK(sg_mkdir_p(lvl, &err), err);
  put_file(lvl, "19_ReLU.py", kb_relu);
  put_file(lvl, "1_Square.py", kb_relu);
  unsetenv("SPECGEN_KERNELBENCH");
  sg_task *t = NULL;
  SG_CHECK_EQ_INT(sg_task_load("kernelbench:level1/19", &t, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "SPECGEN_KERNELBENCH");
  setenv("SPECGEN_KERNELBENCH", d, 1);
  SG_CHECK_OK(sg_task_load("kernelbench:level1/19", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "19_ReLU");
  sg_task_free(t);
  SG_CHECK_OK(sg_task_load("kernelbench:level1/19_ReLU", &t, &err), err);
  sg_task_free(t);
  SG_CHECK_OK(sg_task_load("kernelbench:level1/1_Square.py", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "1_Square");
  sg_task_free(t);
  SG_CHECK_EQ_INT(sg_task_load("kernelbench:level1/99", &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "99");
  SG_CHECK_EQ_INT(sg_task_load("kernelbench:level9/1", &t, &err), SG_ENOENT);
  SG_CHECK_EQ_INT(sg_task_load("kernelbench:level1", &t, &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_task_load("kernelbench:../x/1", &t, &err) < 0, 1);
  sg_task **ts = NULL;
  size_t n = 0;
  SG_CHECK_OK(sg_task_kb_list("kernelbench:level1", &ts, &n, &err), err);
  SG_CHECK_EQ_INT(n, 2);
  sg_task_list_free(ts, n);
  /* the flat layout: level1/ directly under the setting */
  char *flat = sg_asprintf("%s/flat", d);
  char *flat1 = sg_asprintf("%s/level2", flat);
  SG_CHECK_OK(sg_mkdir_p(flat1, &err), err);
  put_file(flat1, "76_Gemm_Add_ReLU.py", kb_relu);
  setenv("SPECGEN_KERNELBENCH", flat, 1);
  SG_CHECK_OK(sg_task_load("kernelbench:level2/76", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "76_Gemm_Add_ReLU");
  sg_task_free(t);
  unsetenv("SPECGEN_KERNELBENCH");
  free(flat);
  free(flat1);
  free(lvl);
  sg_rm_rf(d, &err);
  free(d);
}

SG_TEST_MAIN({"file_is_a_task", test_file_is_a_task},
             {"not_a_kernelbench_file", test_not_a_kernelbench_file},
             {"folder_in_problem_order", test_folder_in_problem_order},
             {"named_by_setting", test_named_by_setting})
