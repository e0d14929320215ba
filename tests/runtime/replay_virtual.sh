#!/usr/bin/env bash
# replay_virtual.sh SPECGEN DATA ROOT: `specgen replay DIR`, a recorded run
# replayed in virtual time (docs/usage.md, "Replaying in virtual time"), on
# the records kept in DATA: the real model's session (smollm2_session, with
# forks) and two sessions of the built-in test server, one with speculation
# (testserver_spec_on: token forks, an idle-device fork, deduplicated and
# withdrawn evaluations) and one without (testserver_spec_off). Each is
# replayed from a copy (the replay opens its store), from ROOT (where the
# SmolLM2 run named its task and prompts).
#   same     with the recorded options, the record's decisions (iteration
#            ends, main generations' tokens, forks and their prefixes,
#            evaluations), in seconds, and the same output byte for byte
#            on a second replay (on all three records)
#   label    the text says REPLAY and which figures come from its model of
#            time; --json has the summary's keys and "replay"
#   other    --spec off: the recorded mains, no fork, every evaluation from
#            the record or counted "not in the record"; --pace solo: the
#            mains' gaps with a fork live replaced (counted), e2e no longer
#   budget   a run recorded here on the test server serving one stream at
#            a time, whose measured fork budget lowered its cap: the
#            recorded caps applied at their times reach the record's
#            decisions, an infrastructure error the loaded machine gave an
#            evaluation included (the record's evaluations of a kernel in
#            the order they came: one evaluated again after such an error
#            gets its second outcome the second time); --fork-slowdown-max 0
#            does not apply them, and says so
#   stopped  a run interrupted while it ran: the replay stops where the
#            record ends, with the record's decisions, generations and end
#            to end, and says the run was interrupted
#   resumed  that interrupted run resumed (`specgen run --resume`) to its
#            end: the record holds the tries the stop cut and the ones sent
#            again after the resume; the replay stops where the run was
#            stopped and resumes where it was resumed, and reaches the
#            record's decisions and summary; in real time (`specgen run
#            --replay`) the summary says the replay ran through the stop
#   again    a record where a kernel's evaluation failed on the machine
#            (an infrastructure error) and its copy a later iteration wrote
#            was evaluated again: the replay gives the first ask the error
#            and the second the second outcome, each at its recorded time
#   failed   a record whose run never ended and wrote no summary (it
#            failed), its last event an evaluation's outcome: replayed up
#            to that event, included
#   changed  a record whose kernel an older specgen extracted otherwise
#            (its text differs from what this one extracts from the same
#            generation): "not in the record", counted, with that recorded
#            kernel's times, so the rest of the replay keeps the record's
#   missing  a record whose evaluations are gone: each is "not in the
#            record", counted, never invented
#   usage    bad flags and a directory without a record exit 2
# Speaks TAP.
set -uo pipefail
SPECGEN=$1
DATA=$2
ROOT=$3
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$ROOT" || exit 1
for r in smollm2_session testserver_spec_on testserver_spec_off; do
  mkdir -p "$work/$r" && cp "$DATA/$r/llm.jsonl.gz" "$DATA/$r/run.db" "$work/$r/"
done

echo "1..20"
# The record's decisions, per task, as the replay's --json writes them.
recorded() {
  python3 - "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/run.db")
out = {}
for wid, task in db.execute("SELECT id, task FROM workflows ORDER BY id"):
    q = lambda sql: db.execute(sql, (wid,)).fetchall()
    out[task] = {
        "iterations": [f"{n}:{r}" for n, r in q(
            "SELECT number, end_reason FROM iterations WHERE workflow_id = ? "
            "AND end_reason IS NOT NULL ORDER BY number")],
        "mains": [t for (t,) in q("SELECT completion_tokens FROM generations "
                                  "WHERE workflow_id = ? AND kind = 'main' ORDER BY id")],
        "forks": [f"{n}:{p}" for n, p in q(
            "SELECT i.number, g.prefix_bytes FROM generations g JOIN iterations i "
            "ON i.id = g.iteration_id WHERE g.workflow_id = ? AND g.kind = 'spec' ORDER BY g.id")],
        "evaluations": sorted([p, s, None if x is None else round(x, 3)] for p, s, x in q(
            "SELECT e.phase, e.status, e.speedup FROM evaluations e JOIN candidates c "
            "ON c.id = e.candidate_id WHERE c.workflow_id = ? AND e.status != 'aborted'")),
    }
