"""A SASL login over a raw Kafka connection (kafka_wire.Connection), for tests that must send
what no client library sends: a SaslAuthenticate after the login, a second SaslHandshake.

SaslHandshake v1 and SaslAuthenticate v1 (request header v1, response header v0), SCRAM-SHA-256/512
per RFC 5802 with the server signature checked, and PLAIN.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct

import kafka_wire

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 34, 58


def handshake(conn: kafka_wire.Connection, cid: int, mechanism: str) -> int:
    """SaslHandshake v1; the broker's error code."""
    _, body = conn.call(kafka_wire.request(SASL_HANDSHAKE, 1, cid, kafka_wire._str(mechanism)))
    return struct.unpack_from(">h", body, 0)[0]


def authenticate(conn: kafka_wire.Connection, cid: int, token: bytes
                 ) -> tuple[int, str | None, bytes]:
    """SaslAuthenticate v1; (error code, error message, auth bytes)."""
    _, body = conn.call(kafka_wire.request(SASL_AUTHENTICATE, 1, cid, kafka_wire._bytes(token)))
    r = kafka_wire.Reader(body)
    code, message = r.take(">h"), r.string()
    n = r.take(">i")
    data = body[r.pos:r.pos + max(n, 0)]
    return code, message, data


def scram_login(conn: kafka_wire.Connection, user: str, password: str,
                mechanism: str = "SCRAM-SHA-512") -> None:
    """A whole SCRAM login; raises AssertionError unless the broker accepts it and proves it
    knows the password."""
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    assert handshake(conn, 9001, mechanism) == 0
    nonce = base64.b64encode(os.urandom(18)).decode()
    name = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={nonce}"
    code, msg, server_first = authenticate(conn, 9002, ("n,," + first_bare).encode())
    assert code == 0, (code, msg)
    fields = dict(f.split("=", 1) for f in server_first.decode().split(","))
    assert fields["r"].startswith(nonce)
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), base64.b64decode(fields["s"]),
                                 int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    stored_key = hashlib.new(algo, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = ",".join([first_bare, server_first.decode(), without_proof]).encode()
    signature = hmac.new(stored_key, auth_message, algo).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    code, msg, server_final = authenticate(conn, 9003, final)
    assert code == 0, (code, msg)
    server_key = hmac.new(salted, b"Server Key", algo).digest()
    expected = base64.b64encode(hmac.new(server_key, auth_message, algo).digest()).decode()
    assert server_final.decode() == f"v={expected}", server_final
