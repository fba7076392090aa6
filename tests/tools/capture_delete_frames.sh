#!/bin/sh
# Records the delete frames of tests/data/frames/protect/: kafka-topics --delete,
# kafka-delete-records, the Java AdminClient (tests/integration/java/DeleteClient.java)
# deleting by name and by topic id, and confluent-kafka's delete_topics, against a real
# 1-broker Kafka (no kadmit in between), through tests/tools/record_frames.py on the address
# the broker advertises. Run from the repository root:
#
#     KADMIT_TEST_PORT_BASE=1500 sh tests/tools/capture_delete_frames.sh
set -eu
out="$(pwd)/tests/data/frames/protect"
. "$(pwd)/tests/tools/capture_lib.sh"
record setup
for t in keep.x keep.y free.a free.b free.c free.d; do
    "$bin/kafka-topics" --bootstrap-server "$boot" --create --topic "$t" --partitions 2 \
        --replication-factor 1
done
record cli
"$bin/kafka-topics" --bootstrap-server "$boot" --delete --topic free.a
printf '{"version":1,"partitions":[{"topic":"keep.x","partition":0,"offset":-1},{"topic":"keep.x","partition":1,"offset":-1},{"topic":"free.b","partition":0,"offset":-1}]}\n' \
    > "$work/offsets.json"
"$bin/kafka-delete-records" --bootstrap-server "$boot" --offset-json-file "$work/offsets.json"
record java
javac -nowarn -cp "$libs/*" -d "$work" "$repo/tests/integration/java/DeleteClient.java"
printf 'bootstrap.servers=%s\n' "$boot" > "$work/java.properties"
java -cp "$work:$libs/*" DeleteClient "$work/java.properties" names keep.y free.b
java -cp "$work:$libs/*" DeleteClient "$work/java.properties" ids keep.x free.c
record pyrdkafka
python3 - "$boot" <<'PY'
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.delete_topics(["free.d", "keep.z"], operation_timeout=30).values():
    try:
        f.result(timeout=60)
    except Exception as e:
        print("delete_topics:", e)
PY
kill "$rec"; wait "$rec" 2>/dev/null || true; rec=
ls "$work/cli" "$work/java" "$work/pyrdkafka" | grep delete
put cli "$(cd "$work/cli" && ls deletetopics-v*-request-cli-1.bin | sed 's/-request.*//')" 1 topic
put cli "$(cd "$work/cli" && ls deleterecords-v*-request-cli-1.bin | sed 's/-request.*//')" 1 records
put java "$(cd "$work/java" && ls deletetopics-v*-request-java-1.bin | sed 's/-request.*//')" 1 names
put java "$(cd "$work/java" && ls deletetopics-v*-request-java-2.bin | sed 's/-request.*//')" 2 ids
put pyrdkafka "$(cd "$work/pyrdkafka" && ls deletetopics-v*-request-pyrdkafka-1.bin | sed 's/-request.*//')" 1 names
ls -l "$out"
