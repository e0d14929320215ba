#!/usr/bin/env python3
"""kb_levels_table.py DIR: the results table of scripts/kb-levels.sh from its
bench output in DIR, as Markdown: per level the self-check's ok count and
speedup band, the wrong candidates caught, the validation times, the rows'
times, where those times went (the median of each of the judge's phases),
and every task that missed with its status and message.

A row's time is its run stage (run_s: from its judge's go to its verdict).
In mode both that holds the wrong candidate's checks too (stages.wrong_s),
which are the self-check's own extra, not part of a user's validation: a
row's validation time is its run stage less its wrong_s (the same
candidate's checks and timing, with any wait for its judge). Both are
given, per level median, maximum and total; in modes same and wrong they
are equal. kb_levels_table.py --medians DIR prints instead one line per
level with those two medians (scripts/kb-device.sh prints it last).

Per level it reads DIR/level<N>-both.json (specgen bench --self-check both
--json: {"same": {rows}, "wrong": {rows}}), else DIR/level<N>-same.json and
DIR/level<N>-wrong.json (one mode each). A bench call stopped by its time
limit still prints its JSON, the rows it did not reach as not_run: the
table counts the rows reached and says "(partial)". A wrong row not_run
with a message (undecided: the validation ended before its verdict) is a
miss, listed with its reason. Where no JSON came (a bench killed
outright), the rows are read from the call's progress lines ("[k/n] TASK:
status 1.02x (KernelBench: ok), T s", in mode both followed by "; wrong:
status (KernelBench: ...)"), with no validation times or messages: from
DIR/level<N>-<mode>.log, else from DIR/level<N>.log, where each call's
lines end with kb-levels.sh's line "level N MODE: exit ..." (a call
without one counts as same if first, wrong if second)."""

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


PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+): (\w+)(?: ([0-9.]+)x)?"
                      r"(?:.*; wrong: (\w+))?")
CALL_END = re.compile(r"^level (\d+) (same|wrong|both): exit")
FROM_LOG = "(from the progress line; the call was stopped)"


def progress_calls(lines):
    """The bench calls in a log's lines: [(mode or None, total, rows)],
    rows as [(task, status, speedup, wrong status)]. A call ends at its
    kb-levels.sh line (which names its mode) or where the next restarts at
    [1/n]."""
    calls = []
    cur = None
    for line in lines:
        m = CALL_END.match(line)
        if m:
            if cur is not None:
                cur[0] = m.group(2)
                calls.append(cur)
            cur = None
            continue
        m = PROGRESS.match(line)
        if not m:
            continue
        if cur is not None and m.group(1) == "1" and cur[2]:
            calls.append(cur)
            cur = None
        if cur is None:
            cur = [None, int(m.group(2)), []]
        cur[2].append((m.group(3), m.group(4),
                       float(m.group(5)) if m.group(5) else None, m.group(6)))
    if cur is not None:
        calls.append(cur)
    return calls


def rows_of(call, mode):
    """A call's rows as mode's (in mode both, "wrong" reads each line's
    wrong verdict), in the shape of the JSON's rows."""
    rows = []
    for task, status, speedup, wrong in call[2]:
        if mode == "wrong" and call[0] == "both":
            status, speedup = wrong or "not_run", None
        rows.append({"task": task, "status": status, "speedup": speedup,
                     "message": FROM_LOG})
    return {"rows": rows, "partial": call[1]}


def read_lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return None


def from_log(d, lv, mode):
    """The rows of a bench call that printed no JSON, from its progress
    lines (see the module's text); None where there are none."""
    for m in (mode, "both"):
        lines = read_lines(os.path.join(d, "level%d-%s.log" % (lv, m)))
        if lines:
            calls = progress_calls(lines)
            if calls:
                calls[-1][0] = m
                return rows_of(calls[-1], mode)
    lines = read_lines(os.path.join(d, "level%d.log" % lv))
    if not lines:
        return None
    calls = progress_calls(lines)
    named = [c for c in calls if c[0] in (mode, "both")]
    if named:
        return rows_of(named[-1], mode)
    unnamed = [c for c in calls if c[0] is None]
    k = 0 if mode == "same" else 1
    if len(unnamed) <= k or len(unnamed) != len(calls):
        return None
    return rows_of(unnamed[k], mode)


def reached(call):
    """The rows a bench call reached; a call stopped before its end says
    how many it had ("partial"). A not_run row with a message (an
    undecided wrong row) was reached."""
    rows = [r for r in call["rows"] if r["status"] != "not_run" or r.get("message")]
    if len(rows) < len(call["rows"]):
        return {"rows": rows, "partial": len(call["rows"])}
    return call


