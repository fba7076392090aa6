#!/usr/bin/env bash
# Regenerates tests/data/frames/: real frames of the APIs kadmit decodes, recorded from real
# clients talking to a real Apache Kafka 4.1.1 broker.
#
#   tests/tools/capture_frames.sh [--direct] [--out DIR]
#
# What it does:
#   1. fetches the pinned Kafka (tests/kafka/fetch.sh) and, with mvn, kafka-clients
#      $CAPTURE_JAVA_VERSIONS (tests/integration/java/capture/pom.xml) into $KADMIT_CACHE;
#      compiles tests/integration/java/capture/CaptureAdmin.java against each with javac;
#   2. starts a 1-broker KRaft cluster (tests/integration/kafka_cluster.py, no sidecar), and
#      kadmit ($KADMIT_BIN, default build/kadmit) in front of the broker's CLIENT listener;
#   3. for each client, runs tests/tools/record_frames.py on the broker's advertised address
#      (the sidecar port), so every connection the client opens, including those it opens after
#      reading Metadata, goes client -> recorder -> kadmit -> broker, and runs the client:
#        java-<v>       CaptureAdmin on kafka-clients <v>
#        cli-4.1.1      kafka-topics, kafka-configs, kafka-reassign-partitions (tests/kafka/bin)
#        kcat-<v>       kcat -L (librdkafka <v>)
#        pyrdkafka-<v>  tests/tools/capture_rdkafka_admin.py (confluent-kafka, librdkafka <v>);
#                       skipped with a note when confluent-kafka is not installed
#   4. stops everything it started.
#
# Through kadmit the clients see kadmit's clamped ApiVersions, so they send what kadmit meets in
# production (versions it decodes). --direct puts the recorder straight in front of the broker
# instead and leaves out versions above kadmit's decoded max (record_frames --max-version),
# listing them in the recorder's summary.
#
# Last, every frame is round-tripped by $KADMIT_BUILD/tests/unit/test_protocol_codec_roundtrip
# (when built); a frame that fails is moved to DIR/nonconforming/ and reported.
#
# Environment: KADMIT_TEST_PORT_BASE (port offset, as for the integration tests; default 0),
# KADMIT_BIN, KADMIT_BUILD (build tree, default build), KADMIT_CACHE (default
# ~/.cache/kadmit), CAPTURE_JAVA_VERSIONS (default
# "2.4.1 2.8.2 3.6.2 3.9.1 4.0.0 4.1.1"). Needs java, javac, mvn, kcat, python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/tests/data/frames"
direct=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --direct) direct=1 ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
        *) echo "capture_frames: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"

