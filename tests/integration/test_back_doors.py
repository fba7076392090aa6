"""Requests that once created partitions unjudged, against real 1-broker KRaft clusters.

Two clusters of one broker (auto.create.topics.enable=true, num.partitions=1), each behind a
kadmit with a policy, and a 4-partition topic made straight on the broker: the pinned Kafka on
KADMIT_TEST_PORT_BASE + 300 with a limit of 4 (no headroom), Kafka 3.9 on + 320 with a limit of 5
(one replica of headroom).

- SaslHandshake v0 naming a mechanism kadmit cannot follow (GSSAPI) would turn the connection
  opaque: with a policy it is answered by kadmit with UNSUPPORTED_SASL_MECHANISM, and the
  connection stays framed, so a CreateTopics on it is still judged.
- SaslHandshake v0 for PLAIN reaches the broker (kadmit follows its one raw token).
- Metadata v1-v3 auto-create with no flag: a denied one is sent on as v4 with the flag cleared and
  answered at the client's version. Kafka 4.x no longer serves v0-3 at all, so the answer this
  test reads can only come through kadmit's rewrite.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from kadmit_proc import Kadmit  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402

UNSUPPORTED_SASL_MECHANISM = 33
UNKNOWN_TOPIC_OR_PARTITION = 3
REJECT = 88


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def create_topics_v4_rf(cid: int, name: str, partitions: int, rf: int) -> bytes:
    """CreateTopics v4: one topic, the broker placing it."""
    body = (struct.pack(">i", 1) + _str(name) + struct.pack(">ihii", partitions, rf, 0, 0)
            + struct.pack(">i?", 30000, False))
    return kafka_wire.request(19, 4, cid, body)


def create_topics_v4(cid: int, name: str, partitions: int) -> bytes:
    return create_topics_v4_rf(cid, name, partitions, 1)


def create_topics_v4_error(body: bytes) -> tuple[int, str | None]:
    r = kafka_wire.Reader(body)
    r.take(">i")  # throttle
    n = r.take(">i")
    assert n == 1
    r.string()
    code = r.take(">h")
    return code, r.string()


def sasl_handshake_v0(cid: int, mechanism: str) -> bytes:
    return kafka_wire.request(17, 0, cid, _str(mechanism))


def parse_sasl_handshake(body: bytes) -> tuple[int, list[str]]:
    r = kafka_wire.Reader(body)
    code = r.take(">h")
    return code, r.array(r.string)


def metadata_v1_to_v3(version: int, cid: int, topics: list[str]) -> bytes:
    body = struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
    return kafka_wire.request(3, version, cid, body)


def parse_metadata_v1_to_v3(version: int, body: bytes) -> dict[str, int]:
    """Topic name -> error code, reading every field the version has."""
    r = kafka_wire.Reader(body)
    if version >= 3:
        r.take(">i")  # throttle

    def broker():
        r.take(">i")
        r.string()
        r.take(">i")
        r.string()  # rack (v1+)

    r.array(broker)
    if version >= 2:
        r.string()  # cluster id
    r.take(">i")  # controller id

    def partition():
        r.take(">hii")
        r.array(lambda: r.take(">i"))
        r.array(lambda: r.take(">i"))

    def topic():
        code = r.take(">h")
        name = r.string()
        r.take(">?")
        r.array(partition)
        return name, code

    return dict(r.array(topic))


def call(port: int, frame: bytes) -> bytes:
    with kafka_wire.Connection(HOST, port, 10) as conn:
        return conn.call(frame)[1]


def topic_names(port: int) -> list[str]:
    return [t["name"] for t in kafka_wire.metadata(HOST, port)["topics"]]


class Bd:
    def __init__(self, c: KafkaCluster, k: Kadmit):
        self.c, self.k = c, k
        self.broker = c.node(1).client_port
        self.port = k.listen_port

    def call(self, port: int, frame: bytes) -> bytes:
        return call(port, frame)


def one_broker(prefix: str, offset: int, version: str | None, policy_doc: dict):
    """A 1-broker cluster (not started) and a kadmit in front of it with this policy (a fast
    metadata refresh added): (dir, cluster, kadmit, policy path)."""
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix=prefix))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + offset, version=version)
    n = c.node(1)
    policy = d / "policy.json"
    policy.write_text(json.dumps({**policy_doc, "metadata.refresh.interval.ms": 500}))
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy))
    return d, c, k, policy


def _start(request, offset: int, version: str | None, limit: int):
    """A 1-broker cluster of `version` behind kadmit with max.broker.partitions `limit`, and a
    4-partition topic made straight on the broker (past kadmit)."""
    d, c, k, _ = one_broker("kadmit-bd-", offset, version,
                            {"max.broker.partitions": limit,
                             "metadata.refresh.before.decision.ms": 1000})
    failed = True
    try:
        c.start()
        k.start()
        b = Bd(c, k)
        code, _ = create_topics_v4_error(b.call(b.broker, create_topics_v4(1, "pad", 4)))
        assert code == 0
        deadline = time.monotonic() + 60
        while "pad" not in topic_names(b.port):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.5)  # a view that has the pad topic
        yield b
        failed = False
    finally:
        k.stop()
        c.stop()
        if failed or request.session.testsfailed:
            sys.stderr.write(f"\nback doors: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def bd(request):
    """The pinned Kafka; the pad topic leaves no headroom."""
    yield from _start(request, 300, None, 4)


@pytest.fixture(scope="module")
def bd39(request):
    """Kafka 3.9, the last line that serves Metadata v0-3; headroom for one replica."""
    yield from _start(request, 320, "3.9.2", 5)


def test_sasl_handshake_v0_for_gssapi_is_refused_and_the_connection_stays_judged(bd):
    before = bd.k.metric("kadmit_sasl_v0_refused_total")
    with kafka_wire.Connection(HOST, bd.port, 10) as conn:
        _, body = conn.call(sasl_handshake_v0(7, "GSSAPI"))
        code, mechanisms = parse_sasl_handshake(body)
        assert code == UNSUPPORTED_SASL_MECHANISM
        assert mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
        # Still Kafka-framed and still judged: a creation past the limit is rejected.
        cid, body = conn.call(create_topics_v4(8, "after-gssapi", 3))
        assert cid == 8
        code, message = create_topics_v4_error(body)
        assert code == REJECT, message
        assert "max.broker.partitions" in (message or "")
    assert bd.k.metric("kadmit_sasl_v0_refused_total") == before + 1
    bd.k.wait_log("SaslHandshake v0 for a mechanism kadmit cannot follow")


def test_sasl_handshake_v0_for_plain_reaches_the_broker(bd):
    before = bd.k.metric("kadmit_sasl_v0_refused_total")
    body = bd.call(bd.port, sasl_handshake_v0(9, "PLAIN"))
    # The broker's answer on a PLAINTEXT listener, not kadmit's list.
    code, mechanisms = parse_sasl_handshake(body)
    assert (code, mechanisms) == parse_sasl_handshake(bd.call(bd.broker, sasl_handshake_v0(9, "PLAIN")))
    assert bd.k.metric("kadmit_sasl_v0_refused_total") == before


def _metadata_denied(b: Bd, version: int, names: list[str]) -> None:
    before = b.k.metric("kadmit_admission_auto_create_denials_total")
    body = b.call(b.port, metadata_v1_to_v3(version, 20 + version, ["pad", *names]))
    topics = parse_metadata_v1_to_v3(version, body)
    assert topics == {"pad": 0, **{t: UNKNOWN_TOPIC_OR_PARTITION for t in names}}
    assert b.k.metric("kadmit_admission_auto_create_denials_total") == before + 1
    time.sleep(1.0)
    assert not set(names) & set(topic_names(b.broker))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_metadata_v1_to_v3_auto_creation_past_the_limit_is_denied(bd, version):
    """Kafka 4.x serves no Metadata v0-3: only kadmit's v4 rewrite can answer at all."""
    _metadata_denied(bd, version, [f"auto-v{version}-{int(time.time() * 1000)}"])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_metadata_v1_to_v3_auto_creation_past_the_limit_is_denied_on_kafka_3_9(bd39, version):
    """Two new topics of 1 partition where one fits: the request loses auto-creation."""
    stamp = int(time.time() * 1000)
    _metadata_denied(bd39, version, [f"a-v{version}-{stamp}", f"b-v{version}-{stamp}"])


