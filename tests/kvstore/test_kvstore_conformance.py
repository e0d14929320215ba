#!/usr/bin/env python3
"""test_kvstore_conformance.py SPECGEN: `specgen kvstore` (host memory)
driven over loopback by a client written byte for byte from LMCache's
protocol (lmc_wire.py): every command, LMCache's quirks, and the faults
(a client gone mid-PUT, a key over the limit, corrupt headers, a full store,
eviction under a concurrent GET, a device that cannot be opened). TAP."""
import atexit
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lmc_wire as w  # noqa: E402

SPECGEN = sys.argv[1]
# Host memory by default (CI); SG_KVSTORE_TEST_DEVICE=cuda:0 runs the same
# checks with the blocks in GPU memory.
DEVICE = os.environ.get("SG_KVSTORE_TEST_DEVICE", "host")
# SG_KVSTORE_TEST_VIA=run: the same checks against the store that
# `specgen run --kv-store` starts (cpu:0, the built-in test model, its
# evaluations going on meanwhile; reserve 0 so its yields evict nothing).
VIA_RUN = os.environ.get("SG_KVSTORE_TEST_VIA") == "run"
n_test = 0
failed = 0


def ok(cond, name, detail=""):
    global n_test, failed
    n_test += 1
    if cond:
        print(f"ok {n_test} - {name}")
    else:
        failed += 1
        print(f"not ok {n_test} - {name}")
        if detail:
            for line in str(detail).splitlines():
                print(f"# {line}")
    sys.stdout.flush()


