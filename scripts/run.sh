#!/usr/bin/env bash
# Run kadmit locally: a 3-broker Apache Kafka (KRaft) cluster on loopback with a kadmit
# sidecar in front of each broker, state in .kadmit-demo/ (or $KADMIT_DEMO_DIR). Leaves
# everything running.
#
#   scripts/run.sh           build kadmit if needed, fetch Kafka, start, show it working
#   scripts/run.sh status    what is running
#   scripts/run.sh stop      stop the sidecars and the brokers
#   scripts/run.sh gateway   gateway mode instead (root: network namespaces): 3 unmodified
#                            brokers on 127.0.0.1, one kadmit --mode gateway in front on a veth
#                            address, and a client in the namespace kgw-demo that can reach
#                            only kadmit; state in .kadmit-gateway-demo/
#   scripts/run.sh gateway-stop
#
# Clients bootstrap at the sidecars: 127.0.0.1:9091,127.0.0.1:9092,127.0.0.1:9093 (each port
# plus KADMIT_TEST_PORT_BASE when that is set). The cluster harness is scripts/harness/.
# Kafka's CLI tools are in tests/kafka/bin (e.g. tests/kafka/bin/kafka-topics).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
state="${KADMIT_DEMO_DIR:-$root/.kadmit-demo}"
cluster=(python3 "$root/scripts/harness/kafka_cluster.py")
export PYTHONDONTWRITEBYTECODE=1

mode="${1:-start}"
gwstate="${KADMIT_DEMO_DIR:-$root/.kadmit-gateway-demo}"
gwenv=(python3 "$root/tests/integration/gateway_env.py")
case "$mode" in
gateway-stop)
    if [[ -d "$gwstate" ]]; then "${gwenv[@]}" stop --dir "$gwstate"; else echo "not running"; fi
    exit 0 ;;
gateway)
    [[ "$(id -u)" == 0 ]] || { echo "run.sh gateway: needs root (the client runs in a network" \
        "namespace)" >&2; exit 1; } ;;
stop)
    if [[ -d "$state" ]]; then "${cluster[@]}" stop --dir "$state"; else echo "not running"; fi
    exit 0 ;;
status)
    [[ -d "$state" ]] || { echo "not running"; exit 1; }
    exec "${cluster[@]}" status --dir "$state" ;;
start) ;;
*) echo "usage: $0 [start|status|stop|gateway|gateway-stop]" >&2; exit 2 ;;
esac

# What is missing is installed, whatever is already there (a machine with cmake and ninja may
# still lack libuv's headers, kcat or Java): deps.sh checks every package and is quick when
# nothing is missing.
scripts/deps.sh

