"""Principals against real Kafka: SCRAM users with different rules, an exempt principal, and the
audit events that name who asked.

A 3-broker KRaft cluster whose CLIENT listener is SASL_PLAINTEXT with SCRAM-SHA-512 (users made
by `kafka-storage format --add-scram`), a kadmit sidecar per broker in front of it. The DIRECT
listener stays plaintext: the tests' own checks and kadmit's metadata connection
(`--metadata-upstream`) use it, and the inter-broker listeners are the harness's. Every request
of a client goes through the sidecars with the client's own SCRAM login; kadmit learns the
principal from that exchange (docs/tls-sasl.md) and judges each topic as that principal.

The policy gives alice the topics `team-a\\..*` and a budget, bob `team-b\\..*` with a tighter
rule, and User:cruise-control an exemption from `topic.rules` (never from
`max.broker.partitions`). Clients: kafka-topics with a SCRAM client.properties, the Java
AdminClient (tests/integration/java/AdmissionClient.java) and confluent-kafka.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 600.
"""

from __future__ import annotations

import json
import struct
import sys
import tempfile
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import sasl_wire  # noqa: E402
from admin_client import wait_ready  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, ensure_kafka, kadmit_bin,  # noqa: E402
                           own_cluster, port_base)

OFFSET = 600
MECH = "SCRAM-SHA-512"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "cruise-control": "cc-secret",
         "admin": "admin-secret"}
