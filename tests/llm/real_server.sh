#!/usr/bin/env bash
# real_server.sh SPECGEN SCRIPTS_DIR: specgen against llama.cpp's real
# OpenAI-compatible server serving a real model (SmolLM2-135M-Instruct).
#
# The server is llama.cpp's own (server.cpp), prebuilt in PyPI's xllamacpp
# wheel: scripts/llama-server.sh installs it (scripts/test.sh does it first,
# cached by version) and starts it with llama-server's flags; the model comes
# from scripts/local-model.sh. This test starts one on a free loopback port,
# as the other integration tests start the built-in server, and speaks TAP.
# It skips, saying why, only when the wheel or the model is not there (no
# network to fetch them).
#
# llm check names the server and recommends the llamacpp profile; chat
# streams with usage and honours max_tokens; a cut stream really stops the
# server (its CPU time stops growing, read from /proc; /slots idle); server
# errors are reported with the server's message; a short `specgen run`
# produces generations with measured token counts and says why no fork
# fires (the model does not reason); a `--reasoning prompted` run forks from
# the model's prompted thinking and gets a candidate to the evaluator; and
# the run measures that a fork slows the main on one thread, and withholds
# forks (the fork budget, docs/core.md).
set -uo pipefail
SPECGEN=$1
SCRIPTS=$2
DATA=$(cd "$(dirname "$0")" && pwd)/data
n=0
failed=0
plan_done=false
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/# /'; done; }
check() { # check NAME CONDITION-EXIT-CODE [diagnostics...]
  local name=$1 rc=$2; shift 2
  if [ "$rc" -eq 0 ]; then ok "$name"; else not_ok "$name" "$@"; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

py=$("$SCRIPTS/llama-server.sh" python 2>&1) || skip_all "llama.cpp's server not installed ($py); scripts/llama-server.sh install installs it (needs PyPI)"
model=$(SPECGEN_MODEL_NO_FETCH=1 "$SCRIPTS/local-model.sh" smollm2 2>&1) || skip_all "model not fetched ($model); scripts/local-model.sh smollm2 fetches it (needs PyPI)"

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
# Two slots (a fork beside its reasoning) and one thread: on a busy 2-core
# machine two threads that spin-wait for each other decoded at 0.5 tokens/s
# where one thread made 19 (measured, docs/benchmarks.md). A fixed seed:
# the same request samples the same answer.
"$SCRIPTS/llama-server.sh" serve -m "$model" --host 127.0.0.1 --port "$port" -c 4096 \
  -np 2 -t 1 --seed 7 --metrics >"$work/server.log" 2>&1 &
server_pid=$!
profile=llamacpp
up=1
for _ in $(seq 1 600); do
  if curl -sf "$url/v1/models" >/dev/null 2>&1; then up=0; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.2
done
echo "1..11"
check "llama.cpp's server (xllamacpp) starts and answers /v1/models" $up "$(tail -5 "$work/server.log")"
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
[[ "$lim" == *"max_tokens honoured"* && "$lim" == *"max_completion_tokens honoured"* ]]
check "llm check: llama.cpp honours both limit fields" $? "$lim"

# 2. llm chat streams, honours max_tokens; usage measured.
"$SPECGEN" llm chat --llm "$url" --model smollm2 --profile "$profile" --max-tokens 16 \
  --temperature 0 --prompt "Write a C function that adds two integers." --json \
  >"$work/chat.json" 2>"$work/chat.err"
rc=$?
ct=$(jget "$work/chat.json" usage.completion_tokens 2>/dev/null)
est=$(jget "$work/chat.json" usage.estimated 2>/dev/null)
[ $rc -eq 0 ] && [ -n "$ct" ] && [ "$ct" -le 16 ] && [ "$ct" -ge 1 ] && [ "$est" = false ]
check "llm chat: streams, $ct <= 16 completion tokens, estimated=$est" $? \
  "exit $rc" "$(cat "$work/chat.err")" "$(head -c 1500 "$work/chat.json")"

# 3. A cut stream stops the server (the client closes the connection:
#    specgen cancels forks and reasonings so): a long answer cut by a 4 s
#    deadline while it decodes; the server's CPU time then stops growing and
#    /slots shows no slot busy.
printf 'Write a very long story about GPUs, at least 3000 words.\n' >"$work/cut_prompt.txt"
cut_s=4
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
slots=$(curl -s "$url/slots" | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin) if s.get("is_processing")))')
echo "# /slots after the cut: $slots processing"
awk -v u="$busy" -v a="$after" 'BEGIN { exit !(u > 0.05 && a < u / 4) }' && [ "$slots" = 0 ]
check "a cut stream frees the server (CPU ${busy} -> ${after} s/s, $slots slots busy)" $? "$(tail -3 "$work/cut.txt")"

