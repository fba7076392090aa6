#!/usr/bin/env bash
# Build kadmit in every CMake build type with gcc and with clang, warnings as errors, each
# from a clean directory: the builds users and packagers make. Configure and build only (the
# unit tests are compiled, not run). Not part of scripts/test.sh, which builds gcc Release
# (stage build-release): the whole matrix takes long on a small machine.
#
#   scripts/build-matrix.sh                  all 8 builds, into build-matrix/<cc>-<type>
#   scripts/build-matrix.sh gcc Release ...  only the named compilers and/or build types
#
# Environment: KADMIT_MATRIX_DIR (scratch directory, default build-matrix), KADMIT_JOBS
# (parallel jobs per build, default 2). Each build's log is <dir>/<cc>-<type>.log; the last
# line is "N passed, N failed" and the exit status is non-zero when any build failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
dir="${KADMIT_MATRIX_DIR:-$root/build-matrix}"
jobs="${KADMIT_JOBS:-2}"

compilers=() types=()
for a in "$@"; do
    case "$a" in
    gcc | clang) compilers+=("$a") ;;
    Debug | Release | RelWithDebInfo | MinSizeRel) types+=("$a") ;;
    *) echo "usage: $0 [gcc|clang]... [Debug|Release|RelWithDebInfo|MinSizeRel]..." >&2; exit 2 ;;
    esac
done
[[ ${#compilers[@]} -gt 0 ]] || compilers=(gcc clang)
[[ ${#types[@]} -gt 0 ]] || types=(Debug Release RelWithDebInfo MinSizeRel)

mkdir -p "$dir"
passed=0 failed=0 summary=()
for cc in "${compilers[@]}"; do
    if ! command -v "$cc" >/dev/null; then
        echo "build-matrix.sh: $cc is not installed (scripts/deps.sh installs both)" >&2
        exit 1
    fi
    for type in "${types[@]}"; do
        b="$dir/$cc-$type" log="$dir/$cc-$type.log" t0=$SECONDS
        rm -rf "$b"
        if CC="$cc" cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DKADMIT_WERROR=ON \
                >"$log" 2>&1 && cmake --build "$b" -j "$jobs" >>"$log" 2>&1; then
            result=ok passed=$((passed + 1))
        else
            result=FAILED failed=$((failed + 1))
            grep -E 'error|warning' "$log" | head -n 20
        fi
        line="$(printf '%-6s %-15s %-6s %4ds  %s' "$cc" "$type" "$result" $((SECONDS - t0)) \
            "$("$cc" --version | head -n 1)")"
        echo "$line"
        summary+=("$line")
    done
done
echo
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
