"""kadmit's reading of SASL tokens against a port of Kafka's own (differential, seeded).

Kafka's parsing, ported from apache/kafka (clients/.../security):
- scram/internals/ScramMessages.ClientFirstMessage: the whole token, decoded as UTF-8, must match
  n,(a=SASLNAME)?,(m=VALUE,)?n=SASLNAME,r=PRINTABLE(,ALPHA=VALUE)*
  with SASLNAME (?:[\\x01-\\x7F&&[^=,]]|=2C|=3D)+, VALUE [\\x01-\\x7F&&[^,]]+,
  PRINTABLE [\\x21-\\x7E&&[^,]]+, ALPHA [A-Za-z]+;
- ScramFormatter.username: =2C then =3D decoded;
- ScramExtensions: Utils.parseMap (a HashMap: the last repeated key wins), tokenAuthenticated =
  Boolean.parseBoolean(map.get("tokenauth"));
- ScramSaslServer: a non-empty authzid, as sent, must equal the decoded username;
- plain/internals/PlainSaslServer: UTF-8, exactly three NUL-separated tokens, username and password
  non-empty, a non-empty authzid equal to the username.
kadmit's own rules on top (docs/tls-sasl.md): a delegation token, a name with a control byte or
not UTF-8 is KA_EUNSUPPORTED (the principal is unknown), a name over 250 bytes KA_ELIMIT.

Usage: sasl_principal_kafka_model.py DRIVER
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

EINVALID, ELIMIT, EUNSUPPORTED = -3, -2, -6
SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
VALUE = r"[\x01-\x2b\x2d-\x7f]+"
PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
CLIENT_FIRST = re.compile(
    r"n,(a=(?P<authzid>%s))?,(m=%s,)?n=(?P<saslname>%s),r=(?P<nonce>%s)(?P<ext>(,[A-Za-z]+=%s)*)"
    % (SASLNAME, VALUE, SASLNAME, PRINTABLE, VALUE), re.S)


def name_check(name: bytes) -> int:
    if len(name) > 250:
        return ELIMIT
    return EUNSUPPORTED if any(c < 0x20 or c == 0x7F for c in name) else 0


def scram(token: bytes) -> tuple[int, bytes]:
    m = CLIENT_FIRST.fullmatch(token.decode("utf-8", errors="replace"))
    if not m:
        return EINVALID, b""
    user = m.group("saslname").replace("=2C", ",").replace("=3D", "=")
    extensions: dict[str, str] = {}
    if m.group("ext"):
        for kv in m.group("ext")[1:].split(","):
            k, v = kv.split("=", 1)
            extensions[k] = v
    if len(user) > 250:
        return ELIMIT, b""
    authzid = m.group("authzid") or ""
    if authzid and authzid != user:
        return EINVALID, b""
    if extensions.get("tokenauth", "").lower() == "true":
        return EUNSUPPORTED, b""
    rc = name_check(user.encode())
    return (rc, b"") if rc else (0, b"User:" + user.encode())


def utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def plain(token: bytes) -> tuple[int, bytes]:
    parts = token.split(b"\0")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return EINVALID, b""
    authzid, user, _ = parts
    if not utf8(authzid) or not utf8(user):
        return EUNSUPPORTED, b""
    if authzid and authzid != user:
        return EINVALID, b""
    rc = name_check(user)
    return (rc, b"") if rc else (0, b"User:" + user)


def pick(rng: random.Random, items: list[bytes], lo: int, hi: int) -> bytes:
    return b"".join(rng.choice(items) for _ in range(rng.randint(lo, hi)))


def scram_case(rng: random.Random) -> bytes:
    name_bits = [b"a", b"b", b"=2C", b"=3D", b"=2c", b"=", b",", b"\x01", b"\xc3\xa9", b"-", b"~"]
    val_bits = [b"true", b"TRUE", b"tRuE", b"false", b"=", b"1", b",", b"x"]
    t = b"n,"
    if rng.random() < 0.3:
        t += b"a=" + rng.choice([b"alice", pick(rng, name_bits, 0, 4)])
    t += b","
    if rng.random() < 0.2:
        t += b"m=" + pick(rng, val_bits, 0, 2) + b","
    t += b"n=" + rng.choice([b"alice", pick(rng, name_bits, 0, 4)])
    t += b",r=" + rng.choice([b"abc", b"a=b", b"", b"a b", b"~!", b"x\x80"])
    for _ in range(rng.randint(0, 3)):
        t += (b"," + rng.choice([b"tokenauth", b"TokenAuth", b"ext", b"x1", b"", b"tokenauthx"])
              + rng.choice([b"=", b"", b"=="]) + pick(rng, val_bits, 0, 2))
    return t


def plain_case(rng: random.Random) -> bytes:
    return pick(rng, [b"\0", b"alice", b"bob", b"pw", b"\xc3\xbc", b"\xff", b"\xe2\x82", b"\n",
                      b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98\x80", b"\xc0\xaf"], 1, 8)


def main() -> int:
    rng = random.Random(578)
    cases = [(2, scram_case(rng)) if i % 2 else (1, plain_case(rng)) for i in range(60000)]
    cases += [(2, b"n,,n=tokenid,r=x,tokenauth=TRUE"), (2, b"n,,n=tokenid,r=x,TokenAuth=true")]
    text = "".join(f"{m} {t.hex()}\n" for m, t in cases)
    out = subprocess.run([sys.argv[1]], input=text.encode(), capture_output=True, check=True,
                         timeout=60).stdout.decode().splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    mismatches, seen = 0, set()
    for (mech, token), line in zip(cases, out):
        rc, _, name = line.partition(" ")
        got = (int(rc), bytes.fromhex(name))
        want = plain(token) if mech == 1 else scram(token)
        seen.add((mech, want[0]))
        if got != want:
            mismatches += 1
            if mismatches <= 10:
                print(f"mismatch: mech {mech} token {token!r}: kadmit {got}, Kafka {want}")
    # Every outcome was exercised, or the comparison proves little.
    expected = {(m, rc) for m in (1, 2) for rc in (0, EINVALID, EUNSUPPORTED)}
    assert expected <= seen, sorted(expected - seen)
    print(f"{len(cases)} tokens, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
