"""Version discipline through kadmit (ARCHITECTURE.md section 3, invariant 4).

In ApiVersions responses kadmit lowers the max version of each API it decodes to what it can
decode, never raises anything and leaves other APIs untouched; ApiVersions responses keep
response header v0. Real clients (Kafka's Java tools, librdkafka's kcat) negotiate through that
clamped answer and work. A client that ignores ApiVersions and sends a version of an admission
API kadmit cannot decode is not forwarded blindly: kadmit logs it, counts it and closes the
connection, as a broker does with a version it does not support.

The decoded max versions are read from protocol/generated/ka_*_request.h (*_MAX_VERSION), so
these tests follow a regeneration of the codecs.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from clients import KCAT, run, text, topics
from kafka_cluster import HOST, REPO_ROOT, kadmit_bin, port_open, tool
from kafka_wire import Connection

API_VERSIONS = 18
API_CREATE_TOPICS = 19
API_ALTER_PARTITION_REASSIGNMENTS = 45


def decoded_max_versions() -> dict[int, int]:
    """{api_key: max version kadmit decodes}, from the generated ka_decoded_max_version()."""
    src = (REPO_ROOT / "protocol" / "generated" / "ka_api_table.c").read_text()
    body = src[src.index("int16_t ka_decoded_max_version(int16_t api_key)"):]
    body = body[:body.index("default:")]
    out = {int(k): int(v) for k, v in re.findall(r"case (\d+):\s+return (\d+);", body)}
    assert out, "no decoded versions found in protocol/generated/ka_api_table.c"
    return out


# --- the flexible wire format (kafka_wire.py speaks only the classic one) -------------------

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


def flexible_request(api_key: int, version: int, corr: int, body: bytes,
                     client_id: str = "kadmit-it-versions") -> bytes:
    """Request header v2 (the client id keeps its int16 length), then body."""
    cid = client_id.encode()
    payload = (struct.pack(">hhih", api_key, version, corr, len(cid)) + cid + b"\x00" + body)
    return struct.pack(">i", len(payload)) + payload


def api_versions_request(version: int, corr: int) -> bytes:
    """ApiVersions v3+ request: ClientSoftwareName, ClientSoftwareVersion, no tags."""
    return flexible_request(API_VERSIONS, version, corr,
                            compact_str("kadmit-it") + compact_str("1.0") + b"\x00")


class Buf:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def uvarint(self) -> int:
        n = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()
            self.pos += size


def parse_api_versions_v3(body: bytes) -> tuple[int, dict[int, tuple[int, int]], bytes]:
    """(error, {api_key: (min, max)}, the bytes after the array: throttle and tags)."""
    r = Buf(body)
    err = r.take(">h")
    apis = {}
    for _ in range(r.uvarint() - 1):
        k, lo, hi = r.take(">h"), r.take(">h"), r.take(">h")
        r.skip_tags()
        apis[k] = (lo, hi)
    rest = body[r.pos:]
    r.take(">i")
    r.skip_tags()
    assert r.pos == len(body), "ApiVersions v3 body not consumed exactly"
    return err, apis, rest


def parse_api_versions_v0(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    r = Buf(body)
    err = r.take(">h")
    apis = {}
    for _ in range(r.take(">i")):
        k, lo, hi = r.take(">h"), r.take(">h"), r.take(">h")
        apis[k] = (lo, hi)
    assert r.pos == len(body), "ApiVersions v0 body not consumed exactly"
    return err, apis


def call(port: int, frame: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """One request on a fresh connection; the response's correlation id and the rest."""
    with Connection(HOST, port, timeout) as c:
        return c.call(frame)


def node1(cluster):
    return cluster.nodes[0]


# --- real clients negotiate through the clamp ------------------------------------------------