BROKER_LIMIT = 60  # replicas per broker: far above what the rule tests create
POLICY = {
    "max.broker.partitions": BROKER_LIMIT,
    "metadata.refresh.interval.ms": 1000,
    "topic.rules": [
        {"match": "team-a\\..*", "partitions.max": 6, "replication.factor.min": 2},
        {"match": "team-b\\..*", "partitions.max": 2},
    ],
    "principals": {
        "User:alice": {"topics": ["team-a\\..*"], "budget.partitions": 40},
        "User:bob": {"topics": ["team-b\\..*"]},
        "User:cruise-control": {"exempt": ["topic.rules"]},
    },
}


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class ScramCluster(KafkaCluster):
    """The harness's cluster with its CLIENT listener on SASL_PLAINTEXT and SCRAM-SHA-512."""

    def __init__(self, directory: Path, base: int):
        super().__init__(directory, brokers=3, port_base_=base)
        for user, pw in USERS.items():
            self.format_args += ["--add-scram", f"{MECH}=[name={user},password={pw}]"]

    def write_configs(self) -> None:
        super().write_configs()
        for n in self.nodes:
            props = dict(line.partition("=")[::2] for line in n.config.read_text().splitlines())
            props["listener.security.protocol.map"] = (
                "CLIENT:SASL_PLAINTEXT,DIRECT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT")
            props["listener.name.client.sasl.enabled.mechanisms"] = MECH
            props["listener.name.client.scram-sha-512.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
            n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


class Env:
    def __init__(self, d: Path, c: ScramCluster, sc: Sidecars):
        self.d, self.c, self.sc = d, c, sc
        self.java: Path | None = None

    # -- client settings
    def props(self, user: str, client_id: str, password: str | None = None) -> Path:
        """A client.properties for the Kafka CLI tools and the Java AdminClient."""
        pw = USERS[user] if password is None else password
        path = self.d / f"{client_id}.properties"
        path.write_text("\n".join([
            "security.protocol=SASL_PLAINTEXT", f"sasl.mechanism={MECH}",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{pw}";',
            f"client.id={client_id}"]) + "\n")
        return path

    def rdk_admin(self, user: str, client_id: str, password: str | None = None):
        from confluent_kafka.admin import AdminClient
        return AdminClient({"bootstrap.servers": self.c.bootstrap, "client.id": client_id,
                            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": MECH,
                            "sasl.username": user,
                            "sasl.password": USERS[user] if password is None else password})

    # -- clients
    def kafka_topics_create(self, user: str, client_id: str, topic: str, partitions: int,
                            rf: int) -> tuple[int, str]:
        p = clients.topics(self.c.bootstrap, "--command-config", str(self.props(user, client_id)),
                           "--create", "--topic", topic, "--partitions", str(partitions),
                           "--replication-factor", str(rf), check=False)
        return p.returncode, clients.text(p) + (p.stderr or b"").decode(errors="replace")

    def rdk_create(self, user: str, client_id: str, specs: list[tuple[str, int, int]],
                   password: str | None = None) -> dict[str, tuple[int, str | None]]:
        from confluent_kafka.admin import NewTopic
        admin = self.rdk_admin(user, client_id, password)
        fs = admin.create_topics([NewTopic(n, p, r) for n, p, r in specs],
                                 operation_timeout=30, request_timeout=30)
        return clients.rdk_results(fs, timeout=60)

    def java_create(self, user: str, client_id: str,
                    specs: list[tuple[str, int, int]]) -> dict[str, str]:
        argv = ["java", f"-Dadmission.client.config={self.props(user, client_id)}", "-cp",
                f"{self.java}:{self.c.home}/libs/*", "-Dlog4j2.level=off", "AdmissionClient",
                "create", self.c.bootstrap, "false", *[f"{n}:{p}:{r}" for n, p, r in specs]]
        out = {}
        for line in clients.text(clients.run(argv, timeout=120)).splitlines():
            if line.startswith("RESULT "):
                name, verdict = line[len("RESULT "):].split(" ", 1)
                out[name] = verdict
        return out

    # -- what the sidecars say
    def log_events(self) -> list[dict]:
        events = []
        for s in self.sc.items:
            for line in s.log.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    try:
                        events.append(dict(json.loads(line), sidecar=s.node.id))
                    except json.JSONDecodeError:
                        pass
        return events

    def audit(self, topic: str, timeout: float = 15.0) -> list[dict]:
        """The audit events of topic, waiting for at least one."""
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.log_events()
                     if e.get("msg") == "audit" and e.get("resource") == topic]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def metrics(self) -> str:
        out = []
        for n in self.c.nodes:
            with urllib.request.urlopen(f"http://{HOST}:{n.admin_port}/metrics", timeout=5) as r:
                out.append(r.read().decode())
        return "\n".join(out)

    def metric_sum(self, prefix: str) -> int:
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in self.metrics().splitlines()
                   if line.startswith(prefix))

    def exists(self, topic: str) -> bool:
        import kafka_wire
        (t,) = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10,
                                   topics=[topic])["topics"]
        return t["error"] == 0

    def created(self, topic: str) -> bool:
        return clients.topic_shows_up(self.exists, topic)


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-principals-"))
    c = ScramCluster(d / "cluster", port_base() + OFFSET)
    sc = Sidecars(c, binary)
    e = Env(d, c, sc)
    with own_cluster(d, c, sc, "principals", request):
        with ThreadPoolExecutor(2) as ex:  # the JVMs start while javac runs
            java = ex.submit(clients.java_build_admission_client, c.home, d / "java")
            c.start()
            e.java = java.result()
        policy = d / "policy.json"
        policy.write_text(json.dumps(POLICY))
        for s in sc.items:
            s.start(args=("--policy", str(policy), "--metadata-upstream",
                          f"{HOST}:{s.node.direct_port}", "--log-format", "json",
                          "--ledger", "off"))
        for n in c.nodes:
            wait_ready(n.admin_port, timeout=60)
        yield e


def test_audit_events_carry_principal_client_address_client_id_and_rule(env):
    """kafka-topics as alice, with a client.id: the topic's audit event names User:alice, the
    client's address and its client id, CreateTopics and the verdict."""
    topic = uniq("team-a.audited")
    rc, out = env.kafka_topics_create("alice", "alice-topics", topic, 3, 2)
    assert rc == 0, out
    assert env.created(topic)
    events = env.audit(topic)
    assert events, "no audit event for " + topic
    (e,) = events
    assert e["principal"] == "User:alice"
    assert e["principal_known"] == 1
    assert e["client_id"] == "alice-topics"
    assert e["client_address"].startswith("127.0.0.1:")
    assert e["api"] == "CreateTopics"
    assert e["verdict"] == "admit"
    assert "rule" in e
    # The admission decision's status row names the principal too.
    assert env.metric_sum("kadmit_sasl_authentications_total{result=\"accepted\"}") >= 1


