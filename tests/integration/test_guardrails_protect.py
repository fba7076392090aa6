"""Guardrails: protected topics and what-if, against a real 3-broker KRaft cluster with a kadmit sidecar per
broker (the pattern of test_cluster_wide.py: one module-scoped cluster, every sidecar with the
same --policy file and the ledger on), and a policy with "protected.topics": ["keep\\..*"].

Deletes go through the sidecars with Kafka's own tools (kafka-topics, kafka-delete-records),
the Java AdminClient (tests/integration/java/DeleteClient.java, by name and by topic id) and
confluent-kafka. Whether a topic still exists is asked of the brokers directly, never of kadmit.

The sidecars keep their ledger and limits in topics of non-default names (--ledger-topic
ops-kadmit-ledger, --limits-topic ops-kadmit-limits): deleting, trimming, widening or
reconfiguring them through kadmit is refused, and so are config changes that would destroy a
protected topic's data (kafka-configs --add-config retention.ms=1), while a harmless one goes
on. Topic configs and partition counts are read from the brokers directly.

POST /v1/what-if and `kadmit what-if` are asked of a sidecar and must change nothing: the same
create is then admitted in full, and the sidecars' counts and reservations are as before.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 620.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from admin_client import get_json, http, wait_ready  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open)

OFFSET = 620
POLICY = {"max.broker.partitions": 100000, "protected.topics": ["keep\\..*"],
          "topic.rules": [{"match": "team-a\\..*", "budget.partitions": 200}],
          "metadata.refresh.interval.ms": 1000, "metadata.refresh.before.decision.ms": 500}
MESSAGE = ("topic '{}' is protected by protected.topics pattern 'keep\\..*'; remove it from "
           "protected.topics to delete it")
LEDGER, LIMITS = "ops-kadmit-ledger", "ops-kadmit-limits"
OWN = "topic '{}' is kadmit's own {} topic; changing it through kadmit is refused ({})"


def uniq(prefix: str) -> str:
    return f"{prefix}.{uuid.uuid4().hex[:8]}"


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars):
        self.d, self.c, self.sc = d, c, sc
        self.java_dir = d / "java"
        self.props = d / "admin.properties"

    def exists(self, topic: str) -> bool:
        """Asked of a broker directly."""
        md = kafka_wire.metadata(HOST, self.c.node(1).direct_port, timeout=10, topics=[topic])
        return md["topics"][0]["error"] == 0

    def wait_gone(self, topic: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.exists(topic):
            assert time.monotonic() < deadline, f"{topic} still exists"
            time.sleep(0.2)

    def create(self, *topics: str) -> None:
        for t in topics:
            clients.create_topic(self.c.bootstrap, t, 2, 3)
        for t in topics:
            self.c.wait_topic_healthy(t)

    def java_delete(self, how: str, *topics: str) -> dict[str, str]:
        p = clients.run(["java", "-cp", f"{self.java_dir}:{self.c.home}/libs/*",
                         "-Dlog4j2.level=off", "DeleteClient", str(self.props), how, *topics],
                        timeout=120)
        out = {}
        for line in clients.text(p).splitlines():
            if line.startswith("RESULT "):
                name, verdict = line[len("RESULT "):].split(" ", 1)
                out[name] = verdict
        return out

    def configs(self, topic: str, *args: str, direct: bool = False):
        boot = self.c.direct_bootstrap if direct else self.c.bootstrap
        return clients.run([clients.tool("kafka-configs"), "--bootstrap-server", boot,
                            "--entity-type", "topics", "--entity-name", topic, *args],
                           check=False, timeout=120)

    def broker_configs(self, topic: str) -> str:
        """The topic's dynamic configs as a broker describes them, bypassing kadmit."""
        p = self.configs(topic, "--describe", direct=True)
        assert p.returncode == 0, clients.text(p)
        return clients.text(p)

    def partitions(self, topic: str) -> int:
        md = kafka_wire.metadata(HOST, self.c.node(1).direct_port, timeout=10, topics=[topic])
        return len(md["topics"][0]["partitions"])

    def refused(self, api: str) -> int:
        """kadmit_protected_refused_total{api} summed over the sidecars."""
        total = 0
        for s in self.sc.items:
            status, body = get_metrics(s.node.admin_port)
            assert status == 200
            m = re.search(r'^kadmit_protected_refused_total\{api="%s"\} (\d+)$' % api, body,
                          re.M)
            total += int(m.group(1)) if m else 0
        return total


