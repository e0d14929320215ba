#!/usr/bin/env bash
# gpu-prepare.sh [BUILDDIR]: builds specgen for a GPU machine that lacks its
# libraries (default BUILDDIR build-cuda). The GPU-side programs link only libc
# and a static jansson; `specgen` itself (for `specgen run` and `specgen worker
# --device cuda:N` there) needs libuv, libcurl and the rest, so their shared
# objects, except the C library's own, are copied into BUILDDIR/lib, where
# scripts/gpu-check.sh finds them. Then copy or carry BUILDDIR with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-cuda}
scripts/build.sh "$dir"
mkdir -p "$dir/lib"
ldd "$dir/src/cli/specgen" | awk '$3 ~ /^\// {print $3}' | while read -r so; do
  case "$(basename "$so")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*) ;;
    *) cp -L "$so" "$dir/lib/" ;;
  esac
done
du -sh "$dir/lib" | awk '{print "gpu-prepare: " $1 " of shared libraries in '"$dir"'/lib"}'
