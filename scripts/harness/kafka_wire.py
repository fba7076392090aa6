"""A tiny raw Kafka protocol client for the harness, the benchmarks and the tests (stdlib only).

It speaks just enough of the wire protocol to check what real clients do not
show: readiness of a broker (ApiVersions, Metadata), many requests pipelined on
one connection (correlation ids and order), and Produce with acks=0 followed by
more requests on the same connection.

Versions used are non-flexible (request header v1, response header v0) and
supported by Apache Kafka 4.x: ApiVersions v0, Metadata v4, Produce v3.
"""

from __future__ import annotations

import socket
import struct
import time

API_PRODUCE = 0
API_METADATA = 3
API_VERSIONS = 18


# --- encoding -----------------------------------------------------------------

def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def request(api_key: int, api_version: int, correlation_id: int, body: bytes,
            client_id: str = "kadmit-it") -> bytes:
    """One framed request with header v1."""
    header = struct.pack(">hhi", api_key, api_version, correlation_id) + _str(client_id)
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def api_versions_request(correlation_id: int) -> bytes:
    return request(API_VERSIONS, 0, correlation_id, b"")


def metadata_request(correlation_id: int, topics: list[str] | None = None,
                     allow_auto_create: bool = False) -> bytes:
    if topics is None:
        t = struct.pack(">i", -1)
    else:
        t = struct.pack(">i", len(topics)) + b"".join(_str(x) for x in topics)
    return request(API_METADATA, 4, correlation_id, t + struct.pack(">?", allow_auto_create))


_CRC32C_TABLE: list[int] = []


def crc32c(data: bytes) -> int:
    if not _CRC32C_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC32C_TABLE.append(c)
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def record_batch(values: list[bytes], timestamp_ms: int | None = None) -> bytes:
    """A v2 record batch (magic 2), uncompressed, no producer id."""
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    recs = bytearray()
    for i, v in enumerate(values):
        body = (b"\x00"                 # attributes
                + _varint(0)            # timestamp delta
                + _varint(i)            # offset delta
                + _varint(-1)           # key: null
                + _varint(len(v)) + v   # value
                + _varint(0))           # headers
        recs += _varint(len(body)) + body
    after_crc = (struct.pack(">hiqqqhii", 0, len(values) - 1, ts, ts, -1, -1, -1, len(values))
                 + bytes(recs))
    crc = crc32c(after_crc)
    # base_offset, batch_length, partition_leader_epoch, magic, crc
    batch_length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + after_crc


def produce_request(correlation_id: int, topic: str, partition: int, values: list[bytes],
                    acks: int = 0, timeout_ms: int = 30000) -> bytes:
    body = (_str(None) + struct.pack(">hi", acks, timeout_ms)
            + struct.pack(">i", 1) + _str(topic)
            + struct.pack(">i", 1) + struct.pack(">i", partition) + _bytes(record_batch(values)))
    return request(API_PRODUCE, 3, correlation_id, body)


# --- decoding -----------------------------------------------------------------

class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def array(self, item):
        n = self.take(">i")
        return [] if n < 0 else [item() for _ in range(n)]


def parse_api_versions_v0(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    r = Reader(body)
    err = r.take(">h")
    apis = {}
    for _ in range(max(r.take(">i"), 0)):
        k, lo, hi = r.take(">hhh")
        apis[k] = (lo, hi)
    return err, apis


def parse_metadata_v4(body: bytes) -> dict:
    r = Reader(body)
    r.take(">i")  # throttle
    brokers = r.array(lambda: (r.take(">i"), r.string(), r.take(">i"), r.string()))
    cluster_id = r.string()
    controller = r.take(">i")

    def partition():
        err, idx, leader = r.take(">hii")
        replicas = r.array(lambda: r.take(">i"))
        isr = r.array(lambda: r.take(">i"))
        return {"error": err, "index": idx, "leader": leader, "replicas": replicas, "isr": isr}

    def topic():
        err = r.take(">h")
        name = r.string()
        internal = r.take(">?")
        return {"error": err, "name": name, "internal": internal, "partitions": r.array(partition)}

    topics = r.array(topic)
    return {"brokers": brokers, "cluster_id": cluster_id, "controller": controller,
            "topics": topics}


# --- connection ---------------------------------------------------------------

class Connection:
    """A blocking connection; responses are (correlation_id, body) with header v0."""

    def __init__(self, host: str, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise ConnectionError("connection closed by peer")
            self.buf += chunk

    def recv(self) -> tuple[int, bytes]:
        self._fill(4)
        size = struct.unpack_from(">i", self.buf, 0)[0]
        self._fill(4 + size)
        frame = bytes(self.buf[4:4 + size])
        del self.buf[:4 + size]
        return struct.unpack_from(">i", frame, 0)[0], frame[4:]

    def call(self, frame: bytes) -> tuple[int, bytes]:
        self.send(frame)
        return self.recv()


def metadata(host: str, port: int, timeout: float = 5.0, topics: list[str] | None = None) -> dict:
    with Connection(host, port, timeout) as c:
        _, body = c.call(metadata_request(1, topics))
        return parse_metadata_v4(body)


def fetch_v4(cid: int, topic: str, partition: int, offset: int, max_wait_ms: int = 500,
             max_bytes: int = 1024 * 1024) -> bytes:
    """A Fetch v4 request for one partition (replica -1, read uncommitted)."""
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)
    body += struct.pack(">i", 1) + _str(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    return request(1, 4, cid, body)
