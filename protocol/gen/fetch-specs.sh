#!/bin/sh
# Puts the kafka-clients jar pinned in protocol/gen/specs.lock into the cache
# directory (${KADMIT_CACHE:-$HOME/.cache/kadmit}), checks its sha256 and
# prints its path. The jar comes from Maven Central through mvn, or from a
# copy named by KADMIT_SPECS_JAR.
#
#   protocol/gen/fetch-specs.sh             fetch when absent, check, print the path
#   protocol/gen/fetch-specs.sh --no-fetch  only check the cached jar (for check.sh)
#
# Exits non-zero, with a sentence saying what is missing and how to get it,
# when the jar is absent (and may not be fetched) or its sha256 differs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lock=$here/specs.lock
fetch=1
[ "${1:-}" = "--no-fetch" ] && fetch=0

field() { sed -n "s/^$1 *= *//p" "$lock"; }
artifact=$(field artifact)
jar=$(field jar)
want=$(field jar_sha256)
cache=${KADMIT_CACHE:-$HOME/.cache/kadmit}
path=$cache/$jar

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

# Fails unless $1 has the pinned sum; a wrong file is never left in the cache.
verify() {
    got=$(sha256 "$1")
    if [ "$got" != "$want" ]; then
        echo "fetch-specs.sh: $1 has sha256 $got, but protocol/gen/specs.lock pins $want for $artifact;" \
             "delete it and run protocol/gen/fetch-specs.sh again (or update specs.lock on purpose)" >&2
        exit 1
    fi
}

if [ ! -f "$path" ]; then
    if [ "$fetch" -eq 0 ]; then
        echo "fetch-specs.sh: the protocol generator's input $artifact is missing from $cache;" \
             "run protocol/gen/fetch-specs.sh (it needs mvn and Maven Central, or KADMIT_SPECS_JAR)" >&2
        exit 1
    fi
    mkdir -p "$cache"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if [ -n "${KADMIT_SPECS_JAR:-}" ]; then
        cp "$KADMIT_SPECS_JAR" "$tmp/$jar"
    elif command -v mvn >/dev/null 2>&1; then
        mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="$artifact" -DoutputDirectory="$tmp" >&2 || {
            echo "fetch-specs.sh: mvn could not fetch $artifact from Maven Central" >&2
            exit 1
        }
    else
        echo "fetch-specs.sh: $jar is not in $cache and mvn is not installed;" \
             "install Maven, or set KADMIT_SPECS_JAR to a copy of $artifact" >&2
        exit 1
    fi
    verify "$tmp/$jar"
    mv "$tmp/$jar" "$path"
fi
verify "$path"
echo "$path"
