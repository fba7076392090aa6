"""The admin HTTP API of the kadmit binary, over real HTTP (curl and urllib), in front of a real
3-broker KRaft cluster. Each sidecar runs with its own --policy file, --admin and
--admin-token-file; sidecars 1 and 2 persist API changes into their (writable) policy files,
sidecar 3 keeps them in a --state-file beside a read-only policy file, as with a ConfigMap.

The sidecars start before the brokers, so /readyz is seen answering 503 (the broker does not
accept connections) and /v1/admission 503 (no cluster view yet), then both 200 once the brokers
are up and the metadata client has built its first view. A limit lowered with
PUT /v1/limits/brokers/2 from curl is then enforced on the next kafka-topics --create that
needs broker 2 (error 88, KIP-578's message), and still after every sidecar restarted.
/metrics is read with prometheus_client's parser.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 200, so it can never collide with the
session cluster (+0) or the admission suite's (+100).
"""

from __future__ import annotations

import json
import stat
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from admin_client import (curl, curl_status_body, get_json, http, spawn_sidecar,  # noqa: E402
                          wait_ready)
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, port_base  # noqa: E402
from kafka_cluster import own_cluster, port_open, tail  # noqa: E402

import prometheus_client.parser as prometheus_parser  # noqa: E402  scripts/deps.sh installs it

TOKEN = "it-" + uuid.uuid4().hex
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
WILL_EXCEED = 88


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars, token_file: Path):
        self.d, self.c, self.sc, self.token_file = d, c, sc, token_file
        self.lowered: dict[int, int] = {}  # broker 2's limit as each sidecar set it

    def policy_file(self, node_id: int) -> Path:
        return self.d / f"policy-{node_id}" / "policy.json"

    def state_file(self, node_id: int) -> Path | None:
        return self.d / "state-3.json" if node_id == 3 else None

    def start_sidecar(self, node_id: int) -> None:
        state = self.state_file(node_id)
        extra = ["--state-file", str(state)] if state else []
        spawn_sidecar(self.sc[node_id], self.policy_file(node_id), self.token_file, *extra)

    def url(self, node_id: int, path: str) -> str:
        return f"http://{HOST}:{self.admin_port(node_id)}{path}"

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
    token_file = d / "admin.token"
    token_file.write_text(TOKEN + "\n")
    e = Env(d, c, sc, token_file)
    for n in c.nodes:
        path = e.policy_file(n.id)
        path.parent.mkdir()
        path.write_text(json.dumps({"max.broker.partitions": 1000,
                                    "metadata.refresh.interval.ms": 2000,
                                    "metadata.refresh.before.decision.ms": 1000}))
    # Sidecar 3's policy file is read-only, as a ConfigMap mount is (root could still write
    # it; --state-file is what keeps kadmit from trying).
    e.policy_file(3).chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    with own_cluster(d, c, sc, "admin integration", request):
        # The sidecars first: their brokers are not up yet.
        for n in c.nodes:
            e.start_sidecar(n.id)
        yield e


def test_readiness_and_admission_before_and_after_the_brokers_start(env: Env):
    port = env.admin_port(1)
    status, _, body = http(port, "GET", "/healthz")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    status, doc = get_json(port, "/readyz")
    assert status == 503, doc
    assert doc["error"].startswith("not ready: the broker at "), doc
    status, doc = get_json(port, "/v1/admission")
    assert status == 503, doc
    assert doc["error"].startswith("admission unhealthy: "), doc
    status, doc = get_json(port, "/v1/brokers")
    assert status == 503, doc

    env.c.start()
    deadline = time.monotonic() + 60
    for s in env.sc.items:
        while True:
            status, doc = get_json(env.admin_port(s.node.id), "/v1/admission")
            if status == 200:
                break
            assert s.proc.alive(), tail(s.log)
            assert time.monotonic() < deadline, f"kadmit {s.node.id} never ready: {doc}"
            time.sleep(0.2)
        assert doc == {"status": "healthy"}
        assert get_json(env.admin_port(s.node.id), "/readyz") == (200, {"status": "ready"})
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
    body = json.dumps({"max.broker.partitions": 5})
    url = env.url(1, "/v1/limits/brokers/2")
    # curl -i shows the headers: the challenge names the scheme.
    p = curl("-i", "-X", "PUT", "--data-binary", body, url)
    assert p.returncode == 0, p.stderr
    head = p.stdout.split("\r\n\r\n", 1)[0]
    assert head.startswith("HTTP/1.1 401"), p.stdout
    assert "WWW-Authenticate: Bearer" in head, head
    status, raw = curl_status_body("PUT", url, body, "wrong")
    assert status == 401, raw
    status, raw = curl_status_body("DELETE", url)
    assert status == 401, raw
    assert get_json(port, "/v1/policy")[1]["version"] == before


def test_malformed_json_is_400_with_a_json_message(env: Env):
    p = curl("-X", "PUT", "-H", f"Authorization: Bearer {TOKEN}", "--data-binary",
             '{"max.broker.partitions": ', "-w", "\n%{http_code} %{content_type}",
             env.url(1, "/v1/limits/brokers/2"))
    body, _, tail_ = p.stdout.rpartition("\n")
    code, ctype = tail_.split(" ", 1)
    assert code == "400", p.stdout
    assert ctype.startswith("application/json")
    doc = json.loads(body)
    assert "not valid JSON" in doc["error"], doc


