#!/usr/bin/env bash
# gpu-check.sh [specgen-gpu-check options...]: the GPU test suite and benchmark
# in one command, for a machine with an NVIDIA GPU, nvcc and ncu.
#
# It expects the two GPU-side programs already built (they link only libc and
# a static jansson, so a build from another Linux machine runs here):
#   build-cuda/tests/gpu/specgen-cuda-run  and  .../specgen-gpu-check
# (BUILD=dir overrides build-cuda). It records the machine (GPU, driver, nvcc,
# ncu), runs every built-in CUDA and kernelbench task's examples through
# validation (and profiling with --profile), ending with the medians of
# validation and profiling and "N examples checked, M as expected".
# SKIP_KB=1 leaves out the kernelbench tasks. More steps, when asked:
#   KB_BUILD=1  the side-by-side load_inline build times
#               (python/specgen_kb/gpu_check.py; about two minutes)
#   BENCH=1     `specgen bench` twice: the paper's T1-T20 with their ok-fast
#               or ok-fused examples, and a folder of KernelBench files (the
#               relu and softmax tasks' model.py under KernelBench names)
#               with one right and one wrong candidate; bench.txt, bench.json
#               (needs BUILD/src/cli/specgen, and BUILD/lib as for GPU_RUN)
#   SANITIZE=1  the gemm_add_relu examples again with
#               compute-sanitizer's memcheck as a validation step
#   GPU_RUN=1   a whole `specgen run` on cuda:0 against the built-in test
#               server (needs BUILD/src/cli/specgen and, on a machine without
#               its libraries, BUILD/lib from scripts/gpu-prepare.sh)
# CHECK_TIMEOUT=S bounds the example check (default: none).
# Logs and tables go to $OUT (default gpu-check-out/):
#   env.txt  check.txt  check.jsonl  ncu.tar.gz  kb.txt  sanitize.txt  run.txt  run.tar.gz
#   bench.txt  bench.json
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD:-build-cuda}
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
export SPECGEN_TASKS_DIR="$root/tasks"
export SPECGEN_CUDA_RUNNER="$root/$build/tests/gpu/specgen-cuda-run"
export SPECGEN_PYTHON_DIR="$root/python"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/specgen-gpu-cache}
export SPECGEN_NCU_SAVE_DIR=/tmp/specgen-ncu-csv
rm -rf "$SPECGEN_NCU_SAVE_DIR"

{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
  nvcc --version 2>&1 | tail -n 2
  ncu --version 2>&1 | tail -n 1
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1
  nproc
} >"$out/env.txt"
cat "$out/env.txt"

status=0
if [ -n "${GPU_RUN:-}" ]; then
  # The whole loop on the GPU: compile workers, a cuda:0 worker with the
  # build cache, ncu profiles, the store and the summary.
  rundir=/tmp/specgen-gpu-run
  rm -rf "$rundir"
  LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout 170 "$root/$build/src/cli/specgen" run --task cuda/gemm_add_relu \
    --task cuda/hinge_loss --devices cuda:0 --compile-workers 4 --iterations 2 \
    --server-speed 1000 --out "$rundir" >"$out/run.txt" 2>&1
  rc=$?
  echo "specgen run exit status: $rc" >>"$out/run.txt"
  [ "$rc" -eq 0 ] || status=1
  tar -C "$rundir" -czf "$out/run.tar.gz" . 2>/dev/null
  tail -n 20 "$out/run.txt"
fi
if [ -n "${SANITIZE:-}" ]; then
  SPECGEN_CUDA_SANITIZE=memcheck timeout 120 "$root/$build/tests/gpu/specgen-gpu-check" \
    --task gemm_add_relu 2>&1 | tee "$out/sanitize.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
${CHECK_TIMEOUT:+timeout "$CHECK_TIMEOUT"} "$root/$build/tests/gpu/specgen-gpu-check" \
  --jsonl "$out/check.jsonl" "$@" 2>&1 | tee "$out/check.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if [ -d "$SPECGEN_NCU_SAVE_DIR" ]; then
  tar -C "$SPECGEN_NCU_SAVE_DIR" -czf "$out/ncu.tar.gz" .
fi

if [ -n "${BENCH:-}" ]; then
  kbdir=/tmp/specgen-kb-files
  rm -rf "$kbdir"
  mkdir -p "$kbdir/level1" "$kbdir/cands"
  cp tasks/kernelbench/relu/model.py "$kbdir/level1/19_ReLU.py"
  cp tasks/kernelbench/softmax/model.py "$kbdir/level1/23_Softmax.py"
  cp tasks/kernelbench/relu/examples/ok-load_inline.py "$kbdir/cands/19_ReLU.py"
  cp tasks/kernelbench/softmax/examples/numerical_error-warp_sum.py "$kbdir/cands/23_Softmax.py"
  {
    LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$root/$build/src/cli/specgen" bench "$kbdir/level1" --cands "$kbdir/cands" \
      --devices cuda:0
    echo "specgen bench (KernelBench folder) exit status: $?"
    LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$root/$build/src/cli/specgen" bench paper --examples ok-fast,ok-fused \
      --devices cuda:0 --json >"$out/bench.json"
    echo "specgen bench paper exit status: $?"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print("%-4s %-26s %-16s %-16s %s" % (r.get("label"), r["task"], r["status"], r.get("kernelbench_status"), r.get("speedup"))) for r in d["rows"]]; print(d["summary"])' "$out/bench.json"
  } 2>&1 | tee "$out/bench.txt"
fi

if [ -z "${SKIP_KB:-}" ] && [ -n "${KB_BUILD:-}" ] && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  if [ -f python/specgen_kb/gpu_check.py ]; then
    PYTHONUNBUFFERED=1 PYTHONPATH="$root/python" python3 -m specgen_kb.gpu_check 2>&1 | tee "$out/kb.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
fi
exit $status