base="${KADMIT_TEST_PORT_BASE:-0}"
cache="${KADMIT_CACHE:-$HOME/.cache/kadmit}"
versions="${CAPTURE_JAVA_VERSIONS:-2.4.1 2.8.2 3.6.2 3.9.1 4.0.0 4.1.1}"
kadmit="${KADMIT_BIN:-build/kadmit}"
[[ "$kadmit" = /* ]] || kadmit="$root/$kadmit"
build="${KADMIT_BUILD:-build}"
[[ "$build" = /* ]] || build="$root/$build"
host=127.0.0.1
advertised=$((9091 + base))   # node 1's sidecar port: what the broker advertises on CLIENT
broker_client=$((19091 + base))
kadmit_port=$((59091 + base))
broker_id=1

for tool in java javac mvn kcat python3; do
    command -v "$tool" >/dev/null || { echo "capture_frames: $tool not found" >&2; exit 1; }
done
if [[ $direct -eq 0 && ! -x "$kadmit" ]]; then
    echo "capture_frames: kadmit binary $kadmit not found (build it, set KADMIT_BIN, or --direct)" >&2
    exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/kadmit-capture-XXXXXX")"
recorder_pid=""
kadmit_pid=""
cleanup() {
    set +e
    [[ -n "$recorder_pid" ]] && kill "$recorder_pid" 2>/dev/null && wait "$recorder_pid" 2>/dev/null
    [[ -n "$kadmit_pid" ]] && kill "$kadmit_pid" 2>/dev/null && wait "$kadmit_pid" 2>/dev/null
    python3 "$root/tests/integration/kafka_cluster.py" stop --dir "$work/cluster" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

echo "== fetching Kafka 4.1.1 and kafka-clients $versions" >&2
bash "$root/tests/kafka/fetch.sh" >/dev/null
for v in $versions; do
    jars="$cache/capture-kafka-clients-$v"
    if ! ls "$jars"/kafka-clients-"$v".jar >/dev/null 2>&1; then
        rm -rf "$jars.tmp"
        mvn -B -q -f "$root/tests/integration/java/capture/pom.xml" -Dclients.version="$v" \
            dependency:copy-dependencies -DoutputDirectory="$jars.tmp" -DincludeScope=runtime >&2
        mv "$jars.tmp" "$jars"
    fi
    mkdir -p "$work/classes-$v"
    javac -nowarn -d "$work/classes-$v" -cp "$jars/*" \
        "$root/tests/integration/java/capture/CaptureAdmin.java"
done

echo "== starting a 1-broker cluster (port base $base)" >&2
python3 "$root/tests/integration/kafka_cluster.py" start --brokers 1 --dir "$work/cluster" >&2
if [[ $direct -eq 0 ]]; then
    "$kadmit" --listen "$host:$kadmit_port" --upstream "$host:$broker_client" --admin off \
        --log-level info >"$work/kadmit.log" 2>&1 &
    kadmit_pid=$!
    for _ in $(seq 100); do
        python3 -c "import socket,sys; socket.create_connection(('$host', $kadmit_port), 0.2)" \
            2>/dev/null && break
        sleep 0.1
    done
    upstream="$host:$kadmit_port"
    caps=()
else
    upstream="$host:$broker_client"
    # kadmit's decoded max versions (protocol/generated/ka_*_request.h *_MAX_VERSION)
    caps=(--max-version apiversions=4 --max-version metadata=12 --max-version createtopics=7
          --max-version createpartitions=3 --max-version alterpartitionreassignments=0
          --max-version describeconfigs=4 --max-version incrementalalterconfigs=1)
fi

rm -f "$out"/*.bin "$out"/nonconforming/*.bin
bootstrap="$host:$advertised"

start_recorder() {  # label
    rm -f "$work/ready"
    python3 "$here/record_frames.py" --listen "$bootstrap" --upstream "$upstream" --out "$out" \
        --client "$1" --ready-file "$work/ready" "${caps[@]}" &
    recorder_pid=$!
    for _ in $(seq 100); do [[ -f "$work/ready" ]] && return 0; sleep 0.05; done
    echo "capture_frames: recorder did not start" >&2
    exit 1
}

stop_recorder() {
    sleep 0.5  # let the last responses reach the recorder
    kill "$recorder_pid"
    wait "$recorder_pid" || true
    recorder_pid=""
}

run_client() {  # label, command...
    local label="$1"
    shift
    echo "== $label" >&2
    start_recorder "$label"
    "$@" >"$work/$label.out" 2>&1 || echo "capture_frames: $label exited $? (see below)" >&2
    grep -E '^(ok|err) ' "$work/$label.out" >&2 || tail -n 20 "$work/$label.out" >&2
    stop_recorder
}

for v in $versions; do
    run_client "java-$v" java -cp "$cache/capture-kafka-clients-$v/*:$work/classes-$v" \
        CaptureAdmin "$bootstrap" "cap-java-${v//./-}" "$broker_id"
done

cli() {
    local bin="$root/tests/kafka/bin" t=cap-cli
    set -x
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --create --topic "$t-plain" \
        --partitions 2 --replication-factor 1 --config retention.ms=86400000
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --create --topic "$t-assigned" \
        --replica-assignment "$broker_id,$broker_id"
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --alter --topic "$t-plain" --partitions 3
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --alter --topic "$t-assigned" \
        --partitions 3 --replica-assignment "$broker_id,$broker_id,$broker_id"
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --list
    "$bin/kafka-topics" --bootstrap-server "$bootstrap" --describe --topic "$t-plain"
    "$bin/kafka-configs" --bootstrap-server "$bootstrap" --entity-type topics \
        --entity-name "$t-plain" --alter --add-config retention.ms=3600000,cleanup.policy=compact
    "$bin/kafka-configs" --bootstrap-server "$bootstrap" --entity-type topics \
        --entity-name "$t-plain" --alter --delete-config cleanup.policy
    "$bin/kafka-configs" --bootstrap-server "$bootstrap" --entity-type topics \
        --entity-name "$t-plain" --describe
    "$bin/kafka-configs" --bootstrap-server "$bootstrap" --entity-type brokers \
        --entity-name "$broker_id" --describe --all
    printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[%s]}]}' \
        "$t-plain" "$broker_id" >"$work/plan.json"
    local r=("$bin/kafka-reassign-partitions" --bootstrap-server "$bootstrap"
             --reassignment-json-file "$work/plan.json")
    "${r[@]}" --execute
    "${r[@]}" --verify
    "${r[@]}" --cancel
    set +x
}
run_client cli-4.1.1 cli

kcat_v="$(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9][0-9.]*\).*/\1/p' | head -n 1)"
run_client "kcat-librdkafka-${kcat_v:-unknown}" kcat -L -b "$bootstrap"

if python3 -c "import confluent_kafka" 2>/dev/null; then
    rd_v="$(python3 -c "import confluent_kafka as c; print(c.libversion()[0])")"
    run_client "pyrdkafka-$rd_v" python3 "$here/capture_rdkafka_admin.py" "$bootstrap" \
        cap-pyrdkafka "$broker_id"
else
    echo "capture_frames: confluent-kafka not installed (pip install confluent-kafka);" \
         "librdkafka's admin API not captured" >&2
fi

if [[ $direct -eq 0 ]]; then
    kill "$kadmit_pid"
    wait "$kadmit_pid" || true
    kadmit_pid=""
    grep -E "WARN|ERROR" "$work/kadmit.log" >&2 || true
fi
# Every frame in $out must round-trip through kadmit's codecs (test_captured_frames_round_trip).
# One that does not is moved to $out/nonconforming/ (which that test does not read) and named
# here; tests/data/frames/README.md must say why each one is there.
rt="$build/tests/unit/test_protocol_codec_roundtrip"
if [[ -x "$rt" ]]; then
    for f in "$out"/*.bin; do
        d="$(mktemp -d "$work/rt-XXXXXX")"
        mkdir "$d/frames"
        ln -s "$f" "$d/frames/"
        if ! KADMIT_TEST_DATA="$d" "$rt" >"$d/log" 2>&1; then
            echo "capture_frames: does not round-trip, moved to nonconforming/:" >&2
            grep '^ERROR' "$d/log" >&2 || tail -n 5 "$d/log" >&2
            mkdir -p "$out/nonconforming"
            mv "$f" "$out/nonconforming/"
        fi
    done
else
    echo "capture_frames: $rt not built; frames not checked" >&2
fi
echo "== $(ls "$out"/*.bin | wc -l) frames, $(cat "$out"/*.bin | wc -c) bytes in $out" >&2