def output(p) -> str:
    """What a tool printed, stdout and stderr (kafka-configs reports errors on stderr)."""
    return (p.stdout or b"").decode(errors="replace") + (p.stderr or b"").decode(errors="replace")


def get_metrics(port: int) -> tuple[int, str]:
    status, _, body = http(port, "GET", "/metrics")
    return status, body.decode()


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-protect-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET)
    taken = [n.id for n in c.nodes if port_open(n.direct_port) or port_open(n.client_port)]
    assert not taken, f"brokers {taken}: their ports are taken (set KADMIT_TEST_PORT_BASE)"
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    e = Env(d, c, Sidecars(c, binary))
    with own_cluster(d, c, e.sc, "protected topics", request):
        c.start()
        e.java_dir.mkdir()
        clients.run(["javac", "-nowarn", "-cp", f"{c.home}/libs/*", "-d", str(e.java_dir),
                     str(HERE / "java" / "DeleteClient.java")], timeout=180)
        e.props.write_text(f"bootstrap.servers={c.bootstrap}\n")
        policy = d / "policy.json"
        policy.write_text(json.dumps(POLICY))
        # refuses a sidecar port in use
        e.sc.start(args=("--policy", str(policy), "--ledger", "on", "--ledger-topic", LEDGER,
                         "--limits-topic", LIMITS))
        for s in e.sc.items:
            wait_ready(s.node.admin_port, timeout=60)
        for own in (LEDGER, LIMITS):  # the sidecars create them
            deadline = time.monotonic() + 60
            while not e.exists(own):
                assert time.monotonic() < deadline, f"{own} was not created"
                time.sleep(0.5)
        yield e


@pytest.fixture(autouse=True)
def _sidecars_healthy(env):
    yield
    env.sc.check()


def test_kafka_topics_delete_of_a_protected_topic_is_refused_with_the_message(env: Env):
    keep = uniq("keep")
    env.create(keep)
    before = env.refused("DeleteTopics")
    p = clients.topics(env.c.bootstrap, "--delete", "--topic", keep, check=False)
    out = clients.text(p)
    assert MESSAGE.format(keep) in out, out
    assert env.exists(keep)
    assert env.refused("DeleteTopics") == before + 1


def test_one_request_naming_a_protected_and_a_free_topic_deletes_only_the_free_one(env: Env):
    keep, free = uniq("keep"), uniq("free")
    env.create(keep, free)
    r = env.java_delete("names", keep, free)
    assert r[free] == "OK", r
    assert r[keep] == "ERROR PolicyViolationException: " + MESSAGE.format(keep), r
    env.wait_gone(free)
    assert env.exists(keep)


def test_java_delete_by_topic_id_is_refused(env: Env):
    keep = uniq("keep")
    env.create(keep)
    r = env.java_delete("ids", keep)
    assert r[keep] == "ERROR PolicyViolationException: " + MESSAGE.format(keep), r
    assert env.exists(keep)


def test_kafka_delete_records_of_a_protected_topic_is_refused(env: Env):
    keep = uniq("keep")
    env.create(keep)
    clients.run([clients.KCAT, "-P", "-b", env.c.bootstrap, "-t", keep, "-p", "0"],
                input_=b"a\nb\nc\n")
    offsets = env.d / f"{keep}.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": keep, "partition": 0, "offset": -1}]}))
    before = env.refused("DeleteRecords")
    p = clients.run([clients.tool("kafka-delete-records"), "--bootstrap-server", env.c.bootstrap,
                     "--offset-json-file", str(offsets)], check=False)
    out = clients.text(p)
    assert "PolicyViolationException" in out, out
    assert env.refused("DeleteRecords") == before + 1
    # The records are still there: the low watermark did not move.
    assert clients.end_offsets_total(env.c.direct_bootstrap, keep) == 3


def test_consumer_offsets_delete_is_refused_with_no_policy_key(env: Env):
    # A group commit makes the broker create __consumer_offsets.
    clients.run([clients.KCAT, "-C", "-b", env.c.bootstrap, "-G", uniq("g"), "-o", "beginning",
                 "-e", LEDGER], check=False, timeout=60)
    r = env.java_delete("names", "__consumer_offsets")
    assert r["__consumer_offsets"].startswith("ERROR PolicyViolationException: topic "
                                              "'__consumer_offsets' is one of Kafka's internal "
                                              "topics"), r
    assert env.exists("__consumer_offsets")


