#!/usr/bin/env python3
"""measure_streams.py: what real reasoning traces say about the simulator's
stream model (docs/simulation.md, "The stream model, measured").

Usage: scripts/measure_streams.py SPECGEN TRACES_DIR OUT_DIR

Reads TRACES_DIR/qwq32b.jsonl.gz and TRACES_DIR/gptoss120b.jsonl.gz (one
JSON trace a line: `reasoning`, `answer`, `meta`; the traces are third-party
text and stay outside the repository), runs the project's own trigger
scanner (`SPECGEN triggers - --json`) over each trace's reasoning, and
writes OUT_DIR/<model>.json: per model, the distributions (count, mean,
quantiles) of
  - the reasoning's length in bytes (tokens need the model's tokenizer,
    which is not measured here),
  - where the first complete kernel (class `kernel`: a `__global__` or
    `@triton.jit` body) appears, as a fraction of the reasoning,
  - kernels per trace, and revisions (kernels after the first),
  - design blocks, implementation phrases and closed fences per trace and
    where in the reasoning they fall (fraction of its length),
  - the share of traces whose reasoning ends inside an open fence
    (the trace's own `meta.reasoning_ends_inside_open_fence`),
  - the share of traces with no complete kernel in the reasoning,
  - triggers of every class per trace with the controller's minimum gap
    between them (256 bytes): the forks a trace can cause, and where in
    the reasoning they fall.
Each distribution also holds its whole quantile function (`quantiles`,
0% to 100% by 1%), which the simulator's presets draw from
(docs/simulation.md, "The stream model, measured").
Deterministic: the same traces give the same files.
"""
import gzip
import json
import os
import subprocess
import sys

MODELS = {"qwq32b": "qwq32b.jsonl.gz", "gptoss120b": "gptoss120b.jsonl.gz"}
CLASSES = ("design", "phrase", "fence", "kernel")
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
# The controller's scanner drops a trigger closer than this to the last
# (SG_CTL_TRIGGER_GAP_BYTES): the triggers a trace really forks on.
GAP_BYTES = 256


def quantile(sorted_v, q):
    if not sorted_v:
        return None
    pos = q * (len(sorted_v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (pos - lo)


def dist(values):
    v = sorted(values)
    out = {"n": len(v), "mean": (sum(v) / len(v)) if v else None}
    for q in QUANTILES:
        x = quantile(v, q)
        out["p%d" % round(q * 100)] = round(x, 4) if x is not None else None
    # The whole quantile function, 0% to 100% by 1%: what the simulator
    # draws from (inverse transform, linear between the points).
    out["quantiles"] = [round(quantile(v, i / 100.0), 4) for i in range(101)] if v else []
    return out


def triggers(specgen, text, min_gap=0):
    r = subprocess.run([specgen, "triggers", "-", "--json", "--min-gap", str(min_gap)],
                       input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise RuntimeError("specgen triggers: exit %d: %s" % (r.returncode, r.stderr[:200]))
    return [json.loads(line) for line in r.stdout.decode().splitlines() if line.strip()]


def measure(specgen, path):
    length, first_kernel, open_fence, no_kernel = [], [], 0, 0
    per = {c: [] for c in CLASSES}
    pos = {c: [] for c in CLASSES}
    revisions, gapped, gapped_pos = [], [], []
    n = 0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            text = t.get("reasoning") or ""
            nbytes = len(text.encode())
            if nbytes == 0:
                continue
            n += 1
            length.append(nbytes)
            trig = triggers(specgen, text)
            counts = {c: 0 for c in CLASSES}
            for x in trig:
                c = x["class"]
                if c in counts:
                    counts[c] += 1
                    pos[c].append(x["offset"] / nbytes)
            for c in CLASSES:
                per[c].append(counts[c])
            fired = triggers(specgen, text, GAP_BYTES)
            gapped.append(len(fired))
            gapped_pos.extend(x["offset"] / nbytes for x in fired)
            kernels = [x["offset"] for x in trig if x["class"] == "kernel"]
            if kernels:
                first_kernel.append(min(kernels) / nbytes)
                revisions.append(len(kernels) - 1)
            else:
                no_kernel += 1
            open_fence += bool(t.get("meta", {}).get("reasoning_ends_inside_open_fence"))
    return {
        "traces": n,
        "reasoning_bytes": dist(length),
        "first_kernel_fraction": dist(first_kernel),
        "kernels_per_trace": dist(per["kernel"]),
        "revisions_per_trace_with_kernel": dist(revisions),
        "design_per_trace": dist(per["design"]),
        "design_position_fraction": dist(pos["design"]),
        "phrase_per_trace": dist(per["phrase"]),
        "phrase_position_fraction": dist(pos["phrase"]),
        "fence_per_trace": dist(per["fence"]),
        "fence_position_fraction": dist(pos["fence"]),
        "kernel_position_fraction": dist(pos["kernel"]),
        "triggers_per_trace_at_controller_gap": dist(gapped),
        "trigger_position_fraction_at_controller_gap": dist(gapped_pos),
        "share_ending_in_open_fence": round(open_fence / n, 4) if n else None,
        "share_without_kernel": round(no_kernel / n, 4) if n else None,
    }


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: measure_streams.py SPECGEN TRACES_DIR OUT_DIR\n")
        return 2
    specgen, traces, out = argv[1:]
    os.makedirs(out, exist_ok=True)
    for model, name in MODELS.items():
        path = os.path.join(traces, name)
        if not os.path.exists(path):
            sys.stderr.write("%s: no such file\n" % path)
            return 2
        m = measure(specgen, path)
        m["model"] = model
        m["source_file"] = name
        m["command"] = "scripts/measure_streams.py build/src/cli/specgen ../shared/traces sim/streams"
        with open(os.path.join(out, model + ".json"), "w") as f:
            json.dump(m, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%s: %d traces" % (model, m["traces"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
