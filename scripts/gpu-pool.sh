#!/usr/bin/env bash
# gpu-pool.sh: the elastic pool on every GPU of one host, in one command.
#
# Runs `specgen run` over the ten T1-T10 CUDA tasks (KernelBench Level 1) on
# all the host's GPUs (--devices cuda:0-N), with the built-in test server
# paced so that generation takes about the paper's share of an iteration
# (scaled down: reasoning of ~1,750 tokens at SPEED tokens/s against
# evaluations of a few seconds), once with speculation on and once off. Then:
#   - scripts/pool_report.py on both runs: utilization per GPU and in total,
#     the validation/profiling split over time, queue waits, early
#     terminations, end-to-end time, and the exclusivity check (no two
#     evaluations on one GPU at a time, from the store's device intervals);
#   - timing noise per GPU: one valid example kernel evaluated REPS times on
#     every GPU, its speedup's spread across GPUs in percent;
#   - the same campaign in `specgen sim`, parameterized with the real runs'
#     measured means, beside the real numbers.
#
# Like gpu-check.sh it expects specgen built for this machine (BUILD, default
# build-cuda, from scripts/gpu-prepare.sh: BUILD/src/cli/specgen, BUILD/lib and
# BUILD/tests/gpu/specgen-cuda-run). It runs as well on one GPU (a dry run of
# the same steps) or on CPU cores (DEVICES=cpu:0-1 TASKS=cpu, for a check
# without a GPU).
#
# Settings (environment): DEVICES (default: every GPU nvidia-smi lists),
# SPEED (test-server tokens/s, default 40), ITERATIONS (per task, default 4),
# BUDGET_S (wall seconds per task and run, default 200), REPS (noise
# evaluations per GPU, default 3), COMPILE_WORKERS (default: 2 per GPU, at
# least 4, at most the cores), TASKS (cuda or cpu, default cuda), KV_STORE=1 adds
# --kv-store to both runs where specgen has it.
# Output under $OUT (default gpu-pool-out/): env.txt, run-on.txt, run-off.txt,
# pool.txt, pool.json, noise.txt (raw runs, then the spread), sim.txt,
# runs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD:-build-cuda}
out=${OUT:-$root/gpu-pool-out}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
export SPECGEN_TASKS_DIR="$root/tasks"
export SPECGEN_CUDA_RUNNER="$root/$build/tests/gpu/specgen-cuda-run"
export SPECGEN_PYTHON_DIR="$root/python"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/specgen-gpu-cache}
export LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
specgen="$root/$build/src/cli/specgen"
[ -x "$specgen" ] || { echo "gpu-pool: $specgen not built (scripts/gpu-prepare.sh)" >&2; exit 2; }

