#!/usr/bin/env bash
# llm_replay.sh SPECGEN: record once, replay under any policy.
#   record  a `specgen run` keeps every generation the model streamed in
#           RUN_DIR/llm.jsonl.gz: one line per generation (mains and forks
#           as the summary counts them), its chunks with arrival times, its
#           usage and finish, and no API key.
#   serve   `specgen llm serve --replay` answers from the record by the
#           documented rule: a main with its recorded text, a fork at a
#           recorded prefix with that fork, at a prefix never recorded with
#           the nearest recorded fork short of it, just before the first
#           recorded fork with that one, far before it, at a prefix no main
#           wrote or for an unknown system message with a 404; paced at the recorded
#           times (a lower bound only: the machine may be slower).
#   trace   `specgen llm serve --trace FILE` streams the traces of a
#           JSON-lines file (a small one written here) in turn as the
#           reasoning of main generations, at --tokens-per-s (a lower
#           bound), the answer still a kernel.
#   run     `specgen run --replay DIR --replay-evals` says it is a replay;
#           a recording without speculation replayed with its options
#           reaches the same decisions, evaluations and best speedup, every
#           evaluation from the record; a recording with speculation
#           replays its mains' streams and serves forks from recorded ones,
#           and under --spec off runs the mains alone, without a model;
#           a main cut by max tokens and answered from its reasoning
#           (--answer-at-cap) is recorded as such, and its answer is found
#           again in a replay, and in a virtual-time replay
#           (`specgen replay`).
# Speaks TAP.
set -uo pipefail
SPECGEN=$1
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "1..22"
common=(--task hinge_loss --devices cpu:0 --iterations 2 --runs 3 --warmups 1 --tick 0.05
        --eval-timeout 5)
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

# ---- serve -----------------------------------------------------------------
"$SPECGEN" llm serve --replay "$work/rec" --replay-speed 0 >"$work/srv.out" 2>"$work/srv.err" &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ -s "$work/srv.out" ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/srv.out")
python3 - "$work/rec" "$url" >"$work/serve.out" 2>&1 <<'PY'
import gzip, json, sys, time, urllib.request, urllib.error
d, url = sys.argv[1], sys.argv[2]
L = [json.loads(l) for l in gzip.open(d + "/llm.jsonl.gz")]
m = [g for g in L if g["kind"] == "main"][0]
forks = sorted((g for g in L if g["kind"] == "spec" and g["parent_gen"] == m["gen"]),
               key=lambda g: g["prefix_bytes"])
reasoning = "".join(c[2] for c in m["chunks"] if c[1] == "r")
def ask(msgs, u=url):
    b = json.dumps({"model": "m", "messages": msgs, "stream": True}).encode()
    q = urllib.request.Request(u + "/v1/chat/completions", b, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(q) as f:
            text = ""
            for line in f.read().decode().split("\n\n"):
                if line.startswith("data: {"):
                    for ch in json.loads(line[6:]).get("choices", []):
                        dl = ch["delta"]
                        text += dl.get("reasoning_content") or dl.get("content") or ""
            return f.headers["X-Specgen-Example"], text
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())["error"]["message"]
sysu = [{"role": "system", "content": m["system"]}, {"role": "user", "content": m["user"]}]
def fork(n):
    return sysu + [{"role": "assistant", "content": "<think>\n" + reasoning[:n] + "\n</think>\n\n"}]
res = {}
ex, text = ask(sysu)
res["main"] = ex == "replay-it1-gen%d" % m["gen"] and text == "".join(c[2] for c in m["chunks"])
f0 = forks[0]
ex, text = ask(fork(f0["prefix_bytes"]))
res["fork_exact"] = ex == "replay-it1-gen%d" % f0["gen"] and text == "".join(c[2] for c in f0["chunks"])
# between two recorded forks: the one short of it
n = forks[1]["prefix_bytes"] - 1 if len(forks) > 1 else f0["prefix_bytes"] + 5
ex, _ = ask(fork(n))
res["fork_nearest_below"] = ex == "replay-it1-gen%d" % f0["gen"]
# just before the first recorded fork: that fork (the slack); far before it: 404
ex, _ = ask(fork(f0["prefix_bytes"] - 1))
res["fork_slack"] = ex == "replay-it1-gen%d" % f0["gen"]
far = f0["prefix_bytes"] - 257
ex, msg = ask(fork(far)) if far > 0 else (404, "no recorded fork (first fork too early)")
ex2, msg2 = ask([{"role": "system", "content": "another system"}, sysu[1]])
ex3, _ = ask(sysu + [{"role": "assistant", "content": "<think>\nnever written\n</think>\n\n"}])
res["refused"] = ex == 404 and "no recorded fork" in msg and ex2 == 404 and ex3 == 404
print(json.dumps(res))
print(msg, msg2)
PY
res=$(head -1 "$work/serve.out")
holds() { python3 -c 'import json,sys; sys.exit(not json.loads(sys.argv[1])[sys.argv[2]])' "$res" "$1"; }
holds main
check "serve: a main gets its recorded text" $? "$(cat "$work/serve.out")"
holds fork_exact
check "serve: a fork at a recorded prefix gets that fork" $? "$res"
holds fork_nearest_below
check "serve: a fork at a prefix never recorded gets the nearest recorded fork short of it" $? "$res"
holds fork_slack
check "serve: a fork just before the first recorded fork gets that fork" $? "$res"
holds refused
check "serve: far before every recorded fork, a prefix no main wrote, another system message: 404" $? "$(cat "$work/serve.out")"
kill $srv; wait $srv 2>/dev/null

