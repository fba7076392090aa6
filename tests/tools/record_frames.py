#!/usr/bin/env python3
"""record_frames.py: a TCP relay that records Kafka frames between a client and a broker.

    python3 tests/tools/record_frames.py --listen 127.0.0.1:9491 --upstream 127.0.0.1:19491 \\
        --out tests/data/frames --client java-4.1.1 [--keep largest|first] [--ready-file F]

Every connection to --listen is relayed to --upstream, byte for byte and unchanged. Both
directions are split into Kafka frames (int32 size, then the frame). Requests are read for
(api_key, api_version, correlation_id); responses are matched to their request by correlation
id, per connection. Frames of the APIs kadmit decodes (ApiVersions, Metadata, CreateTopics,
CreatePartitions, AlterPartitionReassignments, DescribeConfigs, IncrementalAlterConfigs,
AlterConfigs, DeleteTopics, DeleteRecords) are
written as

    <OUT>/<apiname>-v<version>-<request|response>-<client>.bin

holding the frame after its size prefix: header, then body. That is the format
tests/unit/protocol/test_codec_roundtrip.c (test_captured_frames_round_trip) loads. One file is
kept per (api, version, direction, client): the largest frame seen (--keep largest, the
default, since it exercises the most fields) or the first one (--keep first); --keep all
writes every frame, numbered, for debugging. Files already in
OUT are replaced only by a larger frame (largest) or never (first).

Left out, and counted in the summary printed on exit (SIGINT or SIGTERM):
  * ApiVersions responses with error 35 (UNSUPPORTED_VERSION): the broker wrote them in the v0
    format whatever the request's version, so the file name would lie about the body;
  * versions above --max-version API=N (repeatable), e.g. to keep only what a codec decodes.

Plaintext only; no SASL (a SaslHandshake v0 would switch the stream to raw tokens). Python 3
standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import struct
import sys
import threading

RECORDED_APIS = {
    18: "apiversions",
    3: "metadata",
    19: "createtopics",
    37: "createpartitions",
    45: "alterpartitionreassignments",
    32: "describeconfigs",
    44: "incrementalalterconfigs",
    33: "alterconfigs",
    20: "deletetopics",
    21: "deleterecords",
}
NAME_TO_KEY = {v: k for k, v in RECORDED_APIS.items()}
API_VERSIONS = 18
MAX_FRAME = 100 << 20


class Recorder:
    def __init__(self, out: str, client: str, keep: str, max_versions: dict[int, int],
                 verbose: bool):
        self.out = out
        self.client = client
        self.keep = keep
        self.max_versions = max_versions
        self.verbose = verbose
        self.lock = threading.Lock()
        self.sizes: dict[str, int] = {}
        self.seen: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.connections = 0
        os.makedirs(out, exist_ok=True)

    def note_skip(self, why: str) -> None:
        with self.lock:
            self.skipped[why] = self.skipped.get(why, 0) + 1

    def record(self, api_key: int, version: int, direction: str, frame: bytes) -> None:
        name = RECORDED_APIS.get(api_key)
        if name is None:
            return
        cap = self.max_versions.get(api_key)
        if cap is not None and version > cap:
            self.note_skip(f"{name} v{version} {direction} (above --max-version {cap})")
            return
        if direction == "response" and api_key == API_VERSIONS and len(frame) >= 6:
            if struct.unpack_from(">h", frame, 4)[0] == 35:
                self.note_skip(f"apiversions v{version} response with error 35 (v0 body)")
                return
        fname = f"{name}-v{version}-{direction}-{self.client}.bin"
        with self.lock:
            self.seen[fname] = self.seen.get(fname, 0) + 1
            if self.keep == "all":  # every frame, numbered: for debugging a client
                fname = fname[:-4] + f"-{self.seen[fname]}.bin"
            path = os.path.join(self.out, fname)
            old = self.sizes.get(fname)
            if old is None and os.path.exists(path):
                old = os.path.getsize(path)
            if old is not None and (self.keep == "first" or len(frame) <= old):
                return
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(frame)
            os.replace(tmp, path)
            self.sizes[fname] = len(frame)
        if self.verbose:
            print(f"record_frames: wrote {fname} ({len(frame)} bytes)", file=sys.stderr)

    def summary(self) -> str:
        lines = [f"record_frames[{self.client}]: {self.connections} connection(s), "
                 f"{len(self.sizes)} file(s) written"]
        for fname in sorted(self.seen):
            lines.append(f"  {fname}: {self.seen[fname]} frame(s) seen"
                         + (f", kept {self.sizes[fname]} bytes" if fname in self.sizes else ""))
        for why in sorted(self.skipped):
            lines.append(f"  left out: {why}: {self.skipped[why]}")
        return "\n".join(lines)


class Splitter:
    """Splits a byte stream into frames (the bytes after each int32 size prefix)."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.buf += data
        frames = []
        while len(self.buf) >= 4:
            size = struct.unpack_from(">i", self.buf, 0)[0]
            if size < 0 or size > MAX_FRAME:
                raise ValueError(f"bad frame size {size}")
            if len(self.buf) < 4 + size:
                break
            frames.append(bytes(self.buf[4:4 + size]))
            del self.buf[:4 + size]
        return frames


