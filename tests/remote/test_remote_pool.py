#!/usr/bin/env python3
"""The simulated pool of bench_redis (`--pool`, docs/benchmarks.md) end to
end, small: 20 fake devices through a real redis-server, each a real slot
proxy and a real remote worker (the code of `specgen run --redis` and
`specgen worker --redis`) that answers after the paper's latencies divided
by 100 (about 250 ms: light enough for a sanitized build on a busy machine).

- every result comes back as the fake device gave it (the bench counts any
  other reply, and any lost worker or late result in the log, as a failure);
- the broker adds little next to the service time: the median overhead is
  under the mean service time (a few ms here; a worker that holds its next
  request back until its control-list wait times out, as before the wake at
  the end of an evaluation, adds about 750 ms with today's 1 s wait);
- the devices are busy for most of the window (over half of it; about 99%
  here, about 25% with that fault).
Bounds are ratios with room for a busy 2-core machine. Exits 77 (skip) only
when redis-server is not installed."""
import os
import shutil
import subprocess
import sys

BENCH = os.environ["SG_BENCH_REDIS"]
SCALE = 100
MEAN_SERVICE_MS = (22.9 + 26.5) / 2 * 1000 / SCALE  # the paper's means, scaled


def main():
    if not shutil.which("redis-server"):
        print("SKIP: redis-server is not installed")
        return 77
    p = subprocess.run([BENCH, "--pool", "20", "--seconds", "3", "--scale", str(SCALE)],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    assert p.returncode == 0, "bench_redis --pool failed (%d)" % p.returncode
    rows = [ln.split() for ln in p.stdout.splitlines() if ln.split()[:1] == ["20"]]
    assert len(rows) == 1, "no row for 20 devices"
    r = rows[0]
    offered, got = float(r[1]), float(r[2])
    busy, p50 = float(r[3].rstrip("%")), float(r[4])
    bad = int(r[-1])
    assert abs(offered - 20 / (MEAN_SERVICE_MS / 1000)) < 1, r
    assert got > 0 and bad == 0, r
    assert p50 < MEAN_SERVICE_MS, "the broker added %.1f ms (median)" % p50
    assert busy > 50, "devices busy %.1f%% of the window" % busy
    assert "warnings in the slots' and workers' log (lost, late, failed): 0" in p.stdout
    print("ok: %.0f results/s of %.0f offered, median overhead %.2f ms" % (got, offered, p50))
    return 0


if __name__ == "__main__":
    sys.exit(main())
