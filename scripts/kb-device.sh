#!/usr/bin/env bash
# kb-device.sh: the KernelBench self-check (docs/kernelbench.md) on a GPU
# machine that has PyTorch but neither specgen's libraries nor KernelBench,
# one level per call of a few minutes.
#
#   scripts/kb-device.sh prepare KERNELBENCH_DIR [BUILDDIR]
#       here, before the calls: builds specgen for the GPU machine
#       (scripts/gpu-prepare.sh BUILDDIR, default build-cuda; an existing
#       build folder such as build is only brought up to date, and gets the
#       lib/ folder of shared libraries) and fills .kbgpu/ (ignored by git)
#       with what the calls need and nothing else: the specgen program, its
#       shared libraries, and KERNELBENCH_DIR's level1/ level2/ level3/.
#       Refuses a .kbgpu/ over KB_CARRY_MAX_MIB (default 60) MiB.
#   scripts/kb-device.sh run LEVELS [LIMIT_S]
#       there, in the tree with .kbgpu/ carried along: scripts/kb-levels.sh
#       over LEVELS ("1", "2 3") with --self-check both, each level's bench
#       call stopped at LIMIT_S seconds (default 450; it then ends the row
#       in flight and writes its JSON within KB_KILL_AFTER_S, default 20).
#       Writes into $OUT (default kb-device-out/): device.txt, table.md and
#       per level level<N>-both.json and level<N>-both.log (each well under
#       16 MiB: a row's messages are capped by the harness), and prints the
#       table (a line per level), what each call left behind and, last, per
#       level the validation median (the same candidate's own checks and
#       timing) and the row median (with the wrong candidate's checks).
#       KB_RUNS, KB_WARMUPS as for kb-levels.sh (default 10 and 2). First
#       it runs tests/gpu/test_kb_both.py (one small task through the
#       combined mode) and runs no level if that fails
#       (KB_SMOKE=0 skips it).
set -uo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: scripts/kb-device.sh prepare KERNELBENCH_DIR [BUILDDIR] |" \
    "run LEVELS [LIMIT_S]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
case $1 in
prepare)
  set -e
  kb=$2
  dir=${3:-build-cuda}
  for l in 1 2 3; do
    [ -d "$kb/level$l" ] || { echo "kb-device: $kb/level$l: no such folder" >&2; exit 2; }
  done
  scripts/gpu-prepare.sh "$dir"
  rm -rf .kbgpu
  mkdir -p .kbgpu/build/src/cli .kbgpu/kernelbench
  cp "$dir/src/cli/specgen" .kbgpu/build/src/cli/
  cp -r "$dir/lib" .kbgpu/build/lib
  for l in 1 2 3; do cp -r "$kb/level$l" .kbgpu/kernelbench/; done
  mib=$(du -sm .kbgpu | awk '{print $1}')
  echo "kb-device: .kbgpu/ holds $mib MiB (the program $(du -sh .kbgpu/build/src/cli/specgen |
    awk '{print $1}'), its libraries $(du -sh .kbgpu/build/lib | awk '{print $1}'))"
  if [ "$mib" -gt "${KB_CARRY_MAX_MIB:-60}" ]; then
    echo "kb-device: .kbgpu/ is over ${KB_CARRY_MAX_MIB:-60} MiB" >&2
    exit 1
  fi
  ;;
run)
  levels=$2
  limit=${3:-450}
  case $limit in '' | *[!0-9]*) usage ;; esac
  for l in $levels; do
    case $l in 1 | 2 | 3) ;; *) usage ;; esac
  done
  [ -x .kbgpu/build/src/cli/specgen ] ||
    { echo "kb-device: no .kbgpu/build/src/cli/specgen: run prepare first" >&2; exit 2; }
  export OUT=${OUT:-$PWD/kb-device-out}
  mkdir -p "$OUT"
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>&1 | tail -1
    nproc
  } >"$OUT/device.txt" 2>&1
  cat "$OUT/device.txt"
  # a first check of the combined mode on one small task, so
  # that a harness that fails does not spend the call on a level of errors
  if [ "${KB_SMOKE:-1}" != 0 ]; then
    python3 tests/gpu/test_kb_both.py 2>&1 | tail -5
    rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ]; then
      echo "kb-device: the combined mode's smoke test failed or was skipped" \
        "(exit $rc): no level run" >&2
      exit 1
    fi
  fi
  BUILD=.kbgpu/build KB_MODES=both KB_LIMIT_S=$limit KB_KILL_AFTER_S=${KB_KILL_AFTER_S:-20} \
    scripts/kb-levels.sh .kbgpu/kernelbench "$levels"
  rc=$?
  python3 scripts/kb_levels_table.py --medians "$OUT"
  exit $rc
  ;;
*) usage ;;
esac
