#!/usr/bin/env python3
"""Writes the seeds of fuzz_proxy_relay_modes from captured frames (tests/data/frames).

Each seed is: a flags byte (bit 0: the broker refuses SASL handshakes), 4 bytes of chunking seed,
the held buffer's first size in 16-byte units, then a client stream. Run from the repository root:
  python3 tests/fuzz/proxy/relay_modes_seeds.py
"""
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FRAMES = ROOT / "tests" / "data" / "frames"
OUT = ROOT / "tests" / "fuzz" / "corpus" / "fuzz_proxy_relay_modes"


def captured(name: str) -> bytes:
    body = (FRAMES / name).read_bytes()
    return struct.pack(">i", len(body)) + body


def request(key: int, version: int, corr: int, body: bytes) -> bytes:
    frame = struct.pack(">hhih", key, version, corr, 1) + b"c" + body
    return struct.pack(">i", len(frame)) + frame


def handshake_v0(mechanism: str, corr: int = 1) -> bytes:
    return request(17, 0, corr, struct.pack(">h", len(mechanism)) + mechanism.encode())


def token(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def seed(name: str, stream: bytes, flags: int = 0, chunking: int = 0x1234ABCD,
         hold_first: int = 4) -> None:
    (OUT / name).write_bytes(bytes([flags]) + struct.pack(">I", chunking) + bytes([hold_first])
                             + stream)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    admin = (captured("apiversions-v4-request-java-4.1.1.bin")
             + captured("metadata-v12-request-java-4.1.1.bin")
             + captured("createtopics-v7-request-java-4.1.1.bin")
             + captured("createpartitions-v3-request-java-4.1.1.bin")
             + captured("alterpartitionreassignments-v0-request-java-4.1.1.bin"))
    seed("held-admin-frames", admin)
    seed("held-admin-frames-tiny-buffer", admin, chunking=7, hold_first=0)
    plain = handshake_v0("PLAIN") + token(b"\0user\0secret") + captured(
        "createtopics-v4-request-pyrdkafka-2.16.0.bin")
    seed("sasl-v0-plain-one-token", plain)
    seed("sasl-v0-plain-refused", plain, flags=1)
    seed("sasl-v0-scram-two-tokens",
         handshake_v0("SCRAM-SHA-256") + token(b"n,,n=user,r=abc") + token(b"c=biws,r=abc,p=x")
         + captured("metadata-v4-request-kcat-librdkafka-2.0.2.bin"))
    seed("sasl-v0-gssapi-opaque",
         handshake_v0("GSSAPI") + bytes(range(256)) + captured("createtopics-v7-request-cli-4.1.1.bin"))
    seed("tls-client-hello-first", bytes.fromhex("16030100a5010000a10303") + bytes(160))
    seed("tls-bytes-after-a-frame",
         captured("apiversions-v3-request-java-2.4.1.bin") + bytes.fromhex("160301002a") + bytes(42))
    ct = captured("createtopics-v5-request-java-2.4.1.bin")
    seed("held-frame-cut-short", ct[: len(ct) // 2])


if __name__ == "__main__":
    main()
