#!/usr/bin/env bash
# build.sh [BUILDDIR [meson options...]]: configures (once) and builds specgen.
# Quiet when all is well; on a failure it prints the tool's whole output.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$dir/build.ninja" ]; then
  if ! meson setup "$dir" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "build: meson setup $dir failed" >&2
    exit 1
  fi
fi
if ! ninja -C "$dir" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build: ninja -C $dir failed" >&2
  exit 1
fi