def test_metadata_v1_auto_creation_within_the_limit_goes_on_unchanged_on_kafka_3_9(bd39):
    """The one replica of headroom: forwarded as v1, and the broker creates the topic."""
    topic = f"fits-v1-{int(time.time() * 1000)}"
    before = bd39.k.metric("kadmit_admission_auto_create_denials_total")
    deadline = time.monotonic() + 30
    while True:
        topics = parse_metadata_v1_to_v3(1, bd39.call(bd39.port, metadata_v1_to_v3(1, 5, [topic])))
        if topics.get(topic) == 0:
            break
        assert time.monotonic() < deadline, topics
        time.sleep(0.5)
    assert topic in topic_names(bd39.broker)
    assert bd39.k.metric("kadmit_admission_auto_create_denials_total") == before


def test_admission_health_is_a_gauge_beside_readiness(bd):
    assert bd.k.http("/readyz")[0] == 200
    assert bd.k.http("/v1/admission")[0] == 200
    assert bd.k.metric("kadmit_admission_healthy") == 1
    assert "admission healthy" in bd.k.wait_log("admission healthy")


# --- the shipped deploy's broker listeners -------------------------------------------------

COMPOSE = HERE.parents[1] / "deploy" / "docker" / "compose.yml"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def compose_security_props() -> dict[str, str]:
    """The broker settings deploy/docker/compose.yml gives its INTERNAL and CONTROLLER
    listeners and its authorizer, as server.properties names."""
    import yaml
    env = yaml.safe_load(COMPOSE.read_text())["x-kafka-environment"]
    keep = ("SASL", "AUTHORIZER", "SUPER_USERS", "SECURITY_PROTOCOL_MAP")
    return {k[len("KAFKA_"):].lower().replace("_", "."): str(v)
            for k, v in env.items() if any(w in k for w in keep)}