# Paced: at --replay-speed 1 a main takes at least half its recorded time.
"$SPECGEN" llm serve --replay "$work/rec" >"$work/srv2.out" 2>/dev/null &
srv=$!
for _ in $(seq 1 100); do [ -s "$work/srv2.out" ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/srv2.out")
python3 - "$work/rec" "$url" >"$work/pace.out" 2>&1 <<'PY'
import gzip, json, sys, time, urllib.request
d, url = sys.argv[1], sys.argv[2]
m = [json.loads(l) for l in gzip.open(d + "/llm.jsonl.gz") if json.loads(l)["kind"] == "main"][0]
b = json.dumps({"model": "m", "stream": True, "messages": [
    {"role": "system", "content": m["system"]}, {"role": "user", "content": m["user"]}]}).encode()
t = time.time()
urllib.request.urlopen(urllib.request.Request(url + "/v1/chat/completions", b,
                       {"Content-Type": "application/json"})).read()
took, rec = time.time() - t, m["chunks"][-1][0] / 1e6
print(took, rec)
sys.exit(0 if took >= 0.5 * rec else 1)
PY
check "serve: the recorded pace (took, recorded s)" $? "$(cat "$work/pace.out")"
kill $srv; wait $srv 2>/dev/null

# ---- trace -----------------------------------------------------------------
python3 - "$work/traces.jsonl.gz" <<'PY'
import gzip, json, sys
with gzip.open(sys.argv[1], "wt") as f:
    f.write(json.dumps({"id": "a", "reasoning": "Okay, first trace. " + "Tile the loop by 64. " * 60}) + "\n")
    f.write(json.dumps({"id": "no-reasoning", "answer": "x"}) + "\n")
    f.write(json.dumps({"id": "b", "reasoning": "Second trace: vectorize the inner loop."}) + "\n")
PY
"$SPECGEN" llm serve --trace "$work/traces.jsonl.gz" --tokens-per-s 1000 >"$work/srv3.out" 2>/dev/null &
srv=$!
for _ in $(seq 1 100); do [ -s "$work/srv3.out" ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/srv3.out")
python3 - "$work/traces.jsonl.gz" "$url" >"$work/trace.out" 2>&1 <<'PY'
import gzip, json, sys, time, urllib.request
traces = [json.loads(l).get("reasoning") for l in gzip.open(sys.argv[1])]
traces = [t for t in traces if t]
def ask():
    b = json.dumps({"model": "m", "stream": True, "messages": [
        {"role": "user", "content": "Write the hinge_loss kernel."}]}).encode()
    t = time.time()
    with urllib.request.urlopen(urllib.request.Request(sys.argv[2] + "/v1/chat/completions", b,
                                {"Content-Type": "application/json"})) as f:
        r = c = ""
        for ev in f.read().decode().split("\n\n"):
            if ev.startswith("data: {"):
                for ch in json.loads(ev[6:]).get("choices", []):
                    r += ch["delta"].get("reasoning_content") or ""
                    c += ch["delta"].get("content") or ""
    return r, c, time.time() - t
got = [ask() for _ in range(3)]
ok = [g[0] for g in got] == [traces[0], traces[1], traces[0]] and all("```" in g[1] for g in got)
# the first trace is about 1300 bytes: over 400 tokens at 1000 tokens/s
paced = got[0][2] >= 0.2
print(json.dumps({"turns": ok, "paced": paced}))
print([g[2] for g in got])
PY
res=$(head -1 "$work/trace.out")
holds turns
check "trace: main generations reason with the file's traces in turn, answer with a kernel" $? \
  "$(cat "$work/trace.out")"
holds paced
check "trace: streamed at --tokens-per-s" $? "$(cat "$work/trace.out")"
kill $srv; wait $srv 2>/dev/null

# ---- run --replay ----------------------------------------------------------
# Same options, evaluations from the record: without speculation nothing
# races (no fork's evaluation against its main's stream), so the replay
# must reach the very same decisions and summary.
timeout 300 "$SPECGEN" run "${common[@]}" --spec off --server-speed 3000 --out "$work/off" \
  >/dev/null 2>"$work/off.err"
timeout 300 "$SPECGEN" run "${common[@]}" --spec off --replay "$work/off" --replay-evals \
  --replay-speed 0 --out "$work/off2" >"$work/off2.out" 2>"$work/off2.err"
rc=$?
[ $rc -eq 0 ] && grep -q "REPLAY of $work/off" "$work/off2.out" && grep -q "a REPLAY" "$work/off2.err"
check "run --replay: exit 0, says it is a replay" $? "exit $rc" "$(tail -8 "$work/off2.err")" \
  "$(cat "$work/off2.out")"
"$SPECGEN" show "$work/off2" | grep -q "REPLAY of $work/off" &&
  ! "$SPECGEN" show "$work/off" | grep -q REPLAY
check "show: a replayed run's summary says it is a replay, a live one's does not" $? \
  "$("$SPECGEN" show "$work/off2")"
facts() { # iteration outcomes, main tokens, best speedup, evaluations by status
  sqlite3 "$1/run.db" "SELECT number || ':' || end_reason FROM iterations ORDER BY number;
    SELECT completion_tokens FROM generations WHERE kind = 'main' ORDER BY id;
    SELECT phase || ':' || status || ':' || ifnull(round(speedup, 4), '-') FROM evaluations
      WHERE status != 'aborted' ORDER BY id;" | tr '\n' ' '
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workflows"][0]["best_speedup"])' \
    "$1/summary.json"
}
[ "$(facts "$work/off")" = "$(facts "$work/off2")" ]
check "run --replay, same options: the same decisions, evaluations and best speedup" $? \
  "recorded: $(facts "$work/off")" "replayed: $(facts "$work/off2")"
python3 - "$work/off" "$work/off2" <<'PY'
import json, sqlite3, sys
n = sqlite3.connect(sys.argv[1] + "/run.db").execute(
    "SELECT count(*) FROM evaluations WHERE status != 'aborted'").fetchone()[0]
r = json.load(open(sys.argv[2] + "/summary.json"))["replay"]
sys.exit(not (n > 0 and r["evaluations_from_record"] == n))
PY
check "run --replay --replay-evals: every evaluation from the record" $? \
  "$(grep -o '"evaluations_from_record": [0-9]*' "$work/off2/summary.json")"

# Speculation on, replayed under the recorded options at twice the pace: the
# mains stream their recordings, forks are served from the recorded ones.
timeout 300 "$SPECGEN" run "${common[@]}" --replay "$work/rec" --replay-evals \
  --replay-speed 2 --out "$work/same" >"$work/same.out" 2>"$work/same.err"
rc=$?
mains() {
  sqlite3 "$1/run.db" "SELECT group_concat(completion_tokens, ',') FROM (SELECT completion_tokens FROM generations WHERE kind = 'main' ORDER BY id)"
}
forks_ok() {
  sqlite3 "$1/run.db" "SELECT count(*) FROM generations WHERE kind = 'spec' AND outcome = 'completed'"
}
# A replayed main streams its recording; one that ends early (a fork's
# kernel accepted sooner than in the record: the replay's own timing)
# streams a prefix of it.
python3 - "$work/rec" "$work/same" >"$work/same.chk" 2>&1 <<'PY'
import gzip, json, sys
def mains(d):
    L = [json.loads(l) for l in gzip.open(d + "/llm.jsonl.gz")]
    return [(g["outcome"], "".join(c[2] for c in g["chunks"]))
            for g in sorted((g for g in L if g["kind"] == "main"), key=lambda g: g["gen"])]
rec, same = mains(sys.argv[1]), mains(sys.argv[2])
print([(o, len(t)) for o, t in rec], [(o, len(t)) for o, t in same])
ok = len(rec) == len(same) and all(
    t.startswith(u) and (o != "completed" or u == t) for (_, t), (o, u) in zip(rec, same))
sys.exit(not ok)
PY
[ $? -eq 0 ] && [ $rc -eq 0 ] && [ "$(forks_ok "$work/same")" -gt 0 ]
check "run --replay: the mains stream the recorded generations, forks the recorded forks" $? \
  "exit $rc" "recorded, replayed (outcome, bytes): $(cat "$work/same.chk")" \
  "main tokens recorded: $(mains "$work/rec")" "replayed: $(mains "$work/same")" \
  "forks completed: $(forks_ok "$work/same")"

timeout 300 "$SPECGEN" run "${common[@]}" --replay "$work/rec" --replay-evals \
  --replay-speed 0 --spec off --json --out "$work/nospec" >"$work/nospec.out" 2>"$work/nospec.err"
rc=$?
python3 - "$work/nospec/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s["workflows"][0]
assert s["replay"]["speed"] == 0, s["replay"]
assert w["generations_spec"] == 0 and w["generations_main"] == 2 and w["iterations"] == 2, w
PY
check "run --replay --spec off: another policy on the same streams, the mains alone" $? \
  "exit $rc" "$(tail -5 "$work/nospec.err")"
grep -q '"event": *"run_start".*"replay": *"' "$work/nospec.out" &&
  ! grep -q "REPLAY" "$work/rec.err" "$work/rec.out"
check "run --replay --json: the run_start event names the replay; a live run says no replay" $? \
  "$(grep run_start "$work/nospec.out")" "$(grep REPLAY "$work/rec.err" "$work/rec.out")"
# ---- the answer at the length cap ------------------------------------------
# Mains cut at 300 tokens inside their reasoning: each is answered from all
# its reasoning (spec off: not a fork); the record names the answer, and a
# replay with the same options finds it as a fork of its main's whole
# reasoning and reaches the same decisions.
timeout 300 "$SPECGEN" run "${common[@]}" --spec off --max-tokens 300 --server-speed 3000 \
  --out "$work/cap" >/dev/null 2>"$work/cap.err"
rc=$?
python3 - "$work/cap" >"$work/cap.out" 2>&1 <<'PY'
import gzip, json, sys
d = sys.argv[1]
L = [json.loads(l) for l in gzip.open(d + "/llm.jsonl.gz")]
w = json.load(open(d + "/summary.json"))["workflows"][0]
ans = [g for g in L if g.get("answer_at_cap")]
assert ans and all(g["kind"] == "spec" and not g["thinking"] for g in ans), ans
assert len(ans) == w["answers_at_cap"] and w["generations_spec"] == 0, w
for a in ans:
    m = [g for g in L if g["gen"] == a["parent_gen"] and g["kind"] == "main"][0]
    assert m["finish"] == "length", m["finish"]
    assert a["prefix_bytes"] == len("".join(c[2] for c in m["chunks"] if c[1] == "r")), a
print("ok", len(ans))
PY
check "record: answers at the length cap, named, from all their main's reasoning" $? \
  "exit $rc" "$(cat "$work/cap.out")" "$(tail -5 "$work/cap.err")"
timeout 300 "$SPECGEN" run "${common[@]}" --spec off --max-tokens 300 --replay "$work/cap" \
  --replay-evals --replay-speed 0 --out "$work/cap2" >/dev/null 2>"$work/cap2.err"
rc=$?
answers() { sqlite3 "$1/run.db" "SELECT count(*) FROM generations WHERE answer_at_cap AND outcome = 'completed'"; }
[ $rc -eq 0 ] && [ "$(answers "$work/cap")" -gt 0 ] &&
  [ "$(answers "$work/cap")" = "$(answers "$work/cap2")" ] &&
  [ "$(facts "$work/cap")" = "$(facts "$work/cap2")" ]
check "run --replay: the recorded answers at the cap are found; the same decisions" $? \
  "exit $rc" "answers: $(answers "$work/cap") then $(answers "$work/cap2")" \
  "recorded: $(facts "$work/cap")" "replayed: $(facts "$work/cap2")" "$(tail -5 "$work/cap2.err")"
timeout 120 "$SPECGEN" replay "$work/cap" --json >"$work/cap3.json" 2>"$work/cap3.err"
rc=$?
python3 - "$work/cap" "$work/cap3.json" >"$work/cap3.out" 2>&1 <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/run.db")
d = json.load(open(sys.argv[2]))
w = d["workflows"][0]
rec = [f"{n}:{r}" for n, r in db.execute("SELECT number, end_reason FROM iterations ORDER BY number")]
n = db.execute("SELECT count(*) FROM generations WHERE answer_at_cap").fetchone()[0]
assert w["answers_at_cap"] == n > 0 and w["generations_spec"] == 0, w
assert d["replay"]["forks_unrecorded"] == 0, d["replay"]
assert d["decisions"]["hinge_loss"]["iterations"] == rec, (d["decisions"], rec)
print("ok", n)
PY
check "replay (virtual time): the answers at the cap served from the record, not forks" $? \
  "exit $rc" "$(cat "$work/cap3.out")" "$(tail -3 "$work/cap3.err")"
exit $((failed > 0))
