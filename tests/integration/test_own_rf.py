"""kadmit's own topics reach RF = min(3, brokers) as brokers join (issue #27, item 3).

A real Kafka 4.4.0 cluster with a separate KRaft controller: only broker 1 runs at first, so the
sidecar in front of it creates `__kadmit_ledger` and `__kadmit_limits` with one replica. Brokers
2 and 3 then join with their sidecars; a sidecar's metadata client sees the topics short of
min(3, brokers) and sends AlterPartitionReassignments on its own connection to its broker, and
logs one line. The test reads the replicas from the brokers themselves (DIRECT listener).

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 760.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from admin_client import wait_ready  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster, port_base  # noqa: E402

OFFSET = 760
OWN = ("__kadmit_ledger", "__kadmit_limits")
RAISED = "raising the replication of kadmit's topic to min(3, brokers)"


def replicas(c: KafkaCluster, topic: str) -> list[list[int]]:
    t = kafka_wire.metadata(HOST, c.node(1).direct_port, topics=[topic])["topics"][0]
    if t["error"] != 0:
        return []
    return [p["replicas"] for p in t["partitions"]]


def wait_for(what: str, cond, timeout: float, diag=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what} not seen in {timeout} s: {diag()}"
        time.sleep(0.25)


def start_late(c: KafkaCluster, node_id: int, attempts: int = 3) -> None:
    """Starts a broker after the cluster has run a while. Its ports were not bound at the
    cluster's start, so an ephemeral port of the many client connections meanwhile can hold one
    for a moment (seen once: "Address already in use"); a broker that exits so is started
    again."""
    n = c.node(node_id)
    for attempt in range(attempts):
        c.start_node(node_id)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not n.proc.alive():
                break
            try:
                md = kafka_wire.metadata(HOST, n.direct_port, timeout=2.0)
                if any(b[0] == node_id for b in md["brokers"]):
                    return
            except (OSError, ConnectionError, ValueError):
                pass
            time.sleep(0.5)
        assert "Address already in use" in n.log.read_text(errors="replace"), \
            f"broker {node_id} did not start:\n" + n.log.read_text(errors="replace")[-3000:]
        time.sleep(2)
    raise AssertionError(f"broker {node_id} did not start in {attempts} attempts")


@pytest.fixture(scope="module")
def growing(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-own-rf-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET, heap="-Xms256m -Xmx512m",
                     controllers=1)
    sc = Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000,
                                  "metadata.refresh.interval.ms": 1000}))
    with own_cluster(d, c, sc, "own topics' replication", request):
        c.format()
        for n in c.controller_nodes:
            c._spawn(n, "-Xms128m -Xmx384m")
        c.start_node(1)
        yield c, sc, policy


def test_own_topics_reach_rf_3_as_brokers_join(growing):
    c, sc, policy = growing
    args = ("--policy", str(policy), "--ledger", "on")

    def one_broker() -> bool:
        try:
            return len(kafka_wire.metadata(HOST, c.node(1).direct_port, timeout=2.0)["brokers"]) == 1
        except (OSError, ConnectionError, ValueError):
            return False

    wait_for("broker 1 alone", one_broker, 120)
    sc[1].start(args=args)
    wait_ready(sc[1].node.admin_port, timeout=90)
    for t in OWN:
        assert [len(r) for r in replicas(c, t)] == [1] * len(replicas(c, t)) != [], (t, replicas(c, t))

    joined = time.monotonic()
    for node in (2, 3):
        start_late(c, node)
    c.wait_ready(120)
    sc[2].start(args=args)
    sc[3].start(args=args)

    def logs() -> str:
        return "".join(s.log.read_text(errors="replace") for s in sc.items if s.log.exists())

    wait_for("own topics at RF 3",
             lambda: all(replicas(c, t) and all(len(r) == 3 for r in replicas(c, t)) for t in OWN),
             120, lambda: {t: replicas(c, t) for t in OWN} | {"log": logs()[-3000:]})
    print(f"own topics at RF 3 {time.monotonic() - joined:.1f} s after brokers 2 and 3 started")
    for t in OWN:
        c.wait_topic_healthy(t, timeout=90)
        for r in replicas(c, t):
            assert sorted(r) == [1, 2, 3], (t, r)
    text = logs()
    lines = [line for line in text.splitlines() if RAISED in line]
    assert any("topic=__kadmit_ledger" in line for line in lines), lines
    assert any("topic=__kadmit_limits" in line for line in lines), lines
    # Brokers 2 and 3 may join one view apart: then 1 -> 2 -> 3 replicas, one line each.
    assert all("from_replicas=" in line and "to_replicas=" in line for line in lines), lines
    assert any("to_replicas=3" in line for line in lines), lines
    senders = {s.node.id for s in sc.items if s.log.exists() and RAISED in s.log.read_text()}
    print(f"{len(lines)} reassignments sent, by sidecars {sorted(senders)}")
    # The health check sees it too: no longer under-replicated.
    import urllib.request
    from kadmit_proc import parse_metrics

    def gauges() -> dict:
        with urllib.request.urlopen(f"http://{sc[1].admin}/metrics", timeout=5) as r:
            return parse_metrics(r.read().decode())
    wait_for("health sees RF 3", lambda: gauges().get("kadmit_ledger_topic_replicas") == 3
             and gauges().get("kadmit_ledger_topic_under_replicated") == 0, 30, gauges)
