#!/usr/bin/env python3
"""Remote workers through a real redis-server on loopback, with a password
(docs/remote.md): worker hosts and slot proxies as separate processes.

- a request travels proxy -> Redis -> worker host -> its local worker and
  back; it stays pending in the group until the pool's ping says the result
  is stored, then it is acknowledged and deleted;
- the password is never in a process's command line nor in any log; a wrong
  one is refused with the server's reason;
- a worker host killed mid-evaluation: infra_error naming its host, and the
  next request goes to the other host;
- a worker host stopped (a partition) past its heartbeat: infra_error, and
  its result, once it comes back, is ignored and logged;
- a request of another run: the worker answers why and stops;
- a worker host whose local worker was given up leaves (exit 1, the reason
  logged) instead of answering every request with an error;
- an abort reaches the worker host, which stops the evaluation;
- Redis restarted (without persistence) mid-evaluation: one result, none lost;
- `specgen run --remote 2` schedules onto two worker hosts next to its local
  device, and stores nothing of the URL; `--resume` with the URL again
  goes on with the same hosts.
Exits 77 (skip) only when redis-server is not installed."""
import glob
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_checks import assert_each_kernel_evaluated_once  # noqa: E402
from remote_harness import (Proxy, ROOT, RemoteCase, SPECGEN, example,  # noqa: E402
                            exit_unless_runnable, wait_for)

RUN = "looprun"


def pending(redis, kind="cpu", run=RUN):
    out = redis.cli("XPENDING", "specgen:%s:req:%s" % (run, kind), "workers")
    first = out.splitlines()[0] if out else "0"
    return int(first) if first.isdigit() else 0


