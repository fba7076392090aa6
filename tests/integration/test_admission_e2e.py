"""Admission end to end: a real 3-broker KRaft cluster, each broker behind a kadmit sidecar
started with --policy, driven by Kafka's own CLI tools, a Java AdminClient program
(tests/integration/java/AdmissionClient.java) and kcat/librdkafka.

Every test reads the brokers' current replica counts on the DIRECT listener, writes a policy
whose limits are "current + headroom", and (re)starts the three sidecars with it, so the
tests do not depend on each other's topics. KRaft clients send admin requests to a random
broker (the Metadata controller_id); every sidecar enforces the same policy, so whichever
sidecar a request goes through, the verdict is the same.

Uses its own cluster (module fixture `adm`), on ports offset by $KADMIT_TEST_PORT_BASE like the
rest of the harness; $KADMIT_BIN selects the binary.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin,  # noqa: E402
                           own_cluster, port_base, port_open, tail)

REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"


# --- fixture ------------------------------------------------------------------

class Adm:
    """The cluster, its sidecars, and helpers to (re)start them with a policy."""

    def __init__(self, cluster: KafkaCluster, sidecars: Sidecars, java_dir: Path):
        self.c = cluster
        self.sc = sidecars
        self.java_dir = java_dir
        self.policy_file = cluster.dir / "policy.json"

    @property
    def bootstrap(self) -> str:
        return self.c.bootstrap

    @property
    def one(self) -> str:
        """Bootstrap through sidecar 1 only (admin requests may still go to any sidecar)."""
        return f"{HOST}:{self.c.node(1).sidecar_port}"

    def direct_metadata(self, topics: list[str] | None = None) -> dict:
        return kafka_wire.metadata(HOST, self.c.node(1).direct_port, topics=topics)

    def counts(self) -> dict[int, int]:
        md = self.direct_metadata()
        counts = {b[0]: 0 for b in md["brokers"]}
        for t in md["topics"]:
            for p in t["partitions"]:
                for r in p["replicas"]:
                    counts[r] = counts.get(r, 0) + 1
        return counts

    def topic_replicas(self, name: str) -> list[list[int]] | None:
        t = self.direct_metadata([name])["topics"][0]
        if t["error"] != 0:
            return None
        return [p["replicas"] for p in sorted(t["partitions"], key=lambda p: p["index"])]

    def apply_policy(self, headroom: dict[int, int], **extra) -> dict[int, int]:
        """Limits = current count + headroom per broker; restarts every sidecar with it."""
        cur = self.counts()
        limits = {b: cur[b] + headroom.get(b, 0) for b in cur}
        policy = {"max.broker.partitions": max(limits.values()),
                  "brokers": {str(b): {"max.broker.partitions": n} for b, n in limits.items()},
                  "metadata.refresh.before.decision.ms": 1000}
        policy.update(extra)
        self.policy_file.write_text(json.dumps(policy))
        self.restart_sidecars()
        return limits

    def restart_sidecars(self) -> None:
        for s in self.sc.items:
            s.stop()
        for s in self.sc.items:
            env = dict(os.environ)
            env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
            env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream,
                          "--admin", s.admin, "--policy", str(self.policy_file), "--log-level", "info"], env=env)
        deadline = time.monotonic() + 15
        for s in self.sc.items:
            while not port_open(s.node.sidecar_port):
                assert s.proc.alive(), f"kadmit {s.node.id} exited:\n{tail(s.log)}"
                assert time.monotonic() < deadline, f"kadmit {s.node.id} not listening"
                time.sleep(0.05)
        # Wait for each sidecar's first cluster view.
        deadline = time.monotonic() + 15
        while not all("cluster view refreshed" in self.log(s.node.id) for s in self.sc.items):
            assert time.monotonic() < deadline, "no cluster view:\n" + self.sc.diagnostics()
            time.sleep(0.1)

    def log(self, node_id: int) -> str:
        try:
            return self.sc[node_id].log.read_text(errors="replace")
        except OSError:
            return ""

    def logs(self) -> str:
        return "".join(self.log(s.node.id) for s in self.sc.items)

    def java_create(self, validate_only: bool, *topics: str) -> dict[str, str]:
        libs = self.c.home / "libs"
        cp = f"{self.java_dir}:{libs}/*"
        p = clients.run(["java", "-cp", cp, "-Dlog4j2.level=off", "AdmissionClient", "create",
                         self.one, "true" if validate_only else "false", *topics], timeout=120)
        out = {}
        for line in clients.text(p).splitlines():
            if line.startswith("RESULT "):
                _, name, rest = line.split(" ", 2)
                out[name] = rest
        return out


@pytest.fixture(scope="module")
def adm(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    d = Path(tempfile.mkdtemp(prefix="kadmit-adm-"))
    # Its own ports (100 above the session cluster's), so the two clusters can
    # never collide whatever order pytest runs the modules in.
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 100)
    sc = Sidecars(c, binary)
    java_dir = d / "java"
    java_dir.mkdir()
    clients.run(["javac", "-nowarn", "-cp", str(c.home / "libs" / "*"), "-d", str(java_dir),
                 str(HERE / "java" / "AdmissionClient.java")], timeout=180)
    with own_cluster(d, c, sc, "admission integration", request):
        c.start()
        a = Adm(c, sc, java_dir)
        a.apply_policy({1: 1000, 2: 1000, 3: 1000})
        yield a


@pytest.fixture(autouse=True)
def _sidecars_alive(request):
    yield
    if "adm" in request.fixturenames:
        a = request.getfixturevalue("adm")
        probs = a.sc.problems()
        assert not probs, "\n".join(probs) + "\n" + a.sc.diagnostics()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def assert_within(a: Adm, limits: dict[int, int]) -> None:
    counts = a.counts()
    over = {b: (counts[b], limits[b]) for b in limits if counts.get(b, 0) > limits[b]}
    assert not over, f"brokers over their limit (count, limit): {over}"


# --- CreateTopics through kafka-topics ------------------------------------------

def test_create_within_and_beyond_limit(adm: Adm):
    limits = adm.apply_policy({1: 6, 2: 6, 3: 6})
    ok = name("within")
    clients.create_topic(adm.one, ok, 6, 3)  # 6 replicas per broker: exactly the headroom
    adm.c.wait_topic_healthy(ok)
    big = name("beyond")
    p = clients.topics(adm.one, "--create", "--topic", big, "--partitions", "1",
                       "--replication-factor", "3", check=False)
    err = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0
    assert REJECT in err, err
    assert adm.topic_replicas(big) is None
    assert_within(adm, limits)
    assert re.search(r"decision=reject reason=limit", adm.logs())


def test_heterogeneous_place_avoids_full_broker(adm: Adm):
    limits = adm.apply_policy({1: 0, 2: 10, 3: 10})
    t = name("placed")
    clients.create_topic(adm.one, t, 4, 2)
    adm.c.wait_topic_healthy(t)
    replicas = adm.topic_replicas(t)
    assert replicas is not None and len(replicas) == 4
    assert all(1 not in r for r in replicas), replicas
    assert_within(adm, limits)


def test_heterogeneous_bound_rejects(adm: Adm):
    limits = adm.apply_policy({1: 0, 2: 10, 3: 10}, **{"auto.assignment": "bound"})
    t = name("bound")
    p = clients.topics(adm.one, "--create", "--topic", t, "--partitions", "4",
                       "--replication-factor", "2", check=False)
    assert p.returncode != 0
    assert REJECT in (p.stdout + p.stderr).decode(errors="replace")
    assert adm.topic_replicas(t) is None
    assert_within(adm, limits)


# --- CreatePartitions --------------------------------------------------------------

def test_alter_partitions_beyond_rejected_within_allowed(adm: Adm):
    adm.apply_policy({1: 100, 2: 100, 3: 100})
    t = name("grow")
    clients.create_topic(adm.one, t, 2, 3)
    adm.c.wait_topic_healthy(t)
    limits = adm.apply_policy({1: 3, 2: 3, 3: 3})
    p = clients.topics(adm.one, "--alter", "--topic", t, "--partitions", "6", check=False)
    assert p.returncode != 0
    assert REJECT in (p.stdout + p.stderr).decode(errors="replace")
    assert len(adm.topic_replicas(t)) == 2
    clients.topics(adm.one, "--alter", "--topic", t, "--partitions", "5")
    deadline = time.monotonic() + 30
    while len(adm.topic_replicas(t)) != 5:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert_within(adm, limits)


# --- AlterPartitionReassignments -------------------------------------------------

def test_reassignment_onto_full_broker_partly_rejected(adm: Adm, tmp_path: Path):
    adm.apply_policy({1: 100, 2: 100, 3: 100})
    src = name("move")
    # Replicas on broker 2 only, so moving them to broker 1 adds replicas there.
    assign = {"version": 1, "partitions": []}
    clients.topics(adm.one, "--create", "--topic", src, "--replica-assignment", "2,2,2")
    adm.c.wait_topic_healthy(src)
    limits = adm.apply_policy({1: 2, 2: 100, 3: 100})
    for p in range(3):
        assign["partitions"].append({"topic": src, "partition": p, "replicas": [1],
                                     "log_dirs": ["any"]})
    f = tmp_path / "reassign.json"
    f.write_text(json.dumps(assign))
    p = clients.run([clients.tool("kafka-reassign-partitions"), "--bootstrap-server", adm.one,
                     "--execute", "--reassignment-json-file", str(f)], check=False, timeout=90)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert REJECT in out, out
    # Partitions 0 and 1 proceed, 2 is refused.
    deadline = time.monotonic() + 60
    while True:
        r = adm.topic_replicas(src)
        if r[0] == [1] and r[1] == [1]:
            break
        assert time.monotonic() < deadline, r
        time.sleep(0.3)
    assert 2 in adm.topic_replicas(src)[2]
    assert_within(adm, limits)


# --- Java AdminClient ----------------------------------------------------------------

def test_java_multi_topic_partly_admitted(adm: Adm):
    limits = adm.apply_policy({1: 3, 2: 3, 3: 3})
    a, b, c = name("ja"), name("jb"), name("jc")
    res = adm.java_create(False, f"{a}:1:3", f"{b}:10:3", f"{c}:2:3")
    assert res[a] == "OK", res
    assert res[b].startswith("ERROR") and REJECT in res[b], res
    assert res[c] == "OK", res
    assert adm.topic_replicas(a) and adm.topic_replicas(c)
    assert adm.topic_replicas(b) is None
    assert_within(adm, limits)


def test_validate_only_same_verdict_creates_nothing(adm: Adm):
    adm.apply_policy({1: 3, 2: 3, 3: 3})
    a, b = name("va"), name("vb")
    res = adm.java_create(True, f"{a}:1:3", f"{b}:10:3")
    assert res[a] == "OK", res
    assert res[b].startswith("ERROR") and REJECT in res[b], res
    assert adm.topic_replicas(a) is None and adm.topic_replicas(b) is None
    # Nothing was reserved: the full headroom is still there.
    res = adm.java_create(False, f"{a}:3:3")
    assert res[a] == "OK", res


# --- Metadata auto-creation (librdkafka via kcat) --------------------------------------

def _kcat_produce(bootstrap: str, topic: str) -> subprocess.CompletedProcess:
    return clients.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-X", "message.timeout.ms=6000",
                        "-X", "topic.metadata.refresh.interval.ms=1000"],
                       input_=b"hello\n", check=False, timeout=60)


def test_auto_create_within_and_beyond(adm: Adm):
    limits = adm.apply_policy({1: 1, 2: 1, 3: 1})  # num.partitions=1 x rf 3: 1 per broker
    ok = name("auto-ok")
    p = _kcat_produce(adm.bootstrap, ok)
    assert p.returncode == 0, p.stderr
    assert adm.topic_replicas(ok) is not None
    limits = adm.apply_policy({1: 0, 2: 1, 3: 1})
    denied = name("auto-no")
    p = _kcat_produce(adm.bootstrap, denied)
    assert p.returncode != 0 or b"ERROR" in p.stderr
    assert adm.topic_replicas(denied) is None
    logs = adm.logs()
    assert "auto-creation denied" in logs
    m = re.findall(r"auto_create_denials=(\d+)", logs)
    assert m and int(m[-1]) >= 1
    assert_within(adm, limits)


# --- concurrency -----------------------------------------------------------------------

def _create_topics_v4(cid: int, topic: str, partitions: int, rf: int) -> bytes:
    body = struct.pack(">i", 1) + kafka_wire._str(topic) + struct.pack(">ihii", partitions, rf, 0, 0)
    body += struct.pack(">i?", 30000, False)
    return kafka_wire.request(19, 4, cid, body)


def _parse_create_topics_v4(body: bytes) -> list[tuple[str, int, str | None]]:
    r = kafka_wire.Reader(body)
    r.take(">i")
    return r.array(lambda: (r.string(), r.take(">h"), r.string()))


def test_concurrent_creates_admit_exactly_the_headroom(adm: Adm):
    limits = adm.apply_policy({1: 20, 2: 20, 3: 20})
    prefix = name("conc")
    port = adm.c.node(1).sidecar_port

    def worker(w: int) -> list[int]:
        codes = []
        with kafka_wire.Connection(HOST, port, timeout=60) as conn:
            for i in range(10):  # pipelined: ten in flight per connection
                conn.send(_create_topics_v4(i, f"{prefix}-{w}-{i}", 1, 3))
            for i in range(10):
                cid, body = conn.recv()
                assert cid == i
                codes += [e for (_, e, _) in _parse_create_topics_v4(body)]
        return codes

    with ThreadPoolExecutor(5) as ex:
        codes = [c for cs in ex.map(worker, range(5)) for c in cs]
    assert len(codes) == 50
    assert codes.count(0) == 20, codes
    assert codes.count(88) == 30, codes
    assert_within(adm, limits)


# --- audit mode ---------------------------------------------------------------------------

def test_audit_mode_forwards_and_logs(adm: Adm):
    adm.apply_policy({1: 1, 2: 1, 3: 1}, enforcement="audit")
    t = name("audited")
    clients.create_topic(adm.one, t, 3, 3)
    assert adm.topic_replicas(t) is not None
    assert "decision=audit reason=limit" in adm.logs()


# --- version discipline --------------------------------------------------------------------

def test_version_above_decoded_is_refused_and_closed(adm: Adm):
    """A client that ignores ApiVersions and sends CreateTopics v8 is logged and closed."""
    adm.apply_policy({1: 10, 2: 10, 3: 10})
    t = name("v8")
    body = struct.pack(">i", 0) + struct.pack(">i?", 30000, False)  # content never read
    frame = kafka_wire.request(19, 8, 1, body)
    with kafka_wire.Connection(HOST, adm.c.node(1).sidecar_port, timeout=10) as conn:
        conn.send(frame)
        with pytest.raises((ConnectionError, OSError)):
            conn.recv()
    assert adm.topic_replicas(t) is None
    assert re.search(r"admission request refused, closing the connection api=CreateTopics "
                     r"version=8", adm.log(1))