class SecuredListenersCluster(KafkaCluster):
    """The harness's cluster with compose.yml's INTERNAL and CONTROLLER security, and the
    JAAS entries its header tells an operator to write (here with a throwaway password)."""

    def write_configs(self) -> None:
        super().write_configs()
        props = compose_security_props()
        ours = dict(x.split(":") for x in props.pop("listener.security.protocol.map").split(","))
        jaas = (f'{PLAIN} required username="broker" password="{self.password}" '
                f'user_broker="{self.password}";')
        for n in self.nodes:
            lines = n.config.read_text().splitlines()
            out = []
            for line in lines:
                k, _, v = line.partition("=")
                if k == "listener.security.protocol.map":
                    harness = dict(x.split(":") for x in v.split(","))
                    harness.update({name: ours[name] for name in ("INTERNAL", "CONTROLLER")})
                    line = k + "=" + ",".join(f"{a}:{b}" for a, b in harness.items())
                out.append(line)
            out += [f"{k}={v}" for k, v in props.items()]
            out += [f"listener.name.{name}.plain.sasl.jaas.config={jaas}"
                    for name in ("internal", "controller")]
            n.config.write_text("\n".join(out) + "\n")


def test_compose_broker_listeners_authenticate_and_still_carry_a_cluster(request, topic_name):
    """Three brokers with the compose file's INTERNAL/CONTROLLER settings form a quorum and
    replicate; a connection to INTERNAL without SASL gets nothing, not even Metadata."""
    d = Path(tempfile.mkdtemp(prefix="kadmit-bd-sec-"))
    c = SecuredListenersCluster(d, brokers=3, port_base_=port_base() + 440)
    c.password = "throwaway-" + topic_name[-6:]
    ok = False
    try:
        c.start()
        n1 = c.node(1)
        body = call(n1.direct_port, create_topics_v4_rf(1, topic_name, 3, 3))
        assert create_topics_v4_error(body)[0] == 0
        deadline = time.monotonic() + 60
        while True:
            md = kafka_wire.metadata(HOST, n1.direct_port, topics=[topic_name])
            parts = md["topics"][0]["partitions"] if md["topics"] else []
            if len(parts) == 3 and all(len(p["isr"]) == 3 for p in parts):
                break  # replicated over the SASL INTERNAL listener
            assert time.monotonic() < deadline, md
            time.sleep(0.5)
        with pytest.raises((ConnectionError, OSError)):
            with kafka_wire.Connection(HOST, n1.internal_port, 5) as conn:
                conn.call(kafka_wire.metadata_request(1, [topic_name]))
        with pytest.raises((ConnectionError, OSError)):
            with kafka_wire.Connection(HOST, n1.controller_port, 5) as conn:
                conn.call(create_topics_v4(2, topic_name + "-x", 1))
        ok = True
    finally:
        c.stop()
        if ok and not request.session.testsfailed:
            shutil.rmtree(d, ignore_errors=True)
        else:
            sys.stderr.write(f"\nsecured listeners: cluster dir kept: {d}\n")


