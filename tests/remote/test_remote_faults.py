#!/usr/bin/env python3
"""Remote workers that cannot work say so, and a run leaves nothing behind
(docs/remote.md, "Faults" and "Keys"), through a real redis-server on
loopback and real processes:

- `specgen worker --run ID` without a Redis URL is bad usage (exit 2),
  never a local worker serving stdin;
- a worker host with a wrong password, or with no Redis there, exits 1 at
  once with the reason; one whose Redis goes away exits 1 after
  --redis-timeout, saying why;
- `specgen run --remote` with a wrong password or no Redis fails at its
  start (exit 1) with the server's reason, a bad URL with exit 2;
- a remote slot no worker host serves: each request waits eval-timeout plus
  hang-grace (not the compile limit), the slot taken out of service stays
  out (its proxy is not restarted) and its waiting is no device's busy time;
- a pool that ends mid-evaluation stops the host's evaluation;
- a finished run leaves no request entries, reply streams or `workers`
  entries in Redis, and a stopped worker host removes its own keys.
Exits 77 (skip) only when redis-server is not installed."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import unittest  # noqa: F401 (unittest.main)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_harness import (Proxy, RemoteCase, SPECGEN, example,  # noqa: E402
                            exit_unless_runnable, free_port, wait_for)

RUN = "faultrun"


def no_url_env():
    return {k: v for k, v in os.environ.items() if k != "SPECGEN_REDIS_URL"}


class Faults(RemoteCase):
    RUN = RUN

    def keys(self):
        out = self.redis.cli("KEYS", "specgen:%s:*" % RUN)
        return sorted(k for k in out.splitlines() if k)

    def run_specgen(self, args, limit=600):
        return subprocess.run([SPECGEN, "run"] + args, capture_output=True, text=True,
                              timeout=limit, env=no_url_env())

    def test_worker_run_without_url_is_a_usage_error(self):
        # stdin stays open: a worker serving it would wait for requests
        p = subprocess.Popen([SPECGEN, "worker", "--run", RUN, "--device", "cpu:0"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=no_url_env())
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("`worker --run` without a URL served stdin")
        self.assertEqual(p.returncode, 2, err)
        self.assertIn("give --redis URL", err)
        self.assertNotIn("hello", out)

    def test_worker_with_a_wrong_password_or_no_redis_exits_1_saying_why(self):
        bad = self.redis.url().replace(self.redis.password, "not-the-password")
        h = self.host("hostBad", url=bad)
        wait_for(lambda: h.p.poll() is not None, "the worker to give up", limit=60)
        self.assertEqual(h.p.returncode, 1, h.log())
        self.assertIn("authentication refused: WRONGPASS", h.log())
        self.assertIn("127.0.0.1:%d" % self.redis.port, h.log())
        self.assertNotIn("not-the-password", h.log())
        h2 = self.host("hostNone", url="redis://:pw@127.0.0.1:%d" % free_port())
        wait_for(lambda: h2.p.poll() is not None, "the worker to give up", limit=60)
        self.assertEqual(h2.p.returncode, 1, h2.log())
        self.assertIn("cannot connect (Connection refused)", h2.log())

    def test_worker_leaves_when_its_redis_stays_unreachable(self):
        log = open(os.path.join(self.dir, "hostT.log"), "w")
        p = subprocess.Popen([SPECGEN, "worker", "--redis", self.redis.url(), "--run", RUN,
                              "--device", "cpu:0", "--host", "hostT", "--redis-timeout", "3",
                              "--work-dir", self.dir], stdout=subprocess.DEVNULL, stderr=log)
        log.close()

        def text():
            with open(os.path.join(self.dir, "hostT.log")) as f:
                return f.read()
        try:
            wait_for(lambda: "up (requests connection)" in text(), "hostT to reach Redis")
            self.redis.stop()
            t0 = time.monotonic()
            p.wait(timeout=90)
            self.assertEqual(p.returncode, 1, text())
            self.assertLess(time.monotonic() - t0, 60)
            self.assertRegex(text(), r"Redis 127\.0\.0\.1:\d+ unreachable for \d+ s \(")
            self.assertIn("leaving", text())
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_run_refuses_a_redis_it_cannot_use_at_its_start(self):
        base = ["--task", "hinge_loss", "--devices", "cpu:0", "--remote", "1",
                "--iterations", "1", "--server-speed", "3000"]
        bad = self.redis.url().replace(self.redis.password, "not-the-password")
        t0 = time.monotonic()
        r = self.run_specgen(base + ["--out", os.path.join(self.dir, "r1"), "--redis", bad],
                             limit=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertLess(time.monotonic() - t0, 60)
        self.assertIn("authentication refused: WRONGPASS", r.stderr)
        self.assertNotIn("not-the-password", r.stdout + r.stderr)
        self.assertNotIn("--resume", r.stderr)  # nothing was written to resume
        r = self.run_specgen(base + ["--out", os.path.join(self.dir, "r2"), "--redis",
                                     "redis://:pw@127.0.0.1:%d" % free_port()], limit=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot connect (Connection refused)", r.stderr)
        r = self.run_specgen(base + ["--out", os.path.join(self.dir, "r3"), "--redis",
                                     "http://127.0.0.1:1"], limit=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--redis: Redis URL", r.stderr)

    def test_slot_without_worker_hangs_as_configured_and_stays_out_of_service(self):
        out = os.path.join(self.dir, "runs", RUN)
        # two remote slots (with one, it may be the profiling part's, idle
        # while nothing validates) and two tasks: the slots get requests
        r = self.run_specgen(["--task", "hinge_loss", "--task", "diag_matmul",
                              "--devices", "cpu:0", "--remote", "2",
                              "--iterations", "3", "--server-speed", "3000",
                              "--eval-timeout", "10", "--hang-grace", "5", "--json",
                              "--out", out, "--redis", self.redis.url()], limit=900)
        events = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        remote = [e for e in events if e.get("device", "").startswith("redis:")]
        hung = [e["message"] for e in remote if e.get("event") == "worker" and
                e.get("what") == "hung"]
        self.assertTrue(hung, (r.returncode, r.stderr[-3000:]))
        for msg in hung:
            m = re.search(r"no worker host took the request within (\d+) s", msg)
            self.assertTrue(m, msg)
            # eval-timeout 10 + hang-grace 5, late by a busy machine at most;
            # the compile limit (60 s) + grace would be 65
            self.assertLess(int(m.group(1)), 40, msg)
        retired = 0
        for slot in {e["device"] for e in remote}:
            mine = [e for e in remote if e["device"] == slot]
            out_of_service = [i for i, e in enumerate(mine) if e.get("event") == "warning"
                              and "taken out of service" in e.get("message", "")]
            self.assertLessEqual(len(out_of_service), 1, mine)
            if out_of_service:
                retired += 1
                after = [e for e in mine[out_of_service[0]:] if e.get("event") == "worker"]
                self.assertEqual(after, [], "%s was brought back: %s" % (slot, after))
        self.assertGreaterEqual(retired, 1, remote)
        db = sqlite3.connect(os.path.join(out, "run.db"))
        busy = db.execute("SELECT count(*), coalesce(sum(ended_us - started_us), 0) FROM "
                          "device_intervals WHERE device LIKE 'redis:%'").fetchone()
        local = db.execute("SELECT count(*) FROM device_intervals WHERE device = 'cpu:0'"
                           ).fetchone()[0]
        db.close()
        self.assertEqual(busy, (0, 0), "slots nobody served counted as busy")
        self.assertGreater(local, 0)
        self.assertIn(r.returncode, (0, 1), r.stderr[-3000:])
        # the requests its killed proxies left are gone with the run
        self.assertEqual(self.keys(), [])

    def test_pool_gone_mid_evaluation_stops_the_hosts_evaluation(self):
        """The controller's pool ends (its input closes) while a host
        evaluates: the host is told to stop, so no result of it comes after
        the run's end (it would re-create the slot's reply stream)."""
        h = self.host("hostA")
        h.wait_ready()
        p = Proxy(self.redis, RUN)
        self.proxies.append(p)
        p.expect(lambda r: r["type"] == "hello", "hello")
        p.validate("1.1", example("timeout-unstarted_workers.c"), timeout_s=90)
        p.expect(lambda r: r["type"] == "started", "started")
        t0 = time.monotonic()
        p.send({"type": "shutdown"})
        p.p.stdin.close()
        p.p.wait(timeout=60)
        wait_for(lambda: "request" in h.log() and "aborted by the controller" in h.log(),
                 "the host to stop the evaluation", limit=60)
        # long before the candidate's own 90 s limit
        self.assertLess(time.monotonic() - t0, 60)

    def test_finished_run_leaves_no_keys_behind(self):
        hosts = [self.host("hostA"), self.host("hostB")]
        for h in hosts:
            h.wait_ready()
        # a host killed while registered: its heartbeat expires, its entry
        # is the run's end's to remove
        dead = self.host("hostDead", hb=1)
        dead.wait_ready()
        dead.signal(signal.SIGKILL)
        out = os.path.join(self.dir, "runs", RUN)
        r = self.run_specgen(["--task", "hinge_loss", "--devices", "cpu:0", "--remote", "2",
                              "--iterations", "2", "--server-speed", "3000",
                              "--eval-timeout", "10", "--out", out,
                              "--redis", self.redis.url()])
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        db = sqlite3.connect(os.path.join(out, "run.db"))
        remote = db.execute("SELECT count(*) FROM evaluations WHERE device LIKE 'redis:%'"
                            " AND status IS NOT NULL").fetchone()[0]
        db.close()
        self.assertGreaterEqual(remote, 1)
        # the live hosts keep their heartbeats and registrations (they
        # still serve the run, for a --resume); nothing else stays
        live = ("hostA/", "hostB/")
        left = [k for k in self.keys()
                if not any(k.startswith("specgen:%s:%s:%s" % (RUN, kind, h))
                           for kind in ("hb", "ctl") for h in live)
                and k != "specgen:%s:workers" % RUN]
        self.assertEqual(left, [])
        registered = self.redis.cli("HKEYS", "specgen:%s:workers" % RUN).split()
        self.assertEqual(sorted(k.split("/")[0] for k in registered), ["hostA", "hostB"])
        # stopped, the hosts take their own keys with them
        for h in hosts:
            h.stop()
            self.assertEqual(h.p.returncode, 0, h.log())
        self.assertEqual(self.keys(), [])


if __name__ == "__main__":
    exit_unless_runnable()
    unittest.main(verbosity=2)