def test_oversized_body_is_413(env: Env):
    big = env.d / "big.json"
    big.write_bytes(b'{"max.broker.partitions": 1, "pad": "' + b"x" * (2 << 20) + b'"}')
    status, raw = curl_status_body("PUT", env.url(1, "/v1/policy"), f"@{big}", TOKEN)
    assert status == 413, raw
    assert "error" in json.loads(raw)
    # The server still answers afterwards.
    assert http(env.admin_port(1), "GET", "/healthz")[0] == 200


def test_keep_alive_serves_two_requests_on_one_connection(env: Env):
    # One curl run, two URLs: curl reuses the connection when the server keeps it open.
    p = curl("-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
             env.url(1, "/healthz"), env.url(1, "/v1/policy"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["200 1", "200 0"], p.stdout
    assert "Re-using existing connection" in curl("-v", "-o", "/dev/null", "-o", "/dev/null",
                                                  env.url(1, "/healthz"),
                                                  env.url(1, "/readyz")).stderr


def test_lowered_broker_limit_rejects_the_next_create(env: Env):
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    # Every sidecar decides on its own, so the limit goes to all three, from curl.
    for s in env.sc.items:
        b2 = env.brokers(s.node.id)[2]
        full = b2["partitions"] + b2["reserved"]
        status, raw = curl_status_body("PUT", env.url(s.node.id, "/v1/limits/brokers/2"),
                                       json.dumps({"max.broker.partitions": full}), TOKEN)
        assert status == 200, raw
        doc = json.loads(raw)
        where = env.state_file(s.node.id) or env.policy_file(s.node.id)
        assert doc["persisted"] is True and doc["persisted_to"] == str(where), doc
        assert "warning" not in doc, doc
        assert doc["policy"]["brokers"]["2"]["max.broker.partitions"] == full, doc
        env.lowered[s.node.id] = full
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
    # The families of issue 5, with sane values.
    for fams in every:
        reloads = {s.labels["result"]: s.value for s in fams["kadmit_policy_reloads"].samples
                   if s.name.endswith("_total")}
        assert set(reloads) == {"ok", "unchanged", "invalid", "missing"}, reloads
        assert reloads["invalid"] == 0 and reloads["missing"] == 0, reloads
        assert fams["kadmit_policy_last_reload_success"].samples[0].value == 1
        info = fams["kadmit_policy_file_info"].samples
        assert len(info) == 1 and len(info[0].labels["hash"]) == 16, info
        assert fams["kadmit_policy_version"].samples[0].value >= 2  # the file, then the API
        age = fams["kadmit_cluster_view_age_seconds"].samples[0].value
        assert 0 <= age < 60, age
        assert fams["kadmit_connections_active"].type == "gauge"
        headroom = {s.labels["broker"]: s.value
                    for s in fams["kadmit_broker_headroom_partitions"].samples}
        assert headroom["2"] <= 0, headroom
    # Bytes forwarded in each direction, summed over the sidecars the clients used.
    for direction in ("client_to_broker", "broker_to_client"):
        assert sum(s.value for f in every for s in f["kadmit_forwarded_bytes"].samples
                   if s.labels.get("direction") == direction) > 0, direction
    # Sidecar 3's overrides are layered over its read-only file.
    assert every[2]["kadmit_policy_overrides_active"].samples[0].value == 1
    assert every[0]["kadmit_policy_overrides_active"].samples[0].value == 0


def test_lowered_limit_survives_a_restart_of_every_sidecar(env: Env):
    assert sorted(env.lowered) == [1, 2, 3], "runs after the limit was lowered"
    # Where each sidecar put it: sidecars 1 and 2 rewrote their policy files...
    for node_id in (1, 2):
        doc = json.loads(env.policy_file(node_id).read_text())
        assert doc["brokers"]["2"]["max.broker.partitions"] == env.lowered[node_id], doc
        assert doc["max.broker.partitions"] == 1000
    # ... sidecar 3 left its read-only file alone and wrote the state file.
    assert "brokers" not in json.loads(env.policy_file(3).read_text())
    state = json.loads(env.state_file(3).read_text())
    assert state["overrides"] == {"brokers": {"2": {"max.broker.partitions": env.lowered[3]}}}

    for s in env.sc.items:
        s.stop()
    for s in env.sc.items:
        env.start_sidecar(s.node.id)
    for s in env.sc.items:
        wait_ready(env.admin_port(s.node.id))
        status, doc = get_json(env.admin_port(s.node.id), "/v1/policy")
        assert doc["policy"]["brokers"]["2"]["max.broker.partitions"] == env.lowered[s.node.id]
        assert doc["source"]["persistence"] == ("state-file" if s.node.id == 3
                                                else "policy-file"), doc
        deadline = time.monotonic() + 30
        while sorted(env.brokers(s.node.id)) != [1, 2, 3]:
            assert time.monotonic() < deadline, env.brokers(s.node.id)
            time.sleep(0.2)
        b2 = env.brokers(s.node.id)[2]
        assert b2["limit"] == env.lowered[s.node.id] and b2["limit_source"] == "override", b2

    topic = f"after-restart-{uuid.uuid4().hex[:8]}"
    p = clients.topics(env.c.bootstrap, "--create", "--topic", topic, "--partitions", "1",
                       "--replication-factor", "3", check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and REJECT in out, out

    # Clearing sidecar 3's overrides returns it to its file's policy, and empties the state.
    status, raw = curl_status_body("DELETE", env.url(3, "/v1/policy/overrides"), None, TOKEN)
    assert status == 200, raw
    doc = json.loads(raw)
    assert doc["policy"]["brokers"] == {} and doc["persisted"] is True, doc
    assert json.loads(env.state_file(3).read_text())["overrides"] == {}
