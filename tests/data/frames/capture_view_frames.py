#!/usr/bin/env python3
"""Records the answers the metadata client reads, for the view builder's tests.

Starts a real KRaft cluster (tests/integration/kafka_cluster.py: one node, then three), creates
a few topics, and asks one broker on its direct listener what kadmit's metadata client asks:
Metadata v12 for every topic, DescribeCluster v1 (brokers) and v2 (brokers, fenced ones
included), and DescribeConfigs v4 for the broker ids. Each answer is written as one frame after
its int32 size prefix (response header, then body), named like the other captures here:
    <api>-v<version>-response-kafka-4.3.1-<scenario>.bin
Scenarios: `one` (one broker), `three` (three brokers, a topic of 300 partitions among others),
`fenced` (the same three brokers after broker 3 was killed and the controller fenced it).

Run from the repository root: KADMIT_TEST_PORT_BASE=2000 python3 tests/data/frames/capture_view_frames.py
"""
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "integration"))
import kafka_cluster  # noqa: E402
import kafka_wire  # noqa: E402

HOST = "127.0.0.1"


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def compact_str(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def request_v2(api_key: int, version: int, cid: int, body: bytes) -> bytes:
    """Request header v2 (flexible): client_id stays a nullable string, then no tagged fields."""
    header = struct.pack(">hhi", api_key, version, cid) + kafka_wire._str("kadmit-capture") + b"\0"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def metadata_v12(cid: int) -> bytes:
    # topics: null (every topic); allow_auto_topic_creation false;
    # include_topic_authorized_operations false; no tagged fields.
    return request_v2(3, 12, cid, uvarint(0) + b"\0\0\0")


def describe_cluster(cid: int, version: int) -> bytes:
    body = b"\0"  # include_cluster_authorized_operations
    body += b"\x01"  # endpoint_type 1: brokers
    if version >= 2:
        body += b"\x01"  # include_fenced_brokers
    return request_v2(60, version, cid, body + b"\0")


def describe_configs_v4(cid: int, broker_ids: list[int]) -> bytes:
    keys = ["num.partitions", "default.replication.factor", "auto.create.topics.enable"]
    body = uvarint(len(broker_ids) + 1)
    for b in broker_ids:
        body += b"\x04" + compact_str(str(b))
        body += uvarint(len(keys) + 1) + b"".join(compact_str(k) for k in keys) + b"\0"
    body += b"\0\0\0"  # include_synonyms, include_documentation, tagged fields
    return request_v2(32, 4, cid, body)


def create_topics_v4(cid: int, topics: list[tuple[str, int, int]]) -> bytes:
    body = struct.pack(">i", len(topics))
    for name, partitions, replication in topics:
        body += kafka_wire._str(name) + struct.pack(">ihii", partitions, replication, 0, 0)
    body += struct.pack(">i?", 30000, False)
    return kafka_wire.request(19, 4, cid, body)


def raw_call(port: int, frame: bytes) -> bytes:
    """Sends one request, returns the response frame after its size prefix."""
    with kafka_wire.Connection(HOST, port, timeout=30) as c:
        c.send(frame)
        c._fill(4)
        size = struct.unpack_from(">i", c.buf, 0)[0]
        c._fill(4 + size)
        return bytes(c.buf[4:4 + size])


def capture(port: int, scenario: str, broker_ids: list[int]) -> None:
    frames = {
        "metadata-v12": metadata_v12(1),
        "describecluster-v1": describe_cluster(2, 1),
        "describecluster-v2": describe_cluster(3, 2),
        "describeconfigs-v4": describe_configs_v4(4, broker_ids),
    }
    for name, req in frames.items():
        path = HERE / f"{name}-response-kafka-4.3.1-{scenario}.bin"
        path.write_bytes(raw_call(port, req))
        print(f"wrote {path.name} ({path.stat().st_size} bytes)")


def fenced_in_describe_cluster(port: int, broker_id: int) -> bool:
    body = raw_call(port, describe_cluster(9, 2))
    # Header v1: correlation_id, tagged fields. Body (v2): throttle_time_ms, error_code,
    # error_message, endpoint_type, cluster_id, controller_id, brokers[...].
    r = 4 + 1 + 4 + 2
    n = body[r] - 1
    r += 1 + max(n, 0)
    r += 1
    n = body[r] - 1
    r += 1 + n + 4
    count = body[r] - 1
    r += 1
    for _ in range(count):
        bid = struct.unpack_from(">i", body, r)[0]
        r += 4
        n = body[r] - 1
        r += 1 + n + 4  # host, port
        n = body[r] - 1
        r += 1 + max(n, 0)  # rack
        fenced = body[r]
        r += 1 + 1  # is_fenced, tagged fields
        if bid == broker_id:
            return fenced == 1
    return False


def main() -> None:
    kafka_cluster.ensure_kafka()
    with tempfile.TemporaryDirectory(prefix="kadmit-capture-") as d:
        one = kafka_cluster.KafkaCluster(Path(d) / "one", brokers=1)
        try:
            one.start()
            port = one.node(1).direct_port
            raw_call(port, create_topics_v4(1, [("orders", 3, 1), ("audit", 1, 1)]))
            one.wait_topic_healthy("orders")
            capture(port, "one", [1])
        finally:
            one.stop()
        three = kafka_cluster.KafkaCluster(Path(d) / "three", brokers=3)
        try:
            three.start()
            port = three.node(1).direct_port
            raw_call(port, create_topics_v4(1, [("orders", 6, 3), ("many", 300, 2),
                                                ("single", 1, 1)]))
            for t in ("orders", "many", "single"):
                three.wait_topic_healthy(t)
            capture(port, "three", [1, 2, 3])
            three.kill_node(3)
            deadline = time.monotonic() + 60
            while not fenced_in_describe_cluster(port, 3):
                if time.monotonic() > deadline:
                    raise TimeoutError("broker 3 was never fenced")
                time.sleep(0.5)
            capture(port, "fenced", [1, 2, 3])
        finally:
            three.stop()


if __name__ == "__main__":
    os.environ.setdefault("KADMIT_TEST_PORT_BASE", "2000")
    main()
