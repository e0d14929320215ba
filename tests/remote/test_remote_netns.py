#!/usr/bin/env python3
"""Remote workers on three "hosts", each in a network namespace of its own
(veth pairs on addresses this test chooses), one redis-server with a password
reached over them (docs/remote.md, "Faults"):

- slot proxies driven as the controller's pool drives them: one host killed
  mid-evaluation, another cut off (`ip link set down`) past its heartbeat and
  brought back (its late result ignored and logged), Redis restarted while
  requests are out; every request gets exactly one final reply, the lost ones
  are reported naming their host and served again elsewhere;
- a whole `specgen run --remote 3` over the three hosts that loses one host
  and sees Redis restart mid-run: it completes, every evaluation it started
  has exactly one outcome, and nothing is left pending in Redis.

Exits 77 (skip) with the reason where namespaces cannot be made (not root,
no CAP_NET_ADMIN, no `ip`) or redis-server is not installed."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_checks import assert_each_kernel_evaluated_once  # noqa: E402
from remote_harness import (Host, Proxy, Redis, SPECGEN, example, exit_unless_runnable,  # noqa: E402
                            stop_all, wait_for)

TAG = "sgr%d" % (os.getpid() % 100000)
NET = 200 + os.getpid() % 50  # 10.NET.K.0/24 for host K
HOSTS = 3


def sh(*cmd, check=True):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=check)


class Net:
    """HOSTS namespaces, each joined to this one by a veth pair: here
    10.NET.K.1, there 10.NET.K.2."""

    def __init__(self):
        self.made = []
        for k in range(1, HOSTS + 1):
            ns, a, b = self.ns(k), self.here(k), "%sb%d" % (TAG, k)
            sh("ip", "netns", "add", ns)
            self.made.append(k)
            sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
            sh("ip", "link", "set", b, "netns", ns)
            sh("ip", "addr", "add", "10.%d.%d.1/24" % (NET, k), "dev", a)
            sh("ip", "link", "set", a, "up")
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", "10.%d.%d.2/24" % (NET, k),
               "dev", b)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", b, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

    @staticmethod
    def ns(k):
        return "%sh%d" % (TAG, k)

    @staticmethod
    def here(k):
        return "%sa%d" % (TAG, k)

    @staticmethod
    def addr(k):
        return "10.%d.%d.1" % (NET, k)

    def link(self, k, up):
        sh("ip", "link", "set", self.here(k), "up" if up else "down")

    def remove(self):
        for k in self.made:
            sh("ip", "link", "del", self.here(k), check=False)
            sh("ip", "netns", "del", self.ns(k), check=False)


def can_make_namespaces():
    if os.geteuid() != 0:
        return "not root"
    try:
        r = sh("ip", "netns", "add", TAG + "probe", check=False)
    except FileNotFoundError:
        return "no ip command (iproute2)"
    if r.returncode != 0:
        return "ip netns add failed: " + r.stderr.strip()
    sh("ip", "netns", "del", TAG + "probe", check=False)
    return None


class Namespaces(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sg-remote-ns-")
        self.dir = self.tmp.name
        self.net = Net()
        self.addCleanup(self.net.remove)
        binds = ["127.0.0.1"] + [Net.addr(k) for k in range(1, HOSTS + 1)]
        self.redis = Redis(self.dir, binds=binds)
        self.hosts, self.proxies = [], []

    def tearDown(self):
        stop_all(self)

    def start_hosts(self, run, hb):
        for k in range(1, HOSTS + 1):
            h = Host(self.redis.url(Net.addr(k)), run, "host%d" % k, self.dir, hb=hb,
                     netns=Net.ns(k))
            self.hosts.append(h)
        for h in self.hosts:
            h.wait_ready()

    def holder(self, run, idle_ms=0):
        """{consumer: entry} of the requests taken and not acknowledged (held
        for at least idle_ms)."""
        out = self.redis.cli("XPENDING", "specgen:%s:req:cpu" % run, "workers",
                             "IDLE", str(idle_ms), "-", "+", "10")
        f = out.splitlines()
        return {f[i + 1]: f[i] for i in range(0, len(f) - 3, 4)}

    def test_proxies_survive_a_lost_host_a_partition_and_a_redis_restart(self):
        run = "nsrun"
        self.start_hosts(run, hb=3)
        self.proxies = [Proxy(self.redis, run, slot="redis:cpu/%d" % i) for i in range(3)]
        for p in self.proxies:
            p.expect(lambda r: r["type"] == "hello", "hello")
        finals = {}  # request id -> its final replies

        def final(p, rid, limit=120):
            r = p.result(rid, limit)
            finals.setdefault(rid, []).append(r)
            return r

        # three slow requests: each host takes one
        slow = example("timeout-unstarted_workers.c")
        for i, p in enumerate(self.proxies):
            p.validate("%d.1" % i, slow, timeout_s=8)
        for p in self.proxies:
            p.expect(lambda r: r["type"] == "started", "started")
        held = wait_for(lambda: len(self.holder(run)) == 3 and self.holder(run),
                        "three hosts holding a request each")
        by_host = {c.split("/")[0]: c for c in held}
        self.assertEqual(sorted(by_host), ["host1", "host2", "host3"])
        # host1 dies; host2 is cut off; host3 goes on
        self.hosts[0].signal(signal.SIGKILL)
        self.net.link(2, False)
        outcome = {}
        for i, p in enumerate(self.proxies):
            r = final(p, "%d.1" % i)
            outcome[r["message"].split("remote worker ")[-1].split("/")[0]
                    if r["status"] == "infra_error" else "served"] = r["status"]
        self.assertEqual(outcome, {"host1": "infra_error", "host2": "infra_error",
                                   "served": "timeout"}, outcome)
        # host2 comes back: its result arrives late and is dropped, logged
        self.net.link(2, True)
        wait_for(lambda: any("late result" in p.stderr_text() for p in self.proxies),
                 "host2's late result logged", limit=120)
        # the lost requests go again (the scheduler's retry): served elsewhere
        for i, p in enumerate(self.proxies):
            p.send({"type": "ping", "id": "%d.1" % i})
        ok = example("ok-fast.c")
        for i, p in enumerate(self.proxies):
            p.validate("%d.2" % i, ok)
        for i, p in enumerate(self.proxies):
            self.assertEqual(final(p, "%d.2" % i)["status"], "ok")
            p.send({"type": "ping", "id": "%d.2" % i})
        # Redis restarts (losing everything) while two requests are out
        for i, p in enumerate(self.proxies[:2]):
            p.validate("%d.3" % i, slow, timeout_s=4)
        for p in self.proxies[:2]:
            p.expect(lambda r: r["type"] == "started", "started")
        self.redis.stop()
        time.sleep(2)
        self.redis.start()
        for i, p in enumerate(self.proxies[:2]):
            self.assertEqual(final(p, "%d.3" % i, limit=180)["status"], "timeout")
            p.send({"type": "ping", "id": "%d.3" % i})
        # every request: exactly one final reply, none twice
        time.sleep(3)
        for p in self.proxies:
            p.send({"type": "ping"})
            p.expect(lambda r: r["type"] == "pong", "pong")
            for rid in {r.get("id") for r in p.replies if r["type"] in ("result", "error")}:
                n = len([r for r in p.replies if r.get("id") == rid and
                         r["type"] in ("result", "error")])
                self.assertEqual(n, 1, "%s answered %d times" % (rid, n))
        self.assertEqual(sorted(finals), sorted(["0.1", "1.1", "2.1", "0.2", "1.2", "2.2",
                                                 "0.3", "1.3"]))
        wait_for(lambda: not self.holder(run), "nothing left pending", limit=60)

    def test_run_over_three_hosts_loses_one_and_sees_redis_restart(self):
        run = "nsfull"
        self.start_hosts(run, hb=2)
        out = os.path.join(self.dir, run)
        log = open(os.path.join(self.dir, "run.log"), "w")
        proc = subprocess.Popen([SPECGEN, "run", "--task", "hinge_loss", "--devices", "cpu:0",
                                 "--remote", "3", "--iterations", "3", "--server-speed", "3000",
                                 # no withdrawals: the lost evaluation is not
                                 # aborted before its loss shows
                                 "--no-spec", "--termination", "none",
                                 "--eval-timeout", "10", "--hang-grace", "60", "--out", out,
                                 "--redis", self.redis.url()],
                                stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            # a remote evaluation under way for a while (a long one: timed
            # runs, not an early failure): kill the host that holds it
            held = wait_for(lambda: self.holder(run, idle_ms=1500), "a remote evaluation",
                            limit=240)
            victim = next(iter(held)).split("/")[0]
            self.hosts[int(victim[-1]) - 1].signal(signal.SIGKILL)
            # the loss is seen (heartbeat) before Redis restarts: a restart
            # that came first would only hand the request to another host

            def seen():
                with open(os.path.join(out, "workers.log")) as f:
                    return "remote worker %s/" % victim in f.read()
            wait_for(seen, "the loss of %s noticed" % victim, limit=120)
            self.redis.stop()
            time.sleep(2)
            self.redis.start()
            rc = proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with open(os.path.join(self.dir, "run.log")) as f:
            text = f.read()
        self.assertEqual(rc, 0, text[-3000:])
        # a lost host's evaluation is redone (infra_error), nothing else
        assert_each_kernel_evaluated_once(self, out)
        db = sqlite3.connect(os.path.join(out, "run.db"))
        rows = db.execute("SELECT id, device, status, message FROM evaluations").fetchall()
        db.close()
        # every evaluation the run started ended once, with an outcome
        self.assertTrue(rows)
        for (eid, dev, status, msg) in rows:
            self.assertIsNotNone(status, "evaluation %d on %s has no outcome" % (eid, dev))
        remote = [r for r in rows if (r[1] or "").startswith("redis:")]
        self.assertTrue(remote, rows)
        # the loss reached the run as an infrastructure failure naming the
        # host (the scheduler retried the evaluation: its row has the retry's
        # outcome)
        if "remote worker %s/" % victim not in text:
            with open(os.path.join(out, "workers.log")) as f:
                wl = f.read()
            self.fail("no warning names %s (held %s): %s\n%s\n%s" % (
                victim, held, [r[:3] for r in rows], wl[-4000:],
                "".join(h.log()[-1500:] for h in self.hosts)))
        wait_for(lambda: not self.holder(run), "nothing left pending", limit=60)


if __name__ == "__main__":
    exit_unless_runnable()
    why = can_make_namespaces()
    if why:
        print("SKIP: network namespaces cannot be made here (%s)" % why)
        sys.exit(77)
    unittest.main(verbosity=2)