def test_failed_authentication_never_sets_a_principal(env):
    """confluent-kafka as alice with a wrong password: the broker refuses the SCRAM exchange, the
    sidecar logs the refusal for that connection and never an authentication, and nothing of the
    request is judged."""
    topic = uniq("team-a.wrong-password")
    before = env.metric_sum("kadmit_sasl_authentications_total{result=\"refused\"}")
    results = env.rdk_create("alice", "alice-wrong", [(topic, 1, 2)], password="not-it")
    assert results[topic][0] != 0, results
    deadline = time.monotonic() + 15
    while env.metric_sum("kadmit_sasl_authentications_total{result=\"refused\"}") <= before:
        assert time.monotonic() < deadline, "the sidecars never saw the refusal"
        time.sleep(0.2)
    events = env.log_events()
    refused = {(e["sidecar"], e["session"]) for e in events
               if e.get("msg") == "client authentication failed at the broker"}
    accepted = {(e["sidecar"], e["session"]) for e in events
                if e.get("msg") == "client authenticated"}
    assert refused and not refused & accepted
    assert not env.audit(topic, timeout=2)
    assert not env.exists(topic)


def test_alice_outside_her_pattern_is_refused_with_a_message_naming_her(env):
    topic = uniq("team-b.alices")
    rc, out = env.kafka_topics_create("alice", "alice-outside", topic, 1, 2)
    assert rc != 0, out
    assert "User:alice" in out, out
    assert not env.exists(topic)
    (e,) = env.audit(topic)
    assert e["principal"] == "User:alice" and e["verdict"] == "reject", e
    assert e["client_id"] == "alice-outside"
    assert e["rule"], e


def test_bobs_rules_differ_from_alices(env):
    """confluent-kafka as bob: his own pattern with his rule's tighter partitions.max, and alice's
    pattern refused to him."""
    ok, big, alices = uniq("team-b.ok"), uniq("team-b.big"), uniq("team-a.bobs")
    results = env.rdk_create("bob", "bob-ck", [(ok, 2, 2), (big, 3, 2), (alices, 1, 2)])
    assert results[ok][0] == 0, results
    assert results[big][0] != 0 and "team-b" in (results[big][1] or ""), results
    assert results[alices][0] != 0 and "User:bob" in (results[alices][1] or ""), results
    assert env.created(ok) and not env.exists(big) and not env.exists(alices)
    for topic, verdict in ((ok, "admit"), (big, "reject"), (alices, "reject")):
        (e,) = env.audit(topic)
        assert e["principal"] == "User:bob" and e["client_id"] == "bob-ck", e
        assert e["verdict"] == verdict, e
    # The same 3 partitions are within alice's rule.
    rc, out = env.kafka_topics_create("alice", "alice-three", uniq("team-a.three"), 3, 2)
    assert rc == 0, out


def test_cruise_control_passes_a_topic_rule_but_not_max_broker_partitions(env):
    """The Java AdminClient as cruise-control: 10 partitions is past team-a's partitions.max (6),
    which it is exempt from; past max.broker.partitions it is refused like anyone."""
    wide, huge = uniq("team-a.cc-wide"), uniq("team-a.cc-huge")
    results = env.java_create("cruise-control", "cc-java", [(wide, 10, 2)])
    assert results[wide] == "OK", results
    results = env.java_create("cruise-control", "cc-java", [(huge, BROKER_LIMIT * 2, 3)])
    assert results[huge].startswith("ERROR"), results
    assert "max.broker.partitions" in results[huge], results
    assert env.created(wide) and not env.exists(huge)
    (e,) = env.audit(wide)
    assert e["principal"] == "User:cruise-control" and e["verdict"] == "admit", e
    (e,) = env.audit(huge)
    assert e["principal"] == "User:cruise-control" and e["verdict"] == "reject", e
    # alice is not exempt: the same width is refused to her by the rule.
    rc, out = env.kafka_topics_create("alice", "alice-wide", uniq("team-a.wide"), 10, 2)
    assert rc != 0 and "team-a" in out, out


def create_topics_v4(cid: int, name: str, partitions: int, rf: int) -> bytes:
    """CreateTopics v4 (header v1): one topic, the broker placing it."""
    import kafka_wire
    body = (struct.pack(">i", 1) + kafka_wire._str(name) + struct.pack(">ihii", partitions, rf, 0, 0)
            + struct.pack(">i?", 30000, False))
    return kafka_wire.request(19, 4, cid, body)


