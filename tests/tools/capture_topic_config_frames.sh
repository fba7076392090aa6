#!/bin/sh
# Records the topic-config frames of tests/data/frames/topic-configs/: kafka-topics creating a
# topic with configs, kafka-configs altering and deleting a topic's configs, the Java
# AdminClient (tests/integration/java/ConfigsClient.java) and confluent-kafka's incremental and
# legacy alter calls on a TOPIC resource, against a real 1-broker Kafka (no kadmit in
# between), through tests/tools/record_frames.py on the address the broker advertises. Run
# from the repository root:
#
#     KADMIT_TEST_PORT_BASE=1500 sh tests/tools/capture_topic_config_frames.sh
set -eu
out="$(pwd)/tests/data/frames/topic-configs"
. "$(pwd)/tests/tools/capture_lib.sh"
record cli
"$bin/kafka-topics" --bootstrap-server "$boot" --create --topic team-a.orders --partitions 1 \
    --replication-factor 1 --config min.insync.replicas=1 --config retention.ms=86400000
cfg() { "$bin/kafka-configs" --bootstrap-server "$boot" --entity-type topics "$@"; }
cfg --entity-name team-a.orders --alter --add-config retention.ms=700000000,cleanup.policy=compact
cfg --entity-name team-a.orders --alter --delete-config min.insync.replicas
record java
javac -nowarn -cp "$libs/*" -d "$work" "$repo/tests/integration/java/ConfigsClient.java"
printf 'bootstrap.servers=%s\n' "$boot" > "$work/java.properties"
java -cp "$work:$libs/*" ConfigsClient "$work/java.properties" alter false topic:team-a.orders \
    SET:min.insync.replicas=1 APPEND:cleanup.policy=compact
record pyrdkafka
python3 - "$boot" <<'PY'
import sys
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = ConfigResource(ResourceType.TOPIC, "team-a.orders", incremental_configs=[
    ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
[f.result(timeout=60) for f in a.incremental_alter_configs([r]).values()]
r = ConfigResource(ResourceType.TOPIC, "team-a.orders", set_config={"retention.ms": "3600000"})
[f.result(timeout=60) for f in a.alter_configs([r]).values()]
PY
kill "$rec"; wait "$rec" 2>/dev/null || true; rec=
# The n-th frame of each kind, named after what the step above sent.
ls "$work/cli" "$work/java" "$work/pyrdkafka"
put cli createtopics-v7 1 create
put cli incrementalalterconfigs-v1 1 set-topic
put cli incrementalalterconfigs-v1 2 delete-topic
put java incrementalalterconfigs-v1 1 set-append-topic
put pyrdkafka incrementalalterconfigs-v1 1 set-topic
put pyrdkafka alterconfigs-v2 1 set-topic
ls -l "$out"
