#!/usr/bin/env bash
# Fetch kafka-clients VERSION (and its dependencies) from Maven Central into
#   ${KADMIT_CACHE:-$HOME/.cache/kadmit}/java-clients-<version>/
# once, and print that directory. tests/integration/test_matrix_clients.py compiles
# ClientMatrix.java against each version it lists.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:?usage: fetch.sh KAFKA_CLIENTS_VERSION}"
dir="${KADMIT_CACHE:-$HOME/.cache/kadmit}/java-clients-$version"
if [[ ! -f "$dir/kafka-clients-$version.jar" ]]; then
    tmp="$dir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    echo "fetch.sh: resolving kafka-clients $version into $dir" >&2
    mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies -Dclients.version="$version" \
        -DoutputDirectory="$tmp" -DincludeScope=runtime >&2
    [[ -f "$tmp/kafka-clients-$version.jar" ]] || { echo "fetch.sh: kafka-clients jar missing" >&2; exit 1; }
    rm -rf "$dir"
    mv "$tmp" "$dir"
    trap - EXIT
fi
echo "$dir"
