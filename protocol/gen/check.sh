#!/bin/sh
# Checks that protocol/gen/generate.py reproduces the checked-in generated
# files exactly: the codecs, the sample frames and the fuzz seeds it writes.
# Run from anywhere; exits non-zero on any difference. Without the specs
# (../shared/kafka-protocol/specs-4.4.0 beside the repository, or $KADMIT_SPECS)
# there is nothing to compare against, so it says so and exits 0.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
specs=${KADMIT_SPECS:-$repo/../shared/kafka-protocol/specs-4.4.0}
if [ ! -d "$specs" ]; then
    echo "check.sh: skipped: no Kafka specs at $specs (set KADMIT_SPECS)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$repo/protocol/gen/generate.py" --specs "$specs" --out "$tmp"
status=0
diff -ru "$repo/protocol/generated" "$tmp/protocol/generated" || status=1
for f in generated_samples.h generated_samples.c; do
    diff -u "$repo/tests/unit/protocol/$f" "$tmp/tests/unit/protocol/$f" || status=1
done
# Seeds: every file the generator writes must exist, identical, in the repo.
# Other files there (crash reproducers added by hand) are not the generator's.
cd "$tmp/tests/fuzz/corpus"
for f in $(find . -type f | sort); do
    cmp -s "$f" "$repo/tests/fuzz/corpus/$f" || { echo "check.sh: seed differs: $f"; status=1; }
done
if [ "$status" -ne 0 ]; then
    echo "check.sh: generated files are stale: run python3 protocol/gen/generate.py"
else
    echo "check.sh: generated files match the generator"
fi
exit "$status"
