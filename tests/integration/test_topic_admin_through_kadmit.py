"""Admin operations through kadmit give the same results as directly at the broker.

Each operation goes through the sidecars (909x); its outcome is read back both through kadmit
and over the DIRECT listener (2909x), and the answers must be identical.
"""

import json
import time

from clients import configs, create_topic, kcat_metadata, run, text, topics
from kafka_cluster import tool


def describe_both(cluster, *args):
    via = text(topics(cluster.bootstrap, "--describe", *args))
    direct = text(topics(cluster.direct_bootstrap, "--describe", *args))
    return via, direct


def test_create_describe_alter_delete_topic_through_kadmit(cluster, topic_name):
    create_topic(cluster.bootstrap, topic_name, 3, 3, "--config", "retention.ms=86400000")
    cluster.wait_topic_healthy(topic_name)
    via, direct = describe_both(cluster, "--topic", topic_name)
    assert via == direct
    assert "PartitionCount: 3" in via and "ReplicationFactor: 3" in via
    assert "retention.ms=86400000" in via

    topics(cluster.bootstrap, "--alter", "--topic", topic_name, "--partitions", "6")
    cluster.wait_topic_healthy(topic_name)
    via, direct = describe_both(cluster, "--topic", topic_name)
    assert via == direct
    assert "PartitionCount: 6" in via

    entity = ["--entity-type", "topics", "--entity-name", topic_name]
    configs(cluster.bootstrap, *entity, "--alter",
            "--add-config", "retention.ms=3600000,cleanup.policy=compact,segment.bytes=10485760")
    configs(cluster.bootstrap, *entity, "--alter", "--delete-config", "segment.bytes")
    via = text(configs(cluster.bootstrap, *entity, "--describe"))
    direct = text(configs(cluster.direct_bootstrap, *entity, "--describe"))
    assert via == direct
    assert "retention.ms=3600000" in via and "cleanup.policy=compact" in via
    assert "segment.bytes" not in via

    broker = ["--entity-type", "brokers", "--entity-name", "2", "--describe", "--all"]
    via = text(configs(cluster.bootstrap, *broker))
    direct = text(configs(cluster.direct_bootstrap, *broker))
    assert via == direct and "num.partitions=1" in via

    topics(cluster.bootstrap, "--delete", "--topic", topic_name)
    deadline = time.monotonic() + 30
    while True:
        via = text(topics(cluster.bootstrap, "--list")).split()
        direct = text(topics(cluster.direct_bootstrap, "--list")).split()
        if topic_name not in via and topic_name not in direct:
            break
        assert time.monotonic() < deadline, f"{topic_name} still listed after delete"
        time.sleep(0.5)
    assert via == direct


def test_broker_errors_pass_through_kadmit_unchanged(cluster, topic_name):
    create_topic(cluster.bootstrap, topic_name, 1, 3)
    for args in (["--create", "--topic", topic_name, "--partitions", "1"],
                 ["--create", "--topic", topic_name + "-rf", "--partitions", "1",
                  "--replication-factor", "4"],
                 ["--alter", "--topic", topic_name, "--partitions", "1"]):
        via = topics(cluster.bootstrap, *args, check=False)
        direct = topics(cluster.direct_bootstrap, *args, check=False)
        assert via.returncode != 0 and direct.returncode != 0
        msg = lambda p: [line for line in (p.stdout + p.stderr).decode().splitlines()  # noqa: E731
                         if line.startswith("Error while executing")]
        assert msg(via) and msg(via) == msg(direct), (via.stderr, direct.stderr)


def test_reassign_partitions_through_kadmit(cluster, tmp_path, topic_name):
    create_topic(cluster.bootstrap, topic_name, 2, 2)
    cluster.wait_topic_healthy(topic_name)
    plan = {"version": 1, "partitions": [
        {"topic": topic_name, "partition": 0, "replicas": [3, 1]},
        {"topic": topic_name, "partition": 1, "replicas": [2, 3]}]}
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(plan))
    reassign = [tool("kafka-reassign-partitions"), "--bootstrap-server", cluster.bootstrap,
                "--reassignment-json-file", str(f)]
    run(reassign + ["--execute"], timeout=90)
    deadline = time.monotonic() + 60
    while "is still in progress" in text(run(reassign + ["--verify"], timeout=90)):
        assert time.monotonic() < deadline, "reassignment did not complete"
        time.sleep(1)
    cluster.wait_topic_healthy(topic_name)
    via, direct = describe_both(cluster, "--topic", topic_name)
    assert via == direct
    assert "Replicas: 3,1" in via
    assert "Replicas: 2,3" in via


def test_metadata_and_api_versions_through_kadmit(cluster):
    md = kcat_metadata(cluster.bootstrap)
    for n in cluster.nodes:
        # brokers are advertised at their sidecars, so clients stay on kadmit
        assert f"broker {n.id} at 127.0.0.1:{n.sidecar_port}" in md
    out = text(run([tool("kafka-broker-api-versions"), "--bootstrap-server", cluster.bootstrap],
                   timeout=60))
    for n in cluster.nodes:
        assert f"127.0.0.1:{n.sidecar_port} (id: {n.id} rack: null" in out
    assert "CreateTopics(19)" in out and "Produce(0)" in out
