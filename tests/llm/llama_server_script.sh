#!/usr/bin/env bash
# llama_server_script.sh SCRIPTS_DIR: scripts/llama-server.sh's and
# scripts/local-model.sh's cache and usage, without the network (the install
# and the server themselves are what real_server exercises): a stamped
# install is reused with no tool run (so `test.sh --sanitize` after `test.sh`
# pays nothing), an empty cache is reported as such, a model that must not be
# fetched is named, bad usage exits 2. Speaks TAP.
set -uo pipefail
S=$1/llama-server.sh
M=$1/local-model.sh
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "1..8"
version=$(sed -n 's/^VERSION=//p' "$S")

# A stamped install: install returns at once, with no PATH to any tool, and
# leaves the cache as it was.
mkdir -p "$work/c1/xllamacpp-$version"
echo 11 >"$work/c1/xllamacpp-$version/done"
before=$(cd "$work/c1" && find . | sort)
out=$(SPECGEN_CACHE="$work/c1" PATH=/nonexistent /bin/bash "$S" install 2>&1)
rc=$?
after=$(cd "$work/c1" && find . | sort)
[ $rc -eq 0 ] && [ "$before" = "$after" ] && [ -z "$out" ]
check "a stamped install is reused: no tool run, nothing written" $? "exit $rc" "$out"

# Not installed: python says so and how to install.
out=$(SPECGEN_CACHE="$work/c2" bash "$S" python 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"not installed (run: "*"install)"* ]]
check "python on an empty cache: exit 1, not installed" $? "exit $rc" "$out"

# The launcher refuses a flag it does not know (never ignored) and needs a
# model; its usage names llama-server's flags.
out=$(python3 "$1/llama_server.py" -m x.gguf --frobnicate 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"--frobnicate"* ]]
check "the launcher: an unknown flag is an error (exit 2)" $? "exit $rc" "$out"
out=$(python3 "$1/llama_server.py" --help 2>&1)
rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"--ctx-size"* && "$out" == *"--parallel"* && "$out" == *"--threads"* ]]
check "the launcher: --help lists llama-server's flags" $? "exit $rc" "$out"

# Models that must not be fetched (tests): the missing file named.
out=$(SPECGEN_CACHE="$work/c2" SPECGEN_MODEL_NO_FETCH=1 bash "$M" smollm2 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"SmolLM2-135M-Instruct.Q4_1.gguf is not there"* ]]
check "local-model smollm2 with fetching off: exit 1, the file named" $? "exit $rc" "$out"
out=$(SPECGEN_CACHE="$work/c2" SPECGEN_MODEL_NO_FETCH=1 bash "$M" qwen-coder 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"qwen2.5-coder-1.5b-instruct-q4_k_m.gguf is not there"* ]]
check "local-model qwen-coder with fetching off: exit 1, the file named" $? "exit $rc" "$out"

# A cached model is printed without a fetch.
mkdir -p "$work/c3/models"
echo GGUF >"$work/c3/models/SmolLM2-135M-Instruct.Q4_1.gguf"
out=$(SPECGEN_CACHE="$work/c3" PATH=/nonexistent /bin/bash "$M" smollm2 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "$work/c3/models/SmolLM2-135M-Instruct.Q4_1.gguf" ]
check "a cached model: its path, no tool run" $? "exit $rc" "$out"

out1=$(bash "$S" frobnicate 2>&1)
rc1=$?
out2=$(bash "$M" frobnicate 2>&1)
rc2=$?
[ $rc1 -eq 2 ] && [[ "$out1" == *"llama-server.sh install"* ]] && [ $rc2 -eq 2 ] \
  && [[ "$out2" == *"local-model.sh qwen-coder"* ]]
check "bad usage: exit 2 with the usage text" $? "exit $rc1 $rc2" "$out1" "$out2"
exit $((failed > 0))