kind=${TASKS:-cuda}
if [ -z "${DEVICES:-}" ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  [ "$ngpu" -gt 0 ] || { echo "gpu-pool: no GPU found (nvidia-smi -L); set DEVICES" >&2; exit 2; }
  DEVICES="cuda:0-$((ngpu - 1))"
fi
# The devices as a list, for the per-device noise check.
devlist=$(python3 - "$DEVICES" <<'PY'
import sys
out = []
for part in sys.argv[1].split(","):
    kind, _, ids = part.partition(":")
    lo, _, hi = ids.partition("-")
    out += [f"{kind}:{i}" for i in range(int(lo), int(hi or lo) + 1)]
print(" ".join(out))
PY
)
ndev=$(wc -w <<<"$devlist")
cores=$(nproc)
want=$(( 2 * ndev > 4 ? 2 * ndev : 4 ))
cw=${COMPILE_WORKERS:-$(( want < cores ? want : cores ))}
speed=${SPEED:-40}
iters=${ITERATIONS:-4}
budget=${BUDGET_S:-200}
reps=${REPS:-3}
# T1-T10: the paper's ten KernelBench Level 1 tasks.
tasks=(hinge_loss tensor3d_matmul tensor4d_matmul diag_matmul symmetric_matmul
       upper_triangular_matmul lower_triangular_matmul matmul_transposed_a
       matmul_transposed_b matmul_transposed_both)
task_args=()
for t in "${tasks[@]}"; do task_args+=(--task "$kind/$t"); done
kv=()
if [ -n "${KV_STORE:-}" ] && "$specgen" run --help 2>&1 | grep -q -- '--kv-store'; then
  kv=(--kv-store)
fi

{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,pci.bus_id \
    --format=csv,noheader 2>&1 || true
  nvidia-smi topo -m 2>&1 | head -n $((ndev + 2)) || true
  echo "devices: $DEVICES ($ndev)  cores: $cores  compile workers: $cw"
  echo "server speed: $speed tok/s  iterations: $iters  budget per task: $budget s"
} >"$out/env.txt"
cat "$out/env.txt"

status=0
runs=()
for spec in on off; do
  dir=/tmp/specgen-pool-$spec
  rm -rf "$dir"
  echo "== specgen run, spec $spec" | tee "$out/run-$spec.txt"
  timeout $((budget + 120)) "$specgen" run "${task_args[@]}" --devices "$DEVICES" \
    --compile-workers "$cw" --spec "$spec" --iterations "$iters" \
    --time-budget "$budget" --server-speed "$speed" --out "$dir" "${kv[@]}" \
    >>"$out/run-$spec.txt" 2>&1
  rc=$?
  echo "exit status: $rc" >>"$out/run-$spec.txt"
  tail -n 25 "$out/run-$spec.txt"
  [ "$rc" -eq 0 ] || status=1
  [ -f "$dir/run.db" ] && runs+=("$dir")
done
[ ${#runs[@]} -gt 0 ] || { echo "gpu-pool: no run produced a store" >&2; exit 1; }

python3 scripts/pool_report.py "${runs[@]}" | tee "$out/pool.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 scripts/pool_report.py --json "${runs[@]}" >"$out/pool.json"

# Timing noise per device: the same valid kernel, REPS times on each device.
example=$(ls "tasks/$kind/gemm_add_relu/examples/ok-fast".* "tasks/$kind/hinge_loss/examples/ok-fast".* \
          2>/dev/null | head -n 1)
etask=$(basename "$(dirname "$(dirname "$example")")")
{
  echo "noise: $example on each device, $reps evaluations each"
  for dev in $devlist; do
    for _ in $(seq "$reps"); do
      timeout 120 "$specgen" eval --task "$kind/$etask" --device "$dev" --json "$example" \
        2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(sys.argv[1], r["status"], r["speedup"])' "$dev"
    done
  done
} >"$out/noise.txt" 2>&1
python3 - "$out/noise.txt" <<'PY' | tee -a "$out/noise.txt"
import statistics, sys
lines = open(sys.argv[1]).read().splitlines()
print(lines[0])
per = {}
for l in lines[1:]:
    p = l.split()
    if len(p) == 3 and p[1] == "ok" and p[2] != "None":
        per.setdefault(p[0], []).append(float(p[2]))
    else:
        print("not ok:", l)
med = {d: statistics.median(v) for d, v in per.items()}
for d, v in per.items():
    print(f"{d:<8} median speedup {med[d]:.3f}  within-device spread "
          f"{100 * (max(v) - min(v)) / med[d]:.1f}%  ({len(v)} runs)")
if med:
    m = statistics.median(med.values())
    print(f"across devices: spread of the medians {100 * (max(med.values()) - min(med.values())) / m:.1f}%")
PY

# The same campaign in the simulator, from the spec-on run's measured means.
set_args=$(python3 scripts/pool_report.py --sim-set "${runs[0]}")
echo "== specgen sim $set_args" | tee "$out/sim.txt"
# shellcheck disable=SC2086
"$specgen" sim --configs baseline,full $set_args --set gen.rate_tok_s="$speed" \
  --set spec.rate_tok_s="$speed" 2>&1 | tee -a "$out/sim.txt"

tar -C /tmp -czf "$out/runs.tar.gz" "${runs[@]#/tmp/}" 2>/dev/null
exit $status
