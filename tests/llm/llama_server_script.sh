#!/usr/bin/env bash
# llama_server_script.sh SCRIPTS_DIR: scripts/llama-server.sh's cache and
# usage, without building anything (the build itself is what
# real_server_native exercises): a stamped cache is reused without network
# or compiler (so `test.sh --sanitize` after `test.sh` pays nothing), an
# unbuilt cache is reported as such, a model that must not be fetched is
# named, bad usage exits 2. Speaks TAP.
set -uo pipefail
S=$1/llama-server.sh
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "1..5"

# A stamped cache: build returns at once, with no PATH to any tool, and
# leaves the cache as it was.
mkdir -p "$work/c1/llama-cpp-python-0.3.36"
echo 1234 >"$work/c1/llama-cpp-python-0.3.36/done-portable"
before=$(cd "$work/c1" && find . | sort)
out=$(SPECGEN_CACHE="$work/c1" PATH=/nonexistent /bin/bash "$S" build 2>&1)
rc=$?
after=$(cd "$work/c1" && find . | sort)
[ $rc -eq 0 ] && [ "$before" = "$after" ] && [ -z "$out" ]
check "a stamped build is reused: no tool run, nothing written" $? "exit $rc" "$out"

# Unbuilt: native and python say so and how to build.
out=$(SPECGEN_CACHE="$work/c2" bash "$S" native 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"not built (run: "*"build)"* ]]
check "native on an empty cache: exit 1, not built" $? "exit $rc" "$out"
out=$(SPECGEN_CACHE="$work/c2" bash "$S" python 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"not built"* ]]
check "python on an empty cache: exit 1, not built" $? "exit $rc" "$out"

# A model that must not be fetched (tests): the missing file named.
out=$(SPECGEN_CACHE="$work/c2" SPECGEN_MODEL_NO_FETCH=1 bash "$S" model smollm2 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"SmolLM2-135M-Instruct.Q4_1.gguf is not there"* ]]
check "model smollm2 with fetching off: exit 1, the file named" $? "exit $rc" "$out"

out=$(bash "$S" frobnicate 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"llama-server.sh build"* ]]
check "bad usage: exit 2 with the usage text" $? "exit $rc" "$out"
exit $((failed > 0))
