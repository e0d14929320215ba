#!/usr/bin/env python3
"""pool_report.py RUNDIR [RUNDIR ...] [--json]: how a run used its device pool.

Reads each run directory's run store (run.db, SQLite) and prints, per run:
end-to-end time, early terminations, per-device and total utilization split
by phase (validation, profiling), how Algorithm 2 re-split the pool over time
and how the split followed the queues, queue waits per phase, and the
exclusivity check: no two evaluations on one device at a time (from the
store's device intervals). Exit 1 when a device ran two evaluations at once,
2 for bad usage or an unreadable run directory. `--sim-set RUNDIR` prints
the `specgen sim --set` arguments that describe the run's measured workload
(the pool, the tasks, mean generation and evaluation times), so the same
campaign can be simulated beside it.

It reads only; it is what scripts/gpu-pool.sh runs after each campaign, and
it works as well on a CPU run (`--devices cpu:0-1`).
"""
import json
import os
import sqlite3
import statistics
import sys


def fail_usage(msg):
    print(f"pool_report: {msg}", file=sys.stderr)
    sys.exit(2)


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


def overlaps(intervals):
    """Pairs of intervals on one device that overlap (touching is fine)."""
    bad = []
    last = None
    for iv in sorted(intervals, key=lambda iv: (iv[0], iv[1])):
        if last is not None and iv[0] < last[1]:
            bad.append((last, iv))
        if last is None or iv[1] > last[1]:
            last = iv
    return bad


def split_timeline(rows, t0):
    """The pool's re-splits as (seconds since start, validate, profile)
    with consecutive duplicates (one decision per workflow) folded."""
    out = []
    for at_us, detail in rows:
        d = json.loads(detail)
        point = (round((at_us - t0) / 1e6, 3), d.get("validate_devices"),
                 d.get("profile_devices"))
        if out and out[-1][0] == point[0] and out[-1][1:] == point[1:]:
            continue
        out.append(point)
    return out


def analyse(rundir):
    db = os.path.join(rundir, "run.db")
    if not os.path.isfile(db):
        fail_usage(f"{rundir}: no run.db (not a run directory)")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.execute("PRAGMA query_only = 1")
    run = con.execute("SELECT started_us, ended_us, devices, config_json FROM runs "
                      "ORDER BY id LIMIT 1").fetchone()
    if run is None:
        fail_usage(f"{db}: no run recorded")
    t0, t1, ndev, config = run
    if t1 is None:  # a run still going or killed: up to its last record
        t1 = max(v for (v,) in con.execute(
            "SELECT MAX(ended_us) FROM device_intervals UNION ALL "
            "SELECT MAX(ended_us) FROM iterations UNION ALL SELECT ?", (t0,))
            if v is not None)
    span_s = max(1e-9, (t1 - t0) / 1e6)

    per_dev = {}
    for dev, phase, s, e in con.execute(
            "SELECT device, phase, started_us, ended_us FROM device_intervals"):
        d = per_dev.setdefault(dev, {"validate": 0.0, "profile": 0.0, "n": 0,
                                     "iv": []})
        d[phase] += (e - s) / 1e6
        d["n"] += 1
        d["iv"].append((s, e))
    devices = []
    clashes = 0
    for dev in sorted(per_dev):
        d = per_dev[dev]
        bad = overlaps(d["iv"])
        clashes += len(bad)
        devices.append({
            "device": dev, "intervals": d["n"],
            "validate_busy_s": round(d["validate"], 3),
            "profile_busy_s": round(d["profile"], 3),
            "utilization": round((d["validate"] + d["profile"]) / span_s, 4),
            "overlapping_pairs": len(bad)})
    busy = sum(d["validate"] + d["profile"] for d in per_dev.values())
    pool = max(1, ndev)

    waits = {}
    for phase, q, s in con.execute(
            "SELECT phase, queued_us, started_us FROM evaluations "
            "WHERE started_us IS NOT NULL"):
        waits.setdefault(phase, []).append((s - q) / 1e6)
    wait_rows = {p: {"n": len(w), "median_s": round(statistics.median(w), 3),
                     "p90_s": round(percentile(w, 0.9), 3),
                     "max_s": round(max(w), 3)} for p, w in sorted(waits.items())}

    ends = dict(con.execute("SELECT end_reason, COUNT(*) FROM iterations "
                            "WHERE end_reason IS NOT NULL GROUP BY end_reason"))
    gens = dict(con.execute("SELECT kind, COUNT(*) FROM generations GROUP BY kind"))
    feedback = con.execute("SELECT COUNT(*) FROM evaluations WHERE phase='profile' "
                           "AND status='ok'").fetchone()[0]
    splits = split_timeline(con.execute(
        "SELECT at_us, detail_json FROM decisions WHERE kind='reallocate' "
        "ORDER BY at_us, id").fetchall(), t0)
    cfg = json.loads(config)
    return {
        "run": rundir, "e2e_s": round(span_s, 3), "devices": ndev,
        "spec": cfg.get("spec"), "iterations": sum(ends.values()),
        "iteration_ends": ends, "early_terminations": ends.get("early", 0),
        "generations_main": gens.get("main", 0),
        "generations_spec": gens.get("spec", 0),
        "profiling_feedback": feedback,
        "utilization": round(busy / (span_s * pool), 4),
        "per_device": devices, "queue_wait": wait_rows,
        "resplits": len(splits), "split_timeline": splits,
        "overlapping_pairs": clashes,
    }


