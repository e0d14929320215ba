/* bench_gpu_compile.c: how long it takes to turn a CUDA candidate into code
 * a GPU can run, three ways, side by side (no GPU needed: compilation only).
 *
 *   nvcc .so      what the cuda evaluator does: the candidate with its host
 *                 launcher and the shim, nvcc -shared (sg_eval_compile; the
 *                 reference comes from the cache after the first run)
 *   nvcc -cubin   nvcc on the device code alone, no host code, no link
 *   NVRTC         the device code compiled in-process by libnvrtc (loaded
 *                 with dlopen) to a cubin
 *
 * Kernels: the ok-fast examples of three built-in CUDA tasks (device code =
 * the file before its extern "C" launcher, #include lines dropped for
 * NVRTC). Median of 5 runs each. Usage: bench_gpu_compile [RUNS]
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "eval/sg_cuda_check.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*nvrtc_create_fn)(void **, const char *, const char *, int,
                                const char *const *, const char *const *);
typedef int (*nvrtc_compile_fn)(void *, int, const char *const *);
typedef int (*nvrtc_size_fn)(void *, size_t *);
typedef int (*nvrtc_destroy_fn)(void **);

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > 50)
    runs = 5;
  char *nvcc = sg_eval_cuda_find_nvcc();
  if (!nvcc) {
    printf("nvcc not found: nothing to measure\n");
    return 0;
  }
  void *lib = dlopen("libnvrtc.so.13", RTLD_NOW);
  if (!lib)
    lib = dlopen("libnvrtc.so", RTLD_NOW);
  if (!lib) {
    char *p = sg_asprintf("%s/../lib64/libnvrtc.so", nvcc);
    char *slash = strrchr(nvcc, '/');
    free(p);
    p = sg_asprintf("%.*s/../lib64/libnvrtc.so", (int)(slash - nvcc), nvcc);
    lib = dlopen(p, RTLD_NOW);
    free(p);
  }
  nvrtc_create_fn create = lib ? (nvrtc_create_fn)(uintptr_t)dlsym(lib, "nvrtcCreateProgram") : NULL;
  nvrtc_compile_fn compile = lib ? (nvrtc_compile_fn)(uintptr_t)dlsym(lib, "nvrtcCompileProgram") : NULL;
  nvrtc_size_fn cubin_size = lib ? (nvrtc_size_fn)(uintptr_t)dlsym(lib, "nvrtcGetCUBINSize") : NULL;
  nvrtc_destroy_fn destroy = lib ? (nvrtc_destroy_fn)(uintptr_t)dlsym(lib, "nvrtcDestroyProgram") : NULL;

  static const char *const tasks[] = {"diag_matmul", "hinge_loss", "upper_triangular_matmul"};
  printf("%-26s %12s %12s %12s %10s %10s\n", "kernel (ok-fast)", "nvcc_so_s", "nvcc_cubin_s",
         "nvrtc_s", "so/nvrtc", "cubin/nvrtc");
  for (size_t t = 0; t < sizeof tasks / sizeof tasks[0]; t++) {
    sg_err err;
    sg_task *task = NULL;
    char *dir = sg_asprintf("%s/tasks/cuda/%s", SG_SOURCE_ROOT, tasks[t]);
    if (sg_task_load(dir, &task, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    char *path = sg_asprintf("%s/examples/ok-fast.cu", dir);
    char *src = NULL;
    size_t len = 0;
    if (sg_file_read(path, 1 << 20, &src, &len, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    /* Device code: before the launcher, without #include lines. */
    char *cut = strstr(src, "extern \"C\"");
    size_t dlen = cut ? (size_t)(cut - src) : len;
    sg_buf dev;
    sg_buf_init(&dev, 0);
    for (const char *p = src; p < src + dlen;) {
      const char *nl = memchr(p, '\n', (size_t)(src + dlen - p));
      size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(src + dlen - p);
      if (strncmp(p, "#include", 8) != 0)
        sg_buf_append(&dev, p, l);
      p += l;
    }
    double so[50], cb[50], rt[50];
    char tmpl[] = "/tmp/bench-gpu-compile-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    char *dev_cu = sg_asprintf("%s/dev.cu", tmp);
    sg_file_write(dev_cu, dev.data, dev.len, &err);
    for (int r = 0; r < runs; r++) {
      sg_eval_opts o;
      sg_eval_opts_default(&o);
      sg_eval_build b;
      sg_eval_result res;
      sg_eval_result_init(&res);
      double t0 = sg_clock_now_s();
      if (sg_eval_compile(task, src, len, &o, &b, &res, &err) || res.status != SG_EVAL_OK) {
        fprintf(stderr, "%s: compile failed: %s\n", tasks[t], err.msg);
        return 1;
      }
      so[r] = sg_clock_now_s() - t0;
      sg_eval_build_free(&b);
      sg_eval_result_free(&res);

      char *cmd = sg_asprintf("%s -cubin -arch=%s -O3 -o %s/dev.cubin %s", nvcc,
                              sg_eval_cuda_arch(), tmp, dev_cu);
      t0 = sg_clock_now_s();
      if (system(cmd) != 0) {
        fprintf(stderr, "%s failed\n", cmd);
        return 1;
      }
      cb[r] = sg_clock_now_s() - t0;
      free(cmd);

      rt[r] = -1;
      if (create && compile && cubin_size && destroy) {
        char arch[64];
        snprintf(arch, sizeof arch, "--gpu-architecture=%s", sg_eval_cuda_arch());
        const char *opts[] = {arch, "-default-device"};
        void *prog = NULL;
        t0 = sg_clock_now_s();
        create(&prog, dev.data, "dev.cu", 0, NULL, NULL);
        int rc = compile(prog, 2, opts);
        size_t n = 0;
        cubin_size(prog, &n);
        rt[r] = sg_clock_now_s() - t0;
        destroy(&prog);
        if (rc != 0 || n == 0) {
          fprintf(stderr, "%s: NVRTC failed (%d)\n", tasks[t], rc);
          return 1;
        }
      }
    }
    double mso = sg_stats_median(so, (size_t)runs), mcb = sg_stats_median(cb, (size_t)runs);
    double mrt = rt[0] < 0 ? -1 : sg_stats_median(rt, (size_t)runs);
    if (mrt > 0)
      printf("%-26s %12.3f %12.3f %12.3f %10.1f %10.1f\n", tasks[t], mso, mcb, mrt,
             mso / mrt, mcb / mrt);
    else
      printf("%-26s %12.3f %12.3f %12s %10s %10s\n", tasks[t], mso, mcb, "n/a", "-", "-");
    char *rm = sg_asprintf("rm -rf %s", tmp);
    (void)!system(rm);
    free(rm);
    free(dev_cu);
    sg_buf_free(&dev);
    free(src);
    free(path);
    free(dir);
    sg_task_free(task);
  }
  free(nvcc);
  return 0;
}
