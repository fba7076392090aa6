"""The broker matrix: a short smoke through kadmit against every Kafka line an operator runs.

One 1-broker cluster per entry of tests/kafka/versions.txt (the newest patch of 3.6 to 4.4 in
KRaft mode, and 3.9 with ZooKeeper as well), each with a kadmit sidecar whose policy leaves
room for 6 replicas. On each cluster, in order:

  admitted     CreateTopics for 3 partitions (librdkafka's admin API) succeeds
  rejected     CreateTopics for 10 partitions fails with error 88 and KIP-578's message
  forwarded    100 records produced and consumed back (kcat) through the sidecar
  auto-create  a produce to a new topic (num.partitions=1) creates it; once the broker is at its
               limit, the next one is denied and logged, and the topic does not exist

The cluster shapes (separate controllers, racks) are in test_matrix_shapes.py.

The full suite runs on the pin (tests/kafka/pom.xml) only. Marked `matrix`: scripts/test.sh runs
these in their own stage. Ports: $KADMIT_TEST_PORT_BASE + 400 + 10 x (entry index).
"""

from __future__ import annotations

import gc
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
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base)

import confluent_kafka  # noqa: E402,F401  scripts/deps.sh installs it

pytestmark = pytest.mark.matrix

REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
WILL_EXCEED = 88
LIMIT = 6
VERSIONS_FILE = HERE.parent / "kafka" / "versions.txt"
OFFSET = 400


def matrix_entries() -> list[tuple[str, str]]:
    """(version, mode) for every line of tests/kafka/versions.txt."""
    out = []
    for line in VERSIONS_FILE.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            out += [(words[0], mode) for mode in (words[1:] or ["kraft"])]
    return out


ENTRIES = matrix_entries()


def replicas_on_broker(c: KafkaCluster) -> int:
    md = kafka_wire.metadata(HOST, c.nodes[0].direct_port)
    return sum(len(p["replicas"]) for t in md["topics"] for p in t["partitions"])


def topic_exists(c: KafkaCluster, topic: str) -> bool:
    return kafka_wire.metadata(HOST, c.nodes[0].direct_port, topics=[topic])["topics"][0]["error"] == 0


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_view(sc: Sidecars, timeout: float = 30.0) -> None:
    """Every sidecar has built its first cluster view."""
    deadline = time.monotonic() + timeout
    while not all("cluster view refreshed" in s.log.read_text(errors="replace") for s in sc.items):
        assert time.monotonic() < deadline, "no cluster view:\n" + sc.diagnostics()
        time.sleep(0.1)


def kcat_produce(bootstrap: str, topic: str, values: list[str],
                 timeout_ms: int = 8000) -> "clients.subprocess.CompletedProcess":
    return clients.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-X", f"message.timeout.ms={timeout_ms}",
                        "-X", "topic.metadata.refresh.interval.ms=1000"],
                       input_="".join(v + "\n" for v in values).encode(), check=False, timeout=60)


@pytest.fixture(params=ENTRIES, ids=[f"{v}-{m}" for v, m in ENTRIES])
def broker(request):
    version, mode = request.param
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix=f"kadmit-matrix-{version}-{mode}-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + OFFSET + 10 * ENTRIES.index(request.param),
                     heap="-Xms256m -Xmx512m", version=version, zookeeper=(mode == "zk"))
    sc = Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": LIMIT,
                                  "metadata.refresh.before.decision.ms": 500}))
    with own_cluster(d, c, sc, f"matrix {version} {mode}", request):
        t0 = time.monotonic()
        c.start()
        sys.stderr.write(f"\nmatrix {version} {mode}: cluster ready in {time.monotonic() - t0:.1f}s\n")
        sc.start(args=("--policy", str(policy)))
        wait_view(sc)
        yield c, sc
        gc.collect()  # the admin clients, before their brokers go away


def test_broker_version_forwards_admits_rejects_and_judges_auto_create(broker):
    c, sc = broker
    bootstrap = c.bootstrap
    tag = uuid.uuid4().hex[:6]
    assert replicas_on_broker(c) == 0

    admitted = f"admitted-{tag}"
    res = clients.rdk_create_topics(bootstrap, [(admitted, 3, 1)])
    assert res[admitted] == (0, None), res
    c.wait_topic_healthy(admitted)

    rejected = f"rejected-{tag}"
    code, msg = clients.rdk_create_topics(bootstrap, [(rejected, 10, 1)])[rejected]
    assert code == WILL_EXCEED, (code, msg)
    assert msg and msg.startswith(REJECT), msg
    assert "1 (limit 6, current 3, projected 13)" in msg, msg
    assert not topic_exists(c, rejected)

    values = [f"{c.version}-{i:04d}" for i in range(100)]
    p = kcat_produce(bootstrap, admitted, values)
    assert p.returncode == 0 and b"ERROR" not in p.stderr, p.stderr
    out = c.dir / "consumed.txt"
    clients.kcat_consume_to_file(bootstrap, admitted, out)
    assert sorted(out.read_text().split()) == values

    auto_ok = f"auto-ok-{tag}"
    p = kcat_produce(bootstrap, auto_ok, ["hello"])
    assert p.returncode == 0 and b"ERROR" not in p.stderr, p.stderr
    assert topic_exists(c, auto_ok)

    filler = f"filler-{tag}"  # 3 + 1 + 2 = the limit of 6
    assert clients.rdk_create_topics(bootstrap, [(filler, 2, 1)])[filler] == (0, None)
    c.wait_topic_healthy(filler)
    denied = f"auto-no-{tag}"
    kcat_produce(bootstrap, denied, ["nope"], timeout_ms=3000)  # it can only time out
    assert not topic_exists(c, denied)
    logs = sc[1].log.read_text(errors="replace")
    assert "auto-creation denied" in logs, logs[-3000:]
    assert re.search(r"decision=reject reason=limit", logs)
    assert replicas_on_broker(c) == LIMIT