# Build (incremental: a no-op when up to date).
if [[ -z "${KADMIT_BIN:-}" ]]; then
    [[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build build --target kadmit
    for p in build/kadmit build/proxy/kadmit; do
        [[ -x "$p" && -f "$p" ]] && { export KADMIT_BIN="$root/$p"; break; }
    done
    [[ -n "${KADMIT_BIN:-}" ]] || { echo "run.sh: build produced no kadmit binary" >&2; exit 1; }
fi
tests/kafka/fetch.sh >/dev/null

if [[ "$mode" == gateway ]]; then
    # The brokers advertise themselves (127.0.0.1, root namespace): nothing of kadmit in their
    # configuration. The client runs in kgw-demo, where 127.0.0.1 is its own loopback.
    mkdir -p "$gwstate"
    policy="$gwstate/policy.json"
    cat >"$policy" <<'JSON'
{
  "max.broker.partitions": 100,
  "enforcement": "enforce",
  "reject.error.code": 88
}
JSON
    [[ -f "$gwstate/gateway.json" ]] || "${gwenv[@]}" start --dir "$gwstate" --policy "$policy"
    field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
        "$gwstate/gateway.json" "$1"; }
    bootstrap="$(field bootstrap)"; ns="$(field namespace)"; brokers="$(field brokers)"
    admin="$(field admin)"
    for _ in $(seq 1 120); do
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://$admin/v1/admission" 2>/dev/null && break
        sleep 0.5
    done
    inns=(ip netns exec "$ns")
    topics=("${inns[@]}" tests/kafka/bin/kafka-topics --bootstrap-server "$bootstrap")
    echo
    echo "kadmit gateway: $bootstrap   brokers (unmodified): $brokers"
    echo "the client runs in the network namespace $ns"
    echo
    echo "\$ kcat -L -b ${brokers%%,*}   (a broker, from the client's namespace)"
    "${inns[@]}" kcat -L -m 3 -b "${brokers%%,*}" 2>&1 | tail -1 | sed 's/^/    /' || true
    echo
    echo "\$ kcat -L -b $bootstrap   (the gateway: every broker at a gateway port)"
    "${inns[@]}" kcat -L -m 15 -b "$bootstrap" | sed -n '1,5p' | sed 's/^/    /'
    echo
    echo "\$ kafka-topics --create --topic kadmit-demo --partitions 3 --replication-factor 3"
    "${topics[@]}" --create --if-not-exists --topic kadmit-demo --partitions 3 \
        --replication-factor 3
    echo
    echo "policy ($policy): max.broker.partitions 100"
    echo "\$ kafka-topics --create --topic kadmit-demo-too-big --partitions 200 --replication-factor 3"
    if out="$("${topics[@]}" --create --topic kadmit-demo-too-big --partitions 200 \
            --replication-factor 3 2>&1)"; then
        echo "$out"
        echo "run.sh: the over-limit create was admitted; is the policy loaded?" >&2
        exit 1
    fi
    echo "$out" | grep -v '^\s*at ' | sed 's/^/    /'
    echo
    echo "logs: $gwstate/gateway-0.log, $gwstate/node-*/broker.log"
    echo "stop: scripts/run.sh gateway-stop"
    exit 0
fi

# The demo policy: every broker may host 100 partition replicas. The sidecars
# read it from KADMIT_POLICY, the same variable a container would set.
policy="$state/policy.json"
if "${cluster[@]}" status --dir "$state" >/dev/null 2>&1; then
    echo "already running (scripts/run.sh stop to stop)"
else
    mkdir -p "$state"
    cat >"$policy" <<'JSON'
{
  "max.broker.partitions": 100,
  "max.partitions": 1000,
  "enforcement": "enforce",
  "reject.error.code": 88,
  "auto.assignment": "place"
}
JSON
    KADMIT_POLICY="$policy" "${cluster[@]}" start --brokers 3 --dir "$state" --sidecars
fi

# The sidecars' ports are 9091..9093 plus the port base the cluster was started with
# (KADMIT_TEST_PORT_BASE, recorded in cluster.json).
base="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("port_base", 0))' \
    "$state/cluster.json")"
bootstrap="127.0.0.1:$((9091 + base)),127.0.0.1:$((9092 + base)),127.0.0.1:$((9093 + base))"
topics=(tests/kafka/bin/kafka-topics --bootstrap-server "$bootstrap")
# Admission waits until every sidecar has read kadmit's ledger and limits topics (/v1/admission;
# /readyz says only that a sidecar forwards).
for port in $((15091 + base)) $((15092 + base)) $((15093 + base)); do
    for _ in $(seq 1 120); do
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$port/v1/admission" 2>/dev/null && break
        sleep 0.5
    done
done
echo
echo "kadmit is running: $KADMIT_BIN"
echo "bootstrap: $bootstrap"
echo
echo "\$ kafka-topics --create --topic kadmit-demo --partitions 3 --replication-factor 3 (through kadmit)"
"${topics[@]}" --create --if-not-exists --topic kadmit-demo --partitions 3 --replication-factor 3
"${topics[@]}" --describe --topic kadmit-demo

echo
echo "policy ($policy):"
sed 's/^/    /' "$policy"
echo
echo "\$ kafka-topics --create --topic kadmit-demo-too-big --partitions 200 --replication-factor 3"
echo "  (200 replicas per broker would exceed max.broker.partitions = 100: kadmit rejects it)"
if out="$("${topics[@]}" --create --topic kadmit-demo-too-big --partitions 200 \
        --replication-factor 3 2>&1)"; then
    echo "$out"
    echo "run.sh: the over-limit create was admitted; is the policy loaded?" >&2
    exit 1
fi
echo "$out" | grep -v '^\s*at ' | sed 's/^/    /'
echo
echo "logs: $state/node-*/broker.log, $state/kadmit-*.log"
echo "stop: scripts/run.sh stop"
