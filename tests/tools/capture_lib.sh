# capture_lib.sh: what the frame-capture scripts share (sourced, run from the repository
# root): a real 1-broker Kafka with tests/tools/record_frames.py on the address it
# advertises, record CLIENT to (re)start the recorder, and put to keep a frame pair.
# Sets repo, work, boot, bin and libs; the caller sets out first.
repo=$(pwd)
work=$(mktemp -d)
base=${KADMIT_TEST_PORT_BASE:-0}
sidecar=$((9091 + base))
client=$((19091 + base))
export KADMIT_TEST_PORT_BASE="$base"
h="$repo/scripts/harness/kafka_cluster.py"
bin="$repo/tests/kafka/bin"
libs="$("$repo/tests/kafka/kafka-home")/libs"
python3 "$h" start --brokers 1 --dir "$work/cluster"
trap 'kill $rec 2>/dev/null || true; python3 "$h" stop --dir "$work/cluster"; rm -rf "$work"' EXIT
record() { # CLIENT: (re)starts the recorder naming frames after CLIENT
    [ -n "${rec:-}" ] && { kill "$rec"; wait "$rec" 2>/dev/null || true; }
    rm -f "$work/ready"
    python3 "$repo/tests/tools/record_frames.py" --listen "127.0.0.1:$sidecar" \
        --upstream "127.0.0.1:$client" --out "$work/$1" --client "$1" --keep all \
        --ready-file "$work/ready" &
    rec=$!
    while [ ! -f "$work/ready" ]; do sleep 0.1; done
}
boot="127.0.0.1:$sidecar"
put() { # CLIENT API-VERSION N WHAT: the N-th frame pair of CLIENT, named after WHAT
    mkdir -p "$out"
    for dir in request response; do
        cp "$work/$1/$2-$dir-$1-$3.bin" "$out/$2-$dir-$1-$4.bin"
    done
}
