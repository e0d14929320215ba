#!/usr/bin/env bash
# kb-levels.sh KERNELBENCH_DIR [LEVELS]: the kernelbench harness checked on
# whole KernelBench levels on one GPU, in one command (docs/kernelbench.md).
#
# For each level (default "1 2 3"; KERNELBENCH_DIR holds level1/, level2/,
# level3/ as published) it runs `specgen bench --self-check both`: one
# validation per task checks every task's reference as its own candidate
# (expect ok at about 1.0x; the only one timed) and the reference with a
# slice of its output perturbed (expect nothing ok) against one set of
# reference outputs. After each bench call it reports any /dev/shm file,
# harness process or GPU context that outlived it (it removes nothing),
# then writes the results table.
#
# Needs BUILD/src/cli/specgen (BUILD=build by default; on a machine without
# specgen's libraries, BUILD/lib from scripts/gpu-prepare.sh), python3 with
# PyTorch and a CUDA device. KB_RUNS and KB_WARMUPS set the timed and
# warm-up runs (default 10 and 2), KB_LIMIT_S bounds each bench call
# (default 290 s; KB_LIMIT_WRONG_S a wrong-only call's), KB_KILL_AFTER_S
# how long a call stopped at its limit has to print its JSON before it is
# killed (default 60 s). KB_MODES="same wrong" runs the two modes as
# separate bench calls instead (or one of them alone). Output in $OUT
# (default kb-levels-out/), per level and mode (both, same, wrong):
#   level<N>-<mode>.json level<N>-<mode>.log table.md
set -uo pipefail
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: scripts/kb-levels.sh KERNELBENCH_DIR [LEVELS]" >&2
  exit 2
fi
kb=$(cd "$1" && pwd)
levels=${2:-1 2 3}
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD:-build}
out=${OUT:-$root/kb-levels-out}
mkdir -p "$out"
export SPECGEN_PYTHON_DIR="$root/python"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/specgen-kb-cache}
export LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
specgen="$root/$build/src/cli/specgen"
status=0
for l in $levels; do
  for mode in ${KB_MODES:-both}; do
    log="$out/level$l-$mode.log"
    : >"$log"
    before=$(ls /dev/shm | sort)
    t0=$(date +%s.%N)
    limit=${KB_LIMIT_S:-290}
    [ "$mode" = wrong ] && limit=${KB_LIMIT_WRONG_S:-$limit}
    # at the limit bench ends the row in flight and prints what it has
    timeout -k "${KB_KILL_AFTER_S:-60}" "$limit" "$specgen" bench "$kb/level$l" \
      --self-check "$mode" --json --runs "${KB_RUNS:-10}" --warmups "${KB_WARMUPS:-2}" \
      >"$out/level$l-$mode.json" 2>>"$log"
    rc=$?
    t1=$(date +%s.%N)
    sleep 1
    left=$(comm -13 <(echo "$before") <(ls /dev/shm | sort) | tr '\n' ' ')
    procs=$(pgrep -f specgen_kb.harness | tr '\n' ' ')
    ctxs=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr '\n' ' ')
    printf 'level %s %s: exit %s, %.1f s; left in /dev/shm: [%s]; harness processes: [%s]; GPU contexts: [%s]\n' \
      "$l" "$mode" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$left" "$procs" "$ctxs" | tee -a "$log"
    [ "$rc" = 0 ] || status=1
  done
done
python3 "$root/scripts/kb_levels_table.py" "$out" >"$out/table.md"
cat "$out/table.md"
exit $status
