"""A partial cluster view fails closed: kadmit's metadata principal lacking Describe.

Its own 1-broker KRaft cluster on KADMIT_TEST_PORT_BASE + 640 with SCRAM on CLIENT and
StandardAuthorizer (allow.everyone.if.no.acl.found=false). The broker's own listeners run as
User:ANONYMOUS, a super user, as does User:admin, the client here. One sidecar with a policy whose
metadata client authenticates as User:kadmit over SCRAM. Topics "visible" and "hidden" exist.

Three grants, in turn, and after each a CreateTopics by admin through the sidecar:
  1. kadmit may Describe topic "visible" only: Metadata leaves "hidden" out and DescribeLogDirs is
     refused, so the create is refused with a message naming DescribeLogDirs and the grant on the
     cluster; kadmit_cluster_view_partial is 1 and kadmit_admission_healthy 0.
  2. plus Describe on the cluster: the broker's log directories list replicas of "hidden" that the
     view lacks; the create is refused with a message naming the topic and the grant on every topic.
  3. plus Describe on every topic: the same create is judged and admitted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kadmit_proc import Kadmit, one_sidecar_module  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base, tool  # noqa: E402
from sasl_acl_cluster import SaslAclCluster  # noqa: E402

OFFSET = 640
USERS = {"admin": "admin-secret", "kadmit": "kadmit-secret"}
CHECK_S = 10  # KA_LOGDIRS_INTERVAL_MS: how often the view is checked


def acls(c: KafkaCluster, *args: str) -> None:
    p = subprocess.run([tool("kafka-acls"), "--bootstrap-server", c.direct_bootstrap, "--add",
                        "--allow-principal", "User:kadmit", *args],
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def create(port: int, name: str) -> tuple[bool, str]:
    """CreateTopics as admin through the sidecar: (created, the error's message)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": f"{HOST}:{port}", "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
                     "sasl.password": USERS["admin"]})
    try:
        a.create_topics([NewTopic(name, 1, 1)], request_timeout=30)[name].result(60)
        return True, ""
    except Exception as e:  # noqa: BLE001 - the KafkaException carries the broker's message
        return False, str(e)


def refused_with(k: Kadmit, name: str, needle: str, timeout: float) -> str:
    """Creates `name` until the refusal's message holds `needle`; returns that message."""
    deadline = time.monotonic() + timeout
    while True:
        ok, msg = create(k.listen_port, name)
        assert not ok, f"{name} was created while the view may be partial"
        if needle in msg:
            return msg
        assert time.monotonic() < deadline, f"never refused with {needle!r}: {msg}"
        time.sleep(1)


@pytest.fixture(scope="module")
def pv():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-partial-"))
    c = SaslAclCluster(d, port_base() + OFFSET, USERS, brokers=1)
    n = c.node(1)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000,
                                  "metadata.refresh.interval.ms": 1000,
                                  "metadata.refresh.before.decision.ms": 60000}))
    secret = d / "kadmit.password"
    secret.write_text(USERS["kadmit"])
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy), "--ledger", "off",
               "--metadata-sasl-mechanism", "SCRAM-SHA-512", "--metadata-sasl-username", "kadmit",
               "--metadata-sasl-password-file", str(secret))
    with one_sidecar_module(d, "partial view", c, k):
        for topic, partitions in (("visible", 1), ("hidden", 3)):
            subprocess.run([tool("kafka-topics"), "--bootstrap-server", c.direct_bootstrap,
                            "--create", "--topic", topic, "--partitions", str(partitions),
                            "--replication-factor", "1"], check=True, capture_output=True,
                           timeout=120)
        acls(c, "--operation", "Describe", "--topic", "visible")
        acls(c, "--operation", "DescribeConfigs", "--cluster")
        k.start()
        deadline = time.monotonic() + 60
        while k.http("/v1/brokers")[0] != 200:
            assert time.monotonic() < deadline, "no cluster view:\n" + k.log_text()[-3000:]
            time.sleep(0.2)
        yield c, k


def test_a_partial_view_refuses_until_kadmit_may_describe_everything(pv):
    c, k = pv
    # 1. The check itself is refused: the view may be partial, and kadmit says what to grant.
    msg = refused_with(k, "pv-new", "refused DescribeLogDirs", 30)
    assert "may be partial" in msg and "User:kadmit" in msg and "--cluster" in msg, msg
    assert k.metric("kadmit_cluster_view_partial") == 1
    assert k.metric('kadmit_cluster_view_checks_total{result="unauthorized"}') >= 1
    assert k.metric("kadmit_admission_healthy") == 0
    code, why = k.http("/v1/admission")
    assert code == 503 and "may be partial" in why, why
    assert k.http("/readyz")[0] == 200  # forwarding is not in question
    assert "cluster view may be partial" in k.wait_log("cluster view may be partial")
    rejects = 'kadmit_admission_decisions_total{api="CreateTopics",decision="reject",' \
              'reason="partial_view"}'
    assert k.metric(rejects) >= 1

    # 2. Describe on the cluster: the broker's log directories show what Metadata hides.
    acls(c, "--operation", "Describe", "--cluster")
    msg = refused_with(k, "pv-new", "topic hidden", 4 * CHECK_S)
    assert "3 replicas" in msg and "--topic '*'" in msg, msg
    assert k.metric('kadmit_cluster_view_checks_total{result="missing"}') >= 2

    # 3. Describe on every topic: the same create is judged and admitted.
    acls(c, "--operation", "Describe", "--topic", "*")
    deadline = time.monotonic() + 3 * CHECK_S
    while True:
        ok, msg = create(k.listen_port, "pv-new")
        if ok:
            break
        assert "may be partial" in msg, msg  # refused for no other reason meanwhile
        assert time.monotonic() < deadline, msg
        time.sleep(1)
    assert k.metric("kadmit_cluster_view_partial") == 0
    assert k.metric("kadmit_admission_healthy") == 1
    judged = {name: v for name, v in k.metrics().items()
              if name.startswith('kadmit_admission_decisions_total{api="CreateTopics"')
              and ('decision="admit"' in name or 'decision="rewrite"' in name)}
    assert sum(judged.values()) >= 1, judged
    assert "cluster view complete" in k.wait_log("cluster view complete")
