#!/usr/bin/env python3
"""replay_compare.py: one recorded run replayed under other policies, side
by side with the run as it was recorded (docs/benchmarks.md, "Record once,
replay under other policies").

A `specgen run` keeps its model's streams (llm.jsonl.gz) and its options
(the store's runs.config_json). This script replays that record with
`specgen run --replay DIR --replay-evals` under each variant, from the
recorded options with one change each:

    same          the recorded options: should reach the recorded decisions
    spec-off      --spec off: the recorded mains, no fork
    spec-on       --spec on: forks answered by the replay's rule for forks
                  (the recorded fork at or nearest short of the prefix;
                  none recorded: a failed fork, counted)
    first-valid   --termination first-valid: the first valid kernel ends
                  its iteration
    none          --termination none: no early termination

and prints, per run (the recorded one first): iterations, generations,
candidates and valid kernels (forks apart), early terminations, kernels
profiled, tokens, end-to-end time, the best speedup per task, and for each
replay whether its decisions match the record's (iteration ends, main
generations' tokens, evaluations and their results) and, where they do
not, how many differ.

    bench/replay_compare.py runs/campaign/spec-on --speed 10 --out runs/replays

With --virtual, each variant is replayed in virtual time instead (`specgen
replay DIR --json`, docs/usage.md, "Replaying in virtual time"): no server,
no evaluator, seconds per replay, the same output every time; the same
options reach the record's decisions by construction (the record's clock),
the others run on each recorded span from when the replay starts it. The
variant spec-off-solo is --spec off with the mains at the pace the record
measured while no fork was live (--pace solo). End-to-end times of a
virtual replay come from the replay's model of time, and say so.

    bench/replay_compare.py runs/campaign/spec-on --virtual --variants same,spec-off,spec-off-solo

Otherwise (real time), a replay is paced as recorded divided by --speed (0: as fast as it can),
and with --replay-evals a kernel the record evaluated holds its device for
the recorded time divided by --speed and gets the recorded result; only
kernels the record never saw are evaluated for real. Each replay's
directory is kept in --out; one that holds a finished replay is read, not
run again. --json prints the same as one object. Run it where the recorded
run was started: task and prompt directories are read as it named them.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from real_model_campaign import (ROOT, arm_finished, arm_figures, print_grid,  # noqa: E402
                                 print_table)

VARIANTS = {
    "same": [],
    "spec-off": ["--spec", "off"],
    "spec-on": ["--spec", "on"],
    "first-valid": ["--termination", "first-valid"],
    "none": ["--termination", "none"],
    "spec-off-solo": ["--spec", "off", "--pace", "solo"],
}
# Flags of `specgen replay`, not of `specgen run` (the real-time replay).
VIRTUAL_ONLY = {"spec-off-solo"}

# Keys of the recorded configuration that name where the live run was (its
# server, its output, how it printed) rather than what it decided.
NOT_REPLAYED = {"llm", "model", "profile", "api-key-env", "out", "resume", "json", "quiet",
                "dashboard", "replay", "replay-evals", "replay-speed", "server-fault",
                "server-speed", "kv-store", "kv-store-listen", "kv-store-memory",
                "kv-store-reserve", "remote", "token-forks"}


def yaml_scalar(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a double-quoted YAML scalar


def recorded_config(rundir):
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(rundir, "run.db"), uri=True)
    try:
        row = db.execute("SELECT config_json FROM runs ORDER BY id LIMIT 1").fetchone()
    finally:
        db.close()
    if row is None:
        sys.exit(f"replay_compare: {rundir}/run.db: no run recorded")
    return json.loads(row[0])


def write_config(cfg, path):
    with open(path, "w") as f:
        for k in sorted(cfg):
            v = cfg[k]
            if k in NOT_REPLAYED or v is None:
                continue
            if isinstance(v, list):
                f.write(f"{k}:\n" + "".join(f"  - {yaml_scalar(x)}\n" for x in v))
            else:
                f.write(f"{k}: {yaml_scalar(v)}\n")


def decisions(d):
    """What a replay with the recorded options must reproduce: per task,
    each iteration's end (those an interrupted run never ended aside), the
    main generations' token counts, and every evaluation's phase, status and
    speedup (aborted ones aside: a withdrawal's timing is the machine's)."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "run.db"), uri=True)
    out = {}
    for wid, task in db.execute("SELECT id, task FROM workflows ORDER BY task"):
        its = [f"{n}:{r}" for n, r in db.execute(
            "SELECT number, end_reason FROM iterations WHERE workflow_id = ? "
            "AND end_reason IS NOT NULL ORDER BY number",
            (wid,))]
        mains = [t for (t,) in db.execute(
            "SELECT completion_tokens FROM generations WHERE workflow_id = ? AND kind = 'main' "
            "ORDER BY iteration_id, id", (wid,))]
        evs = sorted(f"{p}:{s}:{'-' if x is None else round(x, 3)}" for p, s, x in db.execute(
            "SELECT e.phase, e.status, e.speedup FROM evaluations e JOIN candidates c "
            "ON c.id = e.candidate_id WHERE c.workflow_id = ? AND e.status != 'aborted'",
            (wid,)))
        out[task] = {"iterations": its, "mains": mains, "evaluations": evs}
    db.close()
    return out


