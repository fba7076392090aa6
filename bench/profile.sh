#!/usr/bin/env bash
# Where kadmit's forwarding time goes, for a fixed workload: bench_fwd_gen sends REQUESTS
# requests of SIZE bytes (CONNS connections, DEPTH in flight each) through the proxy to
# bench_fwd_sink, once with the proxy under valgrind's callgrind (user-space instruction
# counts per function) and once under `strace -c` (system calls, where most forwarding CPU
# goes). Both kadmit and HAProxy (TCP mode, one thread) are profiled, so the counts compare.
# perf record would be better, but needs hardware counters that virtual machines often lack.
#
# Environment: REQUESTS (200000), SIZE (1024), CONNS (2), DEPTH (8), OUT (a temp dir),
# KADMIT_TEST_PORT_BASE (ports 31000.. plus it), BUILD_DIR (build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
requests="${REQUESTS:-200000}" size="${SIZE:-1024}" conns="${CONNS:-2}" depth="${DEPTH:-8}"
out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kadmit-profile.XXXXXX")}"
base="${KADMIT_TEST_PORT_BASE:-0}"
sink=$((31000 + base)) front=$((31030 + base))
mkdir -p "$out"
cmake --build "$build" --target kadmit bench_fwd_gen bench_fwd_sink >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
"$build/bench/bench_fwd_sink" --listen "127.0.0.1:$sink" &
pids+=($!)

printf 'global\n    nbthread 1\n    maxconn 4000\ndefaults\n    mode tcp\n    timeout connect 5s\n    timeout client 10m\n    timeout server 10m\nlisten p\n    bind 127.0.0.1:%s\n    server s 127.0.0.1:%s\n' \
    "$front" "$sink" >"$out/haproxy.cfg"
proxy_cmd() { # name
    case "$1" in
    kadmit) echo "$build/kadmit --listen 127.0.0.1:$front --upstream 127.0.0.1:$sink --admin off --log-level warn" ;;
    haproxy) echo "$(command -v haproxy || echo /usr/sbin/haproxy) -db -f $out/haproxy.cfg" ;;
    esac
}
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

run() { # name tool
    local name="$1" tool="$2" pid
    case "$tool" in
    callgrind) valgrind --tool=callgrind --callgrind-out-file="$out/$name.callgrind" \
        $(proxy_cmd "$name") 2>"$out/$name.valgrind.log" & ;;
    strace) strace -c -f -o "$out/$name.strace" $(proxy_cmd "$name") 2>/dev/null & ;;
    esac
    pid=$!
    wait_port "$front"
    "$build/bench/bench_fwd_gen" --connect "127.0.0.1:$front" --conns "$conns" --depth "$depth" \
        --size "$size" --requests "$requests" --seconds 600 >"$out/$name.$tool.gen.json"
    # the proxy itself (strace's child; valgrind runs it in its own process) stops on SIGTERM
    kill -TERM "$(pgrep -P "$pid" || echo "$pid")"
    wait "$pid" || true
}

for name in kadmit haproxy; do
    for tool in callgrind strace; do
        run "$name" "$tool"
    done
    bytes=$(sed -E 's/.*"all_bytes": ([0-9]+).*/\1/' "$out/$name.callgrind.gen.json")
    ir=$(callgrind_annotate "$out/$name.callgrind" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    calls=$(awk '/^-+ -+/ {s=1; next} s && $NF=="total" {print $(NF-2)}' "$out/$name.strace")
    echo "== $name: $requests requests of $size B ($bytes bytes both ways)"
    echo "   user-space instructions: $ir ($(awk -v a="$ir" -v b="$requests" 'BEGIN{printf "%.0f", a/b}') per request)"
    echo "   system calls: $calls ($(awk -v a="$calls" -v b="$requests" 'BEGIN{printf "%.2f", a/b}') per request)"
    echo "   top functions (self instructions):"
    callgrind_annotate "$out/$name.callgrind" 2>/dev/null |
        awk '/file:function/ {s=1; getline; next} s && NF && n++ < 15 {print "     " $0}'
    echo "   top system calls:"
    awk '/^-+ -+/ {s++; next} s==1 && NF && n++ < 8 {print "     " $0}' "$out/$name.strace"
done
echo "raw profiles in $out"
