#!/bin/sh
# Records the KIP-578 config frames of tests/data/frames/kip578/: kafka-configs, the Java
# AdminClient (tests/integration/java/ConfigsClient.java) and confluent-kafka setting,
# deleting and describing max.broker.partitions and max.partitions against a real 1-broker
# Kafka (no kadmit in between), through tests/tools/record_frames.py on the address the
# broker advertises. Run from the repository root:
#
#     KADMIT_TEST_PORT_BASE=1500 sh tests/tools/capture_kip578_frames.sh
set -eu
out="$(pwd)/tests/data/frames/kip578"
. "$(pwd)/tests/tools/capture_lib.sh"
cfg() { "$bin/kafka-configs" --bootstrap-server "$boot" --entity-type brokers "$@"; }
record cli
cfg --entity-name 1 --alter --add-config max.broker.partitions=10
cfg --entity-default --alter --add-config max.broker.partitions=20,max.partitions=30
cfg --entity-name 1 --describe
cfg --entity-default --describe --all
cfg --entity-name 1 --alter --delete-config max.broker.partitions
record java
javac -nowarn -cp "$libs/*" -d "$work" "$repo/tests/integration/java/ConfigsClient.java"
printf 'bootstrap.servers=%s\n' "$boot" > "$work/java.properties"
java -cp "$work:$libs/*" ConfigsClient "$work/java.properties" alter false 1 \
    APPEND:max.broker.partitions=5 SET:log.cleaner.threads=2
java -cp "$work:$libs/*" ConfigsClient "$work/java.properties" alter true "" \
    SET:max.partitions=40 DELETE:max.broker.partitions
record pyrdkafka
python3 - "$boot" <<'PY'
import sys
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
    ConfigEntry("max.broker.partitions", "11", incremental_operation=AlterConfigOpType.SET)])
[f.result(timeout=60) for f in a.incremental_alter_configs([r]).values()]
r = ConfigResource(ResourceType.BROKER, "1", set_config={"max.broker.partitions": "12"})
[f.result(timeout=60) for f in a.alter_configs([r]).values()]
[f.result(timeout=60) for f in a.describe_configs([ConfigResource(ResourceType.BROKER, "1")]).values()]
PY
kill "$rec"; wait "$rec" 2>/dev/null || true; rec=
put cli incrementalalterconfigs-v1 1 set-broker
put cli incrementalalterconfigs-v1 2 set-default
put cli incrementalalterconfigs-v1 3 delete-broker
put cli describeconfigs-v4 1 broker
put cli describeconfigs-v4 2 default-all
put java incrementalalterconfigs-v1 1 append
put java incrementalalterconfigs-v1 2 validate
put pyrdkafka incrementalalterconfigs-v1 1 set-broker
put pyrdkafka alterconfigs-v2 1 set-broker
put pyrdkafka describeconfigs-v1 1 broker
ls -l "$out"
