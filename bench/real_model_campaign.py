#!/usr/bin/env python3
"""real_model_campaign.py: specgen driven by a real model on a CPU, with
speculation on and off, side by side (docs/benchmarks.md, "A real model
drives the loop").

It starts llama.cpp's server (scripts/llama-server.sh serve) with a local
model (scripts/local-model.sh, default qwen-coder: Qwen2.5-Coder-1.5B),
one decode thread pinned to one core, then runs `specgen run --reasoning
prompted` over the built-in CPU tasks once per arm (speculation on, off),
evaluating on the other core, one arm after the other against the same
server. It reads each run's store and summary and prints, per arm:
generations (main, forks), candidates and valid kernels (the forks' apart),
early terminations, tokens, end-to-end time, and per task the best speedup
over the reference. --json prints the same as one object.

    bench/real_model_campaign.py --specgen build/src/cli/specgen \\
        --iterations 3 --out runs/campaign

An arm's run directory is kept (OUT/spec-on, OUT/spec-off); an arm whose
directory holds a finished run is read, not run again, so a campaign that
was stopped continues where it was (`specgen run --resume` for the arm cut
in the middle).
"""
import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(model_path, port, threads, slots, ctx, core, log):
    cmd = [os.path.join(ROOT, "scripts", "llama-server.sh"), "serve", "-m", model_path,
           "--port", str(port), "-t", str(threads), "-np", str(slots), "-c", str(ctx),
           "--alias", "campaign-model"]
    if core is not None:
        cmd = ["taskset", "-c", str(core)] + cmd
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if p.poll() is not None:
            sys.exit(f"real_model_campaign: the server exited ({p.returncode}); see {log.name}")
        try:
            urllib.request.urlopen(url + "/v1/models", timeout=2)
            return p, url
        except Exception:
            time.sleep(0.25)
    p.kill()
    sys.exit("real_model_campaign: the server did not answer within 300 s")


def arm_finished(d):
    s = os.path.join(d, "summary.json")
    if not os.path.exists(s):
        return False
    with open(s) as f:
        return not json.load(f).get("interrupted", True)


def run_arm(a, spec, url, tasks):
    d = os.path.join(a.out, "spec-" + spec)
    if arm_finished(d):
        return d
    args = [a.specgen, "run", "--llm", url, "--quiet"]
    if os.path.exists(os.path.join(d, "run.db")):
        args += ["--resume", d]  # the stored configuration, this server
    else:
        args += ["--out", d]
        for t in tasks:
            args += ["--task", t]
        # Generations queue at the server beyond its slots: the waits between
        # stream events and the deadlines are the server's pace, not a fault.
        args += ["--model", "campaign-model", "--profile", "llamacpp",
                 "--reasoning", "prompted", "--spec", spec, "--iterations",
                 str(a.iterations), "--max-tokens", str(a.max_tokens), "--temperature",
                 str(a.temperature), "--devices", a.devices, "--idle-timeout", "3600",
                 "--gen-deadline", "7200", "--llm-streams", str(a.slots),
                 "--fork-slowdown-max", str(a.fork_slowdown_max)]
        if a.hang_grace is not None:
            args += ["--hang-grace", str(a.hang_grace)]
    with open(os.path.join(a.out, f"spec-{spec}.log"), "a") as log:
        rc = subprocess.call(args, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"real_model_campaign: the spec-{spec} arm exited {rc}; see {log.name}")
    return d


def one(db, sql):
    return db.execute(sql).fetchone()[0]


def arm_figures(d):
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    db = sqlite3.connect(os.path.join(d, "run.db"))
    valid = ("SELECT count(DISTINCT c.id) FROM candidates c JOIN generations g "
             "ON g.id = c.generation_id JOIN evaluations e ON e.candidate_id = c.id "
             "WHERE e.phase = 'validate' AND e.status = 'ok'")
    cands = ("SELECT count(*) FROM candidates c JOIN generations g "
             "ON g.id = c.generation_id")
    # a store of schema 3 marks the answers at the length cap (spec
    # generations that are not forks); an older one has none
    cols = [r[1] for r in db.execute("PRAGMA table_info(generations)")]
    answer = "g.answer_at_cap" if "answer_at_cap" in cols else "0"
    fork = "g.kind = 'spec' AND NOT " + answer
    statuses = {}
    for st, n in db.execute("SELECT status, count(*) FROM evaluations "
                            "WHERE phase = 'validate' GROUP BY status"):
        statuses[st] = n
    fig = {
        "e2e_s": s["e2e_s"],
        "iterations": sum(w["iterations"] for w in s["workflows"]),
        "generations_main": sum(w["generations_main"] for w in s["workflows"]),
        "generations_spec": sum(w["generations_spec"] for w in s["workflows"]),
        "candidates_main": one(db, cands + " WHERE g.kind = 'main'"),
        "answers_at_cap": sum(w.get("answers_at_cap", 0) for w in s["workflows"]),
        "candidates_spec": one(db, cands + " WHERE " + fork),
        "candidates_answer": one(db, cands + " WHERE " + answer),
        "valid_main": one(db, valid + " AND g.kind = 'main'"),
        "valid_spec": one(db, valid + " AND " + fork),
        "valid_answer": one(db, valid + " AND " + answer),
        "validation_statuses": statuses,
        "early_terminations": sum(w["early_terminations"] for w in s["workflows"]),
        "profiling_feedback": sum(w["profiling_feedback"] for w in s["workflows"]),
        "tokens": s["tokens"],
        "reasoning": s.get("reasoning"),
        "best_speedup": {w["task"]: w["best_speedup"] for w in s["workflows"]},
        "fork_budget": (s.get("fork_budget") or {}).get("line"),
    }
    db.close()
    return fig