def print_human(r):
    print(f"== {r['run']}: spec {r['spec']}, {r['devices']} devices, "
          f"e2e {r['e2e_s']:.1f} s, {r['iterations']} iterations "
          f"({r['early_terminations']} early), {r['generations_main']} main + "
          f"{r['generations_spec']} spec generations, "
          f"feedback {r['profiling_feedback']}")
    print(f"{'device':<10} {'evals':>6} {'validate s':>11} {'profile s':>10} {'util':>7}")
    for d in r["per_device"]:
        print(f"{d['device']:<10} {d['intervals']:>6} {d['validate_busy_s']:>11.1f} "
              f"{d['profile_busy_s']:>10.1f} {100 * d['utilization']:>6.1f}%")
    print(f"{'pool':<10} {'':>6} {'':>11} {'':>10} {100 * r['utilization']:>6.1f}%")
    for p, w in r["queue_wait"].items():
        print(f"queue wait {p}: n {w['n']}, median {w['median_s']} s, "
              f"p90 {w['p90_s']} s, max {w['max_s']} s")
    tl = ", ".join(f"{t}s {v}/{p}" for t, v, p in r["split_timeline"][:20])
    more = len(r["split_timeline"]) - 20
    print(f"re-splits (validate/profile): {r['resplits']}: {tl}"
          + (f" ... (+{more})" if more > 0 else ""))
    print("exclusivity: " + ("no device ran two evaluations at once"
                             if r["overlapping_pairs"] == 0 else
                             f"{r['overlapping_pairs']} overlapping pairs"))


def sim_settings(rundir):
    """`specgen sim --set` arguments that describe the run's measured
    workload: mean generation and evaluation times, the pool, the tasks."""
    con = sqlite3.connect(f"file:{os.path.join(rundir, 'run.db')}?mode=ro", uri=True)
    def mean(sql):
        v = con.execute(sql).fetchone()[0]
        return round(v, 3) if v is not None else None
    gen = mean("SELECT AVG((ended_us - started_us) / 1e6) FROM generations "
               "WHERE kind = 'main' AND outcome = 'completed'")
    val = mean("SELECT AVG((ended_us - started_us) / 1e6) FROM device_intervals "
               "WHERE phase = 'validate'")
    prof = mean("SELECT AVG((ended_us - started_us) / 1e6) FROM device_intervals "
                "WHERE phase = 'profile'")
    wfs, iters, wall = con.execute("SELECT COUNT(*), MAX(budget_iterations), "
                                   "MAX(budget_wall_s) FROM workflows").fetchone()
    ndev = con.execute("SELECT devices FROM runs ORDER BY id LIMIT 1").fetchone()[0]
    sets = {"workflows": wfs, "devices": ndev, "iterations": iters,
            "gen.mean_s": gen, "val.mean_s": val, "prof.mean_s": prof,
            "budget.wall_s": wall if wall else None}
    return " ".join(f"--set {k}={v}" for k, v in sets.items() if v is not None)


def main(argv):
    if len(argv) == 2 and argv[0] == "--sim-set":
        print(sim_settings(argv[1]))
        return 0
    as_json = "--json" in argv
    dirs = [a for a in argv if a != "--json"]
    if not dirs or any(a.startswith("-") for a in dirs):
        fail_usage("usage: pool_report.py RUNDIR [RUNDIR ...] [--json]\n"
                   "       pool_report.py --sim-set RUNDIR")
    results = [analyse(d) for d in dirs]
    if as_json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print_human(r)
    return 1 if any(r["overlapping_pairs"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
