#!/usr/bin/env python3
"""sim_fit.py: the simulator against the paper over several seeds
(docs/simulation.md, "Results next to the paper").

  scripts/sim_fit.py [--specgen PATH] [--seeds 1-5] [--set KEY=V ...] table

table: runs `specgen sim --reproduce --json` for each seed and prints the
reproduce table in Markdown: per cell the paper's value, the simulator's
median over the seeds with its range, the ratio sim / paper (median,
range) and on how many seeds it is within 10%; then the count of cells
within 10% on each seed.

Exit status 0, 1 when a run fails, 2 on bad usage.
"""
import argparse
import json
import statistics
import subprocess
import sys

def seeds_of(text):
    lo, _, hi = text.partition("-")
    if not lo.isdigit() or (hi and not hi.isdigit()):
        raise argparse.ArgumentTypeError("seeds: expected N or N-M, got %r" % text)
    return list(range(int(lo), int(hi or lo) + 1))


def specgen_json(specgen, args):
    r = subprocess.run([specgen, "sim"] + args + ["--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("specgen sim %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                           r.stderr))
        sys.exit(1)
    return json.loads(r.stdout)


def sets_args(sets):
    out = []
    for s in sets:
        out += ["--set", s]
    return out


def reproduce(specgen, seed, sets):
    return specgen_json(specgen, ["--reproduce", "--seed", str(seed)] + sets_args(sets))["cells"]


def within(c):
    return c["ratio"] is not None and abs(c["ratio"] - 1) <= 0.1


def med_range(xs, fmt="%.3g"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def table(specgen, seeds, sets):
    runs = [reproduce(specgen, s, sets) for s in seeds]
    print("| table | model | row | column | paper | sim: median (range) | ratio: median "
          "(range) | within 10% |")
    print("|---|---|---|---|---|---|---|---|")
    for i, c in enumerate(runs[0]):
        cells = [r[i] for r in runs]
        print("| %s | %s | %s | %s | %.4g | %s | %s | %d of %d |" % (
            c["table"].replace("Table ", ""), c["model"], c["row"], c["column"], c["paper"],
            med_range([x["sim"] for x in cells]), med_range([x["ratio"] for x in cells], "%.2f"),
            sum(within(x) for x in cells), len(cells)))
    counts = [sum(within(x) for x in r) for r in runs]
    print()
    print("Within 10%%, seeds %d-%d: %s of %d cells (median %g)" % (
        seeds[0], seeds[-1], ", ".join(map(str, counts)), len(runs[0]),
        statistics.median(counts)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specgen", default="build/src/cli/specgen")
    ap.add_argument("--seeds", type=seeds_of, default=seeds_of("1-5"))
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("what", choices=["table"])
    a = ap.parse_args()
    return table(a.specgen, a.seeds, a.sets)


if __name__ == "__main__":
    sys.exit(main())
