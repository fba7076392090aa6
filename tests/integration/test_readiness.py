"""Readiness is about forwarding; admission health is a gauge and GET /v1/admission.

Its own 1-broker cluster on KADMIT_TEST_PORT_BASE + 600, and one sidecar with a policy whose
metadata client is pointed at a port where nothing listens (--metadata-upstream), so it never
has a cluster view. The test asserts that:
  - /readyz answers 200 while a real producer, a fetch and kcat go through the sidecar: the pod
    stays in the bootstrap Service although admission cannot decide;
  - kadmit_admission_healthy is 0 and /v1/admission answers 503 with the reason, and a
    CreateTopics is refused with a message (admission fails closed);
  - with the broker stopped, /readyz answers 503 naming the broker, and 200 again once it is
    back.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from kadmit_proc import Kadmit, one_sidecar_module  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402
from test_stall import create_topics_frame  # noqa: E402

OFFSET = 600
RECORDS = 2000


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_status(k: Kadmit, path: str, status: int, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        code, body = k.http(path)
        if code == status:
            return body
        assert time.monotonic() < deadline, f"{path}: {code} {body}\n" + k.log_text()[-2000:]
        time.sleep(0.2)


@pytest.fixture(scope="module")
def rd():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-ready-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + OFFSET)
    n = c.node(1)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000}))
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy), "--ledger", "off",
               "--metadata-upstream", f"{HOST}:{free_port()}")
    with one_sidecar_module(d, "readiness", c, k):
        k.start()
        yield c, k


def _produce_and_count(port: int, topic: str) -> int:
    """A real producer through the sidecar, then the records counted through it too."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": f"{HOST}:{port}", "acks": "all"})
    failed: list = []
    for i in range(RECORDS):
        p.produce(topic, b"r%06d" % i, on_delivery=lambda e, m: e is not None and failed.append(e))
    assert p.flush(30) == 0 and not failed, failed
    code, records = clients.fetch_records(port, topic, 0)
    assert code == 0 and b"r000000" in records
    return clients.wait_end_offsets_total(f"{HOST}:{port}", topic, RECORDS)


def test_ready_while_forwarding_without_a_cluster_view(rd):
    c, k = rd
    topic = "ready-data"
    clients.create_topic(c.direct_bootstrap, topic, 1, 1)
    wait_status(k, "/readyz", 200)
    code, why = k.http("/v1/admission")
    assert code == 503 and "metadata client" in why, (code, why)
    assert k.metric("kadmit_admission_healthy") == 0
    assert _produce_and_count(k.listen_port, topic) == RECORDS
    assert k.http("/readyz")[0] == 200  # still ready after the traffic
    # Admission fails closed meanwhile, with a message.
    with kafka_wire.Connection(HOST, k.listen_port) as conn:
        _, body = conn.call(create_topics_frame(1, "ready-refused", 1))
    r = kafka_wire.Reader(body)
    r.take(">i")  # throttle_time_ms
    (name, err, msg), = r.array(lambda: (r.string(), r.take(">h"), r.string()))
    assert name == "ready-refused" and err != 0 and "no view of the cluster" in (msg or ""), msg
    assert k.metric("kadmit_admission_healthy") == 0


def test_not_ready_while_the_broker_is_stopped(rd):
    c, k = rd
    wait_status(k, "/readyz", 200)
    c.stop_node(1)
    try:
        body = wait_status(k, "/readyz", 503, timeout=10)
        assert "broker at" in body and "does not accept connections" in body, body
    finally:
        c.start_node(1)
        c.wait_ready(90, nodes=[1])
    wait_status(k, "/readyz", 200, timeout=15)
