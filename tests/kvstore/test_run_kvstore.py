#!/usr/bin/env python3
"""test_run_kvstore.py SPECGEN: `specgen run --kv-store` starts the store
with the pool (host memory for cpu devices), announces its lm:// URL and
LMCache configuration, yields to every evaluation, and reports its counters
in summary.json and kv_store.json. A client written from LMCache's protocol
stores and loads blocks while the run goes on. TAP."""
import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lmc_wire as w  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_checks import kernels_evaluated_again  # noqa: E402

SPECGEN = sys.argv[1]
n = 0
failed = 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {name}")
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[:40]:
            print(f"# {line}")
    sys.stdout.flush()


TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "tasks", "cpu", "hinge_loss")

with tempfile.TemporaryDirectory() as tmp:
    # The test model plays a copy of the task with only its valid examples:
    # every kernel it writes then compiles and takes the device, whatever
    # order the timing gives the candidates (a compile error never takes a
    # device, so a run of them would leave nothing to yield to).
    task = os.path.join(tmp, "tasks", "cpu", "hinge_loss")
    shutil.copytree(TASK, task)
    for f in glob.glob(os.path.join(task, "examples", "*.c")):
        if not os.path.basename(f).startswith("ok-"):
            os.unlink(f)
    server = subprocess.Popen(
        [SPECGEN, "llm", "serve", "--tasks", os.path.join(tmp, "tasks"),
         "--tokens-per-s", "3000", "--json"], stdout=subprocess.PIPE,
        text=True)
    atexit.register(server.kill)
    url = json.loads(server.stdout.readline())["listening"]
    out = os.path.join(tmp, "run")
    p = subprocess.Popen(
        [SPECGEN, "run", "--task", task, "--llm", url, "--model",
         "specgen-test", "--profile", "vllm", "--devices", "cpu:0",
         "--iterations", "2", "--out", out, "--json", "--kv-store",
         "--kv-store-memory", "8M", "--kv-store-reserve", "6M",
         "--runs", "3", "--warmups", "1",
         "--tick", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = []
    kv = None
    for line in p.stdout:
        ev = json.loads(line)
        events.append(ev)
        if ev["event"] == "kv_store":
            kv = ev
            break
    ok(kv is not None and kv["url"].startswith("lm://127.0.0.1:"),
       "the run announces the store's lm:// URL")
    ok(kv is not None and f'remote_url: "{kv["url"]}"' in kv["lmcache_config"]
       and "remote_serde" in kv["lmcache_config"],
       "and the LMCache configuration that points at it")
    if kv:
        host, port = kv["url"][5:].rsplit(":", 1)
        c = w.Client(host, int(port))
        blocks = {i: bytes([i]) * (64 << 10) for i in range(4)}
        for i, b in blocks.items():
            c.put(w.key(i), b)
        right = all(c.get(w.key(i))[1] == b for i, b in blocks.items())
        miss = c.get(w.key(99))[1] is None
        ok(right and miss, "blocks stored during the run come back; a miss "
           "misses")
        c.close()
    rest, err = p.communicate(timeout=600)
    for line in rest.splitlines():
        events.append(json.loads(line))
    ok(p.returncode == 0, "the run succeeds", err[-2000:])
    again = kernels_evaluated_again(out)
    ok(not again, "no kernel evaluated twice", "\n".join(again))
    end = [e for e in events if e["event"] == "run_end"]
    s = end[0]["summary"] if end else {}
    k = s.get("kv_store", {})
    ok(k.get("hits") == 4 and k.get("misses") == 1 and
       k.get("put_bytes") == 4 * (64 << 10), "summary: hits, misses, bytes", k)
    server.terminate()
    server.wait(timeout=60)
    evals = [e for e in events if e["event"] == "evaluation"]
    # The pool tells the store when a device goes from idle to busy, so
    # evaluations back to back share one yield.
    ok(len(evals) >= 1 and all(e["status"] == "ok" for e in evals) and
       1 <= k.get("yields", 0) <= len(evals) + 1 and
       k["tiers"][0]["yields"] == k["yields"],
       "every evaluation made the store yield first",
       {"evaluations": [e["status"] for e in evals], "kv_store": k})
    with open(os.path.join(out, "summary.json")) as f:
        ok(json.load(f).get("kv_store", {}).get("hits") == 4,
           "summary.json has the store's counters")
    with open(os.path.join(out, "kv_store.json")) as f:
        ok(json.load(f).get("url") == kv["url"], "kv_store.json is written")
    bad = subprocess.run([SPECGEN, "run", "--task", "hinge_loss", "--kv-store",
                          "--kv-store-memory", "lots"], capture_output=True,
                         text=True, timeout=60)
    ok(bad.returncode == 2 and "kv-store-memory" in bad.stderr,
       "a bad size names its key", bad.stderr)
print(f"1..{n}")
sys.exit(1 if failed else 0)
