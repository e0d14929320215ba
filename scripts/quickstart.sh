#!/usr/bin/env bash
# quickstart.sh: sets up, builds and runs specgen's main job on built-in
# defaults: `specgen run` over the ten built-in CPU tasks, with the built-in
# test server playing the model (no GPU, no external LLM). Under a minute on
# two cores; it ends with the run's summary. Extra arguments go to
# `specgen run` (e.g. --iterations 5, --spec off, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
devices=cpu:0
if [ "$(nproc)" -ge 2 ]; then
  devices=cpu:0-1
fi
tasks=()
for dir in tasks/cpu/*/; do
  tasks+=(--task "$(basename "$dir")")
done
exec build/src/cli/specgen run "${tasks[@]}" --devices "$devices" --iterations 3 \
  --runs 10 --warmups 2 --eval-timeout 10 "$@"
