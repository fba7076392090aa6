"""The idle refresh mode against a real 1-broker KRaft cluster: a sidecar that judges no request
for metadata.refresh.idle.interval.ms refreshes its view at that interval instead of
metadata.refresh.interval.ms; the first request after idleness is judged against a view fetched
after it arrived, and the normal interval returns.

Its own cluster on KADMIT_TEST_PORT_BASE + 480 (one broker; node 1's ports). Short intervals:
refresh every 500 ms, idle every 6 s (after 6 s without a judged request).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from clients import create_topics_v5, parse_create_topics_v5  # noqa: E402
from kadmit_proc import parse_metrics  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecar, Sidecars, own_cluster, port_base  # noqa: E402

INTERVAL_MS = 500
IDLE_MS = 6000
HEADROOM = 20  # partitions the policy allows beyond what the broker hosts at start
OK = 'kadmit_metadata_refreshes_total{result="ok"}'


class Idle:
    def __init__(self, c: KafkaCluster, s: Sidecar, limit: int):
        self.c, self.s, self.limit = c, s, limit

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"http://{self.s.admin}/metrics", timeout=5) as r:
            values = parse_metrics(r.read().decode())
        assert "{" in name or name in values, f"{name} is not in /metrics"
        return values.get(name, 0.0)

    def log(self) -> str:
        return self.s.log.read_text(errors="replace")

    def refreshes(self) -> float:
        return self.metric(OK)

    def idle(self) -> float:
        return self.metric("kadmit_metadata_refresh_idle")

    def wait_idle(self, timeout: float = IDLE_MS / 1000 + 5) -> None:
        deadline = time.monotonic() + timeout
        while self.idle() != 1:
            assert time.monotonic() < deadline, "never idle:\n" + self.log()[-3000:]
            time.sleep(0.1)

    def rate(self, seconds: float) -> float:
        """Refreshes per second over the next `seconds`."""
        r0 = self.refreshes()
        time.sleep(seconds)
        return (self.refreshes() - r0) / seconds


def _partitions(port: int) -> int:
    md = kafka_wire.metadata(HOST, port, timeout=10)
    return sum(len(t["partitions"]) for t in md["topics"])


@pytest.fixture(scope="module")
def idle(request):
    d = Path(tempfile.mkdtemp(prefix="kadmit-idle-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + 480)
    sc = Sidecars(c)
    with own_cluster(d, c, sc, "refresh idle", request):
        c.start()
        limit = _partitions(c.node(1).direct_port) + HEADROOM
        policy = d / "policy.json"
        policy.write_text(json.dumps({"max.broker.partitions": limit,
                                      "metadata.refresh.interval.ms": INTERVAL_MS,
                                      "metadata.refresh.idle.interval.ms": IDLE_MS,
                                      "metadata.refresh.before.decision.ms": 200,
                                      "metadata.max.staleness.ms": 10000}))
        sc.start(args=("--policy", str(policy)))
        it = Idle(c, sc[1], limit)
        deadline = time.monotonic() + 30
        while it.refreshes() < 1:
            assert time.monotonic() < deadline, "no view:\n" + it.log()[-3000:]
            time.sleep(0.2)
        yield it


def _readyz(idle) -> int:
    try:
        with urllib.request.urlopen(f"http://{idle.s.admin}/readyz", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_idle_sidecar_refreshes_at_the_idle_interval(idle):
    idle.wait_idle()
    assert idle.log().count("metadata refresh idle") == 1
    rate = idle.rate(2 * IDLE_MS / 1000)
    # 1/6 per second idle, 2 per second at the normal interval.
    assert 0.5 * 1000 / IDLE_MS <= rate <= 2.5 * 1000 / IDLE_MS, rate
    # Idle is not stale: /readyz stays ready.
    assert _readyz(idle) == 200


def test_first_request_after_idleness_is_judged_against_a_fresh_view(idle):
    idle.wait_idle()
    n = idle.c.node(1)
    # Start right after an idle refresh: the next one is IDLE_MS away, so the view the request
    # finds was asked for before the topic below existed (a refresh sent after the create but
    # less than metadata.refresh.before.decision.ms before the request would let it through, and
    # rightly so).
    r_idle = idle.refreshes()
    deadline = time.monotonic() + IDLE_MS / 1000 + 5
    while idle.refreshes() == r_idle:
        assert time.monotonic() < deadline, "no idle refresh:\n" + idle.log()[-3000:]
        time.sleep(0.05)
    aligned = time.monotonic()
    # Created behind kadmit's back while it is idle: only a refresh after it shows it.
    with kafka_wire.Connection(HOST, n.direct_port, timeout=30) as conn:
        _, body = conn.call(create_topics_v5(1, [("behind-the-back", HEADROOM - 5, 1)]))
    assert parse_create_topics_v5(body)[0][1] == 0
    deadline = time.monotonic() + 20
    while "behind-the-back" not in [t["name"] for t in
                                    kafka_wire.metadata(HOST, n.direct_port)["topics"]]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # The view is older than metadata.refresh.before.decision.ms (200 ms) and predates the topic.
    time.sleep(max(0.0, aligned + 0.4 - time.monotonic()))
    r0 = idle.refreshes()
    assert r0 == r_idle + 1, "a refresh came between the create and the request"
    deferred0 = idle.metric("kadmit_admission_deferred_total")
    assert idle.idle() == 1
    # 10 more partitions fit the limit only if the view lacks the 15 created above.
    with kafka_wire.Connection(HOST, n.sidecar_port, timeout=30) as conn:
        _, body = conn.call(create_topics_v5(2, [("after-idle", 10, 1)]))
    name, code, msg = parse_create_topics_v5(body)[0]
    assert (name, code) == ("after-idle", 88), msg
    assert "max.broker.partitions" in (msg or ""), msg
    assert idle.metric("kadmit_admission_deferred_total") == deferred0 + 1
    assert idle.refreshes() > r0
    assert idle.idle() == 0


def test_normal_interval_returns_after_a_request(idle):
    # The request of the previous test (or this one's) ended idleness.
    with kafka_wire.Connection(HOST, idle.c.node(1).sidecar_port, timeout=30) as conn:
        _, body = conn.call(create_topics_v5(3, [("too-big", 1000, 1)]))
    assert parse_create_topics_v5(body)[0][1] == 88
    assert idle.idle() == 0
    rate = idle.rate(3)
    assert rate >= 0.5 * 1000 / INTERVAL_MS, rate
    assert idle.log().count("metadata refresh active again") >= 1
    # And idle again after another quiet spell, logged once more.
    idle.wait_idle()
    assert idle.log().count("metadata refresh idle") >= 2
