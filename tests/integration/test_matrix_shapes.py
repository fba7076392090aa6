"""The cluster shapes of the broker matrix, on one cluster of the pinned Kafka.

A process.roles=controller node (id 4) and three process.roles=broker nodes on two racks (brokers 1 and 2 on rack "a", broker 3 on "b"),
each broker behind a sidecar. The controller is no broker, so Metadata's controller id names no
node a sidecar fronts; the metadata client and admission must work all the same. With racks (2)
>= RF (2), place mode must put each partition's replicas on distinct racks, and CreatePartitions
must keep that rack spread for the new partitions and continue the topic's leadership (each new
partition led by the broker of its replicas that leads the fewest of the topic's partitions).

Marked `matrix` (scripts/test.sh runs it in the matrix stage, a file per worker). Ports:
$KADMIT_TEST_PORT_BASE + 540.
"""

from __future__ import annotations

import collections
import gc
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base)
from test_matrix_brokers import REJECT, name, wait_view  # noqa: E402

pytestmark = pytest.mark.matrix

RACKS = ["a", "a", "b"]
TOPOLOGY_LIMIT = 60
TOPOLOGY_OFFSET = 540


@pytest.fixture(scope="module")
def shaped(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-topology-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + TOPOLOGY_OFFSET, heap="-Xms256m -Xmx512m",
                     controllers=1, racks=RACKS)
    sc = Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": TOPOLOGY_LIMIT,
                                  "metadata.refresh.before.decision.ms": 500}))
    with own_cluster(d, c, sc, "topology", request):
        c.start()
        sc.start(args=("--policy", str(policy)))
        wait_view(sc)
        yield c, sc
        gc.collect()


def assignment(c: KafkaCluster, topic: str) -> list[list[int]]:
    """Replicas per partition, leader first (Metadata lists the preferred leader first)."""
    t = kafka_wire.metadata(HOST, c.nodes[0].direct_port, topics=[topic])["topics"][0]
    assert t["error"] == 0, t
    return [p["replicas"] for p in sorted(t["partitions"], key=lambda p: p["index"])]


def rack_of(broker: int) -> str:
    return RACKS[broker - 1]


def test_separate_controllers_leave_metadata_and_admission_working(shaped):
    c, sc = shaped
    assert c.mode == "separate"
    md = kafka_wire.metadata(HOST, c.nodes[0].direct_port)
    assert sorted(b[0] for b in md["brokers"]) == [1, 2, 3]  # the controller is not a broker
    ok, big = name("sep-ok"), name("sep-big")
    res = clients.rdk_create_topics(c.bootstrap, [(ok, 3, 3), (big, 61, 3)])
    assert res[ok] == (0, None), res
    code, msg = res[big]
    assert code == 88 and msg.startswith(REJECT), res
    c.wait_topic_healthy(ok)
    logs = "".join(s.log.read_text(errors="replace") for s in sc.items)
    assert re.search(r"decision=partial reason=limit items=2 admitted=1 rejected=1", logs)


def test_place_mode_puts_each_partitions_replicas_on_distinct_racks(shaped):
    c, _ = shaped
    t = name("racks")
    assert clients.rdk_create_topics(c.bootstrap, [(t, 6, 2)])[t] == (0, None)
    c.wait_topic_healthy(t)
    rows = assignment(c, t)
    assert len(rows) == 6
    for row in rows:
        assert sorted(rack_of(b) for b in row) == ["a", "b"], rows


def grown_topic(c: KafkaCluster, before: int, after: int) -> list[list[int]]:
    """A topic created with `before` partitions (RF 2) then grown to `after`; its rows."""
    t = name("grow")
    assert clients.rdk_create_topics(c.bootstrap, [(t, before, 2)])[t] == (0, None)
    c.wait_topic_healthy(t)
    assert clients.rdk_create_partitions(c.bootstrap, {t: after})[t] == (0, None)
    deadline = time.monotonic() + 30
    while len(assignment(c, t)) < after:  # the broker's metadata shows new partitions a bit later
        assert time.monotonic() < deadline, assignment(c, t)
        time.sleep(0.2)
    c.wait_topic_healthy(t)
    return assignment(c, t)


def test_create_partitions_keeps_the_new_partitions_on_distinct_racks(shaped):
    c, _ = shaped
    rows = grown_topic(c, 4, 6)
    assert len(rows) == 6
    for row in rows:
        assert sorted(rack_of(b) for b in row) == ["a", "b"], rows
    # It continues the topic's leadership: each new partition is led by the broker of its
    # replicas that led the fewest of the topic's partitions before it.
    leads = collections.Counter(row[0] for row in rows[:4])
    for row in rows[4:]:
        assert all(leads[row[0]] <= leads[b] for b in row), (rows, leads)
        leads[row[0]] += 1
