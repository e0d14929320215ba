#!/usr/bin/env bash
# quickstart.sh: sets up, builds and runs specgen's main job on built-in defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
exec build/src/cli/specgen eval --task hinge_loss tasks/cpu/hinge_loss/examples/ok-fast.c