def test_kafka_tools_and_kcat_negotiate_through_clamped_api_versions(cluster, topic_name):
    decoded = decoded_max_versions()
    n = node1(cluster)
    via = text(run([tool("kafka-broker-api-versions"), "--bootstrap-server",
                    f"{HOST}:{n.sidecar_port}"], timeout=60))
    # e.g. "Metadata(3): 0 to 12 [usable: 12]" or "AlterPartitionReassignments(45): 0
    # [usable: 0]" (min == max): the tool sees kadmit's max, and would use it
    for name, key in (("Metadata", 3), ("CreateTopics", 19), ("CreatePartitions", 37),
                      ("AlterPartitionReassignments", 45)):
        m = re.search(rf"\b{name}\({key}\): (\d+)(?: to (\d+))? \[usable: (\d+)\]", via)
        assert m, f"{name} missing from kafka-broker-api-versions through kadmit:\n{via}"
        top = int(m.group(2) or m.group(1))
        assert top <= decoded[key] and int(m.group(3)) <= decoded[key], m.group(0)

    topics(cluster.bootstrap, "--create", "--topic", topic_name, "--partitions", "2",
           "--replication-factor", "1")
    cluster.wait_topic_healthy(topic_name)
    assert topic_name in text(topics(cluster.bootstrap, "--list")).split()
    desc = text(topics(cluster.bootstrap, "--describe", "--topic", topic_name))
    assert "PartitionCount: 2" in desc and "ReplicationFactor: 1" in desc

    md = text(run([KCAT, "-L", "-b", cluster.bootstrap, "-t", topic_name], timeout=30))
    assert f'topic "{topic_name}" with 2 partitions' in md
    for node in cluster.nodes:
        assert f"broker {node.id} at {HOST}:{node.sidecar_port}" in md


def test_api_versions_v3_clamps_decoded_apis_and_passes_the_rest(cluster):
    decoded = decoded_max_versions()
    n = node1(cluster)
    corr_v, body_v = call(n.sidecar_port, api_versions_request(3, 7001))
    corr_d, body_d = call(n.direct_port, api_versions_request(3, 7001))
    # Response header v0: the body starts right after the correlation id (it would not parse
    # as v3 if a header tag section were there).
    assert corr_v == corr_d == 7001
    err_v, via, rest_v = parse_api_versions_v3(body_v)
    err_d, direct, rest_d = parse_api_versions_v3(body_d)
    assert err_v == err_d == 0
    assert via.keys() == direct.keys()
    clamped = []
    for key, (lo, hi) in direct.items():
        if key in decoded:
            assert via[key][0] == lo, f"api {key}: min changed"
            assert via[key][1] <= decoded[key], f"api {key}: max {via[key][1]} > {decoded[key]}"
            # lowered to kadmit's max, never raised; left alone when there is no overlap
            want = hi if hi <= decoded[key] or decoded[key] < lo else decoded[key]
            assert via[key][1] == want, f"api {key}: {via[key]} vs broker {direct[key]}"
            if want != hi:
                clamped.append(key)
        else:
            assert via[key] == (lo, hi), f"api {key} (not decoded) changed: {via[key]}"
    for key in (0, 1):  # Produce, Fetch: untouched
        assert via[key] == direct[key]
    # The pinned Kafka speaks Metadata v13, above what kadmit decodes: at least that one is lowered.
    assert 3 in clamped, (direct.get(3), via.get(3))
    # throttle time and the tagged fields (SupportedFeatures, FinalizedFeatures...) untouched
    assert rest_v == rest_d


def test_api_versions_unsupported_version_answer_lowers_only_what_kadmit_cannot_decode(cluster):
    n = node1(cluster)
    corr_v, body_v = call(n.sidecar_port, api_versions_request(6, 7002))  # 4.4 speaks v0-5
    corr_d, body_d = call(n.direct_port, api_versions_request(6, 7002))
    assert corr_v == corr_d == 7002
    # The broker answers a version it does not know with a v0 body and UNSUPPORTED_VERSION (35),
    # listing the ApiVersions versions it does speak.
    err, apis = parse_api_versions_v0(body_d)
    assert err == 35 and API_VERSIONS in apis, (err, apis)
    # Patched in place, and only where kadmit decodes less than the broker speaks: ApiVersions
    # itself is decoded up to v4, so Kafka 4.4's v5 is lowered to 4.
    lo, hi = apis[API_VERSIONS]
    assert len(body_v) == len(body_d)
    assert parse_api_versions_v0(body_v) == (err, {**apis, API_VERSIONS: (lo, min(hi, 4))})


# --- a client that ignores ApiVersions -------------------------------------------------------