def test_confluent_kafka_delete_topics_is_refused_for_the_protected_topic(env: Env):
    from confluent_kafka.admin import AdminClient
    keep, free = uniq("keep"), uniq("free")
    env.create(keep, free)
    a = AdminClient({"bootstrap.servers": env.c.bootstrap})
    futures = a.delete_topics([keep, free], operation_timeout=30)
    futures[free].result(timeout=60)
    with pytest.raises(Exception) as e:
        futures[keep].result(timeout=60)
    assert "POLICY_VIOLATION" in str(e.value) or "protected" in str(e.value), e.value
    env.wait_gone(free)
    assert env.exists(keep)


# --- destructive configs, kadmit's own topics -------------------------------------------------------

def test_kafka_configs_retention_ms_1_on_a_protected_topic_is_refused_and_nothing_changes(env: Env):
    keep = uniq("keep")
    env.create(keep)
    before = env.refused("IncrementalAlterConfigs")
    p = env.configs(keep, "--alter", "--add-config", "retention.ms=1")
    out = output(p)
    assert p.returncode != 0, out
    assert "PolicyViolationException" in out, out
    assert (f"topic '{keep}' is protected by protected.topics pattern 'keep\\..*': setting "
            "retention.ms through kadmit is refused, because it can delete the topic's "
            "records") in out, out
    assert "retention.ms=1 " not in env.broker_configs(keep)
    assert env.refused("IncrementalAlterConfigs") == before + 1
    # Deleting the key is refused as well: it would bring back the broker's default.
    p = env.configs(keep, "--alter", "--delete-config", "cleanup.policy")
    assert p.returncode != 0 and "deleting cleanup.policy" in output(p), output(p)


def test_a_harmless_config_change_on_a_protected_topic_goes_through(env: Env):
    keep = uniq("keep")
    env.create(keep)
    p = env.configs(keep, "--alter", "--add-config", "min.insync.replicas=2")
    assert p.returncode == 0, output(p)
    deadline = time.monotonic() + 20
    while "min.insync.replicas=2 " not in (shown := env.broker_configs(keep)):
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)


def test_max_message_bytes_64_on_the_ledger_is_refused(env: Env):
    p = env.configs(LEDGER, "--alter", "--add-config", "max.message.bytes=64")
    out = output(p)
    assert p.returncode != 0, out
    assert "PolicyViolationException" in out, out
    assert OWN.format(LEDGER, "ledger", "IncrementalAlterConfigs") in out, out
    assert "max.message.bytes=64" not in env.broker_configs(LEDGER)
    # A harmless key too: nothing about kadmit's own topics changes through kadmit.
    p = env.configs(LIMITS, "--alter", "--add-config", "min.insync.replicas=1")
    assert OWN.format(LIMITS, "limits", "IncrementalAlterConfigs") in output(p), output(p)


def test_kafka_topics_delete_of_the_ledger_and_limits_topics_is_refused(env: Env):
    for topic, which in ((LEDGER, "ledger"), (LIMITS, "limits")):
        before = env.refused("DeleteTopics")
        p = clients.topics(env.c.bootstrap, "--delete", "--topic", topic, check=False)
        out = output(p)
        assert OWN.format(topic, which, "DeleteTopics") in out, out
        assert env.refused("DeleteTopics") == before + 1
    # By topic id too (the Java AdminClient).
    r = env.java_delete("ids", LEDGER)
    assert r[LEDGER].startswith("ERROR PolicyViolationException: "
                                + OWN.format(LEDGER, "ledger", "DeleteTopics")), r
    time.sleep(1)
    assert env.exists(LEDGER) and env.exists(LIMITS)


def test_kafka_delete_records_of_the_ledger_is_refused(env: Env):
    env.create(uniq("free"))  # an admission: the ledger holds intents
    end = clients.end_offsets_total(env.c.direct_bootstrap, LEDGER)
    assert end > 0
    offsets = env.d / "ledger-offsets.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": LEDGER, "partition": 0, "offset": -1}]}))
    before = env.refused("DeleteRecords")
    p = clients.run([clients.tool("kafka-delete-records"), "--bootstrap-server", env.c.bootstrap,
                     "--offset-json-file", str(offsets)], check=False)
    out = output(p)
    assert "PolicyViolationException" in out, out
    assert env.refused("DeleteRecords") == before + 1
    # The ledger still starts at offset 0: no record was deleted.
    q = clients.text(clients.run([clients.KCAT, "-Q", "-b", env.c.direct_bootstrap, "-t",
                                  f"{LEDGER}:0:-2", "-J"], timeout=30))
    assert int(json.loads(q)[LEDGER]["0"]["offset"]) == 0, q