print(json.dumps(out, sort_keys=True))
PY
}
# The replay's summary ($1) against the live run's ($2): each workflow's
# counts and best speedup, and the tokens; then the asserts in $3 (on s, live).
same_summary() {
  python3 -c 'import json, sys
s, live = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for a, b in zip(s["workflows"], live["workflows"]):
    for k in ("task", "iterations", "generations_main", "generations_spec", "early_terminations",
              "profiling_feedback", "best_speedup"):
        assert a[k] == b[k], (k, a, b)
for k in ("completion", "cached"):
    assert s["tokens"][k] == live["tokens"][k], (k, s["tokens"], live["tokens"])
exec(sys.argv[3])' "$1" "$2" "$3" 2>"$work/same_summary.err"
}
replayed() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["decisions"]
for t in d:
    d[t]["evaluations"] = sorted([p, s, None if x is None else round(x, 3)]
                                 for p, s, x in d[t]["evaluations"])
print(json.dumps(d, sort_keys=True))' "$1"
}

for r in smollm2_session testserver_spec_on testserver_spec_off; do
  start=$(date +%s%N)
  timeout 60 "$SPECGEN" replay "$work/$r" --json >"$work/$r.a.json" 2>"$work/$r.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  timeout 60 "$SPECGEN" replay "$work/$r" --json >"$work/$r.b.json" 2>>"$work/$r.err"
  [ $rc -eq 0 ] && [ "$(recorded "$work/$r")" = "$(replayed "$work/$r.a.json")" ]
  check "$r: the recorded options reach the record's decisions (${ms} ms)" $? "exit $rc" \
    "recorded: $(recorded "$work/$r")" "replayed: $(replayed "$work/$r.a.json" 2>&1)" \
    "$(tail -3 "$work/$r.err")"
  cmp -s "$work/$r.a.json" "$work/$r.b.json"
  check "$r: a second replay prints the same, byte for byte" $?
done

"$SPECGEN" replay "$work/testserver_spec_on" >"$work/text.out" 2>&1
grep -q "^REPLAY of .* in virtual time" "$work/text.out" &&
  grep -q "come from the replay's model" "$work/text.out" &&
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
r = s["replay"]
assert r["mode"] == "virtual time" and r["clock"] == "recorded", r
assert r["token_forks"] > 0 and r["token_forks"] == s["workflows"][0]["generations_spec"], r
assert r["evaluations_not_in_record"] == 0 and r["evaluations_from_record"] > 0, r
for k in ("e2e_s", "workflows", "utilization", "tokens"): assert k in s, k
w = s["workflows"][0]
for k in ("task", "iterations", "best_speedup", "profiling_feedback", "early_terminations",
          "generations_main", "generations_spec", "deduplicated"): assert k in w, k
assert w["deduplicated"] > 0, w' "$work/testserver_spec_on.a.json"
check "labelled a replay: its text and its summary's replay object (token forks counted)" $? \
  "$(head -5 "$work/text.out")"

"$SPECGEN" replay "$work/testserver_spec_on" --spec off --json >"$work/off.json" 2>"$work/off.err"
rc=$?
python3 -c 'import json, sys
s, rec = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
r, w = s["replay"], s["workflows"][0]
d = s["decisions"]["hinge_loss"]
assert r["clock"] == "relative" and w["generations_spec"] == 0 and d["forks"] == [], (r, w)
assert d["mains"] == rec["hinge_loss"]["mains"], (d["mains"], rec)
n = len([e for e in d["evaluations"] if e[1] != "infra_error"])
assert n + r["evaluations_not_in_record"] == len(d["evaluations"]), r' \
  "$work/off.json" "$(recorded "$work/testserver_spec_on")"
check "--spec off: the recorded mains, no fork, evaluations from the record or counted" \
  $((rc != 0 || $? != 0)) "exit $rc" "$(tail -3 "$work/off.err")"

"$SPECGEN" replay "$work/testserver_spec_on" --spec off --pace solo --json \
  >"$work/solo.json" 2>"$work/solo.err"
rc=$?
python3 -c 'import json, sys
solo, rec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
r = solo["replay"]
assert r["pace"] == "solo" and r["main_gaps_with_forks"] > 0 and r["solo_gap_s"] > 0, r
off = json.load(open(sys.argv[3]))
assert solo["e2e_s"] <= off["e2e_s"], (solo["e2e_s"], off["e2e_s"])' \
  "$work/solo.json" "$work/testserver_spec_on.a.json" "$work/off.json"
check "--pace solo: the gaps the forks slowed replaced by the solo pace" \
  $((rc != 0 || $? != 0)) "exit $rc" "$(tail -3 "$work/solo.err")"

