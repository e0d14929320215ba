#!/usr/bin/env python3
"""test_lmcache_real.py SPECGEN: the store against LMCache itself, where the
lmcache package is installed (it needs torch; $SG_LMCACHE_PYTHON names a
Python that has it, else this test skips).

1. LMCache's own client, LMCServerConnector (what vLLM's LMCache connector
   uses for remote_url lm://), stores and loads tensors through the store.
2. Differential: the same raw requests go to LMCache's reference server
   (python -m lmcache.v1.server) and to the store; every reply must be the
   same bytes, and a header the reference refuses must close both. TAP."""
import os
import subprocess
import sys

SPECGEN = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))

if os.environ.get("SG_LMCACHE_INNER") != "1":
    py = os.environ.get("SG_LMCACHE_PYTHON", sys.executable)
    probe = subprocess.run([py, "-c", "import lmcache.v1.protocol"],
                           capture_output=True, timeout=300)
    if probe.returncode != 0:
        print("1..0 # SKIP the lmcache package is not installed (set "
              "SG_LMCACHE_PYTHON to a Python that has it)")
        sys.exit(0)
    env = dict(os.environ, SG_LMCACHE_INNER="1")
    sys.exit(subprocess.run([py, __file__, SPECGEN], env=env).returncode)

import asyncio  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
from lmcache.utils import CacheEngineKey  # noqa: E402
from lmcache.v1.config import LMCacheEngineConfig  # noqa: E402
from lmcache.v1.metadata import LMCacheMetadata  # noqa: E402
from lmcache.v1.storage_backend.connector.lm_connector import (  # noqa: E402
    LMCServerConnector)
from lmcache.v1.storage_backend.local_cpu_backend import (  # noqa: E402
    LocalCPUBackend)

sys.path.insert(0, here)
import lmc_wire as w  # noqa: E402

n_test = 0
failed = 0


def ok(cond, name, detail=""):
    global n_test, failed
    n_test += 1
    print(("ok" if cond else "not ok") + f" {n_test} - {name}")
    if not cond:
        failed += 1
        for line in str(detail).splitlines():
            print(f"# {line}")
    sys.stdout.flush()


