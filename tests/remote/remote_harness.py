"""remote_harness.py: the real parts the remote tests drive (docs/remote.md):
a redis-server with a password started by the test, worker hosts
(`specgen worker --redis`) as separate processes, and slot proxies
(`specgen worker --remote-slot`) spoken to in the worker protocol on their
stdin/stdout, as the controller's pool does. Every wait is bounded by a
deadline (generous: a busy 2-core machine must pass)."""
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECGEN = os.environ.get("SG_SPECGEN")
EXAMPLES = os.path.join(ROOT, "tasks", "cpu", "hinge_loss", "examples")
WAIT = 120.0  # the bound of every wait, in seconds


def example(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, what, limit=WAIT, every=0.05):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(every)
    raise AssertionError("timed out after %.0f s waiting for %s" % (limit, what))


class Redis:
    """A redis-server on the given addresses, with a password, no persistence
    (a restart loses everything: the harder case)."""

    def __init__(self, workdir, binds=("127.0.0.1",), port=None, netns=None):
        self.workdir = workdir
        self.binds = list(binds)
        self.port = port or free_port()
        self.password = secrets.token_hex(12)
        self.netns = netns
        self.proc = None
        self.start()

    def url(self, host="127.0.0.1"):
        return "redis://:%s@%s:%d" % (self.password, host, self.port)

    def start(self):
        cmd = ["redis-server", "--port", str(self.port), "--bind", *self.binds,
               "--requirepass", self.password, "--save", "", "--appendonly", "no",
               "--dir", self.workdir, "--protected-mode", "yes"]
        log = open(os.path.join(self.workdir, "redis.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log)
        log.close()
        wait_for(lambda: self.ping(), "redis-server to answer")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port),
                            "--no-auth-warning", "-a", self.password, *args],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    def ping(self):
        try:
            return self.cli("PING") == "PONG"
        except subprocess.TimeoutExpired:
            return False


class Lines:
    """A process's stdout (or stderr) read by a thread, line by line."""

    def __init__(self, stream, keep=None):
        self.q = queue.Queue()
        self.all = []
        self.keep = keep
        self.t = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.t.start()

    def _run(self, stream):
        for line in stream:
            self.all.append(line)
            self.q.put(line)
        self.q.put(None)

    def next(self, limit=WAIT):
        try:
            return self.q.get(timeout=limit)
        except queue.Empty:
            return None


class Proxy:
    """A slot proxy, as the controller's pool starts it."""

    def __init__(self, redis, run, slot="redis:cpu/0", url=None, extra_env=None):
        env = dict(os.environ)
        env["SPECGEN_REDIS_URL"] = url or redis.url()
        env["SPECGEN_REDIS_RUN"] = run
        env.update(extra_env or {})
        self.p = subprocess.Popen([SPECGEN, "worker", "--remote-slot", slot, "--json-errors"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)
        self.replies = []

    def send(self, obj):
        self.p.stdin.write(json.dumps(obj) + "\n")
        self.p.stdin.flush()

    def validate(self, rid, src, timeout_s=20):
        self.send({"type": "validate", "id": rid, "task": "hinge_loss", "source": src,
                   "opts": {"seed": 11, "trials": 3, "runs": 3, "warmups": 1,
                            "eval_timeout": timeout_s}})

    def expect(self, pred, what, limit=WAIT):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            line = self.out.next(max(0.05, end - time.monotonic()))
            if line is None:
                if self.p.poll() is not None:
                    break
                continue
            r = json.loads(line)
            self.replies.append(r)
            if pred(r):
                return r
        raise AssertionError("proxy: no %s within %.0f s; got %s; stderr: %s" %
                             (what, limit, self.replies[-5:], "".join(self.err.all)[-2000:]))

    def result(self, rid, limit=WAIT):
        """The reply ending request rid, with the result's status and message
        lifted to the top ("error" replies: status "refused")."""
        r = self.expect(lambda r: r.get("id") == rid and r["type"] in ("result", "error"),
                        "result of %s" % rid, limit)
        res = r.get("result", {})
        r["status"] = res.get("status", "refused")
        r["message"] = res.get("message") or r.get("message", "")
        return r

    def close(self):
        if self.p.poll() is None:
            try:
                self.send({"type": "shutdown"})
                self.p.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def stderr_text(self):
        return "".join(self.err.all)


class Host:
    """A worker host: `specgen worker --redis` (optionally inside a network
    namespace), in a process group of its own so a test can kill it whole."""

    def __init__(self, url, run, name, workdir, device="cpu:0", hb=3.0, netns=None):
        self.name = name
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir, exist_ok=True)
        cmd = [SPECGEN, "worker", "--redis", url, "--run", run, "--device", device,
               "--host", name, "--heartbeat-timeout", str(hb), "--work-dir", self.workdir]
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        self.log_path = os.path.join(workdir, name + ".log")
        log = open(self.log_path, "w")
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log,
                                  start_new_session=True)
        log.close()

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_ready(self):
        wait_for(lambda: "up (requests connection)" in self.log(), "%s to reach Redis" % self.name)

    def signal(self, sig):
        try:
            os.killpg(self.p.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self):
        if self.p.poll() is None:
            self.signal(signal.SIGCONT)
            self.p.terminate()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.p.wait()


def have_redis():
    return shutil.which("redis-server") and shutil.which("redis-cli")


def exit_unless_runnable():
    """A test file's start: exit 1 without the specgen program to test,
    77 (skipped, saying why) without Redis."""
    if not SPECGEN:
        print("SG_SPECGEN is not set", file=sys.stderr)
        sys.exit(1)
    if not have_redis():
        print("SKIP: redis-server/redis-cli are not installed (scripts/setup.sh installs them)")
        sys.exit(77)


def stop_all(t):
    """A test's end: its proxies, hosts and Redis stopped, its scratch gone."""
    for p in t.proxies:
        p.close()
    for h in t.hosts:
        h.stop()
    t.redis.stop()
    t.tmp.cleanup()


class RemoteCase(unittest.TestCase):
    """A test with its own scratch directory and redis-server; its hosts
    and proxies are stopped at its end."""
    RUN = "run"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sg-remote-")
        self.dir = self.tmp.name
        self.redis = Redis(self.dir)
        self.hosts = []
        self.proxies = []

    def tearDown(self):
        stop_all(self)

    def host(self, name, url=None, **kw):
        h = Host(url or self.redis.url(), kw.pop("run", self.RUN), name, self.dir, **kw)
        self.hosts.append(h)
        return h
