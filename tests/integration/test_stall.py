"""Held frames cannot starve anyone: stalled partial admission requests beside real traffic.

Its own 1-broker cluster on KADMIT_TEST_PORT_BASE + 370, and one sidecar with a policy (so
CreateTopics frames are held whole to be judged), --buffer-memory 64MiB,
--max-held-request 4MiB and --held-request-timeout-ms 4000.

Several connections each send the first bytes of a CreateTopics frame and then go silent:
  - STALLED_SMALL frames declare just under 4 MiB and stop after 2.5 MiB of body; together they
    claim more than the pool's priority share (32 MiB), so some of them wait for memory;
  - STALLED_HUGE frames declare 60 MiB (the measured stall of the issue) and stop after a few
    bytes.
While they hang, a producer sends RECORDS records and a consumer reads them back through the same
sidecar. The test asserts that:
  - every record is delivered and consumed (nothing starves);
  - the 60 MiB frames are refused at once (reason="oversize" in
    kadmit_held_requests_closed_total, connection closed);
  - an AlterPartitionReassignments of 6 MiB is read past without being held and answered
    POLICY_VIOLATION naming the cap, and its connection goes on (counted as oversize too);
  - the partial frames are closed after the timeout, with reason="timeout" in /metrics and
    the log line "held request did not arrive in time";
  - a CreateTopics that arrives whole afterwards is judged and answered.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from kadmit_proc import Kadmit  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402

MiB = 1024 * 1024
TIMEOUT_MS = 4000
STALLED_SMALL = 12
STALLED_HUGE = 3
RECORDS = int(os.environ.get("STALL_RECORDS", "20000"))


OVERSIZE = 'kadmit_held_requests_closed_total{reason="oversize"}'
TIMEOUTS = 'kadmit_held_requests_closed_total{reason="timeout"}'
POOL_WAITS = 'kadmit_read_pauses_total{cause="pool"}'


def create_topics_frame(correlation_id: int, topic: str, partitions: int) -> bytes:
    """A whole CreateTopics v4 request."""
    body = struct.pack(">i", 1) + kafka_wire._str(topic) + struct.pack(">ihii", partitions, 1, 0, 0)
    body += struct.pack(">i?", 30000, False)
    return kafka_wire.request(19, 4, correlation_id, body)


def partial_create_topics(declared: int, sent: int) -> bytes:
    """The first `sent` bytes (after the size prefix) of a CreateTopics v4 frame of `declared`
    bytes: a valid header, then one topic whose name fills the rest."""
    head = struct.pack(">hhi", 19, 4, 7) + kafka_wire._str("stall")
    body = head + struct.pack(">i", 1) + struct.pack(">h", 0x7fff)
    body += b"x" * max(0, sent - len(body))
    return struct.pack(">i", declared) + body[:sent]


def expect_closed(s: socket.socket, timeout: float) -> float:
    t0 = time.monotonic()
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def st():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-stall-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + 370)
    n = c.node(1)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000}))
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy), "--ledger", "off", "--buffer-memory", "64MiB",
               "--max-held-request", "4MiB", "--held-request-timeout-ms", str(TIMEOUT_MS))
    ok = False
    try:
        c.start()
        k.start()
        deadline = time.monotonic() + 60
        while k.http("/v1/admission")[0] != 200:
            assert time.monotonic() < deadline, "kadmit never became ready:\n" + k.log_text()[-3000:]
            time.sleep(0.2)
        yield d, c, k
        ok = True
    finally:
        k.stop()
        c.stop()
        if ok and not k.sanitizer_reports():
            shutil.rmtree(d, ignore_errors=True)
        else:
            sys.stderr.write(f"\nstall: cluster dir kept: {d}\n")


def _produce_and_consume(bootstrap: str, topic: str, out: dict) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    try:
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                      "message.timeout.ms": 30000})
        delivered, errors = [0], []

        def cb(err, _msg):
            if err is not None:
                errors.append(str(err))
            else:
                delivered[0] += 1
        for i in range(RECORDS):
            while True:
                try:
                    p.produce(topic, b"v%07d" % i, partition=0, on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 1000 == 0:
                p.poll(0)
        p.flush(45)
        out["delivered"], out["produce_errors"] = delivered[0], errors[:3]
        cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "stall-test",
                         "enable.auto.commit": False})
        cons.assign([TopicPartition(topic, 0, 0)])
        got, deadline = 0, time.monotonic() + 45
        while got < RECORDS and time.monotonic() < deadline:
            for m in cons.consume(1000, 1.0):
                if m.error() is None:
                    got += 1
        cons.close()
        out["consumed"] = got
    except Exception as e:  # noqa: BLE001 - reported by the test
        out["exception"] = repr(e)


def test_stalled_held_frames_starve_nobody_and_time_out(st):
    d, c, k = st
    with kafka_wire.Connection(HOST, k.listen_port, timeout=30) as conn:
        _, resp = conn.call(create_topics_frame(1, "stall-data", 1))
    c.wait_topic_healthy("stall-data")
    before = k.metrics()

    huge = []
    for _ in range(STALLED_HUGE):
        s = socket.create_connection((HOST, k.listen_port), timeout=5)
        s.sendall(partial_create_topics(60 * MiB, 64))
        huge.append(s)
    small = []
    for _ in range(STALLED_SMALL):
        s = socket.create_connection((HOST, k.listen_port), timeout=5)
        s.setblocking(False)
        small.append([s, partial_create_topics(4 * MiB - 1024, int(2.5 * MiB)), 0])
    t_stall = time.monotonic()
    stop = threading.Event()

    def feed() -> None:
        # Non-blocking sends: the connections kadmit stops reading (memory) just stay behind.
        while not stop.is_set() and any(x[2] < len(x[1]) for x in small):
            for x in small:
                if x[2] < len(x[1]):
                    try:
                        x[2] += x[0].send(x[1][x[2]:x[2] + 256 * 1024])
                    except (BlockingIOError, OSError):
                        pass
            time.sleep(0.01)
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()

    huge_closed = [expect_closed(s, 5) for s in huge]
    traffic: dict = {}
    t0 = time.monotonic()
    _produce_and_consume(f"{HOST}:{k.listen_port}", "stall-data", traffic)
    traffic_s = time.monotonic() - t0
    stop.set()
    feeder.join(5)
    small_closed = [expect_closed(x[0], TIMEOUT_MS / 1000 + 10) for x in small]
    after = k.metrics()
    waited_s = time.monotonic() - t_stall
    report = (f"traffic {traffic} in {traffic_s:.1f} s; 60 MiB frames closed after "
              f"{max(huge_closed):.2f} s; stalled frames closed {waited_s:.1f} s after they "
              f"started; sent {[x[2] for x in small]}; held_timeouts "
              f"{after.get(TIMEOUTS, 0) - before.get(TIMEOUTS, 0)}, "
              f"held_oversize "
              f"{after.get(OVERSIZE, 0) - before.get(OVERSIZE, 0)}, "
              f"pool waits {after.get(POOL_WAITS, 0) - before.get(POOL_WAITS, 0)}")
    sys.stderr.write(f"\nstall: {report}\n")
    for x in small:
        x[0].close()
    for s in huge:
        s.close()
    assert "exception" not in traffic, report
    assert traffic["delivered"] == RECORDS and not traffic["produce_errors"], report
    assert traffic["consumed"] == RECORDS, report
    assert max(huge_closed) < 5, report
    assert after[OVERSIZE] - before.get(OVERSIZE, 0) == STALLED_HUGE
    assert after[TIMEOUTS] - before.get(TIMEOUTS, 0) == STALLED_SMALL
    k.wait_log("held request did not arrive in time")
    k.wait_log("held request above --max-held-request")
    # Nothing held is left behind, and admission still works.
    assert after["kadmit_memory_pool_used_bytes"] < 8 * MiB, report
    with kafka_wire.Connection(HOST, k.listen_port, timeout=30) as conn:
        _, resp = conn.call(create_topics_frame(2, "stall-after", 1))
    r = kafka_wire.Reader(resp)
    r.take(">i")
    (_, err, _msg), = r.array(lambda: (r.string(), r.take(">h"), r.string()))
    assert err == 0, (err, _msg)
    assert k.alive() and not k.sanitizer_reports()


def test_an_oversize_reassignment_is_read_past_and_answered_on_its_connection(st):
    _, _, k = st
    size = 6 * MiB  # above --max-held-request 4MiB
    # AlterPartitionReassignments v0 (flexible: header v2 with empty tags), then a body kadmit
    # must not read into memory: it drops the bytes and answers from the header alone.
    head = struct.pack(">hhi", 45, 0, 77) + kafka_wire._str("stall") + b"\x00"
    before = k.metric(OVERSIZE)
    with kafka_wire.Connection(HOST, k.listen_port, timeout=30) as conn:
        conn.send(struct.pack(">i", size) + head)
        chunk = b"\x00" * MiB
        left = size - len(head)
        while left > 0:
            conn.send(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))
        correlation_id, body = conn.recv()
        assert correlation_id == 77
        r = kafka_wire.Reader(body)
        assert r.take(">b") == 0  # response header v1: no tags
        _, error_code = r.take(">ih")
        b0 = r.take(">B")  # error_message: a compact string, its length + 1 as a uvarint
        n = (b0 & 0x7f) | ((r.take(">B") << 7) if b0 & 0x80 else 0)
        n -= 1
        message = body[r.pos:r.pos + n].decode()
        assert error_code == 44, (error_code, message)  # POLICY_VIOLATION
        assert "--max-held-request (4194304 bytes)" in message and "AlterPartitionReassignments" \
            in message, message
        # The connection goes on: the next request is forwarded and answered.
        correlation_id, _ = conn.call(kafka_wire.api_versions_request(78))
        assert correlation_id == 78
    assert k.metric(OVERSIZE) == before + 1
    assert "dropped and answered" in k.wait_log("dropped and answered")
