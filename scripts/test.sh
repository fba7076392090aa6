#!/usr/bin/env bash
# Run every kadmit test: the README's "run all the tests" command, and what CI runs.
#
#   scripts/test.sh              all stages
#   scripts/test.sh STAGE...     only these stages (names as in the summary)
#
# Stages: deps, kafka, build, unit, build-asan, unit-asan, build-release, format, lint-deploy,
# protocol-gen, integration-asan, integration, faults, matrix, fuzz. A failing stage does not stop the later ones
# (stages that need a missing build fail quickly); the summary lists each with its time and
# the last line is "N passed, N failed". Exit status is non-zero when any stage failed.
#
# The integration suite runs whole against the ASan+UBSan binary (memory and UB errors in the
# sidecars fail the tests). The release binary (the one that ships) runs what only it can show
# (tests marked `release`, see tests/integration/conftest.py), the broker and client matrix
# (marked `matrix`: Kafka 3.6 to 4.4, ZooKeeper, separate controllers, racks, live clients) and
# the demo (tests/integration/test_demo.py runs scripts/run.sh, the README's first command, and
# checks its admitted and rejected creates; marked `release_only`), and the fault-injection
# suite's short run (tests/faults: one of each fault on its own 3-broker cluster, an independent
# checker of the brokers' replica counts; the long run is tests/faults/run.py --duration 1800).
# The kafka stage fetches the pin and starts fetching the matrix's
# Kafka versions and Java clients in the background (into ~/.cache/kadmit, kept between stages
# and runs); the matrix stage waits for it. The kafka stage also starts building
# lint-deploy's tools (helm from the Go module proxy takes minutes) in the background, so the
# build overlaps the C builds; the lint-deploy stage waits for it. When both run, the fuzz smoke
# runs in the background from the start of integration-asan, and the fuzz stage waits for it.
# Environment: KADMIT_FUZZ_SECONDS (fuzz time per target, default 5),
# KADMIT_TEST_PORT_BASE (port offset for the test cluster), PYTEST_ADDOPTS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PYTHONDONTWRITEBYTECODE=1

all_stages=(deps kafka build unit build-asan unit-asan build-release format lint-deploy
            protocol-gen integration-asan integration faults matrix fuzz)