# The decisions with speedups to one decimal: a speedup recomputed from the
# recorded times can differ in its last digit.
rounded() {
  python3 -c 'import json, sys
d = json.load(sys.stdin)
for t in d:
    d[t]["evaluations"] = sorted([e[0], e[1], None if e[2] is None else round(e[2], 1)]
                                 for e in d[t]["evaluations"])
print(json.dumps(d, sort_keys=True))'
}
# Recorded here: a fork slows the mains it shares the one
# stream with by half, so the measured budget lowers the cap to 0.
timeout 300 "$SPECGEN" run --task hinge_loss --devices cpu:0-1 --iterations 3 \
  --out "$work/contention" --quiet --server-speed 300 --server-concurrency 1 \
  --runs 3 --warmups 1 --tick 0.05 --eval-timeout 5 --hang-grace 2 \
  >"$work/contention.log" 2>&1
rc=$?
caps=$(sqlite3 "$work/contention/run.db" \
  "SELECT count(*) FROM decisions WHERE kind = 'fork_budget' AND json_extract(detail_json, '$.cap') = 0")
[ $rc -eq 0 ] && [ "${caps:-0}" -ge 1 ]
check "a contention run recorded, its measured cap lowered to 0" $? "exit $rc, caps $caps" \
  "$(tail -5 "$work/contention.log")"
"$SPECGEN" replay "$work/contention" --json >"$work/contention.json" 2>"$work/contention.err"
rc=$?
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["replay"]
assert r["fork_caps_recorded"] >= 1 and r["fork_caps_applied"] >= 1, r' "$work/contention.json" &&
  [ $rc -eq 0 ] &&
  [ "$(recorded "$work/contention" | rounded)" = "$(replayed "$work/contention.json" | rounded)" ]
check "contention: the recorded caps applied reach the record's decisions" $? "exit $rc" \
  "recorded: $(recorded "$work/contention")" \
  "replayed: $(replayed "$work/contention.json" 2>&1)" "$(tail -3 "$work/contention.err")"
"$SPECGEN" replay "$work/contention" --fork-slowdown-max 0 --json >"$work/nocaps.json" \
  2>"$work/nocaps.err" &&
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["replay"]
assert r["fork_caps_recorded"] >= 1 and r["fork_caps_applied"] == 0, r' "$work/nocaps.json" &&
  "$SPECGEN" replay "$work/contention" --fork-slowdown-max 0 >"$work/nocaps.txt" 2>&1 &&
  grep -q "recorded caps not applied (the options change the budget" "$work/nocaps.txt"
check "--fork-slowdown-max 0: the recorded caps not applied, and it says so" $? \
  "$(tail -3 "$work/nocaps.err")"

# check's report on a replay of the run in $work/stopped: WHAT STATUS RC
# JSON ERR (the replay's output and stderr), the record's and the replay's
# decisions.
check_stopped() {
  check "$1" "$2" "exit $3" "recorded: $(recorded "$work/stopped")" \
    "replayed: $(replayed "$4" 2>&1)" "$(tail -3 "$5")" "$(tail -1 "$work/same_summary.err")"
}

# Interrupted while its generations and evaluations ran. --foreground: one
# SIGINT, to the run only (timeout otherwise sends it to its process group
# as well, and a second SIGINT stops the run at once, unrecorded).
timeout --foreground 120 "$SPECGEN" run --task hinge_loss --task diag_matmul --devices cpu:0 --iterations 3 \
  --runs 3 --warmups 1 --tick 0.05 --eval-timeout 5 --server-speed 300 --quiet \
  --out "$work/stopped" >"$work/stopped.log" 2>&1 &