def create_topics_v4_result(body: bytes) -> tuple[int, str | None]:
    import kafka_wire
    r = kafka_wire.Reader(body)
    r.take(">i")  # throttle
    assert r.take(">i") == 1
    r.string()
    return r.take(">h"), r.string()


def logged_in_then_garbage(env, user: str):
    """A raw connection to a sidecar, logged in as user with SCRAM, then sent what the broker
    answers ILLEGAL_SASL_STATE and keeps the connection for: a SaslAuthenticate of garbage, one
    carrying a client-first that names alice, and a SaslHandshake for GSSAPI."""
    import kafka_wire
    conn = kafka_wire.Connection(HOST, env.c.nodes[0].sidecar_port, timeout=30)
    sasl_wire.scram_login(conn, user, USERS[user], MECH)
    code, msg, _ = sasl_wire.authenticate(conn, 11, b"\xff\xfe not a SASL token \x00\x01")
    assert code == sasl_wire.ILLEGAL_SASL_STATE, (code, msg)
    code, msg, _ = sasl_wire.authenticate(conn, 12, b"n,,n=alice,r=0123456789abcdef")
    assert code == sasl_wire.ILLEGAL_SASL_STATE, (code, msg)
    assert sasl_wire.handshake(conn, 13, "GSSAPI") == sasl_wire.ILLEGAL_SASL_STATE
    return conn


def test_garbage_sasl_after_a_login_leaves_the_principal(env):
    """Raw wire clients log in with SCRAM through a sidecar, then send a SaslAuthenticate of
    garbage, another naming alice and a SaslHandshake for GSSAPI, which the broker refuses with
    ILLEGAL_SASL_STATE on a connection it keeps. The next CreateTopics on each connection is
    judged as the user who logged in: cruise-control's 4 partitions in team-b (partitions.max 2)
    pass its exemption, and bob's topic in team-a is refused naming him. As an unknown principal,
    the first would be refused by the rule and the second admitted."""
    ignored = 'kadmit_sasl_authentications_total{result="ignored"}'
    before = env.metric_sum(ignored)
    wide, bobs = uniq("team-b.cc-after-garbage"), uniq("team-a.bob-after-garbage")
    with logged_in_then_garbage(env, "cruise-control") as conn:
        _, body = conn.call(create_topics_v4(21, wide, 4, 2))
        assert create_topics_v4_result(body) == (0, None)
    with logged_in_then_garbage(env, "bob") as conn:
        _, body = conn.call(create_topics_v4(22, bobs, 1, 2))
        code, msg = create_topics_v4_result(body)
        assert code != 0 and "User:bob" in (msg or ""), (code, msg)
    assert env.created(wide) and not env.exists(bobs)
    (e,) = env.audit(wide)
    assert e["principal"] == "User:cruise-control" and e["verdict"] == "admit", e
    (e,) = env.audit(bobs)
    assert e["principal"] == "User:bob" and e["verdict"] == "reject", e
    assert env.metric_sum(ignored) == before + 4


def test_create_topics_before_the_sasl_login_is_never_judged_as_a_principal(env):
    """A raw client sends CreateTopics on the SASL listener before any SaslHandshake: the broker
    refuses it (IllegalSaslStateException) by closing the connection, and nothing is created.
    kadmit judged it as the unknown principal, never as a user."""
    import kafka_wire
    topic = uniq("team-a.before-login")
    with kafka_wire.Connection(HOST, env.c.nodes[0].sidecar_port, timeout=30) as conn:
        with pytest.raises(ConnectionError):
            conn.call(create_topics_v4(31, topic, 1, 2))
    events = env.audit(topic)
    assert events, "no audit event for " + topic
    for e in events:
        assert e["principal_known"] == 0 and e["principal"] == "User:ANONYMOUS", e
    assert not env.exists(topic)


def test_rule_counter_counts_the_audit_events(env):
    text = env.metrics()
    rows = [line for line in text.splitlines() if line.startswith("kadmit_rule_decisions_total{")]
    assert rows, "no kadmit_rule_decisions_total rows"
    assert any('verdict="admit"' in r for r in rows)
    assert any('verdict="reject"' in r and 'rule=""' not in r for r in rows), rows
    total = sum(int(float(r.rsplit(" ", 1)[1])) for r in rows)
    audits = sum(1 for e in env.log_events() if e.get("msg") == "audit")
    assert total == audits
