#!/usr/bin/env bash
# llm_replay.sh SPECGEN: record once, replay under any policy (issue 35).
#   record  a `specgen run` keeps every generation the model streamed in
#           RUN_DIR/llm.jsonl.gz: one line per generation (mains and forks
#           as the summary counts them), its chunks with arrival times, its
#           usage and finish, and no API key.
# Speaks TAP.
set -uo pipefail
SPECGEN=$1
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "1..4"
common=(--task hinge_loss --devices cpu:0 --iterations 2 --runs 3 --warmups 1 --tick 0.05)
OPENAI_API_KEY=sk-never-recorded-4242 timeout 300 "$SPECGEN" run "${common[@]}" \
  --server-speed 3000 --out "$work/rec" >"$work/rec.out" 2>"$work/rec.err"
rc=$?
[ $rc -eq 0 ] && [ -s "$work/rec/llm.jsonl.gz" ]
check "record: the run keeps llm.jsonl.gz" $? "exit $rc" "$(tail -5 "$work/rec.err")"

python3 - "$work/rec" >"$work/check.out" 2>&1 <<'PY'
import gzip, json, sys
d = sys.argv[1]
lines = [json.loads(l) for l in gzip.open(d + "/llm.jsonl.gz")]
s = json.load(open(d + "/summary.json"))["workflows"][0]
mains = [g for g in lines if g["kind"] == "main"]
forks = [g for g in lines if g["kind"] == "spec"]
assert len(mains) == s["generations_main"], (len(mains), s)
assert len(forks) == s["generations_spec"], (len(forks), s)
for g in lines:
    assert g["outcome"] in ("completed", "cancelled", "failed"), g["outcome"]
    ats = [c[0] for c in g["chunks"]]
    assert ats == sorted(ats) and all(c[1] in "rc" for c in g["chunks"]), g["gen"]
    if g["outcome"] == "completed":
        assert g["usage"]["completion_tokens"] > 0 and g["finish"], g
for f in forks:
    p = [m for m in mains if m["gen"] == f["parent_gen"]][0]
    r = "".join(c[2] for c in p["chunks"] if c[1] == "r")
    assert len(r) >= f["prefix_bytes"] > 0, (len(r), f["prefix_bytes"])
print("ok", len(mains), len(forks))
PY
check "record: one line per generation, chunks in order, usage, forks tied to their mains" \
  $? "$(cat "$work/check.out")"
main=$(python3 -c 'import gzip,json,sys
for l in gzip.open(sys.argv[1]):
    g=json.loads(l)
    if g["kind"]=="main": print("".join(c[2] for c in g["chunks"] if c[1]=="c")); break' \
  "$work/rec/llm.jsonl.gz")
case $main in *'```'*) true;; *) false;; esac
check "record: a main's content holds its kernel" $? "$main"
! zgrep -q "sk-never-recorded-4242" "$work/rec/llm.jsonl.gz"
check "record: no API key in the record" $?
exit $((failed > 0))
