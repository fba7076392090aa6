#!/usr/bin/env bash
# Long fuzz run: every libFuzzer target of build-fuzz/ (made by scripts/fuzz-smoke.sh) for a
# fixed number of executions, seeded from a work copy of its corpus, at the lowest priority.
# Prints one Markdown table row per target (as docs/protocol.md shows them) to stdout and to
# build-fuzz/long/results.md (-o names another file there, for runs side by side); a finding
# fails the run and leaves its input in build-fuzz/long/.
#
# Usage: scripts/fuzz-long.sh [-r RUNS] [-j JOBS] [-t SECS] [-o FILE] [TARGET ...]
#   -r RUNS  executions per target (default 10000000)
#   -j JOBS  targets run at once (default 1; each is one process on one core)
#   -t SECS  libFuzzer's per-input timeout, wall clock (default 60: at nice 19 on a busy
#            machine an input can wait seconds for a CPU, which is not a hang)
#   TARGET   names of targets (default: every target built)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
runs=10000000
jobs=1
timeout=60
results=results.md
while getopts "r:j:t:o:" opt; do
    case "$opt" in
    r) runs="$OPTARG" ;;
    j) jobs="$OPTARG" ;;
    t) timeout="$OPTARG" ;;
    o) results="$OPTARG" ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(find "$build" -type f -executable -name 'fuzz_*' ! -name '*_replay' \
        -printf '%f\n' | sort)
fi
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "fuzz-long.sh: no fuzz targets in $build (run scripts/fuzz-smoke.sh first)" >&2
    exit 1
fi

out="$build/long"
mkdir -p "$out"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target: its row on stdout, or FAILED with the log's path.
one() {
    local name="$1" bin log work seeds start end rc=0
    bin="$(find "$build" -type f -executable -name "$name" | head -1)"
    [[ -n "$bin" ]] || { echo "| \`$name\` | no such target | | | |"; return 1; }
    work="$out/corpus/$name"
    log="$out/$name.log"
    rm -rf "$work"
    mkdir -p "$work"
    seeds="$root/tests/fuzz/corpus/$name"
    [[ -d "$seeds" ]] && cp -r "$seeds/." "$work/"
    start=$(date +%s)
    nice -n 19 "$bin" -runs="$runs" -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/$name-" "$work" >"$log" 2>&1 || rc=$?
    end=$(date +%s)
    if [[ $rc -ne 0 ]]; then
        echo "| \`$name\` | FAILED (exit $rc, log $log) | | | |"
        return 1
    fi
    local execs rss units
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$')
    rss=$(grep -Eo 'stat::peak_rss_mb: *[0-9]+' "$log" | grep -Eo '[0-9]+$')
    units=$(find "$work" -type f | wc -l)
    printf '| `%s` | %s | %s | %s | %s |\n' "$name" "$execs" "$((end - start))" "$rss" "$units"
}
export -f one
export build out runs root timeout

{
    echo "| target | executions | seconds | peak RSS MB | corpus units after |"
    echo "|---|---:|---:|---:|---:|"
} | tee "$out/$results"
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'one "$@"' _ {} |
    tee -a "$out/$results" || status=$?
if grep -q FAILED "$out/$results"; then
    echo "fuzz-long.sh: a target failed (see the rows above)" >&2
    exit 1
fi
exit $status
