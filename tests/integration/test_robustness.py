"""Limits, hostile input and faults, against a real 1-broker KRaft cluster through kadmit.

Its own cluster on KADMIT_TEST_PORT_BASE + 260 (one broker; ports of node 1, as in
kafka_cluster.py). kadmit runs with --policy (so admission requests are decoded), a small
--max-frame-bytes, --idle-timeout 3 and --max-inflight 32, and its metadata client reaches the
broker through a plain TCP relay (--metadata-upstream) that a test can cut. Extra kadmit
processes for the drain tests listen on the unused sidecar ports of nodes 2..4.

kadmit starts BEFORE the broker, so the first test sees an unreachable upstream at start.

For every hostile case a well-behaved client (kadmit_proc.Bystander) keeps making requests on
its own connection through the same kadmit; the test asserts it is unaffected, that kadmit logs
a line and counts the case in /metrics, and (fixture) that kadmit is still running with no
sanitizer report.
"""

from __future__ import annotations

import json
import random
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
from kadmit_proc import Bystander, Kadmit, TcpRelay, is_asan, proc_status  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402

MAX_FRAME = 1024 * 1024
IDLE_TIMEOUT_S = 3
MAX_INFLIGHT = 32
STALENESS_MS = 2000


class Rb:
    def __init__(self, d: Path, c: KafkaCluster, k: Kadmit, relay: TcpRelay):
        self.d, self.c, self.k, self.relay = d, c, k, relay
        self.startup: dict = {}
        self.port = k.listen_port

    def extra_ports(self, i: int) -> tuple[int, int]:
        """Listen and admin ports of extra kadmit i (1..3): node i+1's unused sidecar ports."""
        return self.c.node(1).sidecar_port + i, self.c.node(1).admin_port + i


def _observe_unreachable_upstream(k: Kadmit) -> dict:
    """What an operator and a client see while the broker is down."""
    obs: dict = {}
    obs["readyz"] = k.http("/readyz")
    before = k.metric("kadmit_upstream_connect_failures_total")
    t0 = time.monotonic()
    s = socket.create_connection((HOST, k.listen_port), timeout=10)
    try:
        s.sendall(kafka_wire.api_versions_request(1))
        obs["recv"] = s.recv(100)
    except ConnectionResetError:
        obs["recv"] = b""
    obs["close_s"] = time.monotonic() - t0
    s.close()
    obs["log"] = k.wait_log("upstream connect failed")
    obs["failures"] = k.metric("kadmit_upstream_connect_failures_total") - before
    return obs


