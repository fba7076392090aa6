#!/usr/bin/env python3
"""librdkafka's admin API (through confluent-kafka) against BOOTSTRAP, for record_frames.py.

    python3 tests/tools/capture_rdkafka_admin.py BOOTSTRAP PREFIX BROKER_ID

Sends Metadata (list_topics), CreateTopics (plain with configs, explicit replica assignment
where the client allows it, validate_only), CreatePartitions (with and without assignments),
DescribeConfigs (broker, topic) and IncrementalAlterConfigs. confluent-kafka exposes no
AlterPartitionReassignments. Broker errors are printed, not fatal. Exit 3 when confluent-kafka
is not installed (pip install confluent-kafka), 1 when the broker cannot be reached.
"""

import sys

try:
    from confluent_kafka import libversion
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewPartitions, NewTopic, ResourceType)
except ImportError as e:
    print(f"capture_rdkafka_admin: confluent-kafka is not installed ({e})", file=sys.stderr)
    sys.exit(3)


def wait_all(what, futures):
    for key, f in futures.items():
        try:
            r = f.result(timeout=30)
            print(f"ok   {what} {key}: {str(r)[:120]}")
        except Exception as e:  # noqa: BLE001 - a broker error is a valid answer to record
            print(f"err  {what} {key}: {e}")


def main():
    bootstrap, prefix, broker = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a = AdminClient({"bootstrap.servers": bootstrap, "client.id": f"kadmit-capture-{prefix}"})
    try:
        md = a.list_topics(timeout=20)
    except Exception as e:  # noqa: BLE001
        print(f"err  list_topics: {e}")
        return 1
    print(f"ok   list_topics: {sorted(md.topics)}")
    plain, assigned, dry = f"{prefix}-plain", f"{prefix}-assigned", f"{prefix}-validate-only"
    wait_all("create_topics", a.create_topics([
        NewTopic(plain, 2, 1, config={"retention.ms": "86400000", "cleanup.policy": "delete"}),
    ], operation_timeout=20))
    try:
        wait_all("create_topics assigned", a.create_topics([
            NewTopic(assigned, -1, -1, replica_assignment=[[broker], [broker]]),
        ], operation_timeout=20))
    except ValueError as e:
        # confluent-kafka 2.16 refuses any replica_assignment in NewTopic client-side ("a default
        # partition count and a replica assignment are mutually exclusive"); use a count then.
        print(f"err  create_topics assigned (refused by the client: {e}); plain count instead")
        wait_all("create_topics", a.create_topics([NewTopic(assigned, 2, 1)]))
    wait_all("create_topics validate_only",
             a.create_topics([NewTopic(dry, 3, 1)], validate_only=True))
    wait_all("create_partitions", a.create_partitions([
        NewPartitions(plain, 3),
        NewPartitions(assigned, 4, replica_assignment=[[broker], [broker]]),
    ]))
    md = a.list_topics(timeout=20)
    print(f"ok   list_topics: {len(md.topics)} topics")
    brk = ConfigResource(ResourceType.BROKER, str(broker))
    top = ConfigResource(ResourceType.TOPIC, plain)
    wait_all("describe_configs", a.describe_configs([brk, top]))
    wait_all("incremental_alter_configs", a.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
            ConfigEntry("retention.ms", "3600000",
                        incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", None,
                        incremental_operation=AlterConfigOpType.DELETE)]),
    ]))
    print(f"librdkafka {libversion()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
