#!/usr/bin/env bash
# Fetch Apache Kafka's jars from Maven Central into
#   ${KADMIT_CACHE:-$HOME/.cache/kadmit}/kafka-<version>/libs
# and write the log4j2 configs next to them. Each version has its own directory, so the pin
# and the versions of the broker matrix (tests/kafka/versions.txt) live side by side.
#
#   tests/kafka/fetch.sh              the version pinned in tests/kafka/pom.xml
#   tests/kafka/fetch.sh 3.9.1        another version (same pom, kafka.version overridden)
#   tests/kafka/fetch.sh --matrix     the pin and every version in versions.txt
#
# Idempotent: does nothing when a version's cache is complete (a stamp file records the pom's
# checksum, the version and the jar count). Prints each Kafka home directory on stdout, one a
# line (the last line is the home of the last version asked for).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pin="$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$here/pom.xml")"
cache="${KADMIT_CACHE:-$HOME/.cache/kadmit}"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

complete() { # home version stamp-content
    local home="$1" version="$2" want="$3" sum count
    [[ -f "$home/.complete" ]] || return 1
    read -r sum count <"$home/.complete" || return 1
    [[ "$sum" == "$want" ]] || return 1
    [[ "$(find "$home/libs" -maxdepth 1 -name '*.jar' | wc -l)" -eq "$count" ]] || return 1
    [[ -f "$home/libs/kafka_2.13-$version.jar" && -f "$home/libs/kafka-tools-$version.jar" ]] || return 1
}

fetch_one() { # version
    local version="$1"
    [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "fetch.sh: not a Kafka version: $version" >&2; return 2; }
    local home="$cache/kafka-$version"
    local libs="$home/libs"
    # The pin's stamp stays the pom's checksum (as before); others add their version to it.
    local want="$pom_sum"
    [[ "$version" == "$pin" ]] || want="$pom_sum+$version"
    if ! complete "$home" "$version" "$want"; then
        command -v mvn >/dev/null || { echo "fetch.sh: mvn not found (apt-get install maven)" >&2; return 1; }
        command -v java >/dev/null || { echo "fetch.sh: java not found" >&2; return 1; }
        echo "fetch.sh: resolving Apache Kafka $version into $libs" >&2
        local tmp="$home/libs.tmp.$$"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        # A user property on the command line wins over the pom's <kafka.version>.
        if ! mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies -Dkafka.version="$version" \
            -DoutputDirectory="$tmp" -DincludeScope=runtime >&2; then
            rm -rf "$tmp"
            echo "fetch.sh: mvn could not resolve Apache Kafka $version" >&2
            return 1
        fi
        [[ -f "$tmp/kafka_2.13-$version.jar" ]] || { rm -rf "$tmp"; echo "fetch.sh: kafka jar missing after mvn" >&2; return 1; }
        # Kafka 3.x also brings slf4j's reload4j binding; with two bindings slf4j picks one by
        # classpath order, so keep the broker on log4j2 (our config) like 4.x.
        rm -f "$tmp"/slf4j-reload4j-*.jar
        rm -rf "$libs"
        mv "$tmp" "$libs"
        echo "$want $(find "$libs" -maxdepth 1 -name '*.jar' | wc -l)" >"$home/.complete"
    fi
    # log4j2 configs: rewritten every time (cheap) so edits here take effect.
    mkdir -p "$home/config"
    cp "$here/log4j2-broker.xml" "$home/config/log4j2-broker.xml"
    cp "$here/log4j2-tools.xml" "$home/config/log4j2-tools.xml"
    echo "$home"
}

versions=()
if [[ $# -eq 0 ]]; then
    versions=("$pin")
fi
for a in "$@"; do
    case "$a" in
    --matrix)
        versions+=("$pin")
        while read -r v _; do
            [[ -z "$v" || "$v" == \#* ]] || versions+=("$v")
        done <"$here/versions.txt" ;;
    pin) versions+=("$pin") ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) versions+=("$a") ;;
    esac
done
for v in "${versions[@]}"; do
    fetch_one "$v"
done
