#!/usr/bin/env python3
"""Turn the frames captured from real clients into libFuzzer seeds.

Each file in tests/data/frames/ is one frame (header and body, no size
prefix) named <api>-v<version>-<request|response>-<client>.bin. This writes,
under tests/fuzz/corpus/:

  fuzz_<api>_<direction>/real-<name>   two version-selector bytes, then the body
  fuzz_headers/real-<name>             the header-version byte, then the frame
  fuzz_apiversions_clamp/real-<name>   the request version, then the response
  fuzz_endpoints/real-<name>           from tests/data/frames/gateway/: the response's index
                                       in ka_ep_messages, its version minus the lowest, the body

in the input formats of tests/fuzz/protocol/*.c, so that the fuzzers start
from what Java clients, Kafka's CLI tools and librdkafka really send.

The header rules come from protocol/generated/ka_api_table.c (the first
flexible version of each API), so this script and the codecs agree.

Usage: python3 tests/tools/frames_to_seeds.py   (from the repository root)
"""
import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMES = ROOT / "tests" / "data" / "frames"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
TABLE = ROOT / "protocol" / "generated" / "ka_api_table.c"
EP_TABLE = ROOT / "protocol" / "generated" / "ka_endpoint_table.c"
NAME = re.compile(r"^([a-z]+)-v(\d+)-(request|response)-(.+)\.bin$")


def api_table():
    """{lowercase api name: (api_key, min, max, first flexible version or -1)}."""
    rows = {}
    for m in re.finditer(r'\{(\d+), "(\w+)", (-?\d+), (-?\d+), (-?\d+), ', TABLE.read_text()):
        key, name, lo, hi, flex = int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5])
        rows[name.lower()] = (key, lo, hi, flex)
    return rows


def uvarint_len(buf, off):
    n = 0
    while buf[off + n] & 0x80:
        n += 1
    return n + 1


def skip_tagged(buf, off):
    """Offset after a tagged-field section starting at off."""
    count_len = uvarint_len(buf, off)
    count = 0
    for i in range(count_len):
        count |= (buf[off + i] & 0x7F) << (7 * i)
    off += count_len
    for _ in range(count):
        off += uvarint_len(buf, off)  # tag
        size_len = uvarint_len(buf, off)
        size = 0
        for i in range(size_len):
            size |= (buf[off + i] & 0x7F) << (7 * i)
        off += size_len + size
    return off


def split(frame, api, version, direction, table):
    """(header version, body) of a captured frame."""
    key, _, _, flex = table[api]
    flexible = flex >= 0 and version >= flex
    if direction == "request":
        (client_id_len,) = struct.unpack_from(">h", frame, 8)
        off = 10 + max(client_id_len, 0)
        if flexible:
            return 2, frame[skip_tagged(frame, off):]
        return 1, frame[off:]
    # ApiVersions responses always use response header v0.
    if flexible and key != 18:
        return 1, frame[skip_tagged(frame, 4):]
    return 0, frame[4:]


def endpoint_messages():
    """[(api_key, min version)] in the order of ka_ep_messages (ka_endpoint_table.c)."""
    text = EP_TABLE.read_text()
    text = text[text.index("ka_ep_messages[] = {"):]
    return [(int(m[1]), int(m[2])) for m in
            re.finditer(r'\{(\d+), "\w+Response", (\d+), ', text)]


def gateway_seeds(table):
    """Seeds of fuzz_endpoints from the gateway captures (not their expected frames)."""
    msgs = endpoint_messages()
    directory = CORPUS / "fuzz_endpoints"
    directory.mkdir(exist_ok=True)
    written = 0
    for path in sorted((FRAMES / "gateway").glob("*.bin")):
        m = NAME.match(path.name)
        if not m or ".rewritten" in path.name or ".partial" in path.name:
            continue
        api, version = m[1], int(m[2])
        key = table[api][0]
        index = next(i for i, (k, _) in enumerate(msgs) if k == key)
        _, body = split(path.read_bytes(), api, version, "response", table)
        (directory / f"real-{path.stem}").write_bytes(bytes([index, version - msgs[index][1]])
                                                      + body)
        written += 1
    return written


def main():
    table = api_table()
    written = gateway_seeds(table)
    for path in sorted(FRAMES.glob("*.bin")):
        m = NAME.match(path.name)
        if not m or m[1] not in table:
            print(f"skipped {path.name}: not a name this script understands", file=sys.stderr)
            continue
        api, version, direction, stem = m[1], int(m[2]), m[3], path.stem
        frame = path.read_bytes()
        _, lo, hi, _ = table[api]
        header_version, body = split(frame, api, version, direction, table)
        seeds = {
            CORPUS / f"fuzz_{api}_{direction}": struct.pack(">H", version - lo) + body,
            CORPUS / "fuzz_headers": bytes([header_version << 1 | (direction == "response")])
            + frame,
        }
        if api == "apiversions" and direction == "response":
            seeds[CORPUS / "fuzz_apiversions_clamp"] = struct.pack(">H", version) + frame
        for directory, data in seeds.items():
            if not directory.is_dir():
                print(f"skipped {path.name}: no corpus {directory.name}", file=sys.stderr)
                continue
            (directory / f"real-{stem}").write_bytes(data)
            written += 1
        assert lo <= version <= hi, f"{path.name}: version outside {lo}-{hi}"
    print(f"wrote {written} seeds from {FRAMES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
