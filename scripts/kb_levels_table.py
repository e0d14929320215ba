#!/usr/bin/env python3
"""kb_levels_table.py DIR: the results table of scripts/kb-levels.sh from
DIR/level<N>-same.json and DIR/level<N>-wrong.json (specgen bench --json
with --self-check same and wrong), as Markdown: per level the self-check's
ok count and speedup band, the wrong candidates caught, the validation
times (each row's run stage), and every task that missed with its status
and message. A bench call stopped by its time limit still prints its JSON,
the rows it did not reach as not_run: the table counts the rows reached
and says "(partial)". Where no JSON came (a bench killed outright), the
rows are read from its progress lines in DIR/level<N>.log ("[k/n] TASK:
status 1.02x (KernelBench: ok), T s"), with no validation times or
messages."""

import glob
import json
import os
import re
import sys

CAUGHT = {"numerical_error", "rejected", "runtime_error", "timeout", "compile_error"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+): (\w+)(?: ([0-9.]+)x)?")


def from_log(d, lv, mode):
    """The rows of a bench call that printed no JSON, from its progress
    lines: the log holds the same-mode call first, then the wrong-mode
    one (each restarts at [1/n])."""
    calls, totals, rows = [], [], None
    try:
        lines = open(os.path.join(d, "level%d.log" % lv)).read().splitlines()
    except OSError:
        return None
    for line in lines:
        m = PROGRESS.match(line)
        if not m:
            continue
        if rows is None or (m.group(1) == "1" and rows):
            rows = []
            calls.append(rows)
            totals.append(int(m.group(2)))
        rows.append({"task": m.group(3), "status": m.group(4),
                     "speedup": float(m.group(5)) if m.group(5) else None,
                     "message": "(from the progress line; the call was stopped)"})
    k = 0 if mode == "same" else 1
    if len(calls) <= k:
        return None
    return {"rows": calls[k], "partial": totals[k]}


def reached(call):
    """The rows a bench call reached; a call stopped before its end says
    how many it had ("partial")."""
    rows = [r for r in call["rows"] if r["status"] != "not_run"]
    if len(rows) < len(call["rows"]):
        return {"rows": rows, "partial": len(call["rows"])}
    return call


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def short(msg, n=160):
    msg = " ".join((msg or "").split())
    return msg if len(msg) <= n else msg[:n - 3] + "..."


def main(d):
    levels = sorted({int(m.group(1)) for p in glob.glob(os.path.join(d, "level*-*.json"))
                     for m in [re.search(r"level(\d+)-", os.path.basename(p))] if m})
    print("| level | tasks | self-check ok | speedup median (min-max) | within 0.9-1.1x "
          "| wrong caught | validation median / max / total s |")
    print("|---|---|---|---|---|---|---|")
    misses = []
    for lv in levels:
        same = load(os.path.join(d, "level%d-same.json" % lv)) or from_log(d, lv, "same")
        wrong = load(os.path.join(d, "level%d-wrong.json" % lv)) or from_log(d, lv, "wrong")
        same, wrong = (reached(c) if c else None for c in (same, wrong))
        cells = ["%d" % lv]
        if same:
            rows = same["rows"]
            ok = [r for r in rows if r["status"] == "ok"]
            sp = [r["speedup"] for r in ok if r.get("speedup")]
            run = [r["run_s"] for r in rows if r.get("run_s") is not None]
            cells += ["%d of %d (partial)" % (len(rows), same["partial"]) if "partial" in same
                      else "%d" % len(rows), "%d" % len(ok),
                      "%.3f (%.3f-%.3f)" % (median(sp), min(sp), max(sp)) if sp else "-",
                      "%d" % sum(1 for s in sp if 0.9 <= s <= 1.1),
                      ]
            for r in rows:
                if r["status"] != "ok":
                    misses.append((lv, "same", r))
        else:
            cells += ["-", "not run", "-", "-"]
            run = []
        if wrong:
            rows = wrong["rows"]
            caught = [r for r in rows if r["status"] in CAUGHT]
            cells.append("%d of %d%s" % (len(caught), len(rows),
                                         " (partial)" if "partial" in wrong else ""))
            for r in rows:
                if r["status"] not in CAUGHT:
                    misses.append((lv, "wrong", r))
        else:
            cells.append("not run")
        cells.append("%.2f / %.2f / %.0f" % (median(run), max(run), sum(run)) if run else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    if misses:
        print("| level | mode | task | status | message |")
        print("|---|---|---|---|---|")
        for lv, mode, r in misses:
            print("| %d | %s | %s | %s | %s |" % (lv, mode, r["task"], r["status"],
                                                 short(r.get("message")).replace("|", "/")))
    else:
        print("No task missed.")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: kb_levels_table.py DIR")
    main(sys.argv[1])
