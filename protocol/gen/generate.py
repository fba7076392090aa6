#!/usr/bin/env python3
"""Generates kadmit's Kafka codecs from Kafka's JSON message specs.

Run from the repository root:

    python3 protocol/gen/generate.py

Its one input is the kafka-clients jar pinned in protocol/gen/specs.lock
(version and sha256); protocol/gen/fetch-specs.sh, which this runs first,
puts it in the cache directory. --jar names a verified copy instead.

It writes, deterministically:
  protocol/generated/ka_<api>_{request,response}.{h,c}  one codec per message
  protocol/generated/ka_api_table.{h,c}                  versions and header rules
  protocol/generated/ka_codecs.{h,c}                     a generic table of codecs
  protocol/generated/ka_api_keys.h                       an enum of every API key
  protocol/generated/ka_error_codes.{h,c}                Kafka's error codes and names
  protocol/generated/ka_endpoint_table.{h,c}             responses' broker endpoints (gateway)
  protocol/generated/ENDPOINTS.md                        the list of those endpoints, in words
  tests/unit/protocol/generated_samples.{h,c}            sample frames per version
  tests/fuzz/corpus/<target>/*.bin                       fuzz seeds from those samples

Only names, types, versions and defaults are taken from the specs, and only
codes and names from the error table. The
sample frames are encoded here, in Python, independently of the C encoder,
so the round-trip tests compare two implementations of the wire format.
"""

import argparse
import os
import subprocess
import sys

# The generator's modules sit beside it; keep the source tree free of bytecode.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from emit_endpoints import emit as emit_endpoints  # noqa: E402
from emit_files import emit_api_table, emit_codecs, emit_header, emit_source  # noqa: E402
from emit_tables import emit_api_keys, emit_error_codes  # noqa: E402
from ka_cfmt import layout  # noqa: E402
from ka_input import SpecJar, read_lock  # noqa: E402
from ka_spec import Message, parse_versions  # noqa: E402
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
    "DeleteRecords",
    "DescribeLogDirs",
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
    "AlterConfigs": 2,
    "StreamsGroupHeartbeat": 1,
    "DeleteTopics": 6,
    "DeleteRecords": 2,
}

# Request header v0 (no client id) survives only for this API and version.
REQUEST_HEADER_V0 = {"ControlledShutdown": 0}


# protocol/generated/.clang-format: the generator lays the code out itself.
CLANG_FORMAT_OFF = """\
# protocol/generated/ is written, layout included, by protocol/gen/generate.py
# (protocol/gen/ka_cfmt.py), so that it does not depend on the local
# clang-format's version. protocol/gen/check.sh checks it instead.
DisableFormat: true
SortIncludes: false
"""


def fetch_jar(here):
    """The pinned jar's path, fetched into the cache when absent (fetch-specs.sh)."""
    done = subprocess.run(["sh", os.path.join(here, "fetch-specs.sh")], stdout=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit("generate.py: no verified input; see the message above")
    return done.stdout.decode().strip()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jar", help="a copy of the pinned kafka-clients jar (default: fetch it "
                    "into the cache with protocol/gen/fetch-specs.sh)")
    ap.add_argument("--out", default=repo, help="root to write under (default: the repository)")
    args = ap.parse_args()
    out_root = os.path.abspath(args.out)
    jar = SpecJar(args.jar or fetch_jar(here), read_lock())

    apis = []
    for fn in jar.spec_names():
        if not fn.endswith("Request.json"):
            continue
        spec = jar.load(fn)
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
            msgs.append(Message(jar.load(fn), fn))
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
        with open(path, "w", encoding="utf-8") as f:
            f.write(layout(text.replace("@KAFKA_VERSION@", jar.version)))
        written.append(path)

    with open(os.path.join(gen_dir, ".clang-format"), "w", encoding="utf-8") as f:
        f.write(CLANG_FORMAT_OFF)
    for m in msgs:
        put(os.path.join(gen_dir, m.prefix + ".h"), emit_header(m))
        put(os.path.join(gen_dir, m.prefix + ".c"), emit_source(m))
    th, tc = emit_api_table(apis, decoded)
    put(os.path.join(gen_dir, "ka_api_table.h"), th)
    put(os.path.join(gen_dir, "ka_api_table.c"), tc)
    put(os.path.join(gen_dir, "ka_api_keys.h"), emit_api_keys(apis))
    eh, ec = emit_error_codes(jar.error_codes())
    put(os.path.join(gen_dir, "ka_error_codes.h"), eh)
    put(os.path.join(gen_dir, "ka_error_codes.c"), ec)
    eph, epc, epd = emit_endpoints(jar)
    put(os.path.join(gen_dir, "ka_endpoint_table.h"), eph)
    put(os.path.join(gen_dir, "ka_endpoint_table.c"), epc)
    with open(os.path.join(gen_dir, "ENDPOINTS.md"), "w", encoding="utf-8") as f:
        f.write(epd)
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