def start_store():
    p = subprocess.Popen([SPECGEN, "kvstore", "--listen", "127.0.0.1:0",
                          "--memory", "64M", "--slab", "4M"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    url = p.stdout.readline().strip()
    return p, url


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def real_client(url):
    host, port = url[5:].rsplit(":", 1)
    cfg = LMCacheEngineConfig.from_defaults(
        chunk_size=16, local_cpu=True, max_local_cpu_size=0.05,
        remote_url=url)
    md = LMCacheMetadata(model_name="m", world_size=1, local_world_size=1,
                         worker_id=0, local_worker_id=0,
                         kv_dtype=torch.bfloat16, kv_shape=(2, 2, 16, 4, 8))
    be = LocalCPUBackend(cfg, md)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    conn = LMCServerConnector(host, int(port), loop, be)

    def run(c):
        return asyncio.run_coroutine_threadsafe(c, loop).result(60)
    return conn, be, run


def part1(url):
    conn, be, run = real_client(url)
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        key = CacheEngineKey("m", 1, 0, 0xabc + hash(dtype) % 1000, dtype)
        obj = be.allocate(torch.Size([2, 2, 16, 32]), dtype)
        obj.tensor.copy_(torch.randn(obj.tensor.shape).to(dtype))
        before = run(conn.exists(key))
        run(conn.put(key, obj))
        after = run(conn.exists(key))
        got = run(conn.get(key))
        ok(not before and after and got is not None and
           got.get_shape() == obj.get_shape() and
           got.get_dtype() == dtype and torch.equal(got.tensor, obj.tensor),
           f"LMCServerConnector: put, exists, get of a {dtype} chunk")
    key = CacheEngineKey("m", 1, 0, 0x123456789abcdef,
                         torch.bfloat16,
                         request_configs={"lmcache.tag.user": "u1"})
    ok(run(conn.get(key)) is None, "LMCServerConnector: a miss is None")
    obj = be.allocate(torch.Size([2, 2, 16, 32]), torch.bfloat16)
    obj.tensor.fill_(3)
    run(conn.put(key, obj))
    got = run(conn.get(key))
    ok(got is not None and torch.equal(got.tensor, obj.tensor),
       "LMCServerConnector: a key with tags")


def exchange(port, chunks, nreplies):
    """Sends the chunks on one connection and reads what comes back until
    nreplies bytes or the server closes; returns (bytes, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    for c in chunks:
        s.sendall(c)
    got = bytearray()
    closed = False
    while len(got) < nreplies:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            closed = True
            break
        if not b:
            closed = True
            break
        got.extend(b)
    if not closed:
        s.settimeout(0.5)
        try:
            closed = s.recv(1) == b""
        except socket.timeout:
            closed = False
        except ConnectionResetError:
            closed = True
    s.close()
    return bytes(got), closed


def part2(store_port):
    ref_port = free_port()
    ref = subprocess.Popen([sys.executable, "-m", "lmcache.v1.server",
                            "127.0.0.1", str(ref_port), "cpu"],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", ref_port), 1).close()
            break
        except OSError:
            time.sleep(0.1)
    H = w.header
    data = bytes(range(256)) * 40
    cases = [
        ("HEALTH", [H(w.HEALTH, w.ANY_KEY)], 36),
        ("EXIST miss", [H(w.EXIST, w.key(7))], 36),
        ("GET miss", [H(w.GET, w.key(7))], 36),
        ("PUT then EXIST and GET", [H(w.PUT, w.key(7), len(data), 1, 3,
                                      (2, 20, 256, 0)), data,
                                    H(w.EXIST, w.key(7)), H(w.GET, w.key(7))],
         72 + len(data)),
        ("dtype 1 echoed", [H(w.PUT, w.key(8), 4, 2, 1, (4, 0, 0, 0)),
                            b"abcd", H(w.GET, w.key(8))], 40),
        ("binary format keeps a zero shape", [
            H(w.PUT, w.key(9), 4, 4, 6, (4, 0, 0, 0)), b"wxyz",
            H(w.GET, w.key(9))], 40),
        ("spellings of one key", [
            H(w.PUT, "m@+1@00@0x0AB@half@t%1@t%2", 3, 1, 2, (3, 0, 0, 0)),
            b"abc", H(w.GET, "m@1@0@ab@half@t%2")], 39),
        ("layer key", [H(w.PUT, "m@1@0@ab@half@3", 2, 1, 2, (2, 0, 0, 0)),
                       b"hi", H(w.GET, "m@1@0@ab@half@03"),
                       H(w.EXIST, "m@1@0@ab@half")], 74),
        ("empty block", [H(w.PUT, w.key(10), 0), H(w.GET, w.key(10))], 36),
        ("unknown command", [struct.pack(w.REQ_FMT, 6, 0, 1, 2, 0, 0, 0, 0, 0,
                                         w.key(1).encode().ljust(150))], 36),
        ("bad dtype", [struct.pack(w.REQ_FMT, 2, 0, 1, 9, 0, 0, 0, 0, 0,
                                   w.key(1).encode().ljust(150))], 36),
        ("bad key", [H(w.GET, "m@1@0@zz@half")], 36),
        ("empty key", [H(w.HEALTH, "")], 36),
        ("bad tag", [H(w.GET, "m@1@0@1@half@notag")], 36),
    ]
    for name, chunks, n in cases:
        a = exchange(ref_port, chunks, n)
        b = exchange(store_port, chunks, n)
        bad = name.startswith(("unknown", "bad", "empty key"))
        code = struct.unpack_from("i", b[0])[0] if b[0] else None
        ok(a == b and b[1] == bad and (bad or code in (200, 400)),
           f"same bytes as LMCache's server: {name}"
           + (" (both close)" if bad else f" (first reply {code})"),
           f"reference {a!r}\nstore     {b!r}")
    ref.kill()
    ref.wait()


def main():
    p, url = start_store()
    try:
        part1(url)
        part2(int(url.rsplit(":", 1)[1]))
    finally:
        p.kill()
        p.wait()
    print(f"1..{n_test}")
    return 1 if failed else 0


sys.exit(main())
