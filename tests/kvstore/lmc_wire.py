"""lmc_wire.py: a client of LMCache's remote server protocol written from
LMCache's lmcache/v1/protocol.py (0.5.6) with the standard library only,
byte for byte: the same struct formats, the same padding, the same
assertion on the key's length. Tests and benchmarks drive the store with it
where the lmcache package is not installed (docs/kvstore.md)."""
import socket
import struct

MAX_KEY_LENGTH = 150
PUT, GET, EXIST, LIST, HEALTH = 1, 2, 3, 4, 5
SUCCESS, FAIL = 200, 400
# LMCache's server parses the key of every header before it looks at the
# command, so HEALTH and LIST need a well-formed key too (an empty one makes
# it close the connection); no LMCache 0.5.6 client sends either.
ANY_KEY = "any@1@0@0@half"
REQ_FMT = f"iiiiiiiii{MAX_KEY_LENGTH}s"
REQ_BYTES = struct.calcsize(REQ_FMT)  # 186
REPLY_FMT = "iiiiiiiii"
REPLY_BYTES = struct.calcsize(REPLY_FMT)  # 36


def header(command, key, length=0, fmt=1, dtype=2, shape=(0, 0, 0, 0),
           location=0):
    """ClientMetaMessage.serialize: command, length, fmt, dtype, location,
    shape[0..3], the key encoded and padded with spaces (ljust)."""
    assert len(key) <= MAX_KEY_LENGTH, (
        f"Key length {len(key)} exceeds maximum {MAX_KEY_LENGTH}")
    kb = key.encode() if isinstance(key, str) else key
    return struct.pack(REQ_FMT, command, length, fmt, dtype, location,
                       *shape, kb.ljust(MAX_KEY_LENGTH))


def reply(data):
    """ServerMetaMessage.deserialize's order: code, length, fmt, dtype,
    shape[0..3], location."""
    return struct.unpack(REPLY_FMT, data)


def recv_all(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf.extend(chunk)
    return bytes(buf)


class Client:
    """LMCServerConnector's calls, synchronously."""

    def __init__(self, host, port, timeout=30):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        self.sock.close()

    def _reply(self):
        data = recv_all(self.sock, REPLY_BYTES)
        if data is None:
            raise ConnectionError("server closed the connection")
        return reply(data)

    def health(self):
        self.sock.sendall(header(HEALTH, ANY_KEY))
        return self._reply()

    def exists(self, key):
        self.sock.sendall(header(EXIST, key))
        return self._reply()[0] == SUCCESS

    def put(self, key, data, fmt=1, dtype=3, shape=None):
        shape = shape or (len(data), 0, 0, 0)
        self.sock.sendall(header(PUT, key, len(data), fmt, dtype, shape))
        self.sock.sendall(data)

    def get(self, key):
        """(reply tuple, bytes or None)."""
        self.sock.sendall(header(GET, key))
        r = self._reply()
        if r[0] != SUCCESS:
            return r, None
        return r, recv_all(self.sock, r[1])

    def list(self):
        self.sock.sendall(header(LIST, ANY_KEY))
        r = self._reply()
        data = recv_all(self.sock, r[1]) if r[1] else b""
        return [k for k in data.decode().split("\n") if k]


def key(i, model="m", dtype="bfloat16"):
    """A CacheEngineKey.to_string(): model@world_size@worker_id@hash@dtype."""
    return f"{model}@1@0@{i:x}@{dtype}"