class Loopback(RemoteCase):
    RUN = RUN

    def proxy(self, **kw):
        p = Proxy(self.redis, kw.pop("run", RUN), **kw)
        self.proxies.append(p)
        p.expect(lambda r: r["type"] == "hello", "hello")
        return p

    def test_request_round_trip_acknowledged_only_once_stored(self):
        h = self.host("hostA")
        h.wait_ready()
        p = self.proxy()
        p.validate("1.1", example("ok-fast.c"))
        started = p.expect(lambda r: r["type"] == "started", "started")
        self.assertEqual(started["id"], "1.1")
        r = p.result("1.1")
        self.assertEqual((r["type"], r["status"]), ("result", "ok"), r)
        # delivered, not yet stored: still pending in the group
        self.assertEqual(pending(self.redis), 1)
        p.send({"type": "ping", "id": "1.1"})
        p.expect(lambda r: r["type"] == "pong", "pong")
        wait_for(lambda: pending(self.redis) == 0, "the request acknowledged")
        wait_for(lambda: self.redis.cli("XLEN", "specgen:%s:req:cpu" % RUN) == "0",
                 "the request entry deleted")
        # the worker registered itself, and heartbeats
        self.assertIn("hostA/cpu:0/", self.redis.cli("HKEYS", "specgen:%s:workers" % RUN))
        self.assertIn("hostA", self.redis.cli("KEYS", "specgen:%s:hb:*" % RUN))
        # the password shows nowhere: not in a command line, not in a log
        for pid in [h.p.pid, p.p.pid]:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                self.assertNotIn(self.redis.password.encode(), f.read())
        self.assertNotIn(self.redis.password, h.log() + p.stderr_text())

    def test_task_travels_as_its_files(self):
        """A task the controller has as a directory reaches a worker host as
        its files: the path it names exists nowhere, and the worker host
        writes the files under its own build cache."""
        h = self.host("hostA")
        h.wait_ready()
        p = self.proxy()
        src = os.path.join(ROOT, "tasks", "cpu", "hinge_loss")
        files = {}
        for name in sorted(os.listdir(src)):
            if os.path.isfile(os.path.join(src, name)):
                with open(os.path.join(src, name)) as f:
                    files[name] = f.read()
        p.send({"type": "validate", "id": "9.1", "task": "/nowhere/on/any/host/my_task",
                "task_files": files, "source": example("ok-fast.c"),
                "opts": {"seed": 11, "trials": 3, "runs": 3, "warmups": 1}})
        r = p.result("9.1")
        self.assertEqual((r["type"], r["status"]), ("result", "ok"), r)
        written = glob.glob(os.path.join(h.workdir, "**", "tasks", "*", "task.json"),
                            recursive=True)
        self.assertEqual(len(written), 1, (written, h.log()[-2000:]))
        # without them the path is all there is, and this host has none
        p.send({"type": "validate", "id": "9.2", "task": "/nowhere/on/any/host/my_task",
                "source": example("ok-fast.c")})
        r = p.result("9.2")
        self.assertIn("nowhere", r["message"], r)
        self.assertNotEqual(r["status"], "ok", r)

    def test_bad_usage_exits_2_naming_the_flag(self):
        cases = [
            (["--redis", "redis://:pw-secret@h", "--device", "cpu:0"], "--run ID"),
            (["--redis", "redis://:pw-secret@h", "--run", "r"], "--device"),
            (["--redis", "redis://:pw-secret@h:0", "--run", "r", "--device", "cpu:0"],
             "--redis: Redis URL: the port"),
            (["--redis", "redis://:pw-secret@h", "--run", "a/b", "--device", "cpu:0"],
             "--run: run id"),
            (["--redis", "redis://:pw-secret@h", "--run", "r", "--device", "cpu:0",
              "--heartbeat-timeout", "0"], "--heartbeat-timeout"),
        ]
        for args, says in cases:
            r = subprocess.run([SPECGEN, "worker"] + args, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(says, r.stderr)
            self.assertNotIn("pw-secret", r.stderr + r.stdout)
        r = subprocess.run([SPECGEN, "run", "--task", "hinge_loss", "--remote", "1",
                            "--out", os.path.join(self.dir, "x")],
                           capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items()
                                if k != "SPECGEN_REDIS_URL"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--remote 1: no Redis", r.stderr)

    def test_wrong_password_refused_with_the_reason(self):
        bad = self.redis.url().replace(self.redis.password, "not-the-password")
        h = self.host("hostBad", url=bad)
        wait_for(lambda: "authentication refused" in h.log(), "the refusal")
        self.assertNotIn("not-the-password", h.log())
        self.assertNotIn("up (requests connection)", h.log())

    def test_host_killed_mid_evaluation_is_reported_and_the_next_goes_elsewhere(self):
        a, b = self.host("hostA", hb=3), self.host("hostB", hb=3)
        a.wait_ready()
        b.wait_ready()
        p = self.proxy()
        p.validate("1.1", example("timeout-unstarted_workers.c"), timeout_s=30)
        p.expect(lambda r: r["type"] == "started", "started")
        consumer = wait_for(lambda: self.redis.cli(
            "XPENDING", "specgen:%s:req:cpu" % RUN, "workers", "-", "+", "1").splitlines(),
            "the pending entry")[1]
        victim, other = (a, b) if consumer.startswith("hostA/") else (b, a)
        t0 = time.monotonic()
        victim.signal(signal.SIGKILL)
        r = p.result("1.1", limit=60)
        self.assertEqual(r["status"], "infra_error", r)
        self.assertIn("remote worker %s/" % victim.name, r["message"])
        self.assertIn("heartbeat expired while validating", r["message"])
        # word for word as docs/remote.md quotes it (it had drifted)
        with open(os.path.join(ROOT, "docs", "remote.md")) as f:
            quoted = re.search(r'"(remote worker HOST/cpu:0/PID lost: [^"]*)"',
                               " ".join(f.read().split())).group(1)
        self.assertEqual(quoted.replace("HOST/cpu:0/PID", consumer), r["message"])
        self.assertLess(time.monotonic() - t0, 60)
        # the entry is closed: nobody takes it again
        wait_for(lambda: pending(self.redis) == 0, "the lost request acknowledged")
        p.validate("2.1", example("ok-fast.c"))
        r = p.result("2.1")
        self.assertEqual(r["status"], "ok", r)
        self.assertIn("local started", other.log())

    def test_partitioned_host_late_result_ignored_and_logged(self):
        a = self.host("hostA", hb=2)
        a.wait_ready()
        p = self.proxy()
        # slow enough to outlast the heartbeat, short enough for the test
        p.validate("1.1", example("timeout-unstarted_workers.c"), timeout_s=8)
        p.expect(lambda r: r["type"] == "started", "started")
        a.signal(signal.SIGSTOP)  # its local worker goes on evaluating
        r = p.result("1.1", limit=60)
        self.assertEqual(r["status"], "infra_error", r)
        self.assertIn("hostA/", r["message"])
        a.signal(signal.SIGCONT)
        wait_for(lambda: "late result for request" in p.stderr_text(),
                 "the late result logged")
        # and never delivered: no second reply for 1.1
        p.send({"type": "ping"})
        p.expect(lambda r: r["type"] == "pong", "pong")
        self.assertEqual([x for x in p.replies if x.get("id") == "1.1" and
                          x["type"] in ("result", "error")], [r])
        # the host serves again
        p.validate("2.1", example("ok-fast.c"))
        self.assertEqual(p.result("2.1")["status"], "ok")

    def test_resume_continues_with_the_same_hosts(self):
        out = os.path.join(self.dir, "runs", RUN)
        h = self.host("hostA")
        h.wait_ready()
        base = [SPECGEN, "run", "--redis", self.redis.url()]
        # two remote slots: with one, the pool's only other device is the
        # profiling part's, which idles in a run whose kernels never validate
        first = subprocess.run(base + ["--task", "hinge_loss", "--devices", "cpu:0",
                                       "--remote", "2", "--iterations", "1",
                                       "--server-speed", "3000", "--eval-timeout", "10",
                                       "--out", out], capture_output=True, text=True,
                               timeout=600)
        self.assertEqual(first.returncode, 0, first.stderr[-3000:])
        db = os.path.join(out, "run.db")

        def evals():
            c = sqlite3.connect(db)
            n = c.execute("SELECT count(*) FROM evaluations").fetchone()[0]
            c.close()
            return n
        before = evals()
        # the URL again (it was never stored); --remote comes from the run
        second = subprocess.run(base + ["--resume", out, "--iterations", "3",
                                        "--json"],
                                capture_output=True, text=True, timeout=600)
        self.assertEqual(second.returncode, 0, second.stderr[-3000:])
        self.assertGreater(evals(), before)
        assert_each_kernel_evaluated_once(self, out)
        # The resumed run has the remote slot again and the host serves it.
        # Which device each evaluation lands on is the scheduler's choice and
        # the timing's, so the remote slot's share is counted over the whole
        # run, not over its second part.
        workers = [json.loads(line) for line in second.stdout.splitlines()
                   if line.startswith("{")]
        workers = [e.get("device", "") for e in workers if e.get("event") == "worker"]
        self.assertTrue(any(d.startswith("redis:") for d in workers), workers)
        c = sqlite3.connect(db)
        remote = c.execute("SELECT count(*) FROM evaluations WHERE device LIKE "
                           "'redis:%' AND status IS NOT NULL").fetchone()[0]
        c.close()
        self.assertGreaterEqual(remote, 1)
        wait_for(lambda: pending(self.redis) == 0, "no request left pending", limit=30)

    def test_abort_stops_the_remote_evaluation(self):
        h = self.host("hostA")
        h.wait_ready()
        p = self.proxy()
        p.validate("1.1", example("timeout-unstarted_workers.c"), timeout_s=90)
        p.expect(lambda r: r["type"] == "started", "started")
        p.send({"type": "abort", "id": "1.1"})
        self.assertEqual(p.result("1.1")["status"], "aborted")
        wait_for(lambda: "aborted by the controller" in h.log(), "the host to stop it")
        # the one host is free again long before the 90 s evaluation would end
        t0 = time.monotonic()
        p.validate("2.1", example("ok-fast.c"))
        self.assertEqual(p.result("2.1", limit=60)["status"], "ok")
        self.assertLess(time.monotonic() - t0, 60)
        wait_for(lambda: pending(self.redis) == 1, "only 2.1 pending (1.1 closed)")

    def test_result_nobody_stores_is_still_acknowledged(self):
        """A result the pool will never store leaves nothing pending: an
        abort that crossed the result (the pool drops it, no ping comes), and
        a result forwarded but not stored when the pool's input ends."""
        h = self.host("hostA")
        h.wait_ready()
        p = self.proxy()
        p.validate("1.1", example("ok-fast.c"))
        self.assertEqual(p.result("1.1")["status"], "ok")
        self.assertEqual(pending(self.redis), 1)
        p.send({"type": "abort", "id": "1.1"})  # crossed its result
        wait_for(lambda: pending(self.redis) == 0, "the crossed request acknowledged")
        p.validate("2.1", example("ok-fast.c"))
        self.assertEqual(p.result("2.1")["status"], "ok")
        self.assertEqual(pending(self.redis), 1)
        p.send({"type": "shutdown"})
        p.p.stdin.close()  # no ping for 2.1: nobody will store it now
        p.p.wait(timeout=30)
        self.assertEqual(pending(self.redis), 0)
        self.assertEqual(self.redis.cli("XLEN", "specgen:%s:req:cpu" % RUN), "0")

    def test_request_of_another_run_refused_with_the_reason(self):
        h = self.host("hostA", run="otherrun")
        h.wait_ready()
        p = self.proxy(run="otherrun")
        # a request on the run's stream that claims another run
        self.redis.cli("XADD", "specgen:otherrun:req:cpu", "*", "id", "x.1", "run",
                       "looprun", "protocol", "1", "version", "0", "reply",
                       "specgen:otherrun:res:redis:cpu/0", "body", "{}")
        wait_for(lambda: h.p.poll() is not None, "the worker to stop", limit=60)
        self.assertEqual(h.p.returncode, 1)
        self.assertIn("request of run 'looprun', this worker serves run 'otherrun'", h.log())
        wait_for(lambda: "late result for request x.1" in p.stderr_text(),
                 "the refusal reaching the proxy (not its request: ignored)")

    def test_host_whose_local_worker_was_given_up_leaves(self):
        a, b = self.host("hostA"), self.host("hostB")
        a.wait_ready()
        b.wait_ready()

        def device_worker():
            """The pid of hostA's local device worker: its child started as
            `worker --device D --build-cache ...`. Not any child whose command
            line says --device: a task hostA itself clones (a fork before its
            exec, a sanitizer's tracer at exit) shows hostA's command line."""
            for d in os.listdir("/proc"):
                try:
                    with open("/proc/%s/stat" % d) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    with open("/proc/%s/cmdline" % d, "rb") as f:
                        args = f.read().split(b"\0")
                except (OSError, ValueError, IndexError):
                    continue
                if (ppid == a.p.pid and b"--device" in args and b"--build-cache" in args
                        and b"--redis" not in args):
                    return int(d)
            return None

        # its device worker dies more often in a row than the pool restarts
        # it (5): bounded in kills and time
        killed, end = set(), time.monotonic() + 120
        given_up = "the local device worker was given up"
        while (a.p.poll() is None and given_up not in a.log() and len(killed) < 20
               and time.monotonic() < end):
            pid = device_worker()
            if pid and pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.05)
        wait_for(lambda: a.p.poll() is not None, "hostA to leave", limit=60)
        self.assertEqual(a.p.returncode, 1, a.log())
        self.assertIn(given_up, a.log())
        self.assertIn("leaving", a.log())
        self.assertGreaterEqual(len(killed), 6)
        # the run's requests go to the host that can evaluate them
        p = self.proxy()
        p.validate("1.1", example("ok-fast.c"))
        self.assertEqual(p.result("1.1")["status"], "ok")
        self.assertIn("local started", b.log())

    def test_redis_restart_mid_evaluation_loses_nothing(self):
        a, b = self.host("hostA", hb=4), self.host("hostB", hb=4)
        a.wait_ready()
        b.wait_ready()
        p = self.proxy()
        p.validate("1.1", example("timeout-unstarted_workers.c"), timeout_s=5)
        p.expect(lambda r: r["type"] == "started", "started")
        self.redis.stop()
        time.sleep(6)  # the evaluation ends while Redis is away
        self.redis.start()
        r = p.result("1.1", limit=90)
        self.assertEqual(r["status"], "timeout", r)
        p.send({"type": "ping", "id": "1.1"})
        p.expect(lambda r: r["type"] == "pong", "pong")
        # a second evaluation may run (the request was added again): its
        # result is dropped by id, never delivered
        time.sleep(2)
        p.send({"type": "ping"})
        p.expect(lambda r: r["type"] == "pong", "pong")
        self.assertEqual(len([x for x in p.replies if x.get("id") == "1.1" and
                              x["type"] == "result"]), 1)
        p.validate("2.1", example("ok-fast.c"))
        self.assertEqual(p.result("2.1")["status"], "ok")

    def test_run_schedules_onto_remote_hosts_and_stores_no_url(self):
        out = os.path.join(self.dir, "runs", RUN)
        a, b = self.host("hostA"), self.host("hostB")
        a.wait_ready()
        b.wait_ready()
        proc = subprocess.Popen([SPECGEN, "run", "--task", "hinge_loss", "--devices", "cpu:0",
                                 "--remote", "2", "--iterations", "2", "--server-speed", "3000",
                                 "--eval-timeout", "10", "--out", out,
                                 "--redis", self.redis.url()],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # while it runs: the URL is in its slot proxies' environment only,
        # not in the local workers' (nor, so, a candidate's)
        secret = self.redis.password.encode()
        seen = {"proxy": 0, "local": 0}

        def look():
            for pid in os.listdir("/proc"):
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as f:
                        cmd = f.read()
                    with open("/proc/%s/environ" % pid, "rb") as f:
                        env = f.read()
                    with open("/proc/%s/stat" % pid) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid != proc.pid:
                    continue
                if b"--remote-slot" in cmd:
                    self.assertIn(secret, env)
                    seen["proxy"] += 1
                elif b"worker" in cmd:
                    self.assertNotIn(secret, env, cmd)
                    seen["local"] += 1
            return seen["proxy"] and seen["local"]
        wait_for(look, "the run's workers", limit=120, every=0.2)
        stdout, stderr = proc.communicate(timeout=600)
        r = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        assert_each_kernel_evaluated_once(self, out)
        db = sqlite3.connect(os.path.join(out, "run.db"))
        devs = {d for (d,) in db.execute("SELECT device FROM evaluations WHERE device IS NOT NULL")}
        self.assertTrue(any(d.startswith("redis:cpu/") for d in devs), devs)
        n_remote = db.execute("SELECT count(*) FROM evaluations WHERE device LIKE 'redis:%'"
                              " AND status IS NOT NULL").fetchone()[0]
        db.close()
        served = a.log().count("local started") + b.log().count("local started")
        self.assertGreaterEqual(served, 2)
        self.assertGreaterEqual(n_remote, 1)
        for f in glob.glob(os.path.join(out, "**"), recursive=True):
            if os.path.isfile(f):
                with open(f, "rb") as fh:
                    self.assertNotIn(self.redis.password.encode(), fh.read(), f)
        self.assertNotIn(self.redis.password, r.stdout + r.stderr)
        # every request acknowledged once its result was stored
        try:
            wait_for(lambda: pending(self.redis) == 0, "no request left pending", limit=30)
        except AssertionError:
            with open(os.path.join(out, "workers.log")) as f:
                raise AssertionError("left pending: %s\n%s\n%s\n%s" % (
                    self.redis.cli("XPENDING", "specgen:%s:req:cpu" % RUN, "workers", "-", "+", "9"),
                    self.redis.cli("XRANGE", "specgen:%s:req:cpu" % RUN, "-", "+"),
                    f.read()[-3000:], r.stdout[-3000:]))


if __name__ == "__main__":
    exit_unless_runnable()
    unittest.main(verbosity=2)
