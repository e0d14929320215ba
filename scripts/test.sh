#!/usr/bin/env bash
# test.sh [--sanitize]: sets up, builds and runs the whole test suite.
#   --sanitize  builds in build-san with AddressSanitizer (leaks included)
#               and UndefinedBehaviorSanitizer and runs the same tests there.
# GPU tests run too and skip, saying why, where no GPU exists.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

dir=build
opts=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-san
  opts=(-Db_sanitize=address,undefined -Db_lundef=false)
  export ASAN_OPTIONS=detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
scripts/build.sh "$dir" "${opts[@]}"

# llama.cpp's server (a prebuilt wheel) and a small real model for the
# real-server tests: installed once per version and kept in the user's cache
# (a second run only checks the stamp). Without network the tests skip and
# say why.
if ! scripts/llama-server.sh install || ! scripts/local-model.sh smollm2 >/dev/null; then
  echo "test.sh: llama.cpp's server or the model could not be had; the real-server tests will skip" >&2
fi

status=0
meson test -C "$dir" --print-errorlogs --num-processes 2 || status=$?

# One plain closing line, whatever runner printed above.
python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r == "OK": passed += 1
    elif r == "SKIP": skipped += 1
    else: failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
