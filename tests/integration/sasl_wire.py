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
    code, message, data, _ = authenticate_v1(conn, cid, token)
    return code, message, data


def authenticate_v1(conn: kafka_wire.Connection, cid: int, token: bytes
                    ) -> tuple[int, str | None, bytes, int]:
    """SaslAuthenticate v1; (error code, error message, auth bytes, session lifetime ms)."""
    _, body = conn.call(kafka_wire.request(SASL_AUTHENTICATE, 1, cid, kafka_wire._bytes(token)))
    r = kafka_wire.Reader(body)
    code, message = r.take(">h"), r.string()
    n = r.take(">i")
    data = body[r.pos:r.pos + max(n, 0)]
    r.pos += max(n, 0)
    return code, message, data, r.take(">q")


def scram_exchange(conn: kafka_wire.Connection, user: str, password: str,
                   mechanism: str = "SCRAM-SHA-512") -> tuple[int, str | None, int]:
    """SaslHandshake and a SCRAM exchange; the broker's last answer as (error code, error
    message, session lifetime ms). On success the server signature has been checked."""
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    code = handshake(conn, 9001, mechanism)
    if code != 0:
        return code, None, 0
    nonce = base64.b64encode(os.urandom(18)).decode()
    name = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={nonce}"
    code, msg, server_first = authenticate(conn, 9002, ("n,," + first_bare).encode())
    if code != 0:
        return code, msg, 0
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
    code, msg, server_final, lifetime = authenticate_v1(conn, 9003, final)
    if code == 0:
        server_key = hmac.new(salted, b"Server Key", algo).digest()
        expected = base64.b64encode(hmac.new(server_key, auth_message, algo).digest()).decode()
        assert server_final.decode() == f"v={expected}", server_final
    return code, msg, lifetime


def scram_login(conn: kafka_wire.Connection, user: str, password: str,
                mechanism: str = "SCRAM-SHA-512") -> int:
    """A whole SCRAM login; raises AssertionError unless the broker accepts it and proves it
    knows the password. The session lifetime the broker gave (0: no re-authentication)."""
    code, msg, lifetime = scram_exchange(conn, user, password, mechanism)
    assert code == 0, (code, msg)
    return lifetime
