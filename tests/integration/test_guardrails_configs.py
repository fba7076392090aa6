"""Topic rules' config bounds through kadmit, with real clients: kafka-topics, kafka-configs, the
Java AdminClient and confluent-kafka create topics and alter their configs, and a team-a rule
bounding min.insync.replicas (min 2), retention.ms (max 604800000) and cleanup.policy (allowed
["delete"]) refuses what breaks it with POLICY_VIOLATION and a sentence saying what to set.
A key left out of a create (or deleted by an alter) is judged at the broker's default, which
the sidecar reads from the broker: the harness's brokers keep Kafka's min.insync.replicas 1,
so leaving it out is refused. An audit-a rule with the same bounds forwards and flags.

One 3-broker KRaft cluster with a sidecar per broker (plaintext; the principal is then
User:ANONYMOUS). What the broker holds is read on the DIRECT listener, bypassing kadmit.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 670.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from admin_client import wait_ready  # noqa: E402
from kafka_cluster import (KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open, tool)

OFFSET = 670
BOUNDS = {"min.insync.replicas": {"min": 2}, "retention.ms": {"max": 604800000},
          "cleanup.policy": {"allowed": ["delete"]}}
POLICY = {
    "max.broker.partitions": 1000,
    "metadata.refresh.interval.ms": 1000,
    "metadata.refresh.before.decision.ms": 500,
    "reject.error.code": 44,
    "topic.rules": [
        {"match": "team-a\\..*", "configs": BOUNDS, "enforcement": "enforce"},
        {"match": "audit-a\\..*", "configs": BOUNDS, "enforcement": "audit"},
    ],
}
RULE_NAME = "team-a\\..*"
RULE = f"rule '{RULE_NAME}'"


def uniq(prefix: str) -> str:
    return f"{prefix}.t{uuid.uuid4().hex[:8]}"


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars):
        self.d, self.c, self.sc = d, c, sc
        self.java_cp = ""

    def topics(self, *args: str, direct: bool = False) -> subprocess.CompletedProcess:
        boot = self.c.direct_bootstrap if direct else self.c.bootstrap
        return subprocess.run([tool("kafka-topics"), "--bootstrap-server", boot, *args],
                              capture_output=True, text=True, timeout=120, check=False)

    def create(self, topic: str, *configs: str, direct: bool = False) -> subprocess.CompletedProcess:
        args = ["--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3"]
        for c in configs:
            args += ["--config", c]
        return self.topics(*args, direct=direct)

    def configs(self, topic: str, *args: str, direct: bool = False) -> subprocess.CompletedProcess:
        boot = self.c.direct_bootstrap if direct else self.c.bootstrap
        return subprocess.run([tool("kafka-configs"), "--bootstrap-server", boot, "--entity-type",
                               "topics", "--entity-name", topic, *args],
                              capture_output=True, text=True, timeout=120, check=False)

    def broker_config(self, topic: str) -> str:
        """The topic's dynamic configs as the broker itself describes them."""
        p = self.configs(topic, "--describe", direct=True)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    def exists(self, topic: str) -> bool:
        p = self.topics("--list", direct=True)
        assert p.returncode == 0, p.stdout + p.stderr
        return topic in p.stdout.split()

    def created(self, topic: str) -> bool:
        return clients.topic_shows_up(self.exists, topic, interval=0.5)

    def java(self, *args: str) -> str:
        props = self.d / "java.properties"
        if not props.exists():
            props.write_text(f"bootstrap.servers={self.c.bootstrap}\n"
                             "request.timeout.ms=30000\ndefault.api.timeout.ms=60000\n")
        p = clients.run(["java", "-cp", self.java_cp, "-Dlog4j2.level=off", "ConfigsClient",
                         str(props), *args], timeout=120)
        return p.stdout.decode() if isinstance(p.stdout, bytes) else p.stdout

    def sidecar_logs(self) -> str:
        return "".join(s.log.read_text(errors="replace") for s in self.sc.items)

    def audit_lines(self, topic: str) -> list[str]:
        """The sidecars' audit events about topic (text log lines)."""
        return [line for line in self.sidecar_logs().splitlines()
                if " event=audit " in line and f" resource={topic} " in line]


def refused(p: subprocess.CompletedProcess, *needles: str) -> None:
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "PolicyViolationException" in out, out
    for n in needles:
        assert n in out, out


def javac(c: KafkaCluster, out: Path) -> subprocess.Popen:
    """Compiles ConfigsClient (TOPIC resources as topic:NAME) into out, in the background."""
    out.mkdir()
    libs = str(c.home / "libs" / "*")
    return subprocess.Popen(["javac", "-nowarn", "-cp", libs, "-d", str(out),
                             str(HERE / "java" / "ConfigsClient.java")])


