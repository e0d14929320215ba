#!/usr/bin/env bash
# fuzz.sh [SECONDS]: builds the libFuzzer targets with clang and runs each one
# for SECONDS (default 30) from its seed corpus in tests/fuzz/corpus/<name>.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
scripts/setup.sh
# The library is instrumented too (fuzzer-no-link), so coverage guides the
# fuzzer through the parsers themselves, not only through the target file.
CC=clang scripts/build.sh build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
  -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link
shopt -s nullglob
ran=0
for t in build-fuzz/tests/fuzz/fuzz_*; do
  [ -f "$t" ] && [ -x "$t" ] || continue
  name=$(basename "$t")
  work=$(mktemp -d)
  corpus=()
  [ -d "tests/fuzz/corpus/$name" ] && corpus=("tests/fuzz/corpus/$name")
  echo "fuzz: $name for ${secs}s"
  # New inputs go to a scratch directory; the seed corpus is only read.
  # A crash prints the fuzzer's report (input, stack) and fails the script.
  log="$work.log"
  if ! "$t" -max_total_time="$secs" -print_final_stats=1 "$work" "${corpus[@]}" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $name FAILED (the crashing input is named above)" >&2
    exit 1
  fi
  grep -E "^stat::(number_of_executed_units|new_units_added)" "$log" || true
  rm -rf "$work" "$log"
  ran=$((ran + 1))
done
echo "fuzz: $ran targets ran clean"