UNDECODABLE = [
    # the pinned broker speaks AlterPartitionReassignments v0-1; kadmit decodes v0 only: forwarded
    # blindly, the broker would answer it.
    pytest.param(API_ALTER_PARTITION_REASSIGNMENTS, 1,
                 struct.pack(">i?", 30000, False) + uvarint(1) + b"\x00",
                 "AlterPartitionReassignments", id="AlterPartitionReassignments-v1"),
    # above every known version: the broker closes too, so only kadmit's log tells them apart.
    pytest.param(API_CREATE_TOPICS, 99, uvarint(1) + struct.pack(">i?", 30000, False) + b"\x00",
                 "CreateTopics", id="CreateTopics-v99"),
]


def assert_refused(port: int, log: Path, api_key: int, version: int, body: bytes,
                   name: str) -> None:
    offset = log.stat().st_size if log.exists() else 0
    frame = flexible_request(api_key, version, 7100, body)
    with Connection(HOST, port, timeout=10) as c:
        c.send(frame)
        try:
            corr, _ = c.recv()
            pytest.fail(f"{name} v{version} was forwarded: a response (correlation id {corr}) "
                        "came back instead of a close")
        except (ConnectionError, OSError) as e:
            assert not isinstance(e, socket.timeout), f"{name} v{version}: no close within 10 s"
    deadline = time.monotonic() + 5
    while True:
        with open(log, "rb") as f:
            f.seek(offset)
            new = f.read().decode(errors="replace")
        # e.g. detail="CreateTopics v99 is not a version kadmit decodes (max 7); ..."
        lines = [ln for ln in new.splitlines() if f"{name} v{version}" in ln]
        if lines:
            return
        assert time.monotonic() < deadline, (
            f"kadmit's log names no refused {name} v{version}; new log lines:\n{new[-2000:]}")
        time.sleep(0.1)


@pytest.mark.parametrize("api_key,version,body,name", UNDECODABLE)
def test_undecodable_admission_version_is_refused_not_forwarded(cluster, api_key, version,
                                                                body, name):
    s = cluster.sidecars[1]
    assert_refused(s.node.sidecar_port, s.log, api_key, version, body, name)


@pytest.fixture(scope="module")
def policy_kadmit(cluster, tmp_path_factory):
    """An extra kadmit with a permissive policy (audit mode) in front of broker 1's CLIENT
    listener, on a free port: the admission hook, and its version check, are installed."""
    d = tmp_path_factory.mktemp("policy-kadmit")
    policy = d / "policy.json"
    policy.write_text('{"max.broker.partitions": 1000000, "enforcement": "audit"}\n')
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    log = d / "kadmit.log"
    n = node1(cluster)
    with open(log, "wb") as out:
        p = subprocess.Popen([str(kadmit_bin()), "--listen", f"{HOST}:{port}", "--admin", "off",
                              "--upstream", f"{HOST}:{n.client_port}", "--policy", str(policy),
                              "--log-level", "info"],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while not port_open(port):
            assert p.poll() is None, f"kadmit --policy exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "kadmit --policy not listening"
            time.sleep(0.05)
        yield port, log
    finally:
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    text_ = log.read_text(errors="replace")
    assert "AddressSanitizer" not in text_ and "runtime error:" not in text_, text_[-3000:]


@pytest.mark.parametrize("api_key,version,body,name", UNDECODABLE)
def test_undecodable_admission_version_is_refused_with_a_policy(policy_kadmit, api_key,
                                                               version, body, name):
    port, log = policy_kadmit
    assert_refused(port, log, api_key, version, body, name)


def test_librdkafka_all_topics_metadata_request_passes_a_policy_kadmit(policy_kadmit, cluster):
    """librdkafka (2.16 at least) asks for all topics in Metadata v9+ with 4 bytes reserved for
    the topics count and never finalised: the body is 00 00 00 00 01 00 00, of which the broker
    reads 4 (topics null, AllowAutoTopicCreation false, IncludeTopicAuthorizedOperations false,
    no tags) and ignores 3. confluent-kafka's list_topics() sends it
    (tests/data/frames/nonconforming/). The broker answers it, so kadmit must too."""
    port, log = policy_kadmit
    body = bytes.fromhex("00000000010000")
    frame = flexible_request(3, 12, 7200, body, client_id="rdkafka")
    _, direct = call(node1(cluster).client_port, frame)
    assert len(direct) > 8  # the broker answers
    try:
        corr, _ = call(port, frame)
    except (ConnectionError, OSError) as e:
        pytest.fail(f"kadmit --policy closed a librdkafka all-topics Metadata v12 request: {e}")
    assert corr == 7200