class Connection:
    def __init__(self, rec: Recorder, client: socket.socket, upstream: tuple[str, int]):
        self.rec = rec
        self.client = client
        self.server = socket.create_connection(upstream, timeout=10)
        self.server.settimeout(None)
        for s in (self.client, self.server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending: dict[int, tuple[int, int]] = {}
        self.lock = threading.Lock()

    def on_request(self, frame: bytes) -> None:
        if len(frame) < 8:
            return
        api_key, version, corr = struct.unpack_from(">hhi", frame, 0)
        with self.lock:
            self.pending[corr] = (api_key, version)
        self.rec.record(api_key, version, "request", frame)

    def on_response(self, frame: bytes) -> None:
        if len(frame) < 4:
            return
        corr = struct.unpack_from(">i", frame, 0)[0]
        with self.lock:
            req = self.pending.pop(corr, None)
        if req is None:
            self.rec.note_skip("response with an unknown correlation id")
            return
        self.rec.record(req[0], req[1], "response", frame)

    def pump(self, src: socket.socket, dst: socket.socket, on_frame) -> None:
        splitter = Splitter()
        parse = True
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                # Parse before forwarding, so a request's correlation id is known before its
                # response can arrive. The bytes are forwarded unchanged either way.
                if parse:
                    try:
                        for frame in splitter.feed(data):
                            on_frame(frame)
                    except ValueError as e:
                        self.rec.note_skip(f"stream not parsed further: {e}")
                        parse = False
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (dst, src):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def run(self) -> None:
        t = threading.Thread(target=self.pump, args=(self.server, self.client, self.on_response),
                             daemon=True)
        t.start()
        self.pump(self.client, self.server, self.on_request)
        t.join()
        self.client.close()
        self.server.close()


def hostport(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", required=True, type=hostport, help="HOST:PORT for clients")
    ap.add_argument("--upstream", required=True, type=hostport, help="the broker (or kadmit)")
    ap.add_argument("--out", required=True, help="directory for the .bin files")
    ap.add_argument("--client", required=True,
                    help="label in the file names, e.g. java-3.9.1 or kcat-librdkafka-2.8.0")
    ap.add_argument("--keep", choices=("largest", "first", "all"), default="largest",
                    help="all: every frame, as ...-<client>-<n>.bin (for debugging)")
    ap.add_argument("--max-version", action="append", default=[], metavar="API=N",
                    help="leave out versions above N, e.g. metadata=12 (repeatable)")
    ap.add_argument("--ready-file", help="written once the listener is up")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not all(c.isalnum() or c in ".-_" for c in args.client):
        ap.error("--client may hold letters, digits, '.', '-' and '_' only")
    caps = {}
    for item in args.max_version:
        name, _, n = item.partition("=")
        if name.lower() not in NAME_TO_KEY:
            ap.error(f"--max-version: unknown API {name!r}")
        caps[NAME_TO_KEY[name.lower()]] = int(n)

    rec = Recorder(args.out, args.client, args.keep, caps, args.verbose)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(args.listen)
    lsock.listen(64)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()
        try:
            lsock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        lsock.close()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    while not stop.is_set():
        try:
            conn, _ = lsock.accept()
        except OSError:
            break
        try:
            c = Connection(rec, conn, args.upstream)
        except OSError as e:
            print(f"record_frames: upstream {args.upstream}: {e}", file=sys.stderr)
            conn.close()
            continue
        rec.connections += 1
        threading.Thread(target=c.run, daemon=True).start()
    print(rec.summary(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
