#!/usr/bin/env bash
# Fetch the pinned Apache Kafka jars (tests/kafka/pom.xml) from Maven Central into
#   ${KADMIT_CACHE:-$HOME/.cache/kadmit}/kafka-<version>/libs
# and write the log4j2 configs next to them. Idempotent: does nothing when the cache
# is complete (a stamp file records the pom's checksum and the jar count).
# Prints the Kafka home directory on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$here/pom.xml")"
cache="${KADMIT_CACHE:-$HOME/.cache/kadmit}"
home="$cache/kafka-$version"
libs="$home/libs"
stamp="$home/.complete"
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

complete() {
    [[ -f "$stamp" ]] || return 1
    local sum count
    read -r sum count <"$stamp" || return 1
    [[ "$sum" == "$want" ]] || return 1
    [[ "$(find "$libs" -maxdepth 1 -name '*.jar' | wc -l)" -eq "$count" ]] || return 1
    [[ -f "$libs/kafka_2.13-$version.jar" && -f "$libs/kafka-tools-$version.jar" ]] || return 1
}

if ! complete; then
    command -v mvn >/dev/null || { echo "fetch.sh: mvn not found (apt-get install maven)" >&2; exit 1; }
    command -v java >/dev/null || { echo "fetch.sh: java not found" >&2; exit 1; }
    echo "fetch.sh: resolving Apache Kafka $version into $libs" >&2
    tmp="$home/libs.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$tmp" -DincludeScope=runtime >&2
    [[ -f "$tmp/kafka_2.13-$version.jar" ]] || { echo "fetch.sh: kafka jar missing after mvn" >&2; exit 1; }
    rm -rf "$libs"
    mv "$tmp" "$libs"
    trap - EXIT
    echo "$want $(find "$libs" -maxdepth 1 -name '*.jar' | wc -l)" >"$stamp"
fi

# log4j2 configs: rewritten every time (cheap) so edits here take effect.
mkdir -p "$home/config"
cp "$here/log4j2-broker.xml" "$home/config/log4j2-broker.xml"
cp "$here/log4j2-tools.xml" "$home/config/log4j2-tools.xml"
echo "$home"
