#!/bin/sh
# Checks that protocol/gen/generate.py reproduces the checked-in generated
# files exactly: the codecs and tables, the sample frames and the fuzz seeds
# it writes. Run from anywhere; exits non-zero on any difference.
#
# Its input is the kafka-clients jar pinned in protocol/gen/specs.lock. This
# script never fetches it and never skips: when the jar is missing from the
# cache, or its sha256 differs from the lock, it fails and says how to get it
# (protocol/gen/fetch-specs.sh).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
jar=$(sh "$repo/protocol/gen/fetch-specs.sh" --no-fetch) || {
    echo "check.sh: FAILED: the generator's pinned input is not available (see above)" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$repo/protocol/gen/generate.py" --jar "$jar" --out "$tmp"
status=0
diff -ru "$repo/protocol/generated" "$tmp/protocol/generated" || status=1
for f in generated_samples.h generated_samples.c; do
    diff -u "$repo/tests/unit/protocol/$f" "$tmp/tests/unit/protocol/$f" || status=1
done
# Seeds: every file the generator writes must exist, identical, in the repo.
# Other files there (crash reproducers, captured frames) are not the generator's.
cd "$tmp/tests/fuzz/corpus"
for f in $(find . -type f | sort); do
    cmp -s "$f" "$repo/tests/fuzz/corpus/$f" || { echo "check.sh: seed differs: $f"; status=1; }
done
if [ "$status" -ne 0 ]; then
    echo "check.sh: generated files are stale: run python3 protocol/gen/generate.py"
else
    echo "check.sh: generated files match the generator (kafka-clients pinned in protocol/gen/specs.lock)"
fi
exit "$status"