class Store:
    def __init__(self, *args, env=None):
        if VIA_RUN:
            self._start_run(args)
            return
        self.p = subprocess.Popen(
            [SPECGEN, "kvstore", "--listen", "127.0.0.1:0", "--json",
             "--device", DEVICE, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.url = self.p.stdout.readline().strip()
        assert self.url.startswith("lm://"), self.p.stderr.read()
        self._address()

    def _start_run(self, args):
        opts = dict(zip(args[::2], args[1::2]))
        self.tmp = tempfile.TemporaryDirectory()
        self.p = subprocess.Popen(
            [SPECGEN, "run", "--task", "hinge_loss", "--devices", "cpu:0",
             "--iterations", "100000", "--out", self.tmp.name + "/run",
             "--json", "--kv-store", "--kv-store-memory", opts["--memory"],
             "--kv-store-reserve", "0", "--server-speed", "3000",
             "--runs", "3", "--warmups", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in self.p.stdout:
            ev = json.loads(line)
            if ev["event"] == "kv_store":
                self.url = ev["url"]
                break
        else:
            raise RuntimeError("the run announced no store: " +
                               self.p.stderr.read())
        self._address()

    def _reap(self):
        # A check that raises must not leave the store running.
        atexit.register(lambda p=self.p: p.poll() is None and p.kill())

    def _address(self):
        self._reap()
        host, port = self.url[5:].rsplit(":", 1)
        self.host, self.port = host, int(port)

    def client(self):
        return w.Client(self.host, self.port)

    def stop(self):
        """(0 when the store ended as it should, its counters)."""
        self.p.send_signal(signal.SIGINT)
        out, err = self.p.communicate(timeout=120)
        self.stderr = err
        if not VIA_RUN:
            return self.p.returncode, json.loads(out)
        end = [json.loads(x) for x in out.splitlines()
               if x.startswith('{"event":"run_end"')]
        self.tmp.cleanup()
        # An interrupted run exits 1 and still writes its summary.
        ok = self.p.returncode == 1 and end and end[0]["interrupted"]
        return (0 if ok else self.p.returncode or -1,
                end[0]["summary"]["kv_store"] if end else {})


def alive(store):
    c = store.client()
    r = c.health()
    c.close()
    return r[0] == w.SUCCESS


def closed_by_server(sock):
    sock.settimeout(30)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def blob(n, seed):
    return bytes((i * 131 + seed * 7) & 0xFF for i in range(n)) if n < 4096 \
        else (bytes(range(256)) * (n // 256 + 1))[seed % 256:][:n]


def main():
    s = Store("--memory", "8M", "--slab", "1M")
    c = s.client()
    # Replies exactly as LMCache's server packs them.
    ok(c.health() == (200, 0, 1, 2, 0, 0, 0, 0, 0), "HEALTH: success, "
       "MemoryFormat(1), float16 (2), zero shape, location 0")
    ok(not c.exists(w.key(1)), "EXIST of an absent key: FAIL")
    r, data = c.get(w.key(1))
    ok(r == (400, 0, 1, 2, 0, 0, 0, 0, 0) and data is None,
       "GET miss: the reference's FAIL reply", r)
    payload = blob(100000, 1)
    c.put(w.key(1), payload, fmt=1, dtype=3, shape=(2, 32, 16, 0))
    ok(c.exists(w.key(1)), "PUT has no reply; EXIST then succeeds")
    r, data = c.get(w.key(1))
    ok(r == (200, 100000, 1, 3, 2, 32, 16, 0, 0) and data == payload,
       "GET hit: length, format, dtype and shape as stored, the same bytes",
       r)
    c.put(w.key(2), b"x" * 5000, dtype=1)
    r, _ = c.get(w.key(2))
    ok(r[3] == 2, "dtype 1 (torch.half) comes back as 2 (float16), as "
       "LMCache's DTYPE_TO_INT maps it", r)
    c.put("m@+1@0@0x00AB@half@tag%a@tag%b", b"y" * 4096)
    r, data = c.get("m@1@0@ab@half@tag%b")
    ok(r[0] == 200 and data == b"y" * 4096,
       "key spellings LMCache parses to one CacheEngineKey find one block")
    c.put(w.key(3), b"")
    r, data = c.get(w.key(3))
    ok(r[0] == 200 and r[1] == 0 and data == b"", "an empty block")
    keys = c.list()
    ok(sorted(keys) == sorted([w.key(1), w.key(2), w.key(3),
                               "m@1@0@ab@half@tag%b"]),
       "LIST: canonical keys joined by newlines", keys)
    # Overwrite.
    c.put(w.key(1), b"new" * 2000)
    r, data = c.get(w.key(1))
    ok(data == b"new" * 2000, "a PUT replaces the block under its key")
    # Pipelined requests in one send, and a header split byte by byte.
    msg = (w.header(w.PUT, w.key(9), 4096, 1, 3, (4096, 0, 0, 0)) +
           b"p" * 4096 + w.header(w.GET, w.key(9)) + w.header(w.HEALTH, w.ANY_KEY))
    c.sock.sendall(msg)
    r1 = c._reply()
    d1 = w.recv_all(c.sock, r1[1])
    r2 = c._reply()
    ok(r1[0] == 200 and d1 == b"p" * 4096 and r2[0] == 200,
       "pipelined PUT, GET, HEALTH in one send: replies in order")
    h = w.header(w.GET, w.key(9))
    for b in h:
        c.sock.sendall(bytes([b]))
        time.sleep(0.001)
    r = c._reply()
    d = w.recv_all(c.sock, r[1])
    ok(r[0] == 200 and d == b"p" * 4096, "a header sent one byte at a time")

    # Faults.
    k = socket.create_connection((s.host, s.port))
    k.sendall(w.header(w.PUT, w.key(50), 1 << 20, 1, 3, (1 << 20, 0, 0, 0)))
    k.sendall(b"z" * 1000)
    time.sleep(0.1)
    k.close()
    time.sleep(0.2)
    ok(not c.exists(w.key(50)) and alive(s),
       "a client gone mid-PUT: nothing stored, the store serves on")
    try:
        w.header(w.PUT, "k" * 151)
        ok(False, "a key over 150 characters is refused by the client")
    except AssertionError:
        ok(True, "a key over 150 characters is refused by the client, as "
           "LMCache's serialize() asserts")
    long_key = "m" * (150 - len("@1@0@1@half")) + "@1@0@1@half"
    c.put(long_key, b"L" * 4096)
    r, data = c.get(long_key)
    ok(len(long_key) == 150 and data == b"L" * 4096,
       "a key of exactly 150 bytes, no padding left")
    bad = {
        "command 9": struct.pack(w.REQ_FMT, 9, 0, 1, 2, 0, 0, 0, 0, 0,
                                 w.key(1).encode().ljust(150)),
        "dtype 99": struct.pack(w.REQ_FMT, w.GET, 0, 1, 99, 0, 0, 0, 0, 0,
                                w.key(1).encode().ljust(150)),
        "format 9": struct.pack(w.REQ_FMT, w.GET, 0, 9, 2, 0, 0, 0, 0, 0,
                                w.key(1).encode().ljust(150)),
        "location 3": struct.pack(w.REQ_FMT, w.GET, 0, 1, 2, 3, 0, 0, 0, 0,
                                  w.key(1).encode().ljust(150)),
        "not a key": w.header(w.GET, "hello"),
        "HEALTH with an empty key": w.header(w.HEALTH, ""),
        "bad hash": w.header(w.GET, "m@1@0@xyz@half"),
        "bad dtype name": w.header(w.GET, "m@1@0@1@float17"),
        "not UTF-8": struct.pack(w.REQ_FMT, w.GET, 0, 1, 2, 0, 0, 0, 0, 0,
                                 b"m@1@0@1@half\xff".ljust(150)),
        "NUL padding": struct.pack(w.REQ_FMT, w.GET, 0, 1, 2, 0, 0, 0, 0, 0,
                                   w.key(1).encode()),
        "negative PUT length": w.header(w.PUT, w.key(1), -5),
    }
    for name, h in bad.items():
        k = socket.create_connection((s.host, s.port))
        k.sendall(h)
        ok(closed_by_server(k) and alive(s),
           f"corrupt header ({name}): connection closed, store alive")
        k.close()
    r, data = c.get(w.key(1))
    ok(data == b"new" * 2000, "no corrupt header changed a stored block")
    # A PUT larger than the budget is read and dropped.
    big = 9 << 20
    c.sock.sendall(w.header(w.PUT, w.key(60), big, 1, 3, (big, 0, 0, 0)))
    c.sock.sendall(b"B" * big)
    ok(c.health()[0] == 200 and not c.exists(w.key(60)),
       "a PUT over the budget: read, dropped, the connection in step")
    rc, st = s.stop()
    ok(rc == 0 and st["protocol_errors"] == len(bad) and
       st["puts_aborted"] == 1 and st["puts_dropped"] == 1,
       "counters: refused headers, aborted and dropped PUTs", st)

    # A full store evicts the least recently used blocks.
    s = Store("--memory", "4M", "--slab", "1M")
    c = s.client()
    blk = 256 << 10
    for i in range(16):
        c.put(w.key(i), blob(blk, i))
    ok(all(c.exists(w.key(i)) for i in range(16)), "16 blocks of 256 KiB "
       "fill 4 MiB")
    c.get(w.key(0))  # refresh block 0
    for i in range(16, 20):
        c.put(w.key(i), blob(blk, i))
    present = [i for i in range(20) if c.exists(w.key(i))]
    ok(0 in present and 1 not in present and 19 in present and
       len(present) == 16, "a full store evicts the least recently used, a "
       "GET refreshes", present)
    right = all(c.get(w.key(i))[1] == blob(blk, i) for i in present)
    ok(right, "every block that remains has its own bytes")
    # Eviction under a concurrent GET: the reply is being sent while
    # another client's PUTs evict its block.
    # 8 MiB: more than loopback's socket buffers hold (4 MiB at most by
    # default), with a small receive window, so the reply is still being
    # written when the PUTs come.
    big = 8 << 20
    s2 = Store("--memory", "16M", "--slab", "8M")
    a, b = s2.client(), s2.client()
    a.put(w.key(1), blob(big, 5))
    a.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    a.sock.sendall(w.header(w.GET, w.key(1)))
    time.sleep(0.2)
    for i in range(2, 6):
        b.put(w.key(i), blob(big, i))
    ok(not b.exists(w.key(1)), "the block was evicted while its GET was "
       "being sent")
    r = a._reply()
    data = w.recv_all(a.sock, r[1])
    ok(r[0] == 200 and data == blob(big, 5),
       "the GET in flight still delivers the block's own bytes")
    r, data = a.get(w.key(1))
    ok(r[0] == 400 and data is None, "a later GET misses: never wrong data")
    rc, st = s2.stop()
    ok(rc == 0 and st["evictions"] >= 1, "evictions counted", st)
    rc, st = s.stop()
    ok(rc == 0 and st["evictions"] == 4 and st["hits"] >= 17,
       "store counters: evictions and hits", st)

    # A device that cannot be had: a clear error, exit 1, no crash.
    env = dict(os.environ, SG_LIBCUDA="/nonexistent/libcuda.so.1")
    p = subprocess.run([SPECGEN, "kvstore", "--listen", "127.0.0.1:0",
                        "--device", "cuda:0"], capture_output=True, text=True,
                       env=env, timeout=60)
    ok(p.returncode == 1 and "no CUDA driver" in p.stderr,
       "--device cuda:0 without a driver: exit 1, says why", p.stderr)
    p = subprocess.run([SPECGEN, "kvstore", "--listen", "nowhere"],
                       capture_output=True, text=True, timeout=60)
    ok(p.returncode == 2 and "HOST:PORT" in p.stderr, "a bad --listen: usage")
    p = subprocess.run([SPECGEN, "kvstore", "--listen", "127.0.0.1:0",
                        "--device", "gpu7"], capture_output=True, text=True,
                       timeout=60)
    ok(p.returncode == 2 and "cuda:N" in p.stderr, "a bad --device: usage")
    print(f"1..{n_test}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
