"""Re-authentication (KIP-368) through kadmit against real Kafka: the principal follows the
broker's answers, not the client's tokens.

A 1-broker KRaft cluster whose CLIENT listener is SASL_PLAINTEXT with SCRAM-SHA-512 and
`connections.max.reauth.ms` set, so the broker takes a SaslHandshake on a logged-in connection
as the start of a re-authentication. A sidecar in front of it with a policy that gives bob the
topics `team-b\\..*` only. A raw wire client (sasl_wire.py) logs in as bob and re-authenticates:
as bob again (the broker accepts; the connection is still bob's), as alice with her own password
(the broker refuses a change of principal and closes), as bob with a wrong password (refused,
closed). kadmit's log shows the principal it kept for the connection.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 740.
"""

from __future__ import annotations

import json
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
import sasl_wire  # noqa: E402
from admin_client import wait_ready  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, ensure_kafka, kadmit_bin,  # noqa: E402
                           own_cluster, port_base)

OFFSET = 740
MECH = "SCRAM-SHA-512"
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
REAUTH_MS = 600000
POLICY = {
    "max.broker.partitions": 100,
    "metadata.refresh.interval.ms": 1000,
    "principals": {"User:bob": {"topics": ["team-b\\..*"]}},
}


class ReauthCluster(KafkaCluster):
    """One broker, SCRAM on CLIENT, re-authentication on."""

    def __init__(self, directory: Path, base: int):
        super().__init__(directory, brokers=1, port_base_=base)
        for user, pw in USERS.items():
            self.format_args += ["--add-scram", f"{MECH}=[name={user},password={pw}]"]

    def write_configs(self) -> None:
        super().write_configs()
        for n in self.nodes:
            text = n.config.read_text().replace("CLIENT:PLAINTEXT", "CLIENT:SASL_PLAINTEXT")
            text += "".join(f"{k}={v}\n" for k, v in {
                "sasl.enabled.mechanisms": MECH,
                "listener.name.client.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "connections.max.reauth.ms": str(REAUTH_MS),
            }.items())
            n.config.write_text(text)


class Env:
    def __init__(self, c: ReauthCluster, sc: Sidecars):
        self.c, self.sc = c, sc

    def connect(self) -> kafka_wire.Connection:
        return kafka_wire.Connection(HOST, self.c.nodes[0].sidecar_port, timeout=30)

    def log_events(self) -> list[dict]:
        events = []
        for line in self.sc.items[0].log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return events

    def session_events(self, msg: str) -> list[dict]:
        return [e for e in self.log_events() if e.get("msg") == msg]

    def exists(self, topic: str) -> bool:
        (t,) = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10,
                                   topics=[topic])["topics"]
        return t["error"] == 0


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-reauth-"))
    c = ReauthCluster(d / "cluster", port_base() + OFFSET)
    sc = Sidecars(c, binary)
    with own_cluster(d, c, sc, "reauth", request):
        c.start()
        policy = d / "policy.json"
        policy.write_text(json.dumps(POLICY))
        for s in sc.items:
            s.start(args=("--policy", str(policy), "--metadata-upstream",
                          f"{HOST}:{s.node.direct_port}", "--log-format", "json",
                          "--ledger", "off"))
        for n in c.nodes:
            wait_ready(n.admin_port, timeout=60)
        yield Env(c, sc)


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(conn: kafka_wire.Connection, cid: int, name: str) -> tuple[int, str | None]:
    """CreateTopics v4, one topic of 1 partition and replication factor 1."""
    body = (struct.pack(">i", 1) + kafka_wire._str(name) + struct.pack(">ihii", 1, 1, 0, 0)
            + struct.pack(">i?", 30000, False))
    _, resp = conn.call(kafka_wire.request(19, 4, cid, body))
    r = kafka_wire.Reader(resp)
    r.take(">i")  # throttle
    assert r.take(">i") == 1
    r.string()
    return r.take(">h"), r.string()


def events_of_session(env: Env, msg: str, before: list[dict]) -> list[dict]:
    """Log events with msg that were not in before."""
    seen = {json.dumps(e, sort_keys=True) for e in before}
    return [e for e in env.session_events(msg) if json.dumps(e, sort_keys=True) not in seen]


def wait_for(predicate, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_reauthentication_as_the_same_user_keeps_the_connection_judged_as_that_user(env):
    """bob logs in, re-authenticates as bob (the broker answers the SaslHandshake on a logged-in
    connection with error 0 and the exchange succeeds), and his CreateTopics are still judged as
    him: team-b admitted, team-a refused naming User:bob."""
    before = env.session_events("client authenticated")
    ok, refused = uniq("team-b.reauth"), uniq("team-a.reauth")
    with env.connect() as conn:
        assert sasl_wire.scram_login(conn, "bob", USERS["bob"], MECH) == REAUTH_MS
        assert sasl_wire.scram_login(conn, "bob", USERS["bob"], MECH) > 0
        assert create_topic(conn, 1, ok) == (0, None)
        code, msg = create_topic(conn, 2, refused)
        assert code != 0 and "User:bob" in (msg or ""), (code, msg)
    new = events_of_session(env, "client authenticated", before)
    assert len(new) == 2 and {e["principal"] for e in new} == {"User:bob"}, new
    assert new[0]["session"] == new[1]["session"]
    wait_for(lambda: env.exists(ok), f"{ok} never showed up")
    assert not env.exists(refused)


@pytest.mark.parametrize("user,password", [("alice", USERS["alice"]), ("bob", "not-bobs")])
def test_a_refused_reauthentication_leaves_the_principal(env, user, password):
    """bob logs in, then re-authenticates as alice with her own password (Kafka refuses a change
    of principal during re-authentication) or as himself with a wrong password: the broker
    answers SASL_AUTHENTICATION_FAILED and closes the connection. kadmit logs the refusal with
    the principal it kept, User:bob, and never authenticates the connection as anyone else."""
    before_ok = env.session_events("client authenticated")
    before_failed = env.session_events("client authentication failed at the broker")
    with env.connect() as conn:
        sasl_wire.scram_login(conn, "bob", USERS["bob"], MECH)
        code, msg, _ = sasl_wire.scram_exchange(conn, user, password, MECH)
        assert code == sasl_wire.SASL_AUTHENTICATION_FAILED, (code, msg)
        with pytest.raises(ConnectionError):
            create_topic(conn, 3, uniq("team-b.after-refusal"))
    ok = events_of_session(env, "client authenticated", before_ok)
    assert [e["principal"] for e in ok] == ["User:bob"], ok
    failed = wait_for(
        lambda: events_of_session(env, "client authentication failed at the broker", before_failed),
        "no refusal logged")
    (f,) = failed
    assert f["session"] == ok[0]["session"] and f["principal"] == "User:bob", f
    assert f["error_code"] == sasl_wire.SASL_AUTHENTICATION_FAILED, f
