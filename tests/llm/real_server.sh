#!/usr/bin/env bash
# real_server.sh SPECGEN SCRIPTS_DIR [native|python]: specgen against llama.cpp's
# real OpenAI-compatible servers, serving a real model (SmolLM2-135M-Instruct).
#
# The servers are built from llama-cpp-python's source package by
# scripts/llama-server.sh (scripts/test.sh does it first, cached by version);
# this test starts one on a free loopback port, as the other integration
# tests start the built-in server, and speaks TAP. It skips, saying why, only
# when the build or the model is not there (no network to fetch them).
#
#   native  llama.cpp's own llama-server: llm check names it and recommends
#           the llamacpp profile; chat streams with usage and honours
#           max_tokens; a cut stream really stops the server (its CPU time
#           stops growing, read from /proc); server errors are reported with
#           the server's message; a short `specgen run` produces candidates
#           with measured token counts.
#   python  llama-cpp-python's server (what issue reports measured): UUID
#           request ids are required and sent; max_completion_tokens is
#           ignored, max_tokens honoured; no usage comes, so counts are marked
#           estimated; whether a cut stream stops it is measured and must
#           agree with the llamacpp-python profile's claim.
set -uo pipefail
SPECGEN=$1
SCRIPTS=$2
WHICH=${3:-native}
n=0
failed=0
plan_done=false
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { # check NAME CONDITION-EXIT-CODE [diagnostics...]
  local name=$1 rc=$2; shift 2
  if [ "$rc" -eq 0 ]; then ok "$name"; else not_ok "$name" "$@"; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

native=$("$SCRIPTS/llama-server.sh" native 2>&1) || skip_all "llama.cpp server not built ($native); scripts/llama-server.sh build builds it (needs PyPI)"
model=$(SPECGEN_MODEL_NO_FETCH=1 "$SCRIPTS/llama-server.sh" model smollm2 2>&1) || skip_all "model not fetched ($model); scripts/llama-server.sh model smollm2 fetches it (needs PyPI)"
py=$("$SCRIPTS/llama-server.sh" python 2>&1) || py=""
libenv=$("$SCRIPTS/llama-server.sh" env)

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# CPU seconds (user + system) the server process has used so far.
cpu_s() { awk '{ print ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$server_pid/stat"; }
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
for k in sys.argv[2].split("."): d = d[int(k)] if isinstance(d, list) else d.get(k)
print("" if d is None else (json.dumps(d) if isinstance(d,(dict,list,bool)) else d))' "$1" "$2"; }

port=$(free_port)
url="http://127.0.0.1:$port"
if [ "$WHICH" = native ]; then
  # Two slots (a fork beside its reasoning) and one thread: on a busy
  # 2-core machine two threads that spin-wait for each other decoded at 0.5
  # tokens/s where one thread made 19 (measured, docs/benchmarks.md).
  "$native" -m "$model" --host 127.0.0.1 --port "$port" -c 4096 -np 2 -t 1 \
    --no-webui >"$work/server.log" 2>&1 &
  server_pid=$!
  profile=llamacpp
else
  [ -n "$py" ] || skip_all "llama-cpp-python's server not built; scripts/llama-server.sh build builds it"
  env "$libenv" "$py" -m llama_cpp.server --model "$model" --host 127.0.0.1 \
    --port "$port" --n_ctx 4096 --n_threads 1 --n_threads_batch 1 >"$work/server.log" 2>&1 &
  server_pid=$!
  profile=llamacpp-python
fi
up=1
for _ in $(seq 1 300); do
  if curl -sf "$url/v1/models" >/dev/null 2>&1; then up=0; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.2
done
echo "1..9"
check "$WHICH server starts and answers /v1/models" $up "$(tail -5 "$work/server.log")"
[ $up -eq 0 ] || exit 1

# 1. llm check: the first request succeeds; it names the server and profile.
"$SPECGEN" llm check --llm "$url" --model smollm2 --timeout 90 --max-tokens 48 --json \
  >"$work/check.json" 2>"$work/check.err"
rc=$?
check "llm check: usable, exit 0" $rc "$(cat "$work/check.err")" "$(head -c 2000 "$work/check.json")"
rec=$(jget "$work/check.json" profile)
server_probe=$(jget "$work/check.json" probes.server.detail)
[ "$rec" = "$profile" ]
check "llm check recommends the $profile profile ($server_probe)" $? "profile: $rec"
rid=$(jget "$work/check.json" probes.request_id.detail)
lim=$(jget "$work/check.json" probes.token_limit.detail)
canc=$(jget "$work/check.json" probes.cancel.status)
canc_d=$(jget "$work/check.json" probes.cancel.detail)
echo "# request_id: $rid"
echo "# token_limit: $lim"
echo "# cancel: $canc: $canc_d"
if [ "$WHICH" = native ]; then
  [[ "$lim" == *"max_tokens honoured"* && "$lim" == *"max_completion_tokens honoured"* ]]
  check "llm check: llama.cpp honours both limit fields" $? "$lim"
else
  [[ "$rid" == *"refused with HTTP 400"* && "$lim" == *"max_tokens honoured"* && \
     "$lim" == *"max_completion_tokens ignored"* ]]
  check "llm check: llama-cpp-python refuses non-UUID ids, ignores max_completion_tokens" $? "$rid" "$lim"
fi

# 2. llm chat streams, honours max_tokens; usage measured (native) or marked
#    estimated (python: it sends none).
"$SPECGEN" llm chat --llm "$url" --model smollm2 --profile "$profile" --max-tokens 16 \
  --temperature 0 --prompt "Write a C function that adds two integers." --json \
  >"$work/chat.json" 2>"$work/chat.err"
rc=$?
ct=$(jget "$work/chat.json" usage.completion_tokens 2>/dev/null)
est=$(jget "$work/chat.json" usage.estimated 2>/dev/null)
want_est=false; [ "$WHICH" = python ] && want_est=true
[ $rc -eq 0 ] && [ -n "$ct" ] && [ "$ct" -le 16 ] && [ "$ct" -ge 1 ] && [ "$est" = "$want_est" ]
check "llm chat: streams, $ct <= 16 completion tokens, estimated=$est" $? \
  "exit $rc" "$(cat "$work/chat.err")" "$(head -c 1500 "$work/chat.json")"

# 3. A cut stream stops the server (the client closes the connection:
#    specgen cancels forks and reasonings so). llama-server: a long answer
#    cut by a 4 s deadline while it decodes; its CPU time then stops growing
#    and /slots shows no slot busy. llama-cpp-python: a long prompt cut by a
#    1 s deadline during its prefill; its CPU time keeps growing (it looks for
#    a closed connection only after each chunk it sends), as its profile
#    says (a run warns there).
if [ "$WHICH" = native ]; then
  printf 'Write a very long story about GPUs, at least 3000 words.\n' >"$work/cut_prompt.txt"
  cut_s=4
else
  python3 -c 'print("tile the matrix " * 700)' >"$work/cut_prompt.txt"
  cut_s=1
fi
c0=$(cpu_s)
"$SPECGEN" llm chat --llm "$url" --model smollm2 --profile "$profile" --max-tokens 2000 \
  --temperature 1 --timeout "$cut_s" --retries 0 --prompt-file "$work/cut_prompt.txt" \
  >"$work/cut.txt" 2>&1
c1=$(cpu_s)
sleep 4
c2=$(cpu_s)
busy=$(awk -v a="$c0" -v b="$c1" -v t="$cut_s" 'BEGIN { printf "%.2f", (b - a) / t }')
after=$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", (b - a) / 4 }')
echo "# server CPU: ${busy} s/s before the cut, ${after} s/s in the 4 s after it"
if [ "$WHICH" = native ]; then
  slots=$(curl -s "$url/slots" | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin) if s.get("is_processing")))')
  echo "# /slots after the cut: $slots processing"
  awk -v u="$busy" -v a="$after" 'BEGIN { exit !(u > 0.05 && a < u / 4) }' && [ "$slots" = 0 ]
  check "a cut stream frees llama-server (CPU ${busy} -> ${after} s/s, $slots slots busy)" $? "$(tail -3 "$work/cut.txt")"