@pytest.fixture(scope="module")
def env(request):
    d = Path(tempfile.mkdtemp(prefix="kadmit-guardrails-configs-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET)
    taken = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port)
             if port_open(p)]
    if taken or not kadmit_bin().exists():
        pytest.fail(f"kadmit binary {kadmit_bin()} missing (set KADMIT_BIN) or ports {taken} "
                    "taken (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    policy = d / "policy.json"
    policy.write_text(json.dumps(POLICY))
    e = Env(d, c, Sidecars(c))
    e.java_cp = f"{d / 'java'}:{c.home / 'libs' / '*'}"
    with own_cluster(d, c, e.sc, "guardrails configs integration", request):
        compiling = javac(c, d / "java")
        c.start()
        e.sc.start(args=("--policy", str(policy), "--ledger", "off"))
        for n in c.nodes:
            wait_ready(n.admin_port, timeout=90)
        assert compiling.wait(timeout=180) == 0
        yield e


def test_kafka_topics_create_below_the_minimum_is_refused_saying_what_to_set(env: Env):
    t = uniq("team-a")
    refused(env.create(t, "min.insync.replicas=1"),
            f"min.insync.replicas 1 is below the minimum 2 of {RULE}; "
            "set min.insync.replicas to at least 2")
    assert not env.exists(t)


def test_kafka_topics_create_within_the_bounds_is_admitted(env: Env):
    t = uniq("team-a")
    p = env.create(t, "min.insync.replicas=2", "retention.ms=86400000", "cleanup.policy=delete")
    assert p.returncode == 0, p.stdout + p.stderr
    assert env.created(t)
    assert "retention.ms=86400000" in env.broker_config(t)


def test_a_create_leaving_a_bounded_key_out_is_judged_at_the_broker_default(env: Env):
    t = uniq("team-a")
    refused(env.create(t, "retention.ms=86400000"),
            "min.insync.replicas 1 (the broker's default, which applies when the request does "
            "not set it) is below the minimum 2")
    assert not env.exists(t)


@pytest.fixture(scope="module")
def bounded(env: Env) -> str:
    """A team-a topic within the bounds, created on the DIRECT listener."""
    t = uniq("team-a")
    p = env.create(t, "min.insync.replicas=2", "retention.ms=86400000", direct=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return t


def test_kafka_configs_add_config_past_the_maximum_is_refused_and_changes_nothing(
        env: Env, bounded: str):
    p = env.configs(bounded, "--alter", "--add-config", "retention.ms=700000000")
    refused(p, f"retention.ms 700000000 is above the maximum 604800000 of {RULE}; "
               "set retention.ms to at most 604800000")
    held = env.broker_config(bounded)
    assert "retention.ms=86400000" in held and "700000000" not in held, held
    # The refusal is an audit event naming the API, the topic, the rule and the verdict.
    deadline = time.monotonic() + 15
    while not (events := env.audit_lines(bounded)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any(" api=IncrementalAlterConfigs " in e and " verdict=reject " in e
               and f" rule={RULE_NAME} " in e and "retention.ms 700000000" in e
               for e in events), events


def test_kafka_configs_delete_config_is_judged_at_the_broker_default(env: Env, bounded: str):
    p = env.configs(bounded, "--alter", "--delete-config", "min.insync.replicas")
    refused(p, "min.insync.replicas 1 (the broker's default, which applies once the request "
               "deletes it) is below the minimum 2")
    assert "min.insync.replicas=2" in env.broker_config(bounded)
    # Deleting retention.ms falls back to the broker's 7 days, which is within the maximum.
    p = env.configs(bounded, "--alter", "--delete-config", "retention.ms")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "retention.ms=" not in env.broker_config(bounded)


def test_java_admin_client_incremental_alter_configs(env: Env, bounded: str):
    out = env.java("alter", "false", f"topic:{bounded}", "APPEND:cleanup.policy=compact")
    assert out.startswith("RESULT ERROR PolicyViolationException: cleanup.policy \"compact\" is "
                          f"not allowed by {RULE}; set cleanup.policy to one of: delete"), out
    assert "cleanup.policy" not in env.broker_config(bounded)
    assert env.java("alter", "false", f"topic:{bounded}",
                    "SET:retention.ms=3600000") == "RESULT OK\n"
    assert "retention.ms=3600000" in env.broker_config(bounded)


def test_confluent_kafka_incremental_alter_configs(env: Env, bounded: str):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)
    a = AdminClient({"bootstrap.servers": env.c.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, bounded, incremental_configs=[
        ConfigEntry("min.insync.replicas", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as got:
        for f in a.incremental_alter_configs([res]).values():
            f.result(timeout=60)
    err = got.value.args[0]
    assert err.name() == "POLICY_VIOLATION", err
    assert f"min.insync.replicas 1 is below the minimum 2 of {RULE}" in err.str(), err
    assert "min.insync.replicas=2" in env.broker_config(bounded)


def test_an_audit_rule_forwards_and_flags(env: Env):
    t = uniq("audit-a")
    p = env.create(t, "min.insync.replicas=2", direct=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = env.configs(t, "--alter", "--add-config", "retention.ms=-1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "retention.ms=-1" in env.broker_config(t)
    deadline = time.monotonic() + 5
    while "audit: would refuse" not in env.sidecar_logs():
        assert time.monotonic() < deadline, "no sidecar flagged the audited change"
        time.sleep(0.1)
    flagged = [ln for ln in env.sidecar_logs().splitlines() if "audit: would refuse" in ln]
    assert any("audit-a" in ln and "retention.ms -1 (unlimited) is above the maximum" in ln
               for ln in flagged), flagged
