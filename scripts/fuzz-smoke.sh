#!/usr/bin/env bash
# Fuzz smoke test: build every libFuzzer target (clang, ASan+UBSan) in build-fuzz/ and run
# each for a short time against its seed corpus (tests/fuzz/corpus/<target>, read only; new
# inputs go to build-fuzz/corpus-run/<target>, crashes to build-fuzz/artifacts/).
# Environment: KADMIT_FUZZ_SECONDS (default 5) per target; KADMIT_FUZZ_TIMEOUT (default 30),
# libFuzzer's per-input timeout. It is wall clock, and in CI the smoke runs beside the ASan
# integration suite on two cores, where an input can wait seconds for a CPU: at 10 s one target
# (fuzz_proxy_scram) failed that way, and 12M executions of it on a quiet core then found no
# input slower than 1 s.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${KADMIT_FUZZ_SECONDS:-5}"
timeout="${KADMIT_FUZZ_TIMEOUT:-30}"
build="$root/build-fuzz"

mkdir -p "$build"
CC=clang cmake -S . -B "$build" -G Ninja -DKADMIT_FUZZ=ON -DKADMIT_SANITIZE=ON \
    -DKADMIT_TESTS=OFF -DKADMIT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
cmake --build "$build"

# Fuzz targets are the executables named fuzz_* (their *_replay twins are plain mains).
mapfile -t targets < <(find "$build" -type f -executable -name 'fuzz_*' ! -name '*_replay' \
    -printf '%p\n' | sort)
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "fuzz-smoke.sh: FAILED: the build made no fuzz targets"
    exit 1
fi

mkdir -p "$build/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
for t in "${targets[@]}"; do
    name="$(basename "$t")"
    run="$build/corpus-run/$name"
    mkdir -p "$run"
    dirs=("$run")
    [[ -d "$root/tests/fuzz/corpus/$name" ]] && dirs+=("$root/tests/fuzz/corpus/$name")
    log="$build/artifacts/$name.log"
    if "$t" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$name-" "${dirs[@]}" >"$log" 2>&1; then
        echo "fuzz-smoke.sh: $name ok ($(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" |
            grep -Eo '[0-9]+$' || echo '?') runs)"
    else
        echo "fuzz-smoke.sh: $name FAILED (log $log):"
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -20 || tail -20 "$log"
        failed+=("$name")
    fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz-smoke.sh: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
    exit 1
fi
echo "fuzz-smoke.sh: ${#targets[@]} targets ran ${seconds}s each, no findings"
