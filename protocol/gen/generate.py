#!/usr/bin/env python3
"""Generates kadmit's Kafka codecs from Kafka's JSON message specs.

Run from the repository root:

    python3 protocol/gen/generate.py [--specs ../shared/kafka-protocol/specs-4.4.0]

It writes, deterministically:
  protocol/generated/ka_<api>_{request,response}.{h,c}  one codec per message
  protocol/generated/ka_api_table.{h,c}                  versions and header rules
  protocol/generated/ka_codecs.{h,c}                     a generic table of codecs
  tests/unit/protocol/generated_samples.{h,c}            sample frames per version
  tests/fuzz/corpus/<target>/*.bin                       fuzz seeds from those samples

Only names, types, versions and defaults are taken from the specs. The
sample frames are encoded here, in Python, independently of the C encoder,
so the round-trip tests compare two implementations of the wire format.
"""

import argparse
import os
import shutil
import subprocess
import sys

# The generator's modules sit beside it; keep the source tree free of bytecode.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from emit_files import emit_api_table, emit_codecs, emit_header, emit_source  # noqa: E402
from ka_spec import Message, load_spec, parse_versions  # noqa: E402
from samples import emit_samples, write_corpus  # noqa: E402

# The APIs that get a codec, in no particular order.
CODEC_APIS = [
    "ApiVersions",
    "Metadata",
    "CreateTopics",
    "CreatePartitions",
    "AlterPartitionReassignments",
    "DescribeConfigs",
    "IncrementalAlterConfigs",
    "SaslHandshake",
    "SaslAuthenticate",
    "DescribeCluster",
    "DeleteTopics",
    "AlterConfigs",
    "StreamsGroupHeartbeat",
]

# The highest version kadmit decodes of each API it judges or reads: the
# ApiVersions clamp lowers brokers' answers to these. They are pinned here,
# not taken from the specs, so that a newer spec (which adds versions to a
# codec) never widens what kadmit admits before tests show the new versions
# work. APIs with a codec but not listed here are not clamped.
DECODED_MAX_VERSIONS = {
    "ApiVersions": 4,
    "Metadata": 12,
    "CreateTopics": 7,
    "CreatePartitions": 3,
    "AlterPartitionReassignments": 0,
    "DescribeConfigs": 4,
    "IncrementalAlterConfigs": 1,
}

# Request header v0 (no client id) survives only for this API and version.
REQUEST_HEADER_V0 = {"ControlledShutdown": 0}


def clang_format(text, repo_path):
    """Formats text as if it were the repository file repo_path, with the repo's style."""
    exe = shutil.which("clang-format")
    if exe is None:
        raise SystemExit("generate.py: clang-format is needed to format the generated code")
    done = subprocess.run([exe, "--style=file", "--assume-filename=" + repo_path],
                          input=text.encode(), stdout=subprocess.PIPE, check=True)
    return done.stdout.decode()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specs", default=os.path.join("..", "shared", "kafka-protocol", "specs-4.4.0"),
                    help="Kafka's message specs (default: ../shared/kafka-protocol/specs-4.4.0)")
    ap.add_argument("--out", default=".", help="root to write under (default: the repo root)")
    args = ap.parse_args()
    specs = args.specs if os.path.isabs(args.specs) else os.path.join(repo, args.specs)
    out_root = args.out if os.path.isabs(args.out) else os.path.join(os.getcwd(), args.out)
    if not os.path.isdir(specs):
        raise SystemExit("generate.py: no specs directory at %s" % args.specs)

    apis = []
    for fn in sorted(os.listdir(specs)):
        if not fn.endswith("Request.json"):
            continue
        spec = load_spec(os.path.join(specs, fn))
        if "apiKey" not in spec:
            continue
        name = spec["name"][: -len("Request")]
        valid = parse_versions(spec["validVersions"])
        if valid is None:
            # Retired APIs (the ZooKeeper-era inter-broker ones) keep their
            # spec file with no valid version; nothing speaks them any more.
            continue
        lo, hi = valid
        hi = lo if hi is None else hi
        flex = parse_versions(spec.get("flexibleVersions"))
        first_flex = -1 if flex is None else max(flex[0], lo)
        v0_below = REQUEST_HEADER_V0.get(name, -1) + 1
        # ApiVersions responses are pinned to response header v0: a client
        # must read them before it knows what the broker speaks.
        always_v0 = 1 if name == "ApiVersions" else 0
        apis.append((spec["apiKey"], name, lo, hi, first_flex, v0_below, always_v0))
    apis.sort()

    msgs = []
    for api in CODEC_APIS:
        for kind in ("Request", "Response"):
            fn = api + kind + ".json"
            spec = load_spec(os.path.join(specs, fn))
            msgs.append(Message(spec, fn))
    msgs.sort(key=lambda m: (m.api_key, m.kind))
    decoded = []
    for m in msgs:
        if m.kind != "request" or m.api not in DECODED_MAX_VERSIONS:
            continue
        hi = DECODED_MAX_VERSIONS[m.api]
        if not m.lo <= hi <= m.hi:
            raise SystemExit("generate.py: %s: pinned decoded max v%d is outside the spec's %d-%d"
                             % (m.api, hi, m.lo, m.hi))
        decoded.append((m.api_key, m.lo, hi))

    gen_dir = os.path.join(out_root, "protocol", "generated")
    os.makedirs(gen_dir, exist_ok=True)
    for old in os.listdir(gen_dir):
        if old.endswith((".c", ".h")):
            os.remove(os.path.join(gen_dir, old))
    written = []

    def put(path, text):
        rel = os.path.relpath(path, out_root)
        with open(path, "w", encoding="utf-8") as f:
            f.write(clang_format(text, os.path.join(repo, rel)))
        written.append(path)

    for m in msgs:
        put(os.path.join(gen_dir, m.prefix + ".h"), emit_header(m))
        put(os.path.join(gen_dir, m.prefix + ".c"), emit_source(m))
    th, tc = emit_api_table(apis, decoded)
    put(os.path.join(gen_dir, "ka_api_table.h"), th)
    put(os.path.join(gen_dir, "ka_api_table.c"), tc)
    ch, cc = emit_codecs(msgs)
    put(os.path.join(gen_dir, "ka_codecs.h"), ch)
    put(os.path.join(gen_dir, "ka_codecs.c"), cc)
    sample_dir = os.path.join(out_root, "tests", "unit", "protocol")
    os.makedirs(sample_dir, exist_ok=True)
    sh, sc = emit_samples(msgs)
    put(os.path.join(sample_dir, "generated_samples.h"), sh)
    put(os.path.join(sample_dir, "generated_samples.c"), sc)
    corpus = os.path.join(out_root, "tests", "fuzz", "corpus")
    write_corpus(msgs, corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