def level_calls(d, lv):
    """(same, wrong) of level lv: the calls' rows, None where not run."""
    both = load(os.path.join(d, "level%d-both.json" % lv))
    if both and "same" in both and "wrong" in both:
        return both["same"], both["wrong"]
    return tuple(load(os.path.join(d, "level%d-%s.json" % (lv, m))) or from_log(d, lv, m)
                 for m in ("same", "wrong"))


# The judge's phases (each row's stages, seconds), in the order they come:
# before its go, a judge started ahead imports PyTorch and starts its
# servers (ahead: all of that; go_wait: how long it then waited for its
# go; near 0, the row waited for its judge instead, for judge_wait, as the
# evaluator measured it from the go); from its go, the rest (the row's run
# stage; share, the inputs, came before the go until judges ahead drew
# them after it).
PHASES = ("import", "start", "ahead", "go_wait", "judge_wait", "share", "build", "draw", "fill",
          "poison", "call", "nop", "out", "check", "release", "wrong")


def phases_line(lv, rows):
    """The median of each phase over the rows that give it."""
    cells = []
    for ph in PHASES:
        v = [r["stages"][ph + "_s"] for r in rows
             if isinstance(r.get("stages"), dict) and
             isinstance(r["stages"].get(ph + "_s"), (int, float))]
        cells.append("%.2f" % median(v) if v else "-")
    return "| %d | " % lv + " | ".join(cells) + " |"


def validation_s(r):
    """A row's validation time: its run stage less the wrong candidate's
    checks (stages.wrong_s, mode both); None without a run stage."""
    if r.get("run_s") is None:
        return None
    st = r.get("stages") if isinstance(r.get("stages"), dict) else {}
    w = st.get("wrong_s")
    return r["run_s"] - (w if isinstance(w, (int, float)) else 0.0)


def times(v):
    return "%.2f / %.2f / %.0f" % (median(v), max(v), sum(v)) if v else "-"


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def short(msg, n=160):
    msg = " ".join((msg or "").split())
    return msg if len(msg) <= n else msg[:n - 3] + "..."


def levels_in(d):
    return sorted({int(m.group(1)) for p in glob.glob(os.path.join(d, "level*"))
                   for m in [re.match(r"level(\d+)[-.]", os.path.basename(p))] if m})


def medians(d):
    """One line per level: its validation and row medians (and maxima and
    totals), from the same rows as the table's."""
    for lv in levels_in(d):
        same = level_calls(d, lv)[0]
        rows = [r for r in (reached(same)["rows"] if same else []) if r.get("run_s") is not None]
        if not rows:
            print("level %d: no validation times" % lv)
            continue
        own = [validation_s(r) for r in rows]
        run = [r["run_s"] for r in rows]
        print("level %d: validation median %.2f s (max %.2f, total %.0f); row median %.2f s "
              "with the wrong checks (max %.2f, total %.0f); %d rows" % (
                  lv, median(own), max(own), sum(own), median(run), max(run), sum(run),
                  len(rows)))


def main(d):
    levels = levels_in(d)
    print("| level | tasks | self-check ok | speedup median (min-max) | within 0.9-1.1x "
          "| wrong caught | validation median / max / total s "
          "| row, with the wrong checks, median / max / total s |")
    print("|---|---|---|---|---|---|---|---|")
    misses, phases = [], []
    for lv in levels:
        same, wrong = (reached(c) if c else None for c in level_calls(d, lv))
        if same:
            phases.append(phases_line(lv, same["rows"]))
        cells = ["%d" % lv]
        if same:
            rows = same["rows"]
            ok = [r for r in rows if r["status"] == "ok"]
            sp = [r["speedup"] for r in ok if r.get("speedup")]
            run = [r["run_s"] for r in rows if r.get("run_s") is not None]
            own = [validation_s(r) for r in rows if r.get("run_s") is not None]
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
            run, own = [], []
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
        cells += [times(own), times(run)]
        print("| " + " | ".join(cells) + " |")
    print()
    if any(not line.endswith("| - " * len(PHASES) + "|") for line in phases):
        print("Where the self-check's validation went (median seconds per row of each of "
              "the judge's phases):")
        print()
        print("| level | " + " | ".join(PHASES) + " |")
        print("|---" * (len(PHASES) + 1) + "|")
        for line in phases:
            print(line)
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
    if len(sys.argv) == 3 and sys.argv[1] == "--medians":
        medians(sys.argv[2])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: kb_levels_table.py [--medians] DIR")