# 4. Errors: a prompt beyond the context is refused with the server's own
#    message, and the command exits 1.
python3 -c 'print("tile the matrix " * 6000)' >"$work/huge.txt" # > 4096 tokens
"$SPECGEN" llm chat --llm "$url" --model smollm2 --profile "$profile" --max-tokens 8 \
  --retries 0 --timeout 120 --prompt-file "$work/huge.txt" >"$work/huge.out" 2>"$work/huge.err"
rc=$?
[ $rc -eq 1 ] && grep -q "HTTP 4[0-9][0-9]" "$work/huge.err"
check "a prompt beyond the context: exit 1 with the server's message" $? "exit $rc" "$(head -c 600 "$work/huge.err")"

# A run's generations, candidates and evaluations, from its store.
counts() { python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); q=lambda s: d.execute(s).fetchone()[0]
print(q("select count(*) from generations where outcome=\"completed\""), q("select count(*) from candidates"),
      q("select coalesce(sum(completion_estimated),0) from generations where outcome=\"completed\""),
      q("select count(*) from generations where kind=\"spec\""), q("select count(*) from evaluations"),
      q("select coalesce(json_extract(config_json, \"$.reasoning\"), \"\") from runs"))' "$1" 2>&1; }

# 5. A short specgen run, the model as it is: real generations, measured
#    token counts, and the reason no fork fires (SmolLM2 does not reason).
"$SPECGEN" run --llm "$url" --model smollm2 --profile "$profile" --task hinge_loss \
  --iterations 1 --max-tokens 256 --temperature 0.2 --devices cpu:0 --out "$work/run" \
  --runs 3 --warmups 1 --gen-deadline 240 --max-forks 2 --max-live-forks 1 \
  >"$work/run.out" 2>"$work/run.err"
rc=$?
read -r done_gens cands est_gens forks evals reasoning <<<"$(counts "$work/run/run.db")"
echo "# specgen run: exit $rc; completed generations $done_gens, candidates $cands, estimated counts $est_gens"
[ $rc -eq 0 ] && [ "${done_gens:-0}" -ge 1 ] && grep -q "streamed no reasoning" "$work/run.err"
check "specgen run: exit 0, generations completed, says why no fork fires" $? \
  "$(tail -20 "$work/run.err")"
[ "${est_gens:-1}" -eq 0 ]
check "specgen run: token counts measured (llama.cpp sends usage)" $? "$done_gens $cands $est_gens"

