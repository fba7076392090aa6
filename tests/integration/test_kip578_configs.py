"""KIP-578's operator interface through kadmit: kafka-configs, the Java AdminClient and
confluent-kafka set and show `max.broker.partitions` and `max.partitions`, and every sidecar
enforces what they set.

One 3-broker KRaft cluster with a sidecar per broker (`--policy`, `--ledger on`). The brokers'
client listener is SASL_PLAINTEXT with SCRAM-SHA-512 and StandardAuthorizer: `admin` is a super
user, `bob` has no ACL, so Kafka refuses his config changes with CLUSTER_AUTHORIZATION_FAILED.
kadmit's own clients use the plaintext DIRECT listener (`--metadata-upstream`), whose
ANONYMOUS principal is a super user too. Each policy file sets max.broker.partitions 1000.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 360.
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
from admin_client import get_json, spawn_sidecar, wait_ready  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster  # noqa: E402
from kafka_cluster import port_base, port_open, tool  # noqa: E402
from sasl_acl_cluster import SaslAclCluster  # noqa: E402

TOKEN = "it-" + uuid.uuid4().hex
FILE_LIMIT = 1000
USERS = {"admin": "admin-secret", "bob": "bob-secret"}
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
MBP = "max.broker.partitions"


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars):
        self.d, self.c, self.sc = d, c, sc
        self.java_cp = ""

    def props(self, user: str) -> Path:
        p = self.d / f"{user}.properties"
        if not p.exists():
            p.write_text(
                f"bootstrap.servers={self.c.bootstrap}\n"
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                f'required username="{user}" password="{USERS[user]}";\n'
                "request.timeout.ms=30000\ndefault.api.timeout.ms=60000\n")
        return p

    def sidecar_bootstrap(self, node_id: int) -> str:
        return f"{HOST}:{self.c.node(node_id).sidecar_port}"

    def start_sidecar(self, node_id: int) -> None:
        n = self.c.node(node_id)
        spawn_sidecar(self.sc[node_id], self.d / "policy.json", self.d / "admin.token",
                      "--ledger", "on", "--metadata-upstream", f"{HOST}:{n.direct_port}")

    def brokers(self, node_id: int) -> dict:
        status, doc = get_json(self.c.node(node_id).admin_port, "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}

    def policy(self, node_id: int) -> dict:
        status, doc = get_json(self.c.node(node_id).admin_port, "/v1/policy")
        assert status == 200, doc
        return doc

    def configs(self, node_id: int, *args: str, user: str = "admin",
                check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([tool("kafka-configs"), "--bootstrap-server",
                            self.sidecar_bootstrap(node_id), "--command-config",
                            str(self.props(user)), "--entity-type", "brokers", *args],
                           capture_output=True, text=True, timeout=120, check=False)
        if check:
            assert p.returncode == 0, p.stdout + p.stderr
        return p

    def java(self, *args: str) -> str:
        p = clients.run(["java", "-cp", self.java_cp, "-Dlog4j2.level=off", "ConfigsClient",
                         str(self.props("admin")), *args], timeout=120)
        return p.stdout.decode() if isinstance(p.stdout, bytes) else p.stdout

    def wait_limit(self, broker_id: int, limit: int, timeout: float = 10.0) -> float:
        """Waits until every sidecar enforces `limit` for `broker_id`; returns seconds."""
        t0 = time.monotonic()
        pending = {s.node.id for s in self.sc.items}
        while pending:
            for n in sorted(pending):
                if self.brokers(n)[broker_id]["limit"] == limit:
                    pending.discard(n)
            assert time.monotonic() - t0 < timeout, \
                f"sidecars {sorted(pending)} do not enforce {limit} for broker {broker_id}"
            if pending:
                time.sleep(0.05)
        return time.monotonic() - t0


def confluent_admin(env: Env, user: str = "admin"):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": env.c.bootstrap,
                        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                        "sasl.username": user, "sasl.password": USERS[user]})


@pytest.fixture(scope="module")
def env(request):
    d = Path(tempfile.mkdtemp(prefix="kadmit-kip578-"))
    c = SaslAclCluster(d, port_base() + 360, USERS)
    busy = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port)
            if port_open(p)]
    if busy or not kadmit_bin().exists():
        pytest.fail(f"ports in use {busy} (set KADMIT_TEST_PORT_BASE), or no kadmit binary at "
                    f"{kadmit_bin()} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    (d / "admin.token").write_text(TOKEN + "\n")
    (d / "policy.json").write_text(json.dumps({
        MBP: FILE_LIMIT, "metadata.refresh.interval.ms": 2000,
        "metadata.refresh.before.decision.ms": 1000}))
    e = Env(d, c, Sidecars(c))
    java_dir = d / "java"
    java_dir.mkdir()
    e.java_cp = f"{java_dir}:{c.home / 'libs' / '*'}"
    with own_cluster(d, c, e.sc, "kip578 configs integration", request):
        javac = subprocess.Popen(["javac", "-nowarn", "-cp", str(c.home / "libs" / "*"), "-d",
                                  str(java_dir), str(HERE / "java" / "ConfigsClient.java")])
        c.start()
        for n in c.nodes:
            e.start_sidecar(n.id)
        for n in c.nodes:
            wait_ready(n.admin_port, timeout=90)
        assert javac.wait(timeout=180) == 0
        yield e


def test_kafka_configs_sets_one_broker_and_another_sidecar_enforces_it(env: Env):
    count = env.brokers(3)[2]["partitions"]
    limit = count + 2
    env.configs(1, "--entity-name", "2", "--alter", "--add-config", f"{MBP}={limit}")
    # The first record of the limits topic waits for the producer's first metadata; later
    # ones reach every sidecar in well under a second.
    env.wait_limit(2, limit, timeout=10)
    # Three partitions of RF 3 need 3 more replicas on broker 2: one more than its headroom.
    p = subprocess.run([tool("kafka-topics"), "--bootstrap-server", env.sidecar_bootstrap(3),
                        "--command-config", str(env.props("admin")), "--create", "--topic",
                        "kip578-over", "--partitions", "3", "--replication-factor", "3"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode != 0 and REJECT in p.stdout + p.stderr, p.stdout + p.stderr
    assert f"2 (limit {limit}," in p.stdout + p.stderr, p.stdout + p.stderr


def test_kafka_configs_describe_shows_the_dynamic_value_its_source_and_synonyms(env: Env):
    limit = env.brokers(1)[2]["limit"]
    out = env.configs(2, "--entity-name", "2", "--describe").stdout
    assert f"{MBP}={limit} sensitive=false" in out, out
    assert f"DYNAMIC_BROKER_CONFIG:{MBP}={limit}" in out, out
    assert f"STATIC_BROKER_CONFIG:{MBP}={FILE_LIMIT}" in out, out
    assert "DEFAULT_CONFIG:max.partitions=2147483647" not in out, out  # not dynamic: --all only
    out = env.configs(3, "--entity-name", "2", "--describe", "--all").stdout
    assert f"{MBP}={limit} sensitive=false" in out, out
    assert "max.partitions=2147483647 sensitive=false synonyms={DEFAULT_CONFIG:" in out, out
    out = env.configs(1, "--entity-default", "--describe", "--all").stdout
    assert f"{MBP}={FILE_LIMIT} sensitive=false synonyms={{STATIC_BROKER_CONFIG:" in out, out


def test_kafka_configs_default_entity_sets_both_keys_and_delete_falls_back(env: Env):
    env.configs(3, "--entity-default", "--alter", "--add-config",
                f"{MBP}=5000,max.partitions=90000")
    took = env.wait_limit(1, 5000)
    assert took < 1.0, f"the new default took {took:.2f}s to reach every sidecar"
    for s in env.sc.items:
        assert env.policy(s.node.id)["limits"]["max.partitions"]["value"] == 90000
    out = env.configs(1, "--entity-default", "--describe").stdout
    assert f"{MBP}=5000 sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:" in out, out
    assert "max.partitions=90000 sensitive=false" in out, out
    # Broker 2 keeps its own override over the new default.
    assert env.brokers(2)[2]["limit"] != 5000
    env.configs(2, "--entity-name", "2", "--alter", "--delete-config", MBP)
    env.wait_limit(2, 5000)
    env.configs(1, "--entity-default", "--alter", "--delete-config", f"{MBP},max.partitions")
    env.wait_limit(2, FILE_LIMIT)
    env.wait_limit(1, FILE_LIMIT)


def test_other_keys_of_the_same_request_reach_the_broker_and_kadmits_do_not(env: Env):
    env.configs(2, "--entity-name", "1", "--alter", "--add-config",
                f"log.cleaner.threads=2,{MBP}=1234")
    env.wait_limit(1, 1234)
    p = subprocess.run([tool("kafka-configs"), "--bootstrap-server", env.c.direct_bootstrap,
                        "--entity-type", "brokers", "--entity-name", "1", "--describe"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "log.cleaner.threads=2" in p.stdout, p.stdout
    assert MBP not in p.stdout, p.stdout  # the broker never stored kadmit's key
    env.configs(3, "--entity-name", "1", "--alter", "--delete-config",
                f"log.cleaner.threads,{MBP}")
    env.wait_limit(1, FILE_LIMIT)


def test_java_admin_client_alters_and_describes_through_kadmit(env: Env):
    assert env.java("alter", "false", "3", f"SET:{MBP}=777") == "RESULT OK\n"
    env.wait_limit(3, 777)
    out = env.java("describe", "3")
    assert (f"ENTRY {MBP}=777 source=DYNAMIC_BROKER_CONFIG sensitive=false synonyms="
            "DYNAMIC_BROKER_CONFIG:777,STATIC_BROKER_CONFIG:1000,DEFAULT_CONFIG:2147483647"
            in out), out
    assert "ENTRY max.partitions=2147483647 source=DEFAULT_CONFIG sensitive=false" in out, out


@pytest.mark.parametrize("op, message", [
    (f"APPEND:{MBP}=5", "APPEND is not allowed"),
    (f"SET:{MBP}=-1", "must be an integer between 0 and 2147483647"),
    (f"SET:{MBP}=abc", "must be an integer between 0 and 2147483647"),
    (f"SET:{MBP}=2147483648", "must be an integer between 0 and 2147483647"),
    ("SET:max.partitions=10", "set it on the default broker entity"),
])
def test_java_bad_values_are_invalid_config_and_change_nothing(env: Env, op: str, message: str):
    before = env.policy(1)["layers"]
    out = env.java("alter", "false", "3", op)
    assert out.startswith("RESULT ERROR InvalidConfigurationException") and message in out, out
    assert env.java("alter", "true", "3", op) == out  # validate_only: the same verdict
    time.sleep(0.3)
    assert env.policy(2)["layers"]["cluster"]["offset"] == before["cluster"]["offset"]


def test_java_validate_only_gives_the_verdict_and_changes_nothing(env: Env):
    offset = env.policy(1)["layers"]["cluster"]["offset"]
    assert env.java("alter", "true", "3", f"SET:{MBP}=12") == "RESULT OK\n"
    time.sleep(0.5)
    assert env.policy(1)["layers"]["cluster"]["offset"] == offset
    assert env.brokers(1)[3]["limit"] == 777


def test_confluent_kafka_alters_and_describes_and_agrees_with_java(env: Env):
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ConfigSource, ResourceType)
    a = confluent_admin(env)
    res = ConfigResource(ResourceType.BROKER, "1",
                         incremental_configs=[ConfigEntry(MBP, "4321",
                                                          incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([res]).values():
        f.result(timeout=60)
    env.wait_limit(1, 4321)
    got = a.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
    entries = list(got.values())[0].result(timeout=60)
    e = entries[MBP]
    assert e.value == "4321" and not e.is_sensitive, e
    assert e.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value, e
    java = [ln for ln in env.java("describe", "1").splitlines() if ln.startswith(f"ENTRY {MBP}=")]
    assert java == [f"ENTRY {MBP}=4321 source=DYNAMIC_BROKER_CONFIG sensitive=false synonyms="
                    "DYNAMIC_BROKER_CONFIG:4321,STATIC_BROKER_CONFIG:1000,"
                    "DEFAULT_CONFIG:2147483647"], java


def test_confluent_legacy_alter_configs_replaces_all(env: Env):
    from confluent_kafka.admin import ConfigResource, ResourceType
    a = confluent_admin(env)
    res = ConfigResource(ResourceType.BROKER, "1", set_config={MBP: "3333"})
    for f in a.alter_configs([res]).values():
        f.result(timeout=60)
    env.wait_limit(1, 3333)
    # Another key only: the legacy API replaces the whole config, so the limit goes.
    res = ConfigResource(ResourceType.BROKER, "1", set_config={"log.cleaner.threads": "1"})
    for f in a.alter_configs([res]).values():
        f.result(timeout=60)
    env.wait_limit(1, FILE_LIMIT)


def test_unauthorized_scram_user_gets_cluster_authorization_failed(env: Env):
    offset = env.policy(1)["layers"]["cluster"]["offset"]
    p = env.configs(2, "--entity-name", "2", "--alter", "--add-config", f"{MBP}=1",
                    user="bob", check=False)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "ClusterAuthorizationException" in p.stdout + p.stderr, p.stdout + p.stderr
    time.sleep(0.5)
    assert env.policy(3)["layers"]["cluster"]["offset"] == offset
    assert env.brokers(3)[2]["limit"] == FILE_LIMIT


def test_limits_survive_restarting_every_sidecar_and_every_broker(env: Env):
    env.configs(1, "--entity-name", "3", "--alter", "--add-config", f"{MBP}=2468")
    env.wait_limit(3, 2468)
    env.sc.stop()
    for n in env.c.nodes:
        env.c.restart_node(n.id)
    env.c.wait_ready()
    for n in env.c.nodes:
        env.start_sidecar(n.id)
    for n in env.c.nodes:
        wait_ready(n.admin_port, timeout=120)
    env.wait_limit(3, 2468)
    out = env.configs(2, "--entity-name", "3", "--describe").stdout
    assert f"{MBP}=2468 sensitive=false" in out, out