else
  # The profile's claim (SG_LLM_CANCEL_NONE) must match what the server does.
  awk -v a="$after" 'BEGIN { exit !(a >= 0.1) }'
  check "llama-cpp-python keeps working on a cut request, as its profile says (CPU ${busy} -> ${after} s/s)" $? \
    "if this fails, the server now stops on disconnect: update the llamacpp-python profile"
fi
# Let the python server finish what it still generates before going on.
if [ "$WHICH" = python ]; then
  for _ in $(seq 1 120); do
    a=$(cpu_s); sleep 1; b=$(cpu_s)
    awk -v a="$a" -v b="$b" 'BEGIN { exit !((b - a) < 0.2) }' && break
  done
fi

# 4. Errors: a prompt beyond the context is refused with the server's own
#    message, and the command exits 1.
python3 -c 'print("tile the matrix " * 6000)' >"$work/huge.txt" # > 4096 tokens
"$SPECGEN" llm chat --llm "$url" --model smollm2 --profile "$profile" --max-tokens 8 \
  --retries 0 --timeout 120 --prompt-file "$work/huge.txt" >"$work/huge.out" 2>"$work/huge.err"
rc=$?
if [ "$WHICH" = native ]; then
  [ $rc -eq 1 ] && grep -q "HTTP 4[0-9][0-9]" "$work/huge.err"
  check "a prompt beyond the context: exit 1 with the server's message" $? "exit $rc" "$(head -c 600 "$work/huge.err")"