pid=$!
# stopped once it has evaluated something and still runs: a fixed sleep
# stopped it before its store existed on a busy machine
for _ in $(seq 600); do
  evals=$(sqlite3 "$work/stopped/run.db" "SELECT count(*) FROM evaluations WHERE ended_us IS NOT NULL" 2>/dev/null || echo 0)
  [ "${evals:-0}" -ge 1 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.2
done
kill -INT $pid
wait $pid
"$SPECGEN" replay "$work/stopped" --json >"$work/stopped.json" 2>"$work/stopped.err"
rc=$?
same_summary "$work/stopped.json" "$work/stopped/summary.json" '
assert live.get("interrupted") is True, "the run was not interrupted"
assert s.get("interrupted") is True, s.get("interrupted")
assert abs(s["replay"]["record_interrupted_at_s"] - live["e2e_s"]) < 0.01, s["replay"]
assert abs(s["e2e_s"] - live["e2e_s"]) < 0.01, (s["e2e_s"], live["e2e_s"])' &&
  [ $rc -eq 0 ] &&
  [ "$(recorded "$work/stopped" | rounded)" = "$(replayed "$work/stopped.json" | rounded)" ]
check_stopped "interrupted: the replay stops where the record ends, with its decisions and summary" \
  $? $rc "$work/stopped.json" "$work/stopped.err"

# That run resumed to its end: its mains cut by the stop were sent again from
# the start of their iteration, after a gap where nothing ran.
sleep 1
timeout 120 "$SPECGEN" run --resume "$work/stopped" --quiet >"$work/resumed.log" 2>&1
rc=$?
"$SPECGEN" replay "$work/stopped" --json >"$work/resumed.json" 2>"$work/resumed.err" &&
  same_summary "$work/resumed.json" "$work/stopped/summary.json" '
assert live.get("interrupted") is False, "the resumed run did not end"
assert "interrupted" not in s, s.get("interrupted")
z = s["replay"]["record_resumes"]
assert len(z) == 1 and 0 < z[0]["stopped_at_s"] < z[0]["resumed_at_s"] < s["e2e_s"], z
assert abs(s["e2e_s"] - live["e2e_s"]) < 0.5, (s["e2e_s"], live["e2e_s"])' &&
  [ $rc -eq 0 ] &&
  [ "$(recorded "$work/stopped" | rounded)" = "$(replayed "$work/resumed.json" | rounded)" ]
check_stopped "resumed: a record spanning a stop and a resume reaches its decisions and summary" \
  $? $rc "$work/resumed.json" "$work/resumed.err"
# In real time (`specgen run --replay`) the run goes straight through the
# record's stop, and its summary says so.
timeout 120 "$SPECGEN" run --task hinge_loss --task diag_matmul --devices cpu:0 --iterations 3 \
  --runs 3 --warmups 1 --tick 0.05 --eval-timeout 5 --replay "$work/stopped" --replay-evals \
  --replay-speed 0 --out "$work/straight" >"$work/straight.log" 2>&1
rc=$?
python3 -c 'import json, sys
assert json.load(open(sys.argv[1]))["replay"]["record_resumes"] == 1' \
  "$work/straight/summary.json" && grep -q "stopped and resumed 1 time(s); this replay ran straight" \
  "$work/straight.log"
check "resumed, in real time: the summary says the replay ran through the record's stop" $? \
  "exit $rc" "$(tail -5 "$work/straight.log")"

# testserver_spec_on made to hold an infrastructure error: candidate 4's
# validation (iteration 1) failed on the machine, so its copy in iteration 2
# was evaluated again (not answered from the store) and got the recorded
# numerical error then.
cp -r "$work/testserver_spec_on" "$work/again"
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
t0, = db.execute("SELECT started_us FROM runs").fetchone()
at, it = db.execute("SELECT at_us, iteration_id FROM decisions WHERE kind = \"deduplicated\" "
                    "AND json_extract(detail_json, \"$.candidate_id\") = 4").fetchone()
db.execute("INSERT INTO evaluations (candidate_id, phase, device, queued_us, started_us, ended_us, "
           "status, message, result_json) SELECT candidate_id, phase, device, ?, ?, ?, status, "
           "message, json_set(result_json, \"$.compile_s\", 0.001) FROM evaluations WHERE id = 4",
           (at, at + 1000, at + 50000))
db.execute("UPDATE evaluations SET status = \"infra_error\", message = \"worker hung\", "
           "result_json = json_set(result_json, \"$.status\", \"infra_error\", \"$.message\", "
           "\"worker hung\") WHERE id = 4")
db.execute("DELETE FROM decisions WHERE kind = \"deduplicated\" "
           "AND json_extract(detail_json, \"$.candidate_id\") = 4")
db.commit()' "$work/again/run.db"
"$SPECGEN" replay "$work/again" --json >"$work/again.json" 2>"$work/again.err"
rc=$?
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["replay"]
assert r["evaluations_not_in_record"] == 0 and r["evaluations_from_record"] == 5, r' \
  "$work/again.json" && [ $rc -eq 0 ] &&
  [ "$(recorded "$work/again")" = "$(replayed "$work/again.json")" ]
check "an infrastructure error, then the kernel evaluated again: each outcome in its turn" $? \
  "exit $rc" "recorded: $(recorded "$work/again")" "replayed: $(replayed "$work/again.json" 2>&1)" \
  "$(tail -3 "$work/again.err")"

# A run that never ended, without a summary: its store alone says where,
# and nothing in it came after its last evaluation's outcome.
cp -r "$work/testserver_spec_off" "$work/failed"
sqlite3 "$work/failed/run.db" "UPDATE runs SET ended_us = NULL;
  UPDATE iterations SET ended_us = min(ended_us, (SELECT max(ended_us) FROM evaluations));
  UPDATE decisions SET at_us = min(at_us, (SELECT max(ended_us) FROM evaluations));
  UPDATE generations SET ended_us = min(ended_us, (SELECT max(ended_us) FROM evaluations))"
"$SPECGEN" replay "$work/failed" --json >"$work/failed.json" 2>"$work/failed.err"
rc=$?
python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
assert "record_interrupted_at_s" in s["replay"], s["replay"]' \
  "$work/failed.json" && [ $rc -eq 0 ] &&
  [ "$(recorded "$work/failed")" = "$(replayed "$work/failed.json")" ]
check "a run that never ended: replayed to its last event, that event included" $? "exit $rc" \
  "recorded: $(recorded "$work/failed")" "replayed: $(replayed "$work/failed.json" 2>&1)" \
  "$(tail -3 "$work/failed.err")"

# An older specgen's kernel: the first evaluated one's text differs (its
# hash with it) from what this specgen extracts from the same generation.
cp -r "$work/testserver_spec_off" "$work/changed"
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cid, src = db.execute("SELECT c.id, c.source FROM candidates c JOIN evaluations e "
                      "ON e.candidate_id = c.id WHERE e.status != \"ok\" ORDER BY c.id").fetchone()
src += "\n/* as an older specgen extracted it */\n"
h = 0xcbf29ce484222325
for b in src.encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
db.execute("UPDATE candidates SET source = ?, fnv1a64 = ? WHERE id = ?", (src, "%016x" % h, cid))
db.commit()' "$work/changed/run.db"
"$SPECGEN" replay "$work/changed" --json >"$work/changed.json" 2>"$work/changed.err"
rc=$?
python3 -c 'import json, sys
s, same, rec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.loads(sys.argv[3])
r = s["replay"]
assert r["evaluations_changed_kernel"] == 1 and r["evaluations_not_in_record"] == 1, r
assert s["e2e_s"] == same["e2e_s"], (s["e2e_s"], same["e2e_s"])
for t, d in s["decisions"].items():
    assert d["iterations"] == rec[t]["iterations"] and d["mains"] == rec[t]["mains"], (d, rec[t])
    assert sum(e[1] == "infra_error" for e in d["evaluations"]) == 1, d' \
  "$work/changed.json" "$work/testserver_spec_off.a.json" "$(recorded "$work/testserver_spec_off")"
check "a kernel extracted otherwise since: not in the record, counted, with its recorded times" \
  $((rc != 0 || $? != 0)) "exit $rc" "$(tail -3 "$work/changed.err")"

cp -r "$work/testserver_spec_off" "$work/gone"
sqlite3 "$work/gone/run.db" "DELETE FROM device_intervals; DELETE FROM evaluations"
"$SPECGEN" replay "$work/gone" --json >"$work/gone.json" 2>"$work/gone.err"
rc=$?
python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
r = s["replay"]
ev = [e for d in s["decisions"].values() for e in d["evaluations"]]
assert r["evaluations_from_record"] == 0 and r["evaluations_not_in_record"] == len(ev) > 0, r
assert all(e[1] == "infra_error" and e[2] is None for e in ev), ev' "$work/gone.json"
check "evaluations the record lacks: \"not in the record\", counted, never invented" \
  $((rc != 0 || $? != 0)) "exit $rc" "$(tail -3 "$work/gone.err")"

bad=0
"$SPECGEN" replay "$work/testserver_spec_on" --pace fast >/dev/null 2>"$work/u1"; [ $? -eq 2 ] || bad=1
"$SPECGEN" replay "$work/testserver_spec_on" --no-such-option >/dev/null 2>"$work/u2"; [ $? -eq 2 ] || bad=1
"$SPECGEN" replay "$work/nothing-here" >/dev/null 2>"$work/u3"; [ $? -eq 2 ] || bad=1
"$SPECGEN" replay >/dev/null 2>"$work/u4"; [ $? -eq 2 ] || bad=1
check "bad usage exits 2 with a message" $bad "$(cat "$work/u1" "$work/u2" "$work/u3" "$work/u4")"
exit $((failed > 0))
