"""kadmit's /metrics as Prometheus itself reads it: `promtool check metrics` lints the exposition
(naming conventions, types, help), then a real Prometheus server (Debian's `prometheus` package)
scrapes a sidecar in front of a 1-broker KRaft cluster, and the test asks Prometheus' HTTP API for
a counter (the rejected create) and for the decision-latency histogram.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 400; Prometheus listens on the sidecar's
admin port + 8.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, port_open, tail  # noqa: E402
from operator_fixtures import enforcing_cluster  # noqa: E402

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
PROM_PORT_OFFSET = 8
if PROMETHEUS is None or PROMTOOL is None:  # never a skip: CI installs them (scripts/deps.sh)
    raise RuntimeError("prometheus/promtool missing: run scripts/deps.sh")


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars, prom_port: int):
        self.d, self.c, self.sc, self.prom_port = d, c, sc, prom_port

    @property
    def admin_port(self) -> int:
        return self.c.node(1).admin_port

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://{HOST}:{self.admin_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def query(self, promql: str) -> list[dict]:
        url = (f"http://{HOST}:{self.prom_port}/api/v1/query?"
               + urllib.parse.urlencode({"query": promql}))
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def wait_query(self, promql: str, ok, timeout: float = 60.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if ok(result):
                return result
            assert time.monotonic() < deadline, f"{promql}: {result}"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def env(request):
    with enforcing_cluster(request, "prom", 400, {"max.broker.partitions": 60},
                           extra_ports=(PROM_PORT_OFFSET,),
                           sidecar_args=("--log-format", "json")) as (d, c, sc):
        prom_port = c.node(1).admin_port + PROM_PORT_OFFSET
        config = d / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: kadmit\n"
            f"    static_configs: [{{targets: ['{HOST}:{c.node(1).admin_port}']}}]\n")
        with open(d / "prometheus.log", "wb") as log:
            prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                                     f"--storage.tsdb.path={d / 'tsdb'}",
                                     f"--web.listen-address={HOST}:{prom_port}"],
                                    stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 60
                while not port_open(prom_port):
                    assert prom.poll() is None, tail(d / "prometheus.log")
                    assert time.monotonic() < deadline, "prometheus did not listen"
                    time.sleep(0.2)
                yield Env(d, c, sc, prom_port)
            finally:
                prom.terminate()
                prom.wait(timeout=30)


def test_metrics_pass_promtool_check(env: Env):
    # Decisions first, so the labelled families and the histogram have series to lint.
    clients.create_topic(env.c.bootstrap, "prom-ok", 3, 1)
    p = clients.topics(env.c.bootstrap, "--create", "--topic", "prom-too-big", "--partitions",
                       "100", "--replication-factor", "1", check=False)
    assert p.returncode != 0 and "max.broker.partitions" in clients.text(p), clients.text(p)
    text = env.scrape()
    for family in ("kadmit_admission_decisions_total", "kadmit_build_info",
                   "kadmit_admission_decision_duration_seconds_bucket",
                   "process_resident_memory_bytes", "process_cpu_seconds_total",
                   "process_open_fds", "process_start_time_seconds"):
        assert f"\n{family}" in text, family
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                          capture_output=True, timeout=30)
    assert lint.returncode == 0, (lint.stdout + lint.stderr).decode()
    # promtool is not a rubber stamp: a counter without _total is reported.
    bad = text.replace("kadmit_connections_accepted_total", "kadmit_connections_accepted")
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=bad.encode(),
                          capture_output=True, timeout=30)
    assert lint.returncode != 0 and b"_total" in lint.stdout + lint.stderr


def test_prometheus_scrapes_the_rejection_counter_and_the_latency_histogram(env: Env):
    env.wait_query('up{job="kadmit"}', lambda r: r and r[0]["value"][1] == "1")
    rejects = env.wait_query(
        'sum(kadmit_admission_decisions_total{api="CreateTopics",decision="reject",'
        'reason="limit"})', lambda r: r and float(r[0]["value"][1]) >= 1)
    assert float(rejects[0]["value"][1]) == 1, rejects
    count = env.wait_query(
        'kadmit_admission_decision_duration_seconds_count{api="CreateTopics"}',
        lambda r: r and float(r[0]["value"][1]) >= 2)
    assert float(count[0]["value"][1]) == 2, count
    # Both decisions took under 5 s (the last finite bucket), and a quantile is computable.
    inf = env.query('kadmit_admission_decision_duration_seconds_bucket'
                    '{api="CreateTopics",le="5"}')
    assert float(inf[0]["value"][1]) == 2, inf
    p50 = env.query('histogram_quantile(0.5, sum by (le) '
                    '(kadmit_admission_decision_duration_seconds_bucket{api="CreateTopics"}))')
    assert 0 < float(p50[0]["value"][1]) <= 5, p50
    build = env.query("kadmit_build_info")
    assert build and build[0]["metric"].get("version"), build


# The fields docs/logging.md promises on every admission decision event.
DECISION_FIELDS = {"ts", "level", "msg", "event", "api", "version", "correlation_id", "decision",
                   "reason", "items", "admitted", "rejected", "placed", "deferred_to_broker",
                   "audited", "mode", "duration_us", "message"}


def test_json_log_has_one_documented_event_per_decision(env: Env):
    text = env.scrape()
    decided = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith("kadmit_admission_decisions_total{"))
    lines = [json.loads(line) for line in env.sc[1].log.read_text().splitlines()
             if line.startswith("{")]
    assert lines and all({"ts", "level", "msg"} <= set(e) for e in lines), lines[:3]
    events = [e for e in lines if e.get("event") == "admission_decision"]
    assert len(events) == decided == 2, (decided, events)
    for e in events:
        assert set(e) == DECISION_FIELDS, sorted(set(e) ^ DECISION_FIELDS)
        assert e["msg"] == "admission decision" and e["mode"] == "enforce", e
        assert isinstance(e["duration_us"], int) and e["duration_us"] >= 0, e
    reject = next(e for e in events if e["decision"] == "reject")
    assert reject["reason"] == "limit" and reject["rejected"] == 1, reject
    assert reject["message"].startswith("Cannot satisfy request without exceeding"), reject
    # The doc lists exactly these fields.
    doc = (HERE.parents[1] / "docs" / "logging.md").read_text()
    assert all(f"`{f}`" in doc for f in DECISION_FIELDS), "docs/logging.md misses a field"
