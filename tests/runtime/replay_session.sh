#!/usr/bin/env bash
# replay_session.sh SPECGEN DATA: a real model's session, replayed in
# seconds, deterministic. DATA/smollm2_session holds a run of
# SmolLM2-135M-Instruct (llama.cpp's server, one thread, prompted reasoning,
# the small prompts and the vector_add test task) as that run recorded it:
# llm.jsonl.gz, run.db, summary.json (DATA/smollm2_session/README says how it
# was made). Replayed with the recorded options and the recorded
# evaluations, at no pacing, the run must reach the recorded decisions: the
# same iteration outcomes, the same main generations (their measured token
# counts), the same evaluations and best speedup; under --spec off, the same
# mains without a fork. No model runs: there is none here. Speaks TAP.
set -uo pipefail
SPECGEN=$1
DATA=$2
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy: replaying with its evaluations opens its store, which a newer
# specgen migrates, and the checkout's copy stays as recorded
cp -r "$DATA/smollm2_session" "$work/rec"
rec="$work/rec"
task="$DATA/../../eval/data/tasks/cpu/vector_add"
prompts="$DATA/../../llm/data/prompts_small"

echo "1..5"
# The recorded options (README), with the replay in place of the model.
opts=(--reasoning prompted --task "$task" --prompts "$prompts" --max-tokens 400
      --temperature 0.7 --seed 3 --devices cpu:0 --runs 3 --warmups 1 --gen-deadline 300
      --max-forks 4 --max-live-forks 1 --eval-timeout 10 --replay "$rec" --replay-evals
      --replay-speed 0)
iters=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workflows"][0]["iterations"])' \
  "$rec/summary.json")
start=$(date +%s)
timeout 120 "$SPECGEN" run "${opts[@]}" --iterations "$iters" --out "$work/same" \
  >"$work/same.out" 2>"$work/same.err"
rc=$?
took=$(($(date +%s) - start))
[ $rc -eq 0 ] && grep -q "REPLAY of $rec" "$work/same.out"
check "the recorded session replays, and says so (${took} s)" $? "exit $rc" \
  "$(tail -8 "$work/same.err")"

facts() { # iteration outcomes, main tokens, evaluations, best speedup
  sqlite3 "$1/run.db" "SELECT number || ':' || end_reason FROM iterations ORDER BY number;
    SELECT completion_tokens FROM generations WHERE kind = 'main' ORDER BY id;
    SELECT phase || ':' || status || ':' || ifnull(round(speedup, 4), '-') FROM evaluations
      WHERE status != 'aborted' ORDER BY id;" | tr '\n' ' '
  python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["workflows"][0]; print(w["best_speedup"], w["generations_main"])' \
    "$1/summary.json"
}
[ "$(facts "$rec")" = "$(facts "$work/same")" ]
check "same options, recorded evaluations: the recorded decisions" $? \
  "recorded: $(facts "$rec")" "replayed: $(facts "$work/same")"

# The model's own text came back: every candidate of the replay is one the
# recorded run extracted from the same streams.
# (by their text: the store's key of a kernel changed with its normalization)
cands() { echo "$(sqlite3 "$1/run.db" "SELECT count(*) FROM candidates")" \
  "$(sqlite3 "$1/run.db" "SELECT source FROM candidates ORDER BY source" | sha1sum | cut -c1-16)"; }
[ "$(cands "$rec" | cut -d' ' -f1)" -gt 0 ] && [ "$(cands "$rec")" = "$(cands "$work/same")" ]
check "the same kernels, from the real model's recorded text" $? \
  "recorded: $(cands "$rec")" "replayed: $(cands "$work/same")"

timeout 120 "$SPECGEN" run "${opts[@]}" --iterations "$iters" --spec off --out "$work/off" \
  >"$work/off.out" 2>"$work/off.err"
rc=$?
mains() { sqlite3 "$1/run.db" "SELECT completion_tokens FROM generations WHERE kind = 'main' ORDER BY id" | tr '\n' ' '; }
spec=$(sqlite3 "$work/off/run.db" "SELECT count(*) FROM generations WHERE kind = 'spec'")
[ $rc -eq 0 ] && [ "$spec" -eq 0 ] && [ "$(mains "$rec")" = "$(mains "$work/off")" ]
check "--spec off: the recorded mains, no fork, no model" $? "exit $rc, forks $spec" \
  "recorded mains: $(mains "$rec")" "replayed: $(mains "$work/off")" "$(tail -5 "$work/off.err")"
# The same comparison as a user runs it on a campaign: bench/replay_compare.py
# replays the record under the recorded options and two others (from the
# root of the checkout, where the recorded run named its task and prompts).
(cd "$DATA/../../.." && python3 bench/replay_compare.py "$rec" --specgen "$SPECGEN" \
  --speed 0 --variants same,spec-off,none --out "$work/cmp" --json) >"$work/cmp.json" \
  2>"$work/cmp.err"
rc=$?
python3 - "$work/cmp.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d, runs = r["decisions"], r["runs"]
assert d["same"]["tasks_differing"] == [], d
assert runs["replay spec-off"]["generations_spec"] == 0, runs["replay spec-off"]
assert runs["replay same"]["generations_main"] == runs["recorded"]["generations_main"]
PY
ok=$?
check "bench/replay_compare.py: the recorded decisions under the recorded options" \
  $((rc != 0 || ok != 0)) "exit $rc" "$(tail -5 "$work/cmp.err")"
exit $((failed > 0))