def fmt_x(v):
    return "-" if v is None else f"{v:.2f}x"


def print_grid(arms, rows):
    """One column per arm, one line per (label, cell of an arm's figures)
    row; returns the columns' widths."""
    names = list(arms)
    w0 = max(len(r[0]) for r in rows) + 2
    cells = {n: [r[1](arms[n]) for r in rows] for n in names}
    widths = {n: max(len(n), *(len(c) for c in cells[n])) + 2 for n in names}
    print("".ljust(w0) + "".join(n.rjust(widths[n]) for n in names))
    for i, r in enumerate(rows):
        print(r[0].ljust(w0) + "".join(cells[n][i].rjust(widths[n]) for n in names))
    return widths


def print_table(arms):
    names = list(arms)
    rows = [
        ("end to end (s)", lambda f: f"{f['e2e_s']:.0f}"),
        ("iterations", lambda f: str(f["iterations"])),
        ("main generations", lambda f: str(f["generations_main"])),
        ("forks", lambda f: str(f["generations_spec"])),
        ("answers at the cap", lambda f: str(f["answers_at_cap"])),
        ("candidates: main / forks / at cap",
         lambda f: f"{f['candidates_main']} / {f['candidates_spec']} / {f['candidates_answer']}"),
        ("valid kernels: main / forks / at cap",
         lambda f: f"{f['valid_main']} / {f['valid_spec']} / {f['valid_answer']}"),
        ("validation statuses", lambda f: ", ".join(f"{k} {v}" for k, v in
                                                    sorted(f["validation_statuses"].items()))),
        ("early terminations", lambda f: str(f["early_terminations"])),
        ("kernels profiled", lambda f: str(f["profiling_feedback"])),
        ("tokens: completion", lambda f: str(f["tokens"]["completion"])),
        ("tokens: consumed", lambda f: str(f["tokens"]["consumption"])),
        ("reasoning", lambda f: str(f["reasoning"])),
    ]
    widths = print_grid(arms, rows)
    for n in names:
        if arms[n].get("fork_budget"):
            print(f"{n}: {arms[n]['fork_budget']}")
    print("\nbest speedup over the reference, per task")
    tasks = sorted(set().union(*(arms[n]["best_speedup"] for n in names)))
    wt = max(len(t) for t in tasks) + 2
    print("".ljust(wt) + "".join(n.rjust(widths[n]) for n in names))
    for t in tasks:
        print(t.ljust(wt) + "".join(fmt_x(arms[n]["best_speedup"].get(t)).rjust(widths[n])
                                   for n in names))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--specgen", default=os.path.join(ROOT, "build", "src", "cli", "specgen"))
    p.add_argument("--model", default="qwen-coder", help="a scripts/local-model.sh name")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--temperature", type=float, default=0.2)
    p.add_argument("--slots", type=int, default=12,
                   help="server slots (generations at once), also specgen's --llm-streams: "
                        "more than the tasks, or forks only queue behind the mains")
    p.add_argument("--fork-slowdown-max", type=float, default=0.15,
                   help="specgen's --fork-slowdown-max: forks may slow the mains by at most "
                        "this share, measured during the run (0: off, --llm-streams alone)")
    p.add_argument("--ctx", type=int, default=49152, help="server context, split among slots")
    p.add_argument("--server-core", type=int, default=0, help="-1: not pinned")
    p.add_argument("--devices", default="cpu:1", help="where kernels are evaluated")
    p.add_argument("--hang-grace", type=float, default=None,
                   help="specgen's --hang-grace: on a machine busy with other work a "
                   "validation can run past the eval timeout plus the default grace, "
                   "and three such in a row retire the one device")
    p.add_argument("--arms", default="on,off")
    p.add_argument("--task", action="append", help="a task (default: the built-in CPU tasks)")
    p.add_argument("--out", default=os.path.join(ROOT, "runs", "campaign"))
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    tasks = a.task or sorted(os.listdir(os.path.join(ROOT, "tasks", "cpu")))
    os.makedirs(a.out, exist_ok=True)
    model = subprocess.run([os.path.join(ROOT, "scripts", "local-model.sh"), a.model],
                           check=True, capture_output=True, text=True).stdout.strip()
    arms = {}
    todo = [x for x in a.arms.split(",") if not arm_finished(os.path.join(a.out, "spec-" + x))]
    server = None
    try:
        if todo:
            with open(os.path.join(a.out, "server.log"), "a") as log:
                server, url = start_server(model, free_port(), 1, a.slots, a.ctx,
                                           None if a.server_core < 0 else a.server_core, log)
        for spec in a.arms.split(","):
            d = run_arm(a, spec, url if todo else None, tasks)
            arms["spec " + spec] = arm_figures(d)
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait()
    if a.json:
        json.dump({"model": a.model, "iterations": a.iterations, "max_tokens": a.max_tokens,
                   "arms": arms}, sys.stdout, indent=1)
        print()
    else:
        print(f"model {a.model}, {len(tasks)} tasks, {a.iterations} iterations, "
              f"max {a.max_tokens} tokens, reasoning prompted\n")
        print_table(arms)


if __name__ == "__main__":
    main()