# 6. Prompted reasoning: the model is asked to think inside <think> first,
#    its answer starts inside the block, forks continue its thinking closed.
#    The prompts are short ones a 135M model can follow (tests/llm/data/
#    prompts_small); the task is a small one. At least one candidate must
#    reach the evaluator (a compile error counts: the model is tiny), and the
#    run and its store must say the reasoning was prompted.
#    A 135M model does not always close its code block in 400 tokens, so
#    up to three one-iteration runs, each at another temperature (another
#    sample), and the check needs one of them to get there.
# prompted_run NAME ITERATIONS TEMPERATURE MAX_FORKS: a prompted run of
# vector_add with the small prompts into $work/NAME (NAME.out, NAME.err);
# sets rc.
prompted_run() {
  rm -rf "${work:?}/$1"
  "$SPECGEN" run --llm "$url" --model smollm2 --profile "$profile" --reasoning prompted \
    --task "$DATA/../../eval/data/tasks/cpu/vector_add" --prompts "$DATA/prompts_small" \
    --iterations "$2" --max-tokens 400 --temperature "$3" --devices cpu:0 --out "$work/$1" \
    --runs 3 --warmups 1 --gen-deadline 300 --max-forks "$4" --max-live-forks 1 \
    >"$work/$1.out" 2>"$work/$1.err"
  rc=$?
}
tries=0
for temp in 0.3 0.6 0.9; do
  tries=$((tries + 1))
  prompted_run prun 1 "$temp" 4
  read -r done_gens cands est_gens forks evals reasoning <<<"$(counts "$work/prun/run.db")"
  echo "# prompted run at temperature $temp: exit $rc; completed generations $done_gens, forks $forks, candidates $cands, evaluations $evals"
  [ $rc -eq 0 ] && [ "${evals:-0}" -ge 1 ] && break
done
[ $rc -eq 0 ] && [ "${evals:-0}" -ge 1 ] && [ "$reasoning" = prompted ] \
  && grep -q "reasoning: prompted" "$work/prun.out" && ! grep -q "streamed no reasoning" "$work/prun.err"
check "prompted run: a candidate reached the evaluator (try $tries of 3); run and store say prompted" $? \
  "exit $rc; $done_gens $forks $cands $evals $reasoning" "$(tail -20 "$work/prun.err")" "$(tail -12 "$work/prun.out")"

# 7. The fork budget measured (fork-slowdown-max, 0.15 by default): the one
#    thread decodes the main and its fork in turn (and prefills the fork's
#    prompt), so a fork slows the main by far more than 15%; the run measures
#    it and lowers the cap to 0 (a fork_budget decision with cap 0, read
#    from the store: the summary's last state may be a re-probe). Ratios
#    only (the machine may be busy): the per-stream rate with the main
#    and a fork live is compared with the rate of the main alone, in the
#    same run. Up to two runs, each
#    another sample, until a fork was live long enough to measure.
budget() { python3 -c 'import json,sqlite3,sys
line=(json.load(open(sys.argv[1]+"/summary.json")).get("fork_budget") or {}).get("line", "-")
d=sqlite3.connect(sys.argv[1]+"/run.db")
rows=[json.loads(r[0]) for r in d.execute("select detail_json from decisions where kind=\"fork_budget\" and json_extract(detail_json, \"$.cap\") = 0")]
best=("-", "-")
for x in rows:
  r={q["streams"]: q for q in x["rates"]}
  m=x["mains"]
  if m in r and m + 1 in r and r[m + 1]["slowdown"] is not None and (best[1] == "-" or r[m + 1]["slowdown"] > best[1]): best=(r[m]["tokens_per_s"], r[m + 1]["slowdown"])
print(best[0], best[1], len(rows), line)' "$1" 2>&1; }
tries=0
for temp in 0.6 0.3; do
  tries=$((tries + 1))
  prompted_run brun 2 "$temp" 2
  read -r alone slow1 zero line <<<"$(budget "$work/brun")"
  echo "# fork budget run at temperature $temp: exit $rc; $line"
  [ $rc -eq 0 ] && [ "$slow1" != - ] && break
done
[ $rc -eq 0 ] && [ "$slow1" != - ] && awk -v s="$slow1" 'BEGIN { exit !(s > 0.15) }' \
  && [ "${zero:-0}" -ge 1 ]
check "fork budget: one fork slows the main by $slow1 (> 0.15) on one thread; the cap went to 0 (try $tries of 2)" $? \
  "exit $rc; alone $alone, slowdown $slow1, cap-0 decisions $zero" "$(tail -12 "$work/brun.err")"
exit $((failed > 0))