else
  # llama-cpp-python answers 200, then fails inside the stream and closes
  # it without a word: the client can only say the stream was cut.
  [ $rc -eq 1 ] && grep -q "stream ended before the generation finished\|HTTP 4[0-9][0-9]" "$work/huge.err"
  check "a prompt beyond the context: exit 1, the stream's end reported" $? "exit $rc" "$(head -c 600 "$work/huge.err")"
fi

# 5. A short specgen run: real generations, candidates from the model's code,
#    failures (if any) printed with their cause.
"$SPECGEN" run --llm "$url" --model smollm2 --profile "$profile" --task hinge_loss \
  --iterations 2 --max-tokens 256 --temperature 0.2 --devices cpu:0 --out "$work/run" \
  --runs 3 --warmups 1 --gen-deadline 240 --max-forks 2 --max-live-forks 1 \
  >"$work/run.out" 2>"$work/run.err"
rc=$?
gens=$(python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); print(d.execute("select count(*) from generations where outcome=\"completed\"").fetchone()[0], d.execute("select count(*) from candidates").fetchone()[0], d.execute("select coalesce(sum(completion_estimated),0) from generations where outcome=\"completed\"").fetchone()[0])' "$work/run/run.db" 2>&1)
read -r done_gens cands est_gens <<<"$gens"
echo "# specgen run: exit $rc; completed generations $done_gens, candidates $cands, with estimated counts $est_gens"
[ $rc -eq 0 ] && [ "${done_gens:-0}" -ge 1 ] && grep -q "streamed no reasoning" "$work/run.err"
check "specgen run against $WHICH: exit 0, generations completed, says why no fork fires" $? \
  "$(tail -20 "$work/run.err")"
if [ "$WHICH" = native ]; then
  [ "${est_gens:-1}" -eq 0 ]
  check "specgen run: token counts measured (llama.cpp sends usage)" $? "$gens"
else
  grep -q "has no way to stop a generation" "$work/run.err" && [ "${est_gens:-0}" -ge 1 ]
  check "specgen run: warns that llama-cpp-python cannot be stopped; counts marked estimated" $? "$gens" "$(head -20 "$work/run.err")"
fi
exit $((failed > 0))
