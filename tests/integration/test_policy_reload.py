"""Hot reload of the policy file, in front of a real 1-broker KRaft cluster.

kadmit watches the policy file's directory. These tests replace the file the three ways
operators do (a Kubernetes ConfigMap's `..data` symlink swap, an editor's atomic rename, delete
and recreate), send SIGHUP with the watcher off, and write an invalid file. Each change must
govern the next CreateTopics decision (librdkafka's admin API with validate_only, and Kafka's
own kafka-topics), and an invalid file must leave the old policy in force while the log, the
API and /metrics say so. The time from a write to the policy being in force is measured and
printed (run with -rA or -s to see it).

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 130.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from admin_client import (get_json, http, policy_version, spawn_sidecar,  # noqa: E402
                          wait_policy_version_above, wait_ready)
from kafka_cluster import (KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open)

import prometheus_client.parser as prometheus_parser  # noqa: E402  (scripts/deps.sh)
import confluent_kafka  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

PORT_OFFSET = 130
TOKEN = "it-" + uuid.uuid4().hex
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
WILL_EXCEED = 88
HIGH = 100000
ROUNDS = 5


def policy_doc(limit: int) -> dict:
    return {"max.broker.partitions": limit, "metadata.refresh.interval.ms": 2000,
            "metadata.refresh.before.decision.ms": 1000}


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars, token_file: Path):
        self.d, self.c, self.sc, self.token_file = d, c, sc, token_file
        self.dir = d / "config"            # the watched directory (a ConfigMap mount's layout)
        self.path = self.dir / "policy.json"
        self.port = c.node(1).admin_port
        self._admin = None
        self.generation = 0

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:  # once the cluster is up, so librdkafka logs no refused connects
            self._admin = AdminClient({"bootstrap.servers": self.c.bootstrap})
        return self._admin

    @property
    def sidecar(self):
        return self.sc[1]

    # -- the three ways to replace the file
    def configmap_swap(self, doc: dict) -> None:
        """What kubelet does: a new timestamped dir, a new ..data link renamed over the old."""
        self.generation += 1
        new = self.dir / f"..2026_11_29_{self.generation:04d}"
        new.mkdir()
        (new / "policy.json").write_text(json.dumps(doc))
        old = os.readlink(self.dir / "..data") if (self.dir / "..data").is_symlink() else None
        os.symlink(new.name, self.dir / "..data_tmp")
        os.replace(self.dir / "..data_tmp", self.dir / "..data")
        if old is not None:
            shutil.rmtree(self.dir / old)

    def editor_write(self, doc: dict | str) -> None:
        """An editor's save: a temporary file renamed over the name."""
        tmp = self.dir / ".policy.json.swp"
        tmp.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        os.replace(tmp, self.path)

    # -- what the broker's sidecar decides
    def full_limit(self) -> int:
        status, doc = get_json(self.port, "/v1/brokers")
        assert status == 200, doc
        b = {x["id"]: x for x in doc["brokers"]}[1]
        return b["partitions"] + b["reserved"]

    def create_rejected(self) -> bool:
        """A validate-only CreateTopics of one partition: rejected with 88, or admitted."""
        name = f"probe-{uuid.uuid4().hex[:8]}"
        fut = self.admin.create_topics([NewTopic(name, 1, 1)], validate_only=True,
                                       request_timeout=15)[name]
        try:
            fut.result(timeout=30)
            return False
        except confluent_kafka.KafkaException as e:
            err = e.args[0]
            assert err.code() == WILL_EXCEED, err
            assert REJECT in err.str(), err
            return True

    def metrics(self) -> dict:
        status, headers, raw = http(self.port, "GET", "/metrics")
        assert status == 200
        return {f.name: f for f in prometheus_parser.text_string_to_metric_families(raw.decode())}

    def reloads(self, result: str) -> float:
        fam = self.metrics()["kadmit_policy_reloads"]
        return sum(s.value for s in fam.samples
                   if s.name.endswith("_total") and s.labels.get("result") == result)

    def limit_in_force(self) -> int:
        status, doc = get_json(self.port, "/v1/policy")
        return doc["policy"]["max.broker.partitions"]


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    d = Path(tempfile.mkdtemp(prefix="kadmit-reload-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + PORT_OFFSET)
    sc = Sidecars(c, binary)
    n = c.node(1)
    for port in (n.sidecar_port, n.admin_port, n.client_port):
        if port_open(port):
            pytest.fail(f"port {port} is already in use (set KADMIT_TEST_PORT_BASE)",
                        pytrace=False)
    token_file = d / "admin.token"
    token_file.write_text(TOKEN + "\n")
    e = Env(d, c, sc, token_file)
    e.dir.mkdir()
    e.configmap_swap(policy_doc(HIGH))
    os.symlink("..data/policy.json", e.path)
    with own_cluster(d, c, sc, "policy reload integration", request):
        c.start()
        spawn_sidecar(e.sidecar, e.path, token_file)
        wait_ready(e.port)
        yield e


def test_configmap_symlink_swap_governs_the_next_create(env: Env):
    assert env.path.is_symlink()
    assert not env.create_rejected()
    v = policy_version(env.port)
    env.configmap_swap(policy_doc(env.full_limit()))
    doc, _ = wait_policy_version_above(env.port, v)
    assert doc["last_reload"]["ok"] is True, doc
    assert env.create_rejected()
    # Kafka's own tool sees the same rejection, with KIP-578's message.
    p = clients.topics(env.c.bootstrap, "--create", "--topic", f"cm-{uuid.uuid4().hex[:8]}",
                       "--partitions", "1", "--replication-factor", "1", check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and REJECT in out, out

    v = policy_version(env.port)
    env.configmap_swap(policy_doc(HIGH))
    wait_policy_version_above(env.port, v)
    assert not env.create_rejected()
    assert env.path.is_symlink()  # kadmit never replaced the link


def test_editor_rename_governs_the_next_kafka_topics_create_and_its_latency(env: Env):
    api_latency, create_latency = [], []
    for _ in range(ROUNDS):
        # Write -> the API reports the new version (the policy is swapped in).
        v = policy_version(env.port)
        t0 = time.monotonic()
        env.editor_write(policy_doc(env.full_limit()))
        doc, _ = wait_policy_version_above(env.port, v)
        api_latency.append(time.monotonic() - t0)
        assert doc["policy"]["max.broker.partitions"] < HIGH, doc
        v = doc["version"]
        env.editor_write(policy_doc(HIGH))
        wait_policy_version_above(env.port, v)
        assert not env.create_rejected()
        # Write -> a CreateTopics is rejected (librdkafka, validate_only, polled).
        t0 = time.monotonic()
        env.editor_write(policy_doc(env.full_limit()))
        while not env.create_rejected():
            assert time.monotonic() - t0 < 10, "the new policy never governed a create"
        create_latency.append(time.monotonic() - t0)
        v = policy_version(env.port)
        env.editor_write(policy_doc(HIGH))
        wait_policy_version_above(env.port, v)

    # And the next kafka-topics --create after a write is governed by it.
    v = policy_version(env.port)
    env.editor_write(policy_doc(env.full_limit()))
    wait_policy_version_above(env.port, v)
    topic = f"edit-{uuid.uuid4().hex[:8]}"
    p = clients.topics(env.c.bootstrap, "--create", "--topic", topic, "--partitions", "1",
                       "--replication-factor", "1", check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and REJECT in out, out
    v = policy_version(env.port)
    env.editor_write(policy_doc(HIGH))
    wait_policy_version_above(env.port, v)
    clients.topics(env.c.bootstrap, "--create", "--topic", topic, "--partitions", "1",
                   "--replication-factor", "1")

    ms = lambda xs: ", ".join(f"{x * 1000:.0f}" for x in xs)  # noqa: E731
    print(f"\nreload latency, file write -> GET /v1/policy shows the new version: median "
          f"{statistics.median(api_latency) * 1000:.0f} ms (rounds: {ms(api_latency)} ms)")
    print(f"reload latency, file write -> CreateTopics rejected: median "
          f"{statistics.median(create_latency) * 1000:.0f} ms (rounds: {ms(create_latency)} ms)")
    assert not env.path.is_symlink()  # the editor replaced the link with a file


def test_invalid_file_keeps_the_old_policy_and_says_so(env: Env):
    v = policy_version(env.port)
    limit = env.full_limit()
    env.editor_write(policy_doc(limit))
    wait_policy_version_above(env.port, v)
    assert env.create_rejected()
    v = policy_version(env.port)
    invalid_before = env.reloads("invalid")
    log_offset = env.sidecar.log.stat().st_size

    bad = policy_doc(HIGH)
    bad["brokers"] = {"1": {"max.broker.partitions": -3}}
    env.editor_write(bad)
    deadline = time.monotonic() + 10
    while True:
        status, doc = get_json(env.port, "/v1/policy")
        if doc["last_reload"] and doc["last_reload"]["ok"] is False:
            break
        assert time.monotonic() < deadline, doc
        time.sleep(0.01)
    # The API: the error names the field and the value; the old version stays.
    err = doc["last_reload"]["error"]
    assert "brokers.1.max.broker.partitions" in err and "-3" in err, err
    assert f"version {v}" in err and "still in force" in err, err
    assert doc["version"] == v and doc["policy"]["max.broker.partitions"] == limit, doc
    assert doc["source"]["reloads"]["invalid"] >= 1, doc
    # The data path: the old (low) limit still rejects; the invalid file did not lift it.
    assert env.create_rejected()
    # /metrics.
    fams = env.metrics()
    assert env.reloads("invalid") == invalid_before + 1
    assert fams["kadmit_policy_last_reload_success"].samples[0].value == 0
    assert fams["kadmit_policy_version"].samples[0].value == v
    # The log.
    log = env.sidecar.log.read_bytes()[log_offset:].decode(errors="replace")
    line = [x for x in log.splitlines() if "policy reload failed" in x]
    assert line and "brokers.1.max.broker.partitions" in line[0] and "-3" in line[0], log

    # A typo'd key is refused the same way, and a good file clears the failure.
    env.editor_write('{"max.broker.partition": 5}')
    deadline = time.monotonic() + 10
    while env.reloads("invalid") < invalid_before + 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert 'max.broker.partition' in get_json(env.port, "/v1/policy")[1]["last_reload"]["error"]
    env.editor_write(policy_doc(HIGH))
    doc, _ = wait_policy_version_above(env.port, v)
    assert doc["last_reload"]["ok"] is True
    assert env.metrics()["kadmit_policy_last_reload_success"].samples[0].value == 1
    assert not env.create_rejected()


def test_delete_and_recreate(env: Env):
    v = policy_version(env.port)
    missing_before = env.reloads("missing")
    env.path.unlink()
    deadline = time.monotonic() + 10
    while env.reloads("missing") == missing_before:
        assert time.monotonic() < deadline, "the deletion was never noticed"
        time.sleep(0.01)
    status, doc = get_json(env.port, "/v1/policy")
    assert doc["version"] == v and doc["last_reload"]["ok"] is False, doc
    assert "cannot open" in doc["last_reload"]["error"], doc
    assert not env.create_rejected()  # the last good policy is still in force

    with open(env.path, "w") as f:  # recreated in place, not renamed
        f.write(json.dumps(policy_doc(env.full_limit())))
    doc, _ = wait_policy_version_above(env.port, v)
    assert doc["last_reload"]["ok"] is True, doc
    assert env.create_rejected()


def test_sighup_reloads_with_the_watcher_off(env: Env):
    s = env.sidecar
    s.stop()
    env.editor_write(policy_doc(HIGH))
    spawn_sidecar(s, env.path, env.token_file, "--policy-watch", "off")
    wait_ready(env.port)
    assert not env.create_rejected()
    v = policy_version(env.port)

    env.editor_write(policy_doc(env.full_limit()))
    time.sleep(1.0)  # ten debounce intervals: a watcher would have reloaded by now
    assert policy_version(env.port) == v
    assert not env.create_rejected()

    s.proc.signal(signal.SIGHUP)
    doc, _ = wait_policy_version_above(env.port, v)
    assert doc["policy"]["max.broker.partitions"] < HIGH
    assert env.create_rejected()
    assert "trigger=SIGHUP" in s.log.read_text(errors="replace")


def test_read_only_policy_without_state_file_keeps_api_changes_in_memory_only(env: Env):
    """A read-only policy file (a ConfigMap) and no --state-file: an API change is in force, the
    answer says it was not saved and why, the start-up log warns, and a restart loses it."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8)")
    s = env.sidecar
    ro = env.d / "read-only"
    ro.mkdir()
    (ro / "policy.json").write_text(json.dumps(policy_doc(HIGH)))
    clients.run(["mount", "--bind", str(ro), str(ro)])
    try:
        clients.run(["mount", "-o", "remount,bind,ro", str(ro)])
        s.stop()
        log_offset = s.log.stat().st_size if s.log.exists() else 0
        spawn_sidecar(s, ro / "policy.json", env.token_file)
        wait_ready(env.port)
        log = s.log.read_bytes()[log_offset:].decode(errors="replace")
        assert "admin API changes will not survive a restart" in log, log
        assert not env.create_rejected()

        body = json.dumps({"max.broker.partitions": env.full_limit()}).encode()
        status, _, raw = http(env.port, "PUT", "/v1/limits/default", body, token=TOKEN)
        doc = json.loads(raw)
        assert status == 200, doc
        assert doc["persisted"] is False and "read-only" in doc["warning"], doc
        assert env.create_rejected()

        s.stop()
        spawn_sidecar(s, ro / "policy.json", env.token_file)
        wait_ready(env.port)
        assert env.limit_in_force() == HIGH  # the in-memory change is gone, as the answer said
        assert not env.create_rejected()
    finally:
        s.stop()
        clients.run(["umount", str(ro)], check=False)
        spawn_sidecar(s, env.path, env.token_file)
        wait_ready(env.port)