def test_kubernetes_broker_listeners_match_the_compose_demo():
    """statefulset.yaml secures INTERNAL and CONTROLLER exactly as compose.yml (the settings
    the test above runs), its JAAS entries take the password from a Secret, and the headless
    Service no longer publishes those listeners."""
    import yaml
    root = HERE.parents[1] / "deploy" / "kubernetes"
    sts = yaml.safe_load((root / "statefulset.yaml").read_text())
    kafka = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "kafka")
    env = {e["name"]: e for e in kafka["env"]}
    keep = ("SASL", "AUTHORIZER", "SUPER_USERS", "SECURITY_PROTOCOL_MAP")
    k8s = {k[len("KAFKA_"):].lower().replace("_", "."): e["value"] for k, e in env.items()
           if k.startswith("KAFKA_") and any(w in k for w in keep) and "JAAS" not in k}
    assert k8s == compose_security_props()
    assert env["BROKER_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "kafka-broker-sasl"
    for name in ("INTERNAL", "CONTROLLER"):
        jaas = env[f"KAFKA_LISTENER_NAME_{name}_PLAIN_SASL_JAAS_CONFIG"]["value"]
        assert 'username="broker" password="$(BROKER_SASL_PASSWORD)"' in jaas
    services = list(yaml.safe_load_all((root / "services.yaml").read_text()))
    ports = {p["name"] for s in services for p in s["spec"]["ports"]}
    assert ports == {"kafka", "admin"}


# --- a Kafka Streams application ---------------------------------------------------------

STREAMS_DIR = HERE / "java" / "streams"


def streams_classpath() -> str:
    """kafka-streams at the pinned version (its own pom), fetched once into the test cache,
    and StreamsApp compiled against it."""
    import os
    import subprocess
    cache = Path(os.environ.get("KADMIT_CACHE", Path.home() / ".cache" / "kadmit")) / "streams-4.3.1"
    libs, classes = cache / "libs", cache / "classes"
    if not (libs / "kafka-streams-4.3.1.jar").exists():
        subprocess.run(["mvn", "-q", "-B", "-f", str(STREAMS_DIR / "pom.xml"),
                        "dependency:copy-dependencies", f"-DoutputDirectory={libs}"],
                       check=True, timeout=600)
    subprocess.run(["javac", "-cp", f"{libs}/*", "-d", str(classes),
                    str(STREAMS_DIR / "StreamsApp.java")], check=True, timeout=300)
    return f"{classes}:{libs}/*"


def run_streams(cp: str, bootstrap: str, app: str, topic: str, protocol: str,
                seconds: int) -> str:
    import subprocess
    out = subprocess.run(["java", "-cp", cp, "StreamsApp", bootstrap, app, topic, protocol,
                          str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
    return out.stdout + out.stderr


def test_streams_group_internal_topics_are_judged(request):
    """A Kafka Streams app on the streams rebalance protocol (KIP-1071), whose repartition and
    changelog topics (4 partitions each, from a 4-partition input) the broker would create from
    its heartbeat: with no headroom, kadmit refuses the heartbeat with the policy's code and
    message, and neither topic exists. With headroom, the app runs and both topics exist."""
    cp = streams_classpath()
    # 4 replicas of the input, then no headroom; 44 (POLICY_VIOLATION) stops the app at once.
    d, c, k, policy = one_broker("kadmit-bd-streams-", 480, None,
                                 {"max.broker.partitions": 4, "reject.error.code": 44})
    n = c.node(1)
    ok = False
    try:
        c.start()
        k.start()
        assert create_topics_v4_error(call(n.client_port, create_topics_v4(1, "words", 4)))[0] == 0
        time.sleep(2)
        bootstrap = f"{HOST}:{n.sidecar_port}"
        out = run_streams(cp, bootstrap, "wc", "words", "streams", 60)
        assert "max.broker.partitions" in out, out
        assert "STATE RUNNING" not in out, out
        label = ('kadmit_admission_decisions_total{api="StreamsGroupHeartbeat",'
                 'decision="reject",reason="limit"}')
        assert k.metric(label) >= 1, k.log_text()[-3000:]
        names = topic_names(n.client_port)
        assert not [t for t in names if t.startswith("wc-")], names

        policy.write_text(json.dumps({"max.broker.partitions": 100,
                                      "metadata.refresh.interval.ms": 500}))
        k.wait_log("policy reloaded", timeout=20)
        out = run_streams(cp, bootstrap, "wc", "words", "streams", 90)
        assert "STATE RUNNING" in out, out
        names = topic_names(n.client_port)
        assert [t for t in names if t.startswith("wc-") and t.endswith("-changelog")], names
        assert [t for t in names if t.startswith("wc-") and t.endswith("-repartition")], names
        assert k.metric('kadmit_admission_decisions_total{api="StreamsGroupHeartbeat",'
                        'decision="admit",reason="none"}') >= 1, k.log_text()[-3000:]
        ok = True
    finally:
        k.stop()
        c.stop()
        if ok and not request.session.testsfailed:
            shutil.rmtree(d, ignore_errors=True)
        else:
            sys.stderr.write(f"\nstreams: cluster dir kept: {d}\n")
