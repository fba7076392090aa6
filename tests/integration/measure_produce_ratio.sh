#!/usr/bin/env bash
# Producer throughput through kadmit versus direct to the brokers (not a test: nothing is
# asserted). Starts its own 3-broker cluster with a kadmit sidecar per broker in a temp dir,
# runs kafka-producer-perf-test (1 KiB records, acks=all) alternately direct (bootstrap
# 2909x) and through kadmit (909x), ROUNDS times each, and prints the medians and the ratio
# kadmit/direct.
#
# Warmup: Kafka 4.1.1's ProducerPerformance has no --warmup-records yet (KIP-1052 came
# later), so the same split is done here from its 5-second window lines: windows are
# skipped until WARMUP records were sent, and the steady-state rate is the records of the
# remaining full windows over their time.
#
# Environment: KADMIT_BIN (default build/kadmit), RECORDS (default 2000000),
# WARMUP (default RECORDS/10), ROUNDS (default 3), KADMIT_TEST_PORT_BASE.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
records="${RECORDS:-2000000}"
warmup="${WARMUP:-$((records / 10))}"
rounds="${ROUNDS:-3}"
export PYTHONDONTWRITEBYTECODE=1

"$root/tests/kafka/fetch.sh" >/dev/null
dir="$(mktemp -d "${TMPDIR:-/tmp}/kadmit-ratio.XXXXXX")"
cluster=(python3 "$here/kafka_cluster.py")
cleanup() { "${cluster[@]}" stop --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
"${cluster[@]}" start --brokers 3 --dir "$dir" --sidecars

base="${KADMIT_TEST_PORT_BASE:-0}"
direct="127.0.0.1:$((29091 + base)),127.0.0.1:$((29092 + base)),127.0.0.1:$((29093 + base))"
kadmit="127.0.0.1:$((9091 + base)),127.0.0.1:$((9092 + base)),127.0.0.1:$((9093 + base))"
topics=("$root/tests/kafka/bin/kafka-topics" --bootstrap-server "$direct")

# One run: a fresh topic (deleted afterwards, to bound disk use); prints steady-state
# records/sec.
run() { # mode bootstrap round
    local topic="ratio-$1-$3" out
    "${topics[@]}" --create --topic "$topic" --partitions 3 --replication-factor 3 >/dev/null
    out="$("$root/tests/kafka/bin/kafka-producer-perf-test" --topic "$topic" \
        --num-records "$records" --record-size 1024 --throughput -1 \
        --producer-props bootstrap.servers="$2" acks=all linger.ms=5 batch.size=65536 2>&1)"
    "${topics[@]}" --delete --topic "$topic" >/dev/null
    # window lines, then the total line last: drop the total, skip the warmup windows
    echo "$out" | grep -E '^[0-9]+ records sent, [0-9.]+ records/sec' |
        sed -E 's/^([0-9]+) records sent, ([0-9.]+) records\/sec.*/\1 \2/' |
        awk -v warmup="$warmup" '
            { n[NR] = $1; r[NR] = $2 }
            END {
                for (i = 1; i < NR; i++) {
                    if (seen >= warmup) { recs += n[i]; secs += n[i] / r[i] }
                    seen += n[i]
                }
                if (secs > 0) printf "%.0f\n", recs / secs
                else printf "%.0f\n", r[NR]   # too short for windows: the total rate
            }'
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

d=() k=()
for r in $(seq 1 "$rounds"); do
    # alternate which goes first, so warmup and order effects fall on both sides
    if ((r % 2)); then
        x="$(run direct "$direct" "$r")"; y="$(run kadmit "$kadmit" "$r")"
    else
        y="$(run kadmit "$kadmit" "$r")"; x="$(run direct "$direct" "$r")"
    fi
    d+=("$x") k+=("$y")
    echo "round $r: direct $x records/s, kadmit $y records/s"
done
md="$(median "${d[@]}")" mk="$(median "${k[@]}")"
echo "records=$records (1 KiB, acks=all, warmup $warmup), rounds=$rounds"
echo "median direct: $md records/s ($(awk -v r="$md" 'BEGIN{printf "%.1f", r*1024/1048576}') MiB/s)"
echo "median kadmit: $mk records/s ($(awk -v r="$mk" 'BEGIN{printf "%.1f", r*1024/1048576}') MiB/s)"
echo "ratio kadmit/direct: $(awk -v a="$mk" -v b="$md" 'BEGIN{printf "%.3f", a/b}')"
