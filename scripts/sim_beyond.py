#!/usr/bin/env python3
"""sim_beyond.py: the "Beyond the paper" table of docs/simulation.md.

Runs `specgen sim --json` for each preset and seed with the configurations
given (plus `full`, the reference), and prints one Markdown row per preset
and configuration: medians over the seeds of each seed's ratio to that
seed's `full` (end to end as the geometric mean over workflows, token
consumption, total tokens, best kernel, profiling feedback), the
end-to-end ratio's range, and whether the row meets the goal (end to end
<= 0.85, consumption and total <= 1, best kernel >= 1, and profiling
feedback >= 0.9: the kernels profiled, whose profiles the next prompts
show, which the paper counts as a gain of speculation; without that part
a policy could meet the goal by profiling almost nothing). The last
column says which parts fail.

  scripts/sim_beyond.py [--specgen PATH] [--seeds 1-5] [--presets A,B]
                        [--set KEY=V ...] CONFIG[,CONFIG...]
"""
import argparse
import json
import statistics
import subprocess
import sys


def seeds_of(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def run(specgen, preset, seed, configs, sets):
    cmd = [specgen, "sim", "--preset", preset, "--seed", str(seed),
           "--configs", ",".join(["full"] + configs), "--json"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {c["name"]: c for c in json.loads(out)["configs"]}


def metrics(c):
    return (c["e2e_geomean_s"], c["tokens"]["consumption"], c["tokens"]["total"],
            c["best_speedup_geomean"], c["profiling_feedback"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specgen", default="build/src/cli/specgen")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--presets", default="paper-glm,paper-dsv4")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("configs")
    a = ap.parse_args()
    configs = [c for c in a.configs.split(",") if c and c != "full"]
    print("| preset | config | E2E vs full: median (range) | consumption vs full "
          "| total tokens vs full | best kernel vs full | feedback vs full | goal |")
    print("|---|---|---|---|---|---|---|---|")
    for preset in a.presets.split(","):
        per = {c: [] for c in configs}
        for seed in seeds_of(a.seeds):
            res = run(a.specgen, preset, seed, configs, a.set)
            ref = metrics(res["full"])
            for c in configs:
                per[c].append([x / r for x, r in zip(metrics(res[c]), ref)])
        for c in configs:
            cols = list(zip(*per[c]))
            med = [statistics.median(col) for col in cols]
            fails = [n for n, bad in (("time", med[0] > 0.85),
                                      ("consumption", med[1] > 1),
                                      ("total", med[2] > 1),
                                      ("kernel", med[3] < 1),
                                      ("feedback", med[4] < 0.9)) if bad]
            name = c + (" (" + ", ".join(a.set) + ")" if a.set else "")
            print(f"| {preset} | {name} | {med[0]:.3f} ({min(cols[0]):.3f}–"
                  f"{max(cols[0]):.3f}) | {med[1]:.3f} | {med[2]:.3f} | "
                  f"{med[3]:.3f} | {med[4]:.3f} | "
                  f"{'yes' if not fails else 'no: ' + ', '.join(fails)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
