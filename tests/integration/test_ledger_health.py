"""The ledger's health tells the truth (issue #27): a real 3-broker cluster with a separate KRaft
controller and a sidecar per broker, `--ledger on`.

- Two of the three brokers stop: the ledger topic (RF 3, min.insync.replicas 2) keeps a leader
  but only one in-sync replica, so no acks=all append can succeed. /v1/admission, the metrics
  and the refusal of a create must say so (the create is refused, never forwarded unjudged),
  and everything recovers when the brokers return.
- A fatal error of the ledger's idempotent producer (provoked with librdkafka's own
  rd_kafka_test_fatal_error, through the test-only KADMIT_TEST_LEDGER_FATAL_AFTER_MS) makes the
  sidecar recreate the client, log it and count it; decisions work after, on the same state.

With a separate controller the quorum survives the stopped brokers, so the ISR really shrinks
(in combined mode the last broker could not even change it). Its own cluster on ports
$KADMIT_TEST_PORT_BASE + 700.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from admin_client import get_json, wait_ready  # noqa: E402
from kadmit_proc import parse_metrics  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster, port_base  # noqa: E402
from test_ledger_basic import POLICY_VIOLATION_CODES, create_topics_v2, parse_create_topics_v2  # noqa: E402

OFFSET = 700
LEDGER = "__kadmit_ledger"
TIMEOUT_MS = 2000


def sidecar_args(policy: Path) -> tuple:
    return ("--policy", str(policy), "--ledger", "on", "--ledger-timeout-ms", str(TIMEOUT_MS))


def metrics(sc, node_id: int) -> dict[str, float]:
    import urllib.request
    with urllib.request.urlopen(f"http://{sc[node_id].admin}/metrics", timeout=5) as r:
        return parse_metrics(r.read().decode())


def admission(sc, node_id: int) -> tuple[int, dict]:
    return get_json(sc[node_id].node.admin_port, "/v1/admission")


def log_text(sc, node_id: int) -> str:
    try:
        return sc[node_id].log.read_text(errors="replace")
    except OSError:
        return ""


def wait_for(what: str, cond, timeout: float, diag=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return
        assert time.monotonic() < deadline, f"{what} not seen in {timeout} s: {diag()}"
        time.sleep(0.2)


def create(sc, node_id: int, topic: str, partitions: int = 1, rf: int = 1):
    with kafka_wire.Connection(HOST, sc[node_id].node.sidecar_port, 30.0) as conn:
        _, body = conn.call(create_topics_v2(1, topic, partitions, rf))
        return parse_create_topics_v2(body)


def create_admitted(sc, node_id: int, prefix: str, attempts: int = 5):
    """A create right after a recovery: the ledger's producer may still be reconnecting (its
    first append can time out, which the refusal says, "Retry shortly"), so retry like a client."""
    for i in range(attempts):
        name, code, msg = create(sc, node_id, f"{prefix}-{uuid.uuid4().hex[:6]}")
        if code == 0:
            return i
        assert code in POLICY_VIOLATION_CODES and "admission ledger" in (msg or ""), (code, msg)
        time.sleep(2)
    raise AssertionError(f"no create admitted in {attempts} attempts: {msg}")


def topic_exists(c: KafkaCluster, topic: str) -> bool:
    md = kafka_wire.metadata(HOST, c.node(1).direct_port, topics=[topic])
    return md["topics"][0]["error"] == 0


@pytest.fixture(scope="module")
def healthc(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-health-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET, heap="-Xms256m -Xmx512m",
                     controllers=1)
    sc = Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000,
                                  "metadata.refresh.before.decision.ms": 500}))
    with own_cluster(d, c, sc, "ledger health", request):
        c.start()
        sc.start(args=sidecar_args(policy))
        for s in sc.items:
            wait_ready(s.node.admin_port, timeout=90)
        c.wait_topic_healthy(LEDGER)
        yield c, sc, policy


def test_a_healthy_ledger_reports_its_figures(healthc):
    c, sc, _ = healthc
    wait_for("ledger topic checked", lambda: metrics(sc, 1).get("kadmit_ledger_topic_isr") == 3,
             15, lambda: admission(sc, 1))
    status, doc = admission(sc, 1)
    assert status == 200, doc
    led = doc["ledger"]
    assert led["usable"] is True, doc
    assert led["topic"]["replicas"] == 3 and led["topic"]["isr"] == 3, doc
    assert led["topic"]["under_replicated"] is False and led["topic"]["unavailable"] is False
    assert led["topic"]["state"].startswith("ok:"), doc
    assert led["producer"]["fatal"] is False and led["consumer"]["error"] is False, doc
    m = metrics(sc, 1)
    assert m["kadmit_ledger_usable"] == 1 and m["kadmit_admission_healthy"] == 1, m
    assert m["kadmit_ledger_topic_unavailable"] == 0, m
    name, code, msg = create(sc, 1, f"health-ok-{uuid.uuid4().hex[:6]}")
    assert code == 0, (code, msg)


def test_ledger_without_enough_in_sync_replicas_refuses_then_recovers(healthc):
    c, sc, _ = healthc
    for node in (2, 3):
        c.stop_node(node)
    stopped = time.monotonic()
    try:
        # The sidecar in front of the broker that stays: its ledger topic is unwritable.
        wait_for("ledger topic unavailable",
                 lambda: metrics(sc, 1).get("kadmit_ledger_topic_unavailable") == 1, 30,
                 lambda: admission(sc, 1))
        print(f"ledger topic unavailable {time.monotonic() - stopped:.1f} s after the brokers stopped")
        status, doc = admission(sc, 1)
        assert status == 503, doc
        assert "admission ledger" in doc["error"] and "unavailable" in doc["error"], doc
        led = doc["ledger"]
        assert led["usable"] is False and led["topic"]["unavailable"] is True, doc
        assert led["topic"]["isr"] == 1 and led["topic"]["under_replicated"] is True, doc
        assert "min.insync.replicas" in led["topic"]["state"], doc
        m = metrics(sc, 1)
        assert m["kadmit_ledger_usable"] == 0 and m["kadmit_admission_healthy"] == 0, m
        assert m["kadmit_ledger_topic_isr"] == 1, m

        # A create is refused at once, with the reason, and the topic is not created.
        topic = f"health-down-{uuid.uuid4().hex[:6]}"
        t0 = time.monotonic()
        name, code, msg = create(sc, 1, topic)
        took = time.monotonic() - t0
        assert code in POLICY_VIOLATION_CODES, (code, msg)
        assert "admission ledger" in (msg or "") and "unavailable" in (msg or ""), msg
        assert took < TIMEOUT_MS / 1000, f"refusal took {took:.1f} s: it waited for the ledger"
        print(f"create refused in {took * 1000:.0f} ms: {msg}")
        assert not topic_exists(c, topic)
    finally:
        for node in (2, 3):
            c.start_node(node)
    started = time.monotonic()
    c.wait_ready(120)
    c.wait_topic_healthy(LEDGER, timeout=90)
    wait_for("ledger usable again", lambda: admission(sc, 1)[0] == 200, 60,
             lambda: admission(sc, 1))
    print(f"usable again {time.monotonic() - started:.1f} s after the brokers were started")
    # The sidecar's topic check runs every 2 s: it follows the brokers' own view.
    wait_for("ISR 3 in /v1/admission", lambda: admission(sc, 1)[1]["ledger"]["topic"]["isr"] == 3,
             15, lambda: admission(sc, 1))
    status, doc = admission(sc, 1)
    assert doc["ledger"]["usable"] is True and doc["ledger"]["topic"]["unavailable"] is False, doc
    log = log_text(sc, 1)
    assert 'kadmit topic health topic=__kadmit_ledger state="unavailable: 1 in-sync' in log, log
    assert 'kadmit topic health topic=__kadmit_ledger state="ok: replicas 3, in sync 3' in log
    retries = create_admitted(sc, 1, "health-back")
    print(f"a create admitted after the recovery, {retries} refusals first")


def test_fatal_producer_error_recreates_the_client(healthc, monkeypatch):
    c, sc, policy = healthc
    monkeypatch.setenv("KADMIT_TEST_LEDGER_FATAL_AFTER_MS", "3000")
    sc[2].stop()
    start = sc[2].log.stat().st_size if sc[2].log.exists() else 0
    sc[2].start(args=sidecar_args(policy))
    wait_for("client recreated",
             lambda: metrics(sc, 2).get("kadmit_ledger_client_recreated_total", 0) >= 1, 60,
             lambda: log_text(sc, 2)[start:][-3000:])
    text = log_text(sc, 2)[start:]
    assert "test hook armed" in text
    assert "ledger producer hit a fatal error" in text, text[-3000:]
    assert "ledger client recreated after a fatal error" in text, text[-3000:]
    wait_for("delivering again", lambda: "ledger producer recreated and delivering" in
             log_text(sc, 2)[start:], 30, lambda: log_text(sc, 2)[start:][-3000:])
    wait_ready(sc[2].node.admin_port, timeout=30)
    stamps = {}
    for line in log_text(sc, 2)[start:].splitlines():
        for key in ("ledger producer hit a fatal error", "ledger producer recreated and delivering"):
            if key in line and key not in stamps:
                stamps[key] = datetime.fromisoformat(line.split()[0].replace("Z", "+00:00"))
    if len(stamps) == 2:
        gap = stamps["ledger producer recreated and delivering"] - stamps["ledger producer hit a fatal error"]
        print(f"fatal error to the new client delivering: {gap.total_seconds() * 1000:.0f} ms")
    # The gauges follow at the ledger's next tick (50 ms).
    wait_for("usable gauge", lambda: metrics(sc, 2)["kadmit_ledger_usable"] == 1, 10,
             lambda: (admission(sc, 2), {k: v for k, v in metrics(sc, 2).items() if "ledger" in k}))
    m = metrics(sc, 2)
    assert m["kadmit_ledger_client_recreated_total"] == 1, m
    assert m["kadmit_ledger_producer_fatal"] == 0, m
    status, doc = admission(sc, 2)
    assert status == 200 and doc["ledger"]["producer"]["recreated_total"] == 1, doc
    assert "fatal" in doc["ledger"]["producer"]["last_error"], doc
    # Decisions go through the recreated client: admitted and read back in ledger order.
    rt = m.get("kadmit_ledger_round_trip_seconds_count", 0)
    create_admitted(sc, 2, "health-fatal")
    assert metrics(sc, 2)["kadmit_ledger_round_trip_seconds_count"] >= rt + 1
    # And the limits still hold: over the limit is refused on this sidecar's state.
    counts = {}
    md = kafka_wire.metadata(HOST, c.node(1).direct_port)
    for t in md["topics"]:
        for p in t["partitions"]:
            for r in p["replicas"]:
                counts[r] = counts.get(r, 0) + 1
    tight = max(counts.values()) + 1
    policy.write_text(json.dumps({"max.broker.partitions": tight,
                                  "metadata.refresh.before.decision.ms": 500}))
    wait_for("policy reloaded", lambda: log_text(sc, 2)[start:].count("policy reloaded") >= 1, 20)
    name, code, msg = create(sc, 2, f"health-over-{uuid.uuid4().hex[:6]}", partitions=10, rf=3)
    assert code in POLICY_VIOLATION_CODES, (code, msg)
    assert not sc[2].problems(), sc[2].problems()
