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

A replay is paced as recorded divided by --speed (0: as fast as it can),
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
from real_model_campaign import ROOT, arm_finished, arm_figures, print_table  # noqa: E402

VARIANTS = {
    "same": [],
    "spec-off": ["--spec", "off"],
    "first-valid": ["--termination", "first-valid"],
    "none": ["--termination", "none"],
}

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
    each iteration's end, the main generations' token counts, and every
    evaluation's phase, status and speedup (aborted ones aside: a
    withdrawal's timing is the machine's)."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "run.db"), uri=True)
    out = {}
    for wid, task in db.execute("SELECT id, task FROM workflows ORDER BY task"):
        its = [f"{n}:{r}" for n, r in db.execute(
            "SELECT number, end_reason FROM iterations WHERE workflow_id = ? ORDER BY number",
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
    p.add_argument("--out", required=True, help="where the replays' run directories go")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    a.rundir = os.path.abspath(a.rundir)
    names = a.variants.split(",")
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        p.error(f"--variants: unknown {', '.join(bad)} (known: {', '.join(VARIANTS)})")
    for f in ("run.db", "llm.jsonl.gz", "summary.json"):
        if not os.path.exists(os.path.join(a.rundir, f)):
            p.error(f"{a.rundir}: no {f}: not a finished run directory")
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
    print("\ndecisions as recorded (iteration ends, main tokens, evaluations), per task")
    for n, m in match.items():
        same = m["tasks"] - len(m["tasks_differing"])
        print(f"  {n}: {same} of {m['tasks']} tasks"
              + (f" (differ: {', '.join(m['tasks_differing'])})" if m["tasks_differing"] else ""))


if __name__ == "__main__":
    main()