def test_kafka_topics_alter_partitions_of_the_ledger_is_refused(env: Env):
    p = clients.topics(env.c.bootstrap, "--alter", "--topic", LEDGER, "--partitions", "2",
                       check=False)
    out = output(p)
    assert p.returncode != 0, out
    assert OWN.format(LEDGER, "ledger", "CreatePartitions") in out, out
    assert env.partitions(LEDGER) == 1


# --- what-if -------------------------------------------------------------------------------------

def reserved_total(env: Env) -> int:
    total = 0
    for s in env.sc.items:
        status, doc = get_json(s.node.admin_port, "/v1/brokers")
        assert status == 200, doc
        total += sum(b["reserved"] for b in doc["brokers"])
    return total


def test_what_if_answers_verdict_placement_and_projection_and_changes_nothing(env: Env):
    name = uniq("team-a")
    body = {"createTopics": {"topics": [{"name": name, "numPartitions": 3,
                                         "replicationFactor": 2}]},
            "principal": "User:alice"}
    port = env.c.node(1).admin_port
    before = reserved_total(env)
    status, _, raw = http(port, "POST", "/v1/what-if", json.dumps(body).encode())
    assert status == 200, raw
    doc = json.loads(raw)
    (item,) = doc["items"]
    assert doc["admitted"] is True and doc["principal"] == "User:alice"
    assert item["name"] == name and item["verdict"] in ("place", "admit"), item
    assert len(item["placement"]) == 3 and all(len(r) == 2 for r in item["placement"]), item
    grew = sum(b["projected"] - b["current"] for b in item["brokers"])
    assert grew == 6, item["brokers"]
    assert all(b["limit"] == 100000 for b in item["brokers"])
    # Nothing changed: no topic, no reservation; the same create then goes through in full.
    assert not env.exists(name)
    assert reserved_total(env) == before
    clients.create_topic(env.c.bootstrap, name, 3, 2)
    env.c.wait_topic_healthy(name)
    md = kafka_wire.metadata(HOST, env.c.node(1).direct_port, timeout=10, topics=[name])
    assert len(md["topics"][0]["partitions"]) == 3


def test_kadmit_what_if_prints_the_table_and_exits_by_verdict(env: Env):
    name = uniq("team-a")
    admin = f"{HOST}:{env.c.node(2).admin_port}"
    p = clients.run([str(kadmit_bin()), "what-if", "--admin", admin, "--create", f"{name}:4:3"],
                    check=False)
    out = clients.text(p)
    assert p.returncode == 0, out
    assert f"{name}: " in out and "PROJECTED" in out and "admitted" in out, out
    assert not env.exists(name)
    # A body on stdin: CreatePartitions of a topic that exists.
    keep = uniq("keep")
    env.create(keep)
    body = json.dumps({"createPartitions": {"topics": [{"name": keep, "count": 5}]}})
    deadline = time.monotonic() + 20
    while True:  # what-if judges on the sidecar's view as it is: wait until it shows the topic
        p = clients.run([str(kadmit_bin()), "what-if", "--admin", admin], input_=body.encode(),
                        check=False)
        if "unknown_topic" not in clients.text(p) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert p.returncode == 0, clients.text(p)
    assert "CreatePartitions" in clients.text(p)
    # An error is exit status 2, with the field named.
    p = clients.run([str(kadmit_bin()), "what-if", "--admin", admin], input_=b'{"createTopics": 1}',
                    check=False)
    err = (p.stderr or b"").decode(errors="replace")
    assert p.returncode == 2 and "createTopics: must be an object" in err, err


def test_brokers_shows_each_tenant_budget(env: Env):
    def budget() -> dict:
        status, doc = get_json(env.c.node(3).admin_port, "/v1/brokers")
        assert status == 200, doc
        assert doc["budgets"]["principals"] == [], doc["budgets"]
        (rule,) = doc["budgets"]["rules"]
        assert rule["rule"] == "team-a\\..*" and rule["budget"] == 200, doc["budgets"]
        return rule

    before = budget()["used"]
    clients.create_topic(env.c.bootstrap, uniq("team-a"), 2, 2)
    clients.create_topic(env.c.bootstrap, uniq("team-a"), 3, 1)
    clients.create_topic(env.c.bootstrap, uniq("other"), 4, 1)  # no rule covers it
    # Sidecar 3 counts the 5 new team-a partitions once its view shows them (or it judged them).
    deadline = time.monotonic() + 30
    while (used := budget()["used"]) != before + 5:
        assert used < before + 5 and time.monotonic() < deadline, (before, used)
        time.sleep(0.5)
