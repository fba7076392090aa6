"""Limits that are one truth for the cluster: three sidecars with `--policy` and `--ledger on`
in front of a real 3-broker KRaft cluster share the compacted topic __kadmit_limits.

A limit set through sidecar 1's admin API (from curl) is shown by GET /v1/policy and
GET /v1/brokers on sidecars 2 and 3 within a second, and the next create through sidecar 3 is
judged by it (error 88, KIP-578's message). Restarting all three sidecars, with no --state-file,
keeps it. DELETE through sidecar 2 returns broker 2 to the policy file's value on all three.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 330.
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
from admin_client import curl_status_body, get_json, spawn_sidecar, wait_ready  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster  # noqa: E402
from kafka_cluster import port_base, port_open, tool  # noqa: E402

TOKEN = "it-" + uuid.uuid4().hex
TOPIC = "__kadmit_limits"
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
FILE_LIMIT = 1000


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars, token_file: Path):
        self.d, self.c, self.sc, self.token_file = d, c, sc, token_file
        self.lowered: int | None = None  # broker 2's limit as set through sidecar 1

    def policy_file(self, node_id: int) -> Path:
        return self.d / f"policy-{node_id}.json"

    def start_sidecar(self, node_id: int) -> None:
        spawn_sidecar(self.sc[node_id], self.policy_file(node_id), self.token_file,
                      "--ledger", "on")

    def port(self, node_id: int) -> int:
        return self.c.node(node_id).admin_port

    def url(self, node_id: int, path: str) -> str:
        return f"http://{HOST}:{self.port(node_id)}{path}"

    def policy(self, node_id: int) -> dict:
        status, doc = get_json(self.port(node_id), "/v1/policy")
        assert status == 200, doc
        return doc

    def broker(self, node_id: int, broker_id: int) -> dict:
        status, doc = get_json(self.port(node_id), "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}[broker_id]

    def wait_all_ready(self) -> None:
        for s in self.sc.items:
            wait_ready(self.port(s.node.id), timeout=90)


@pytest.fixture(scope="module")
def env(request):
    d = Path(tempfile.mkdtemp(prefix="kadmit-limits-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 330)
    busy = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port)
            if port_open(p)]
    if busy or not kadmit_bin().exists():
        pytest.fail(f"ports in use {busy} (set KADMIT_TEST_PORT_BASE), or no kadmit binary at "
                    f"{kadmit_bin()} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    (d / "admin.token").write_text(TOKEN + "\n")
    e = Env(d, c, Sidecars(c), d / "admin.token")
    for n in c.nodes:
        e.policy_file(n.id).write_text(json.dumps({
            "max.broker.partitions": FILE_LIMIT,
            "metadata.refresh.interval.ms": 2000,
            "metadata.refresh.before.decision.ms": 1000}))
    with own_cluster(d, c, e.sc, "limits integration", request):
        c.start()
        for n in c.nodes:
            e.start_sidecar(n.id)
        e.wait_all_ready()
        yield e


def describe_limits_topic(env: Env) -> str:
    p = subprocess.run([tool("kafka-topics"), "--bootstrap-server", env.c.direct_bootstrap,
                        "--describe", "--topic", TOPIC], capture_output=True, text=True,
                       timeout=60, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_limits_topic_is_created_compacted_and_replicated(env: Env):
    out = describe_limits_topic(env)
    head = out.splitlines()[0]
    assert "PartitionCount: 1" in head and "ReplicationFactor: 3" in head, out
    assert "cleanup.policy=compact" in head and "min.insync.replicas=2" in head, out
    for s in env.sc.items:
        cluster = env.policy(s.node.id)["layers"]["cluster"]
        assert cluster["topic"] == TOPIC and cluster["state"] == "loaded", cluster


def wait_everywhere(env: Env, nodes: list[int], check, timeout: float) -> float:
    """Polls GET /v1/policy on `nodes` until check(doc) holds on all; returns seconds taken."""
    t0 = time.monotonic()
    pending = set(nodes)
    while pending:
        for n in sorted(pending):
            if check(env.policy(n)):
                pending.discard(n)
        elapsed = time.monotonic() - t0
        assert not pending or elapsed < timeout, \
            {n: env.policy(n)["policy"].get("brokers") for n in pending}
        time.sleep(0.01)
    return time.monotonic() - t0


def broker_2_limit(doc: dict) -> int:
    return doc["policy"]["brokers"].get("2", {}).get("max.broker.partitions",
                                                     doc["policy"]["max.broker.partitions"])


def test_limit_set_through_sidecar_1_is_in_force_on_2_and_3_within_a_second(env: Env):
    b2 = env.broker(1, 2)
    full = b2["partitions"] + b2["reserved"]
    status, raw = curl_status_body("PUT", env.url(1, "/v1/limits/brokers/2"),
                                   json.dumps({"max.broker.partitions": full}), TOKEN)
    assert status == 200, raw
    doc = json.loads(raw)
    assert doc["persisted"] is True and doc["persisted_to"] == f"kafka topic {TOPIC}", doc
    assert "warning" not in doc, doc
    assert doc["policy"]["brokers"]["2"]["max.broker.partitions"] == full, doc
    env.lowered = full

    took = wait_everywhere(env, [2, 3], lambda d: broker_2_limit(d) == full, timeout=1.0)
    assert took < 1.0, took
    for n in (1, 2, 3):
        doc = env.policy(n)
        cluster = doc["layers"]["cluster"]
        # written_by is the writer's --sidecar-id: hostname:listen port by default.
        assert cluster["offset"] >= 0, cluster
        assert cluster["written_by"].endswith(f":{env.c.node(1).sidecar_port}"), cluster
        assert cluster["overrides"]["brokers"]["2"]["max.broker.partitions"] == full, cluster
        assert doc["limits"]["brokers"]["2"] == {"max.broker.partitions": full,
                                                 "from": "cluster"}, doc["limits"]
        assert doc["limits"]["max.broker.partitions"]["from"] == "file", doc["limits"]
        b2 = env.broker(n, 2)
        assert b2["limit"] == full and b2["limit_source"] == "override", b2

    # The next create through sidecar 3 needs broker 2, which has no room left.
    topic = f"needs-broker-2-{uuid.uuid4().hex[:8]}"
    p = clients.topics(f"{HOST}:{env.c.node(3).sidecar_port}", "--create", "--topic", topic,
                       "--partitions", "1", "--replication-factor", "3", check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0, out
    assert REJECT in out, out


def test_restarting_every_sidecar_keeps_the_cluster_limit(env: Env):
    assert env.lowered is not None, "needs the test before it"
    # SIGTERM ends each sidecar by itself (the topic's clients never keep it running).
    for s in env.sc.items:
        t0 = time.monotonic()
        s.stop()
        assert s.proc.returncode() == 0 and time.monotonic() - t0 < 8, \
            (s.proc.returncode(), time.monotonic() - t0)
    for s in env.sc.items:
        env.start_sidecar(s.node.id)
    env.wait_all_ready()
    for n in (1, 2, 3):
        doc = env.policy(n)
        assert broker_2_limit(doc) == env.lowered, doc
        assert doc["layers"]["cluster"]["state"] == "loaded", doc["layers"]
        assert doc["source"]["persistence"] == "kafka-topic", doc["source"]
    # Nothing of it was written to a file of the sidecars'.
    for n in (1, 2, 3):
        assert "brokers" not in json.loads(env.policy_file(n).read_text())


def test_delete_returns_broker_2_to_the_file_value_on_all_three(env: Env):
    status, raw = curl_status_body("DELETE", env.url(2, "/v1/limits/brokers/2"), None, TOKEN)
    assert status == 200, raw
    doc = json.loads(raw)
    assert doc["persisted"] is True and "2" not in doc["policy"]["brokers"], doc
    wait_everywhere(env, [1, 2, 3], lambda d: broker_2_limit(d) == FILE_LIMIT, timeout=1.0)
    for n in (1, 2, 3):
        doc = env.policy(n)
        assert "2" not in doc["policy"]["brokers"], doc["policy"]
        assert env.broker(n, 2)["limit"] == FILE_LIMIT
    # Broker 2 has room again.
    topic = f"fits-again-{uuid.uuid4().hex[:8]}"
    clients.topics(f"{HOST}:{env.c.node(3).sidecar_port}", "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "3")
    env.c.wait_topic_healthy(topic)


def test_clearing_the_overrides_empties_the_cluster_layer(env: Env):
    status, raw = curl_status_body("PUT", env.url(3, "/v1/limits/default"),
                                   json.dumps({"max.broker.partitions": 1500}), TOKEN)
    assert status == 200, raw
    wait_everywhere(env, [1, 2, 3],
                    lambda d: d["policy"]["max.broker.partitions"] == 1500, timeout=1.0)
    status, raw = curl_status_body("DELETE", env.url(1, "/v1/policy/overrides"), None, TOKEN)
    assert status == 200, raw
    wait_everywhere(env, [1, 2, 3],
                    lambda d: d["policy"]["max.broker.partitions"] == FILE_LIMIT
                    and d["layers"]["cluster"]["overrides"] == {}, timeout=1.0)


def test_change_the_topic_cannot_take_is_503_and_changes_nothing(env: Env):
    # Last in the module: two brokers of three down, so no write reaches min.insync.replicas.
    before = env.policy(1)
    env.c.stop_node(2)
    env.c.stop_node(3)
    t0 = time.monotonic()
    status, raw = curl_status_body("PUT", env.url(1, "/v1/limits/brokers/1"),
                                   json.dumps({"max.broker.partitions": 7}), TOKEN)
    took = time.monotonic() - t0
    assert status == 503, raw
    assert "was not made" in json.loads(raw)["error"], raw
    assert took < 15, took
    after = env.policy(1)
    assert after["version"] == before["version"], (before["version"], after["version"])
    assert after["policy"] == before["policy"]
