"""kafka_spec_codec.py: a small Kafka codec driven by Kafka's own JSON message specs.

Used by the gateway frame capture (capture_gateway_frames.py) to encode requests of any version
and to decode a response, rewrite its broker endpoints and encode it again: the expected frames
the C rewrite (protocol/ka_endpoints.c) is compared with. It shares nothing with the C walker or
its generated tables, so the two are independent implementations of the same rule.

Decoded structs are dicts of field name -> value; a struct's tagged fields are kept as
{"_tags": [(tag, raw bytes)]} for tags the spec does not name, beside the named ones, so that
an encode of a decode gives back the same bytes (which the capture script checks on every
frame). Python 3 standard library only; the specs are read from the pinned kafka-clients jar.
"""

from __future__ import annotations

import json
import struct
import zipfile

FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I",
         "int64": ">q", "float64": ">d", "bool": ">?"}
ID_NAMES = ("NodeId", "BrokerId", "LeaderId")


def strip_comments(text: str) -> str:
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def vrange(text):
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), 1 << 30)
    if "-" in text:
        a, b = text.split("-")
        return (int(a), int(b))
    return (int(text), int(text))


def inr(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Buf:
    def __init__(self, data: bytes, off: int = 0):
        self.data, self.off = data, off

    def take(self, n: int) -> bytes:
        if self.off + n > len(self.data):
            raise ValueError("truncated at %d (+%d of %d)" % (self.off, n, len(self.data)))
        b = self.data[self.off:self.off + n]
        self.off += n
        return b

    def fixed(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def uvarint(self) -> int:
        shift, n = 0, 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7


class Spec:
    """One message spec: encode and decode its bodies."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.name = spec["name"]
        self.api_key = spec["apiKey"]
        self.flex = vrange(spec.get("flexibleVersions"))
        self.common = {c["name"]: c.get("fields", []) for c in spec.get("commonStructs", [])}

    def flexible(self, v: int) -> bool:
        return inr(self.flex, v)

    def sub_fields(self, f: dict):
        if "fields" in f:
            return f["fields"]
        t = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        return self.common.get(t)

    # -- decode
    def decode(self, data: bytes, v: int, off: int = 0):
        b = Buf(data, off)
        out = self._struct(b, self.spec.get("fields", []), v)
        return out, b.off

    def _struct(self, b: Buf, fields, v):
        flex = self.flexible(v)
        out = {}
        for f in fields:
            if "tag" in f or not inr(vrange(f.get("versions")), v):
                continue
            out[f["name"]] = self._field(b, f, v, flex)
        if flex:
            tags = {f["tag"]: f for f in fields if "tag" in f and
                    inr(vrange(f.get("taggedVersions")), v)}
            unknown = []
            for _ in range(b.uvarint()):
                tag, size = b.uvarint(), b.uvarint()
                raw = b.take(size)
                if tag in tags:
                    inner = Buf(raw)
                    out[tags[tag]["name"]] = self._field(inner, tags[tag], v, flex)
                    if inner.off != len(raw):
                        raise ValueError("tag %d: trailing bytes" % tag)
                else:
                    unknown.append((tag, raw))
            out["_tags"] = unknown
        return out

    def _field(self, b: Buf, f, v, flex):
        t = f["type"]
        nullable = inr(vrange(f.get("nullableVersions")), v)
        if t.startswith("[]"):
            n = b.uvarint() - 1 if flex else b.fixed(">i")
            if n < 0:
                return None
            elem = t[2:]
            sub = self.sub_fields(f)
            return [self._struct(b, sub, v) if sub is not None else self._value(b, elem, v, flex,
                                                                               False)
                    for _ in range(n)]
        sub = self.sub_fields(f)
        if sub is not None:
            if nullable and b.fixed(">b") < 0:
                return None
            return self._struct(b, sub, v)
        return self._value(b, t, v, flex, nullable)

    def _value(self, b: Buf, t, v, flex, nullable):
        if t in FIXED:
            return b.fixed(FIXED[t])
        if t == "uuid":
            return b.take(16)
        if t == "string":
            n = b.uvarint() - 1 if flex else b.fixed(">h")
            return None if n < 0 else b.take(n).decode()
        if t in ("bytes", "records"):
            n = b.uvarint() - 1 if flex else b.fixed(">i")
            return None if n < 0 else b.take(n)
        raise ValueError("type %s" % t)

    # -- encode
    def encode(self, values: dict, v: int) -> bytes:
        return self._enc_struct(self.spec.get("fields", []), values, v)

    def _enc_struct(self, fields, values, v):
        flex = self.flexible(v)
        out = bytearray()
        for f in fields:
            if "tag" in f or not inr(vrange(f.get("versions")), v):
                continue
            out += self._enc_field(f, values.get(f["name"], self._default(f)), v, flex)
        if flex:
            tagged = []
            for f in fields:
                if "tag" in f and f["name"] in values and inr(vrange(f.get("taggedVersions")), v):
                    tagged.append((f["tag"], self._enc_field(f, values[f["name"]], v, flex)))
            tagged += list(values.get("_tags", []))
            tagged.sort()
            out += uvarint(len(tagged))
            for tag, raw in tagged:
                out += uvarint(tag) + uvarint(len(raw)) + raw
        return bytes(out)

    def _default(self, f):
        t = f["type"]
        if t.startswith("[]"):
            return []
        d = f.get("default")
        if d == "null":
            return None
        if t in FIXED:
            if t == "bool":
                return d in (True, "true")
            return int(d, 0) if isinstance(d, str) else (d or 0)
        if t == "uuid":
            return bytes(16)
        if t == "string":
            return d if isinstance(d, str) else ""
        if t in ("bytes", "records"):
            return b""
        return {}

    def _enc_field(self, f, val, v, flex):
        t = f["type"]
        nullable = inr(vrange(f.get("nullableVersions")), v)
        sub = self.sub_fields(f)
        if t.startswith("[]"):
            if val is None:
                return uvarint(0) if flex else struct.pack(">i", -1)
            head = uvarint(len(val) + 1) if flex else struct.pack(">i", len(val))
            return head + b"".join(self._enc_struct(sub, e, v) if sub is not None else
                                   self._enc_value(t[2:], e, flex) for e in val)
        if sub is not None:
            if nullable:
                return b"\xff" if val is None else b"\x01" + self._enc_struct(sub, val, v)
            return self._enc_struct(sub, val, v)
        return self._enc_value(t, val, flex)

    def _enc_value(self, t, val, flex):
        if t in FIXED:
            return struct.pack(FIXED[t], val)
        if t == "uuid":
            return val
        if t in ("string", "bytes", "records"):
            if val is None:
                return uvarint(0) if flex else struct.pack(">h" if t == "string" else ">i", -1)
            raw = val.encode() if t == "string" else val
            if flex:
                return uvarint(len(raw) + 1) + raw
            return struct.pack(">h" if t == "string" else ">i", len(raw)) + raw
        raise ValueError("type %s" % t)


def rewrite_endpoints(tree, mapping) -> int:
    """Replaces Host and Port in every dict that holds Host, Port and a broker id; returns how
    many changed. mapping(node_id, host, port) -> (host, port) or None (leave it)."""
    n = 0
    if isinstance(tree, list):
        return sum(rewrite_endpoints(e, mapping) for e in tree)
    if not isinstance(tree, dict):
        return 0
    ids = [k for k in ID_NAMES if k in tree]
    if "Host" in tree and "Port" in tree and ids:
        got = mapping(tree[ids[0]], tree["Host"], tree["Port"])
        if got is not None and (got[0], got[1]) != (tree["Host"], tree["Port"]):
            tree["Host"], tree["Port"] = got
            n += 1
    for k, val in tree.items():
        if k != "_tags":
            n += rewrite_endpoints(val, mapping)
    return n


class Specs:
    """Every spec of a kafka-clients jar, by API name and kind."""

    def __init__(self, jar_path: str):
        self.zip = zipfile.ZipFile(jar_path)
        self.cache = {}

    def get(self, name: str) -> Spec:
        if name not in self.cache:
            raw = self.zip.read("common/message/%s.json" % name).decode()
            self.cache[name] = Spec(json.loads(strip_comments(raw)))
        return self.cache[name]


def request_frame(specs: Specs, api: str, v: int, cid: int, values: dict,
                  client_id: str = "kadmit-capture") -> bytes:
    """A whole request (size prefix included) of api (e.g. "Metadata") version v."""
    s = specs.get(api + "Request")
    cid_raw = client_id.encode()
    head = struct.pack(">hhi", s.api_key, v, cid) + struct.pack(">h", len(cid_raw)) + cid_raw
    if s.flexible(v):
        head += b"\0"
    payload = head + s.encode(values, v)
    return struct.pack(">i", len(payload)) + payload


def response_header_len(specs: Specs, api: str, v: int, frame: bytes) -> int:
    """Bytes of the response header at the start of frame (after the size prefix)."""
    if api == "ApiVersions" or not specs.get(api + "Response").flexible(v):
        return 4
    b = Buf(frame, 4)
    for _ in range(b.uvarint()):
        b.uvarint()
        b.take(b.uvarint())
    return b.off

