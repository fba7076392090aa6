"""The admin HTTP API of the kadmit binary, over real HTTP (urllib), in front of a real 3-broker
KRaft cluster. Each sidecar runs with --policy, --admin and --admin-token-file.

The sidecars start before the brokers, so /readyz is seen answering 503 (no cluster view yet)
and then 200 once the metadata client has built its first view. A limit lowered with
PUT /v1/limits/brokers/2 is then enforced on the next kafka-topics --create that needs
broker 2 (error 88, KIP-578's message), and /metrics is read with prometheus_client's parser.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 200, so it can never collide with the
session cluster (+0) or the admission suite's (+100).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin, port_base,  # noqa: E402
                           port_open, tail)

prometheus_parser = pytest.importorskip(
    "prometheus_client.parser", reason="prometheus-client is missing: run scripts/deps.sh")

TOKEN = "it-" + uuid.uuid4().hex
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
WILL_EXCEED = 88


def http(port: int, method: str, path: str, body: bytes | None = None,
         token: str | None = None, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request; error statuses are returned, not raised."""
    req = urllib.request.Request(f"http://{HOST}:{port}{path}", data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(port: int, path: str) -> tuple[int, dict]:
    status, _, body = http(port, "GET", path)
    return status, json.loads(body)


class Env:
    def __init__(self, c: KafkaCluster, sc: Sidecars):
        self.c, self.sc = c, sc

    def admin_port(self, node_id: int) -> int:
        return self.c.node(node_id).admin_port

    def brokers(self, node_id: int) -> dict[int, dict]:
        status, doc = get_json(self.admin_port(node_id), "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    d = Path(tempfile.mkdtemp(prefix="kadmit-admin-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 200)
    sc = Sidecars(c, binary)
    for n in c.nodes:
        for port in (n.sidecar_port, n.admin_port, n.client_port):
            if port_open(port):
                pytest.fail(f"port {port} is already in use (set KADMIT_TEST_PORT_BASE)",
                            pytrace=False)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 1000,
                                  "metadata.refresh.interval.ms": 2000,
                                  "metadata.refresh.before.decision.ms": 1000}))
    token_file = d / "admin.token"
    token_file.write_text(TOKEN + "\n")
    failed = True
    try:
        # The sidecars first: their brokers are not up yet.
        for s in sc.items:
            e = dict(os.environ)
            e.pop("KADMIT_ADMIN_TOKEN", None)
            e.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
            e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream,
                          "--policy", str(policy), "--admin", s.admin,
                          "--admin-token-file", str(token_file), "--log-level", "info"], env=e)
        deadline = time.monotonic() + 15
        for s in sc.items:
            while not port_open(s.node.admin_port):
                assert s.proc.alive(), f"kadmit {s.node.id} exited:\n{tail(s.log)}"
                assert time.monotonic() < deadline, f"kadmit {s.node.id}: no admin port"
                time.sleep(0.05)
        failures_before = request.session.testsfailed
        yield Env(c, sc)
        failed = request.session.testsfailed > failures_before
    finally:
        sc.stop()
        c.stop()
        problems = [p for s in sc.items for p in s.problems(expect_alive=False)]
        if problems or failed:
            sys.stderr.write(f"\nadmin integration: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)
        assert not problems, "kadmit sidecar problems:\n" + "\n".join(problems)


def test_readyz_before_and_after_the_first_cluster_view(env: Env):
    port = env.admin_port(1)
    status, _, body = http(port, "GET", "/healthz")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    status, doc = get_json(port, "/readyz")
    assert status == 503, doc
    assert doc["error"].startswith("not ready: "), doc
    status, doc = get_json(port, "/v1/brokers")
    assert status == 503, doc

    env.c.start()
    deadline = time.monotonic() + 60
    for s in env.sc.items:
        while True:
            status, doc = get_json(env.admin_port(s.node.id), "/readyz")
            if status == 200:
                break
            assert s.proc.alive(), tail(s.log)
            assert time.monotonic() < deadline, f"kadmit {s.node.id} never ready: {doc}"
            time.sleep(0.2)
        assert doc == {"status": "ready"}
    status, _, _ = http(port, "GET", "/healthz")
    assert status == 200
    # Ready means a fresh cluster view exists, not that every broker had
    # registered when it was taken: wait for the views to list all three.
    for s in env.sc.items:
        while sorted(env.brokers(s.node.id)) != [1, 2, 3]:
            assert time.monotonic() < deadline, f"kadmit {s.node.id}: {env.brokers(s.node.id)}"
            time.sleep(0.2)


def test_brokers_show_partitions_limit_headroom(env: Env):
    brokers = env.brokers(1)
    assert sorted(brokers) == [1, 2, 3]
    for b in brokers.values():
        for key in ("id", "partitions", "limit", "headroom"):
            assert key in b, b
        assert b["limit"] == 1000
        assert b["headroom"] == b["limit"] - b["partitions"] - b["reserved"]


def test_mutations_need_the_token(env: Env):
    port = env.admin_port(1)
    before = get_json(port, "/v1/policy")[1]["version"]
    body = json.dumps({"max.broker.partitions": 5}).encode()
    status, headers, raw = http(port, "PUT", "/v1/limits/brokers/2", body)
    assert status == 401, raw
    assert headers.get("WWW-Authenticate", "").startswith("Bearer"), headers
    status, _, raw = http(port, "PUT", "/v1/limits/brokers/2", body, token="wrong")
    assert status == 401, raw
    assert get_json(port, "/v1/policy")[1]["version"] == before


def test_malformed_json_is_400_with_a_json_message(env: Env):
    status, headers, raw = http(env.admin_port(1), "PUT", "/v1/limits/brokers/2",
                                b'{"max.broker.partitions": ', token=TOKEN)
    assert status == 400, raw
    assert headers.get("Content-Type", "").startswith("application/json")
    doc = json.loads(raw)
    assert isinstance(doc["error"], str) and doc["error"], doc


def test_oversized_body_is_413(env: Env):
    big = b'{"max.broker.partitions": 1, "pad": "' + b"x" * (2 << 20) + b'"}'
    try:
        status, _, raw = http(env.admin_port(1), "PUT", "/v1/policy", big, token=TOKEN)
    except (ConnectionResetError, BrokenPipeError) as e:  # pragma: no cover - diagnostic
        pytest.fail(f"connection cut instead of a 413: {e!r}")
    assert status == 413, raw
    assert "error" in json.loads(raw)
    # The server still answers afterwards.
    assert http(env.admin_port(1), "GET", "/healthz")[0] == 200


def test_lowered_broker_limit_rejects_the_next_create(env: Env):
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    # Every sidecar decides on its own, so the limit goes to all three.
    for s in env.sc.items:
        b2 = env.brokers(s.node.id)[2]
        full = b2["partitions"] + b2["reserved"]
        status, _, raw = http(env.admin_port(s.node.id), "PUT", "/v1/limits/brokers/2",
                              json.dumps({"max.broker.partitions": full}).encode(), token=TOKEN)
        assert status == 200, raw
        doc = json.loads(raw)
        assert doc["persisted"] is False and "not saved" in doc["warning"], doc
        assert doc["policy"]["brokers"]["2"]["max.broker.partitions"] == full, doc
        b2 = env.brokers(s.node.id)[2]
        assert b2["limit"] == full and b2["limit_source"] == "override" and b2["headroom"] <= 0

    topic = f"needs-broker-2-{uuid.uuid4().hex[:8]}"
    p = clients.topics(env.c.bootstrap, "--create", "--topic", topic, "--partitions", "1",
                       "--replication-factor", "3", check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0, out
    assert REJECT in out, out

    # The same through librdkafka, to see the error code itself.
    a = AdminClient({"bootstrap.servers": env.c.bootstrap})
    fut = a.create_topics([NewTopic(topic, 1, 3)], request_timeout=30)[topic]
    with pytest.raises(confluent_kafka.KafkaException) as e:
        fut.result(timeout=60)
    assert e.value.args[0].code() == WILL_EXCEED, e.value.args[0]

    # Broker 1 and 3 still have room: a topic on them alone is admitted.
    ok = f"avoids-broker-2-{uuid.uuid4().hex[:8]}"
    clients.topics(env.c.bootstrap, "--create", "--topic", ok, "--replica-assignment", "1:3")
    env.c.wait_topic_healthy(ok)


def metric_families(port: int) -> dict:
    status, headers, raw = http(port, "GET", "/metrics")
    assert status == 200
    assert headers.get("Content-Type", "").startswith("text/plain")
    return {f.name: f for f in prometheus_parser.text_string_to_metric_families(raw.decode())}


def test_metrics_parse_with_prometheus_client(env: Env):
    every = [metric_families(env.admin_port(s.node.id)) for s in env.sc.items]
    families = every[0]
    # Per broker (labelled by broker id) ...
    for name in ("kadmit_broker_partitions", "kadmit_broker_partitions_limit",
                 "kadmit_broker_headroom_partitions"):
        assert name in families, sorted(families)
        assert {s.labels.get("broker") for s in families[name].samples} == {"1", "2", "3"}
    # ... and the admission counters (prometheus_client drops a counter's _total suffix).
    # The rejected creates went through whichever sidecar fronts the controller.
    rejects = 0.0
    for fams in every:
        decisions = fams.get("kadmit_admission_decisions")
        if decisions is None:
            continue
        assert decisions.type == "counter", decisions
        rejects += sum(s.value for s in decisions.samples
                       if s.name.endswith("_total") and s.labels.get("decision") == "reject")
    assert rejects >= 2, [sorted(f) for f in every]
    assert "kadmit_policy_version" in families
    assert "kadmit_connections_accepted" in families