def virtual(a, name, extra):
    """One variant replayed in virtual time: its summary and decisions."""
    r = subprocess.run([a.specgen, "replay", a.rundir, "--json"] + extra,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"replay_compare: the {name} virtual replay exited {r.returncode}: "
                 f"{r.stderr.strip()}")
    s = json.loads(r.stdout)
    dec = {}
    for t, d in s["decisions"].items():
        evs = sorted(f"{p}:{st}:{'-' if x is None else round(x, 3)}"
                     for p, st, x in d["evaluations"])
        dec[t] = {"iterations": d["iterations"], "mains": d["mains"], "evaluations": evs,
                  "forks": d["forks"]}
    return s, dec


def forks(d):
    """Per task, its forks as "iteration:prefix bytes", in the order begun."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "run.db"), uri=True)
    out = {task: [f"{n}:{p}" for n, p in db.execute(
        "SELECT i.number, g.prefix_bytes FROM generations g JOIN iterations i "
        "ON i.id = g.iteration_id WHERE g.workflow_id = ? AND g.kind = 'spec' ORDER BY g.id",
        (wid,))] for wid, task in db.execute("SELECT id, task FROM workflows")}
    db.close()
    return out


def virtual_figures(s):
    ws = s["workflows"]
    t = s["tokens"]
    r = s["replay"]
    return {"e2e_s": s["e2e_s"], "clock": r["clock"], "pace": r["pace"],
            "interrupted": bool(s.get("interrupted")),
            "valid": sum(e[0] == "validate" and e[1] == "ok"
                         for d in s["decisions"].values() for e in d["evaluations"]),
            "forks_answered": r["forks_at_recorded_prefix"] + r["forks_nearest_recorded"],
            "forks_unrecorded": r["forks_unrecorded"],
            "iterations": sum(w["iterations"] for w in ws),
            "generations_main": sum(w["generations_main"] for w in ws),
            "generations_spec": sum(w["generations_spec"] for w in ws),
            "early_terminations": sum(w["early_terminations"] for w in ws),
            "profiling_feedback": sum(w["profiling_feedback"] for w in ws),
            "tokens": {"completion": t["completion"],
                       "consumption": t["prompt"] - t["cached"] + t["completion"]},
            "evaluations_not_in_record": s["replay"]["evaluations_not_in_record"],
            "best_speedup": {w["task"]: w["best_speedup"] for w in ws}}


def recorded_figures(d):
    f = arm_figures(d)
    t = f["tokens"]
    with open(os.path.join(d, "summary.json")) as fp:
        interrupted = bool(json.load(fp).get("interrupted"))
    return {"e2e_s": f["e2e_s"], "clock": "live", "pace": "live", "interrupted": interrupted,
            "valid": f["valid_main"] + f["valid_spec"],
            "forks_answered": f["generations_spec"], "forks_unrecorded": 0,
            "iterations": f["iterations"], "generations_main": f["generations_main"],
            "generations_spec": f["generations_spec"],
            "early_terminations": f["early_terminations"],
            "profiling_feedback": f["profiling_feedback"],
            "tokens": {"completion": t["completion"],
                       "consumption": t.get("consumption",
                                            t["prompt"] - t["cached"] + t["completion"])},
            "evaluations_not_in_record": 0, "best_speedup": f["best_speedup"]}


def print_virtual(runs):
    rows = [("end to end (s, modelled)", lambda f: f"{f['e2e_s']:.1f}"
             + (" (interrupted)" if f["interrupted"] else "")),
            ("clock / pace", lambda f: f"{f['clock']} / {f['pace']}"),
            ("iterations", lambda f: str(f["iterations"])),
            ("main generations", lambda f: str(f["generations_main"])),
            ("forks", lambda f: str(f["generations_spec"])),
            ("forks: a recorded answer / none (failed)",
             lambda f: f"{f['forks_answered']} / {f['forks_unrecorded']}"),
            ("early terminations", lambda f: str(f["early_terminations"])),
            ("valid kernels", lambda f: str(f["valid"])),
            ("kernels profiled", lambda f: str(f["profiling_feedback"])),
            ("best speedups", lambda f: ", ".join(
                f"{t} {v:.2f}x" for t, v in sorted(f["best_speedup"].items()) if v is not None)
             or "-"),
            ("tokens: completion", lambda f: str(f["tokens"]["completion"])),
            ("tokens: consumed", lambda f: str(f["tokens"]["consumption"])),
            ("evaluations not in the record", lambda f: str(f["evaluations_not_in_record"]))]
    print_grid(runs, rows)


def print_match(match, what):
    print(f"\ndecisions as recorded ({what}), per task")
    for n, m in match.items():
        same = m["tasks"] - len(m["tasks_differing"])
        print(f"  {n}: {same} of {m['tasks']} tasks"
              + (f" (differ: {', '.join(m['tasks_differing'])})" if m["tasks_differing"] else ""))


def differing(rec, rep):
    return sorted(t for t in rec if rec[t] != rep.get(t))


def replay(a, cfg_path, name, extra):
    d = os.path.join(a.out, name)
    if arm_finished(d):
        return d
    args = [a.specgen, "run", "--config", cfg_path, "--replay", a.rundir, "--replay-evals",
            "--replay-speed", str(a.speed), "--quiet", "--out", d] + extra
    if os.path.exists(os.path.join(d, "run.db")):
        args = [a.specgen, "run", "--resume", d, "--quiet"]
    with open(os.path.join(a.out, name + ".log"), "a") as log:
        rc = subprocess.call(args, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"replay_compare: the {name} replay exited {rc}; see {log.name}")
    return d


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rundir", help="a finished `specgen run` directory (llm.jsonl.gz, run.db)")
    p.add_argument("--specgen", default=os.path.join(ROOT, "build", "src", "cli", "specgen"))
    p.add_argument("--speed", type=float, default=10.0, help="the recorded pace times this")
    p.add_argument("--variants", default="same,spec-off,first-valid",
                   help="comma-separated: " + ", ".join(VARIANTS))
    p.add_argument("--out", help="where the replays' run directories go (real time)")
    p.add_argument("--virtual", action="store_true",
                   help="replay in virtual time (specgen replay): seconds, deterministic")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    a.rundir = os.path.abspath(a.rundir)
    names = a.variants.split(",")
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        p.error(f"--variants: unknown {', '.join(bad)} (known: {', '.join(VARIANTS)})")
    if not a.virtual and set(names) & VIRTUAL_ONLY:
        p.error(f"--variants: {', '.join(sorted(set(names) & VIRTUAL_ONLY))} needs --virtual")
    for f in ("run.db", "llm.jsonl.gz", "summary.json"):
        if not os.path.exists(os.path.join(a.rundir, f)):
            p.error(f"{a.rundir}: no {f}: not a finished run directory")
    if a.virtual:
        return main_virtual(a, names)
    if a.out is None:
        p.error("--out: where the real-time replays' run directories go")
    os.makedirs(a.out, exist_ok=True)
    cfg = recorded_config(a.rundir)
    cfg_path = os.path.join(a.out, "recorded.yaml")
    write_config(cfg, cfg_path)
    runs = {"recorded": arm_figures(a.rundir)}
    rec = decisions(a.rundir)
    match = {}
    for n in names:
        d = replay(a, cfg_path, n, VARIANTS[n])
        runs["replay " + n] = arm_figures(d)
        diff = differing(rec, decisions(d))
        match[n] = {"tasks_differing": diff, "tasks": len(rec)}
    if a.json:
        json.dump({"recorded": a.rundir, "speed": a.speed, "runs": runs,
                   "decisions": match}, sys.stdout, indent=1)
        print()
        return
    print(f"{a.rundir}, replayed at {a.speed:g}x its recorded pace, recorded evaluations\n")
    print_table(runs)
    print_match(match, "iteration ends, main tokens, evaluations")


def main_virtual(a, names):
    runs = {"recorded": recorded_figures(a.rundir)}
    rec = decisions(a.rundir)
    for t, f in forks(a.rundir).items():
        rec[t]["forks"] = f
    match = {}
    for n in names:
        s, dec = virtual(a, n, VARIANTS[n])
        runs["virtual " + n] = virtual_figures(s)
        match[n] = {"tasks_differing": differing(rec, dec), "tasks": len(rec)}
    if a.json:
        json.dump({"recorded": a.rundir, "virtual": True, "runs": runs, "decisions": match},
                  sys.stdout, indent=1)
        print()
        return
    print(f"{a.rundir}, replayed in virtual time, recorded evaluations\n")
    print_virtual(runs)
    print_match(match, "iteration ends, main tokens, forks, evaluations")


if __name__ == "__main__":
    main()
