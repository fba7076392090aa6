#!/usr/bin/env bash
# kadmit benchmark suite, end to end: builds kadmit and the forwarding tools, then runs
# bench/suite.py (raw forwarding; Kafka producer/consumer direct, through kadmit and through
# HAProxy; partition sweep; the policy at its limit) and writes
# bench/results/<timestamp>/{results.md,results.json,*.png}.
#
#   bench/run.sh            the default suite (about 15 minutes on 2 busy cores)
#   bench/run.sh --smoke    a quick check that the forwarding part and the output work
#   bench/run.sh --only fwd,kafka,sweep,limit   a subset
#   bench/run.sh --only gateway   the gateway (3 brokers) vs HAProxy vs direct (bench/gateway.py)
#   bench/run.sh --only load      millicores per MB/s (10 topics, 1 KiB, fixed rate) and MB/s per
#                                 core at saturation, kadmit vs HAProxy (bench/kafka_load.py)
#   bench/run.sh --only conns     memory per idle connection (10,000) and the accept rate, kadmit
#                                 vs HAProxy, in its own network namespace (bench/idle_conns.py)
#   bench/run.sh --only ledger    the latency the ledger adds to a CreateTopics, 3 brokers
#                                 (bench/ledger_latency.py; BENCH_LEDGER_CREATES=1000 for the
#                                 clean-run check)
#
# Parameters come from the environment (BENCH_*, listed in bench/suite.py), ports from
# KADMIT_TEST_PORT_BASE. Needs haproxy and gnuplot (scripts/deps.sh), a JDK, and the Kafka
# jars that tests/kafka/fetch.sh caches. Benchmarks are never run as tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target kadmit bench_fwd_gen bench_fwd_sink bench_protocol_endpoints >/dev/null
export KADMIT_BIN="${KADMIT_BIN:-$build/kadmit}"
export PYTHONDONTWRITEBYTECODE=1
args=("$@")
if [[ " $* " == *" --smoke "* && " $* " != *" --only "* ]]; then
    args+=(--only fwd)
fi
exec python3 "$root/bench/suite.py" --build "$build/bench" "${args[@]}"