@pytest.fixture(scope="module")
def rb(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-rb-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + 260)
    n = c.node(1)
    relay_port = n.sidecar_port + 8
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000,
                                  "metadata.refresh.interval.ms": 500,
                                  "metadata.refresh.before.decision.ms": 1000,
                                  "metadata.max.staleness.ms": STALENESS_MS}))
    relay = TcpRelay(relay_port, n.client_port)
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy), "--metadata-upstream", f"{HOST}:{relay_port}",
               "--max-frame-bytes", str(MAX_FRAME), "--idle-timeout", str(IDLE_TIMEOUT_S),
               "--max-inflight", str(MAX_INFLIGHT))
    r = Rb(d, c, k, relay)
    failed = True
    try:
        relay.start()
        k.start()
        r.startup = _observe_unreachable_upstream(k)
        c.start()
        deadline = time.monotonic() + 60
        while k.http("/v1/admission")[0] != 200:
            assert time.monotonic() < deadline, "kadmit never became ready:\n" + k.log_text()[-3000:]
            time.sleep(0.2)
        r.startup["recovered_s"] = time.monotonic()
        yield r
        failed = False
    finally:
        rc = k.stop()
        relay.stop()
        c.stop()
        reports = k.sanitizer_reports()
        if failed or reports or rc not in (0, None) or request.session.testsfailed:
            sys.stderr.write(f"\nrobustness: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)
        assert not reports, "\n".join(reports)


@pytest.fixture(autouse=True)
def _kadmit_alive(rb):
    yield
    assert rb.k.alive(), "kadmit died:\n" + rb.k.log_text()[-3000:]
    assert not rb.k.sanitizer_reports()


# --- helpers -------------------------------------------------------------------------------

def expect_closed(s: socket.socket, timeout: float = 5.0) -> float:
    """Reads until the peer closes; returns how long that took. Fails if it stays open."""
    s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise AssertionError(f"connection still open after {timeout}s")
    return time.monotonic() - t0


def hostile(rb: Rb, payload: bytes, shut_wr: bool = False, timeout: float = 5.0) -> float:
    s = socket.create_connection((HOST, rb.port), timeout=5)
    try:
        s.sendall(payload)
        if shut_wr:
            s.shutdown(socket.SHUT_WR)
        return expect_closed(s, timeout)
    finally:
        s.close()


class Counted:
    """The increase of one /metrics sample and the log lines written meanwhile."""

    def __init__(self, k: Kadmit, name: str):
        self.k, self.name = k, name

    def __enter__(self):
        self.before = self.k.metric(self.name)
        self.log_start = self.k.log_size()
        return self

    def __exit__(self, *exc):
        pass

    def increase(self, at_least: int, timeout: float = 5.0) -> float:
        deadline = time.monotonic() + timeout
        while True:
            got = self.k.metric(self.name) - self.before
            if got >= at_least or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def log(self, needle: str) -> str:
        return self.k.wait_log(needle, start=self.log_start)


def header(api_key: int, version: int, cid: int, client_id: bytes = b"rb") -> bytes:
    return struct.pack(">hhih", api_key, version, cid, len(client_id)) + client_id


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def create_topics_v4(cid: int, topic: str, count: int | None = None) -> bytes:
    """CreateTopics v4 with one topic (1 partition, rf 1), or a bare array count."""
    topics = (struct.pack(">i", 1 if count is None else count) + kafka_wire._str(topic)
              + struct.pack(">ihii", 1, 1, 0, 0))
    return kafka_wire.request(19, 4, cid, topics + struct.pack(">i?", 30000, False))


def parse_create_topics_v4(body: bytes) -> list[tuple[str, int, str | None]]:
    r = kafka_wire.Reader(body)
    r.take(">i")
    return r.array(lambda: (r.string(), r.take(">h"), r.string()))


def parse_apr_v0_error(resp: bytes) -> tuple[int, str]:
    """AlterPartitionReassignments v0: (error code, error message) after the header's tags."""
    r = kafka_wire.Reader(resp)
    r.take(">b")  # response header v1: no tagged fields
    _, err = r.take(">ih")
    n, shift = 0, 0
    while True:  # compact nullable string: unsigned varint length + 1
        b = r.take(">B")
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    msg = resp[r.pos:r.pos + n - 1].decode(errors="replace") if n > 1 else ""
    return err, msg


fetch_v4 = kafka_wire.fetch_v4


def parse_fetch_v4(body: bytes) -> tuple[int, int, int]:
    """(error code, high watermark, record bytes) of the first partition."""
    r = kafka_wire.Reader(body)
    r.take(">i")
    r.take(">i")  # topics
    r.string()
    r.take(">i")  # partitions
    _, err, hw, _ = r.take(">ihqq")
    n = r.take(">i")
    if n > 0:
        r.pos += 16 * n
    size = r.take(">i")
    return err, hw, max(size, 0)


def produce(rb: Rb, topic: str, batches: int, per_batch: int, size: int) -> None:
    with kafka_wire.Connection(HOST, rb.port, timeout=30) as c:
        for i in range(batches):
            values = [bytes([65 + (i + j) % 26]) * size for j in range(per_batch)]
            cid, body = c.call(kafka_wire.produce_request(i + 1, topic, 0, values, acks=-1))
            assert cid == i + 1
            r = kafka_wire.Reader(body)
            r.take(">i")
            r.string()
            r.take(">i")
            _, err = r.take(">ih")
            assert err == 0, f"produce error {err}"


def create_topic(rb: Rb, topic: str) -> None:
    with kafka_wire.Connection(HOST, rb.port, timeout=30) as c:
        _, body = c.call(create_topics_v4(1, topic))
        assert parse_create_topics_v4(body)[0][1] in (0, 36), parse_create_topics_v4(body)
        rb.c.wait_topic_healthy(topic)
        deadline = time.monotonic() + 15
        while True:  # the leader serves fetches a moment after metadata lists it
            _, body = c.call(fetch_v4(2, topic, 0, 0, max_wait_ms=0))
            if parse_fetch_v4(body)[0] == 0:
                return
            assert time.monotonic() < deadline, f"{topic}: fetch error {parse_fetch_v4(body)[0]}"
            time.sleep(0.1)


# --- faults: the upstream is unreachable at start -------------------------------------------

def test_upstream_unreachable_at_start_then_recovers(rb: Rb):
    o = rb.startup
    code, body = o["readyz"]
    assert code == 503 and "not ready" in body, (code, body)
    assert o["recv"] == b"" and o["close_s"] < 2.0, o  # a prompt close, not a hang
    assert "upstream connect failed" in o["log"] and "connection refused" in o["log"]
    assert o["failures"] >= 1
    # recovered: the broker is up, kadmit is ready (its next probe of the broker, one a second,
    # sees it), admits and relays without a restart
    deadline = time.monotonic() + 10
    while rb.k.http("/readyz")[0] != 200:
        assert time.monotonic() < deadline, rb.k.http("/readyz")
        time.sleep(0.2)
    assert rb.k.http("/v1/admission")[0] == 200
    md = kafka_wire.metadata(HOST, rb.port)
    assert [b[0] for b in md["brokers"]] == [1]


# --- hostile input -------------------------------------------------------------------------

def test_truncated_frames_are_closed_and_counted(rb: Rb):
    with Bystander(rb.port), Counted(rb.k, 'kadmit_frame_errors_total{kind="truncated"}') as n:
        md = frame(header(3, 4, 7) + struct.pack(">i?", -1, False))
        hostile(rb, md[:7], shut_wr=True)                # inside the header
        hostile(rb, md[:-1], shut_wr=True)               # one byte short of the end
        hostile(rb, struct.pack(">i", 5000) + md[4:], shut_wr=True)  # size promises more
        assert n.increase(3) == 3
        assert "client closed in the middle of a frame, closing" in n.log("middle of a frame")


def test_oversized_and_undersized_size_prefixes(rb: Rb):
    with Bystander(rb.port):
        with Counted(rb.k, 'kadmit_frame_errors_total{kind="oversize"}') as n:
            for size in (0x7FFFFFFF, 0xFFFFFFFF, MAX_FRAME + 1):  # 2^31-1, -1, cap + 1
                assert hostile(rb, struct.pack(">I", size) + b"\0" * 16) < 2.0
            assert n.increase(3) == 3
            line = n.log("frame size above the cap")
            assert f"cap={MAX_FRAME}" in line
        with Counted(rb.k, 'kadmit_frame_errors_total{kind="undersize"}') as n:
            hostile(rb, struct.pack(">i", 3) + b"abc")
            assert n.increase(1) == 1
            n.log("frame size below the smallest header")


def test_hostile_array_counts_in_admission_requests(rb: Rb):
    """CreateTopics has no top-level error field: an undecodable one is logged, counted and
    closed. AlterPartitionReassignments has one, so it gets an error answer with a message."""
    label = 'kadmit_admission_decode_errors_total{api="CreateTopics",version="4"}'
    with Bystander(rb.port), Counted(rb.k, label) as n:
        for count in (-1, 0x7FFFFFFF, -2147483648):
            assert hostile(rb, create_topics_v4(1, "rb-hostile", count)) < 2.0
        assert n.increase(3) == 3
        line = n.log("admission request refused, closing the connection api=CreateTopics")
        assert "detail=" in line
    cp = 'kadmit_admission_decode_errors_total{api="CreatePartitions",version="1"}'
    with Bystander(rb.port), Counted(rb.k, cp) as n:
        body = struct.pack(">i", 0x7FFFFFFF) + kafka_wire._str("rb-hostile") + struct.pack(">ii", 2, -1)
        assert hostile(rb, kafka_wire.request(37, 1, 1, body + struct.pack(">i?", 30000, False))) < 2
        assert n.increase(1) == 1
        n.log("admission request refused, closing the connection api=CreatePartitions")
    apr = 'kadmit_admission_decode_errors_total{api="AlterPartitionReassignments",version="0"}'
    with Bystander(rb.port), Counted(rb.k, apr) as n:
        hdr = struct.pack(">hhih", 45, 0, 9, 2) + b"rb" + b"\0"  # header v2: empty tags
        body = struct.pack(">i", 30000) + kafka_wire._varint(0x7FFFFFFF)  # 2^31-2 topics
        with kafka_wire.Connection(HOST, rb.port) as c:
            c.send(frame(hdr + body))
            cid, resp = c.recv()
            assert cid == 9
            err, msg = parse_apr_v0_error(resp)
            assert err != 0 and msg, (err, msg)
            # and the connection is still usable
            assert c.call(kafka_wire.api_versions_request(10))[0] == 10
        assert n.increase(1) == 1
        n.log("admission request does not decode, answered with an error")


def test_tls_client_hello_on_the_plaintext_port(rb: Rb):
    hello = bytes.fromhex("16030100a5010000a10303") + bytes(32) + b"\x00\x00\x02\x13\x01\x01\x00"
    with Bystander(rb.port), Counted(rb.k, "kadmit_tls_on_plaintext_total") as n:
        assert hostile(rb, hello) < 2.0
        assert n.increase(1) == 1
        n.log("TLS handshake on a plaintext listener, closing")


def test_unknown_api_key_passes_through_to_the_broker(rb: Rb):
    with Bystander(rb.port), Counted(rb.k, "kadmit_unknown_api_keys_total") as n:
        fwd = rb.k.metric('kadmit_forwarded_bytes_total{direction="client_to_broker"}')
        # Kafka closes a connection that sends an API key it does not know.
        hostile(rb, frame(header(32000, 0, 5) + b"\0" * 8))
        assert n.increase(1) == 1
        line = n.log("unknown API key, passed through to the broker")
        assert "api_key=32000" in line
        assert rb.k.metric('kadmit_forwarded_bytes_total{direction="client_to_broker"}') - fwd >= 8 + 10  # it was forwarded


def test_random_garbage(rb: Rb):
    rnd = random.Random(6)
    with Bystander(rb.port):
        # Random bytes: as a size prefix they are almost always far above the cap.
        garbage = rnd.randbytes(4096)
        assert struct.unpack(">I", garbage[:4])[0] > MAX_FRAME and garbage[0] != 0x16
        with Counted(rb.k, 'kadmit_frame_errors_total{kind="oversize"}') as n:
            hostile(rb, garbage)
            assert n.increase(1) == 1
        # A plausible size with random bytes behind it: an API key nobody knows. When the
        # random client_id length fits the frame, the header peeks fine and the frame goes to
        # the broker, which closes the connection; otherwise kadmit refuses the header.
        for _ in range(6):
            body = struct.pack(">h", rnd.randrange(1000, 32767)) + rnd.randbytes(198)
            clen = struct.unpack(">h", body[6:8])[0]
            fits = -1 <= clen <= len(body) - 8
            name = "kadmit_unknown_api_keys_total" if fits else 'kadmit_frame_errors_total{kind="other"}'
            with Counted(rb.k, name) as n:
                hostile(rb, frame(body))
                assert n.increase(1) == 1, name
                n.log("unknown API key, passed through" if fits else "malformed frame header")


def test_half_open_connections(rb: Rb):
    with Bystander(rb.port):
        # Half a frame, then silence: closed after --idle-timeout although a request is "open".
        with Counted(rb.k, 'kadmit_frame_errors_total{kind="stalled"}') as n:
            md = frame(header(3, 4, 7) + struct.pack(">i?", -1, False))
            took = hostile(rb, md[:10], timeout=IDLE_TIMEOUT_S * 3)
            assert IDLE_TIMEOUT_S - 0.5 <= took <= IDLE_TIMEOUT_S * 2 + 1, took
            assert n.increase(1) == 1
            assert f"idle_timeout_s={IDLE_TIMEOUT_S}" in n.log("client silent in the middle")
        # Half a frame, then FIN: counted as truncated (test above). A whole request then FIN
        # is a legal half-close: the response still arrives, then the connection ends.
        s = socket.create_connection((HOST, rb.port), timeout=5)
        s.sendall(kafka_wire.api_versions_request(42))
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        assert len(data) > 8 and struct.unpack(">i", data[4:8])[0] == 42


def test_slow_loris_on_the_admin_port(rb: Rb):
    """Headers trickled a byte at a time: cut at the admin request timeout (10 s), while other
    admin requests are served promptly the whole time."""
    k = rb.k
    with Counted(k, "kadmit_admin_request_timeouts_total") as n:
        s = socket.create_connection((HOST, k.admin_port), timeout=15)
        req = b"GET /metrics HTTP/1.1\r\nHost: kadmit\r\nX-Slow: " + b"a" * 200
        closed_after = None
        t0 = time.monotonic()
        worst = 0.0
        for i, byte in enumerate(req):
            try:
                s.send(bytes([byte]))
            except OSError:
                closed_after = time.monotonic() - t0
                break
            t1 = time.monotonic()
            code, _ = k.http("/healthz", timeout=2)
            worst = max(worst, time.monotonic() - t1)
            assert code == 200
            time.sleep(0.25)
            if time.monotonic() - t0 > 14:
                break
        s.settimeout(5)
        try:
            answer = s.recv(4096)
        except OSError:
            answer = b""
        s.close()
        assert closed_after is not None or answer.startswith(b"HTTP/1.1 408"), answer
        assert worst < 1.0, f"a /healthz took {worst:.2f}s during the slow-loris"
        assert n.increase(1) == 1
        assert "timeout_ms=10000" in n.log("admin request not complete within its timeout")


# --- limits --------------------------------------------------------------------------------

def test_max_inflight_pauses_a_pipelining_client(rb: Rb):
    count = 400
    with Counted(rb.k, 'kadmit_read_pauses_total{cause="inflight"}') as n:
        with kafka_wire.Connection(HOST, rb.port, timeout=30) as c:
            c.send(b"".join(kafka_wire.api_versions_request(i) for i in range(count)))
            time.sleep(0.5)
            assert n.increase(1) >= 1
            for i in range(count):
                assert c.recv()[0] == i


def test_a_client_that_stops_reading_pins_bounded_memory(rb: Rb):
    """Fetches of 1 MiB pipelined by a client that never reads: kadmit holds at most the
    write-queue high watermark plus a few read buffers for it, not the responses."""
    topic = "rb-bulk"
    create_topic(rb, topic)
    produce(rb, topic, batches=16, per_batch=64, size=1024)  # 16 MiB
    rss0 = proc_status(rb.k.pid)["VmRSS"]
    with Bystander(rb.port), Counted(rb.k, 'kadmit_read_pauses_total{cause="backpressure"}') as n:
        s = socket.create_connection((HOST, rb.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.setblocking(False)
        sent = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                s.send(fetch_v4(sent, topic, 0, 0))
                sent += 1
            except BlockingIOError:
                time.sleep(0.05)
        time.sleep(1)
        used = json.loads(rb.k.http("/v1/pool")[1])["memory_pool_used_bytes"]
        rss1 = proc_status(rb.k.pid)["VmRSS"]
        s.close()
    assert sent >= MAX_INFLIGHT
    assert n.increase(1) >= 1
    assert used <= 2 * 1024 * 1024, f"pool holds {used} bytes for one stalled client"
    if not is_asan(rb.k.binary):  # ASan's quarantine holds freed memory
        assert rss1 - rss0 <= 8 * 1024 * 1024, f"RSS grew {rss1 - rss0} bytes"


# --- faults: SIGTERM drain -----------------------------------------------------------------

def test_sigterm_drains_in_flight_requests_then_exits_0(rb: Rb):
    topic = "rb-drain"
    create_topic(rb, topic)
    listen, admin = rb.extra_ports(1)
    k = Kadmit(rb.k.binary, rb.d, "kadmit-drain", listen, rb.c.node(1).client_port, admin,
               "--drain-timeout", "10").start()
    try:
        with kafka_wire.Connection(HOST, listen, timeout=15) as c:
            c.send(fetch_v4(77, topic, 0, 0, max_wait_ms=3000))  # empty: the broker waits 3 s
            time.sleep(0.5)
            t0 = time.monotonic()
            k.p.send_signal(15)
            k.wait_log("signal received, draining connections")
            with pytest.raises(OSError):  # the listener is closed at once
                socket.create_connection((HOST, listen), timeout=1).close()
            cid, body = c.recv()  # the in-flight request still gets its answer
            assert cid == 77 and parse_fetch_v4(body)[0] == 0
            rc = k.p.wait(12)
            took = time.monotonic() - t0
        assert rc == 0
        line = k.wait_log("all connections closed, exiting")
        drain_ms = int(line.split("drain_ms=")[1].split()[0])
        assert 1500 <= drain_ms <= 4000 and took < 10, (drain_ms, took)
        sys.stderr.write(f"\ndrain: in-flight Fetch answered, exit 0 after {drain_ms} ms\n")
    finally:
        k.stop()
    assert not k.sanitizer_reports()


def test_sigterm_cuts_what_outlives_the_drain_timeout(rb: Rb):
    topic = "rb-drain"
    create_topic(rb, topic)
    listen, admin = rb.extra_ports(2)
    k = Kadmit(rb.k.binary, rb.d, "kadmit-cut", listen, rb.c.node(1).client_port, admin,
               "--drain-timeout", "1").start()
    try:
        with kafka_wire.Connection(HOST, listen, timeout=15) as c:
            c.send(fetch_v4(78, topic, 0, 0, max_wait_ms=20000))
            time.sleep(0.3)
            t0 = time.monotonic()
            k.p.send_signal(15)
            rc = k.p.wait(10)
            took = time.monotonic() - t0
            with pytest.raises((ConnectionError, OSError)):
                c.recv()
        assert rc == 0 and took < 3, (rc, took)
        assert "cut=1" in k.wait_log("drain timeout, connections cut")
    finally:
        k.stop()
    assert not k.sanitizer_reports()


# --- faults: metadata refreshes fail --------------------------------------------------------

def test_metadata_refresh_failure_fails_admission_closed_while_data_flows(rb: Rb):
    from confluent_kafka import Consumer, Producer

    topic = "rb-data"
    create_topic(rb, topic)
    k = rb.k
    stale = 'kadmit_admission_decisions_total{api="CreateTopics",decision="reject",reason="stale"}'
    fails0 = k.metric('kadmit_metadata_refreshes_total{result="failed"}')
    rejects0 = k.metric(stale)
    rb.relay.stop()  # the metadata client's path to the broker is cut; clients' is not
    try:
        time.sleep(STALENESS_MS / 1000 + 1)
        # Forwarding works, so the sidecar stays ready; admission says why it cannot decide.
        assert k.http("/readyz")[0] == 200
        code, why = k.http("/v1/admission")
        assert code == 503 and "metadata client" in why, why
        assert k.metric("kadmit_admission_healthy") == 0
        assert k.metric('kadmit_metadata_refreshes_total{result="failed"}') > fails0
        with kafka_wire.Connection(HOST, rb.port) as c:
            _, body = c.call(create_topics_v4(3, "rb-while-blind"))
        (_, err, msg), = parse_create_topics_v4(body)
        assert err != 0 and msg and "stale" in msg, (err, msg)  # fails closed, with a message
        assert k.metric(stale) - rejects0 == 1
        # The data path carries on: a real producer and consumer through the same kadmit.
        n = 2000
        p = Producer({"bootstrap.servers": f"{HOST}:{rb.port}", "acks": "all",
                      "enable.idempotence": True})
        errors = []
        for i in range(n):
            p.produce(topic, f"v{i}".encode(),
                      on_delivery=lambda e, m: e is not None and errors.append(e))
        assert p.flush(30) == 0 and not errors, errors
        cons = Consumer({"bootstrap.servers": f"{HOST}:{rb.port}", "group.id": "rb-data",
                         "auto.offset.reset": "earliest"})
        cons.subscribe([topic])
        got, deadline = 0, time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got += 1
        cons.close()
        assert got == n
    finally:
        rb.relay.start()
    deadline = time.monotonic() + 20
    while k.http("/v1/admission")[0] != 200:
        assert time.monotonic() < deadline, "no recovery after the metadata path came back"
        time.sleep(0.2)
    with kafka_wire.Connection(HOST, rb.port) as c:
        _, body = c.call(create_topics_v4(4, "rb-after-blind"))
    assert parse_create_topics_v4(body)[0][1] == 0