cache="${KADMIT_CACHE:-$HOME/.cache/kadmit}"
prefetch_log="$cache/matrix-prefetch.log"
java_clients=(2.8.2 3.9.2 4.4.0) # tests/integration/test_matrix_clients.py JAVA_VERSIONS
if [[ $# -gt 0 ]]; then stages=("$@"); else stages=("${all_stages[@]}"); fi
rm -f "$cache/fuzz-smoke.pid" # only this run's background fuzz smoke counts

find_kadmit() { # build dir -> path of the kadmit executable (empty when not built)
    local d="$1"
    for p in "$d/kadmit" "$d/proxy/kadmit"; do
        [[ -x "$p" && -f "$p" ]] && { echo "$p"; return; }
    done
}

integration() { # build dir, pytest marker expression, more pytest arguments
    local bin rc=0
    bin="$(find_kadmit "$1")"
    if [[ -z "$bin" ]]; then
        echo "no kadmit binary in $1 (did the build stage fail?)"
        return 1
    fi
    echo "KADMIT_BIN=$bin  -m '$2'"
    KADMIT_BIN="$bin" python3 -m pytest -p no:cacheprovider -ra --durations=10 -m "$2" \
        "${@:3}" tests/integration || rc=$?
    [[ $rc -ne 5 ]] || { echo "no test selected by -m '$2'"; return 1; }
    return $rc
}

prefetch_matrix() { # in the background: the matrix's Kafka versions and Java clients
    mkdir -p "$cache"
    ( tests/kafka/fetch.sh --matrix &&
      for v in "${java_clients[@]}"; do tests/clients/java/fetch.sh "$v"; done
      echo "prefetch exit $?" ) >"$prefetch_log" 2>&1 &
    echo $! >"$cache/matrix-prefetch.pid"
    echo "fetching the matrix's Kafka versions in the background (log: $prefetch_log)"
}

prefetch_tools() { # in the background: lint-deploy's tools (the helm build takes minutes)
    mkdir -p "$cache"
    ( scripts/lint-deploy.sh --tools; echo "tools exit $?" ) >"$cache/tools-prefetch.log" 2>&1 &
    echo $! >"$cache/tools-prefetch.pid"
    echo "building lint-deploy's tools in the background (log: $cache/tools-prefetch.log)"
}

wait_background() { # pid file, what it does: waits for that background job of this run, if any
    local t0=$SECONDS pid=""
    [[ -f "$1" ]] && pid="$(cat "$1")"
    while [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; do
        sleep 2
    done
    rm -f "$1"
    echo "waited $((SECONDS - t0))s for the background $2"
}

fuzz_background() { # in the background, beside the integration suite: the fuzz smoke, which
    # wants CPU while the integration tests mostly wait on Kafka; the fuzz stage waits for it
    mkdir -p "$cache"
    ( scripts/fuzz-smoke.sh; echo "fuzz exit $?" ) >"$cache/fuzz-smoke.log" 2>&1 &
    echo $! >"$cache/fuzz-smoke.pid"
    echo "running the fuzz smoke in the background (log: $cache/fuzz-smoke.log)"
}

fuzz_stage() { # the background fuzz smoke of this run if one ran, else the smoke itself
    if [[ ! -f "$cache/fuzz-smoke.pid" ]]; then scripts/fuzz-smoke.sh; return; fi
    wait_background "$cache/fuzz-smoke.pid" "fuzz smoke"
    cat "$cache/fuzz-smoke.log"
    [[ "$(tail -n 1 "$cache/fuzz-smoke.log")" == "fuzz exit 0" ]]
}

wait_tools() { # the background tool build of this run, if one runs
    wait_background "$cache/tools-prefetch.pid" "tool build"
    if [[ -f "$cache/tools-prefetch.log" ]]; then tail -n 5 "$cache/tools-prefetch.log"; fi
}

wait_prefetch() { # the background fetch of this run, if one runs; then fetch what is missing
    wait_background "$cache/matrix-prefetch.pid" "fetch"
    if [[ -f "$prefetch_log" ]]; then cat "$prefetch_log"; fi
    tests/kafka/fetch.sh --matrix >/dev/null
    for v in "${java_clients[@]}"; do tests/clients/java/fetch.sh "$v" >/dev/null; done
}

run_stage() {
    case "$1" in
    deps) scripts/deps.sh ;;
    kafka) # the pinned Kafka for the integration tests, and the pinned kafka-clients jar whose
           # specs the generated codecs come from (ctest checks them in the unit stages)
        prefetch_tools
        tests/kafka/fetch.sh && sh protocol/gen/fetch-specs.sh && prefetch_matrix ;;
    build)
        cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKADMIT_WERROR=ON
        cmake --build build ;;
    unit) ctest --test-dir build --output-on-failure ;;
    build-asan)
        cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKADMIT_SANITIZE=ON \
            -DKADMIT_WERROR=ON
        cmake --build build-asan ;;
    unit-asan) ctest --test-dir build-asan --output-on-failure ;;
    build-release) # what users and packagers build (-O3 finds warnings -O2 does not); build
                   # only, no tests run on it. scripts/build-matrix.sh builds every type.
        cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKADMIT_WERROR=ON
        cmake --build build-release ;;
    format) scripts/check-format.sh ;;
    lint-deploy) wait_tools && scripts/lint-deploy.sh ;;
    protocol-gen)
        if [[ -f protocol/gen/check.sh ]]; then sh protocol/gen/fetch-specs.sh >/dev/null && sh protocol/gen/check.sh
        else echo "no protocol/gen/check.sh: the generated code cannot be checked"; return 1; fi ;;
    integration-asan)
        if [[ " ${stages[*]} " == *" fuzz "* ]]; then fuzz_background; fi
        integration build-asan "not matrix and not release_only" ;;
    integration) integration build "(release or release_only) and not matrix" ;;
    faults) # the suite installs what it needs (faketime, toxiproxy from the Go module proxy)
        bash tests/faults/setup.sh &&
            KADMIT_BIN="$(find_kadmit build)" python3 -m pytest -p no:cacheprovider -ra -m faults \
                tests/faults ;;
    matrix) # its three files (broker versions, cluster shapes, clients) two at a time, each
            # file on one worker with its own ports (pytest-xdist --dist loadfile)
        wait_prefetch && integration build "matrix" -n 2 --dist loadfile ;;
    fuzz) fuzz_stage ;;
    *) echo "unknown stage: $1 (stages: ${all_stages[*]})"; return 2 ;;
    esac
}

names=() results=() times=()
passed=0 failed=0
for s in "${stages[@]}"; do
    echo
    echo "=================== stage: $s ==================="
    t0=$SECONDS
    # Not in an `if`: there bash would ignore set -e inside the stage.
    set +e
    (set -euo pipefail; run_stage "$s")
    rc=$?
    set -e
    if [[ $rc -eq 0 ]]; then
        r=passed; passed=$((passed + 1))
    else
        r=FAILED; failed=$((failed + 1))
    fi
    names+=("$s") results+=("$r") times+=("$((SECONDS - t0))")
    echo "=================== stage: $s $r in $((SECONDS - t0))s ==================="
done

echo
echo "kadmit test summary"
for i in "${!names[@]}"; do
    printf '  %-18s %-7s %5ss\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
done
echo "  total ${SECONDS}s"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
