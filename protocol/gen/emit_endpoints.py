"""Where responses carry broker endpoints: the tables the gateway's rewrite
walks (protocol/generated/ka_endpoint_table.{h,c}) and the list of what was
found (protocol/generated/ENDPOINTS.md).

Every *Response.json spec is searched for structs that hold a field named
Host (a string) and one named Port (int32 or uint16). Such a struct is a
broker endpoint when an id field (NodeId, BrokerId or LeaderId, int32) sits
beside them and the API is one brokers answer (its request spec lists the
"broker" listener). Everything else that looks like an endpoint is listed
with the reason it is left alone.

For each message that carries endpoints the whole schema is emitted as
tables (every field, tagged ones included, with its versions), so that the
C walker (protocol/ka_endpoints.c) can skip what does not hold endpoints
and descend only into what may. This model reads the raw JSON itself: the
codec model (ka_spec.Field) does not describe tagged fields' contents.
"""

from ka_spec import GENERATED_NOTE, parse_versions, in_range

ID_NAMES = ("NodeId", "BrokerId", "LeaderId")
FIXED = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
         "float64": 8, "uuid": 16}
MAX_VERSION = 63  # versions are held in 64-bit masks
OPEN = 32767


class EField:
    def __init__(self, spec, st, msg):
        self.name = spec["name"]
        t = spec["type"]
        self.array = t.startswith("[]")
        elem = t[2:] if self.array else t
        tagged = "taggedVersions" in spec or "tag" in spec
        self.tag = spec["tag"] if tagged else -1
        self.versions = parse_versions(spec["taggedVersions"] if tagged else spec.get("versions"))
        self.nullable = parse_versions(spec.get("nullableVersions"))
        if "flexibleVersions" in spec:
            msg.unsupported.append("%s.%s: a field-level flexibleVersions" % (msg.name, self.name))
        self.sub = None
        self.size = 0
        self.role = "NONE"
        if elem in FIXED:
            self.kind, self.size = "FIXED", FIXED[elem]
        elif elem == "string":
            self.kind = "STRING"
        elif elem in ("bytes", "records"):
            self.kind = "BYTES"
        else:
            self.kind = "STRUCT"
            fields = spec.get("fields")
            if fields is None:
                fields = msg.common[elem]
            self.sub = EStruct(elem, fields, msg, st.path + "/" + self.name)
            if not self.array and self.nullable is not None:
                msg.unsupported.append("%s.%s: a nullable struct" % (msg.name, self.name))

    def present(self, v):
        return in_range(self.versions, v)

    def holds(self, v):
        """1 when an endpoint struct may be inside this field at version v."""
        return self.present(v) and self.sub is not None and self.sub.holds(v)


class EStruct:
    def __init__(self, name, fields, msg, path):
        self.name = name
        self.path = path
        self.msg = msg
        self.fields = [EField(f, self, msg) for f in fields]
        self.idx = len(msg.structs)
        msg.structs.append(self)
        by = {f.name: f for f in self.fields}
        host, port = by.get("Host"), by.get("Port")
        ids = [by[n] for n in ID_NAMES if n in by]
        self.candidate = host is not None and port is not None and host.kind == "STRING" and \
            not host.array and port.kind == "FIXED" and port.size in (2, 4) and not port.array
        self.host, self.port = host, port
        self.id = ids[0] if ids else None
        self.endpoint = self.candidate and self.id is not None and msg.broker_facing
        if self.endpoint:
            if self.fields.index(host) > self.fields.index(port) or host.tag >= 0 or \
                    port.tag >= 0 or self.id.tag >= 0 or self.id.size != 4:
                raise SystemExit("emit_endpoints: %s: Host must precede Port, and neither nor "
                                 "the id be tagged" % path)
            host.role, port.role, self.id.role = "HOST", "PORT", "NODE_ID"

    def endpoint_at(self, v):
        return self.endpoint and self.host.present(v) and self.port.present(v) and \
            self.id.present(v)

    def holds(self, v):
        return self.endpoint_at(v) or any(f.holds(v) for f in self.fields)

    def min_size(self):
        """Fewest wire bytes of one instance in any version it is sent in: bounds
        array counts."""
        best = None
        for v in self.msg.versions():
            if not reachable(self.msg, self, v):
                continue
            flex = self.msg.flexible(v)
            n = 1 if flex else 0
            for f in self.fields:
                if f.tag >= 0 or not f.present(v):
                    continue
                if f.array or f.kind in ("STRING", "BYTES"):
                    n += 1 if flex else (4 if f.array or f.kind == "BYTES" else 2)
                elif f.kind == "FIXED":
                    n += f.size
                else:
                    n += f.sub.min_size()
            best = n if best is None else min(best, n)
        return best or 0


class EMessage:
    def __init__(self, spec, src, broker_facing):
        self.spec = spec
        self.src = src
        self.name = spec["name"]
        self.api_key = spec["apiKey"]
        lo, hi = parse_versions(spec["validVersions"])
        self.lo, self.hi = lo, lo if hi is None else hi
        if self.hi > MAX_VERSION:
            raise SystemExit("emit_endpoints: %s: versions beyond %d" % (self.name, MAX_VERSION))
        self.flex = parse_versions(spec.get("flexibleVersions"))
        self.broker_facing = broker_facing
        self.common = {c["name"]: c.get("fields", []) for c in spec.get("commonStructs", [])}
        self.structs = []
        # What the walker cannot skip; fatal only in a message that carries endpoints.
        self.unsupported = []
        self.top = EStruct(self.name, spec.get("fields", []), self, self.name)

    def versions(self):
        return range(self.lo, self.hi + 1)

    def flexible(self, v):
        return in_range(self.flex, v)

    def first_flexible(self):
        return next((v for v in self.versions() if self.flexible(v)), -1)

    def carried(self):
        return [v for v in self.versions() if self.top.holds(v)]


def mask(vs):
    m = 0
    for v in vs:
        m |= 1 << v
    return "0x%xull" % m


def spans(vs):
    """[0,1,2,5] -> "0-2, 5"."""
    out, i = [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append("%d" % vs[i] if i == j else "%d-%d" % (vs[i], vs[j]))
        i = j + 1
    return ", ".join(out)


def find(jar):
    """(carrying messages, [(message, struct, versions)], [(path, reason)])."""
    carrying, found, skipped = [], [], []
    for fn in jar.spec_names():
        if not fn.endswith("Response.json"):
            continue
        spec = jar.load(fn)
        if "apiKey" not in spec or parse_versions(spec.get("validVersions")) is None:
            continue
        req = jar.load(fn.replace("Response.json", "Request.json"))
        broker_facing = "broker" in req.get("listeners", ["broker"])
        m = EMessage(spec, fn, broker_facing)
        for st in m.structs:
            if st.endpoint:
                vs = [v for v in m.versions() if st.endpoint_at(v) and reachable(m, st, v)]
                found.append((m, st, vs))
            elif st.candidate and not broker_facing:
                skipped.append((st.path, "controller-only API (its request spec lists only the "
                                "controller listener): KRaft traffic between controllers, never "
                                "sent to a client"))
            elif st.candidate:
                skipped.append((st.path, "no broker id (%s) beside Host and Port: not a broker's "
                                "endpoint" % "/".join(ID_NAMES)))
            elif st.host is not None and st.host.kind == "STRING":
                skipped.append((st.path, "Host without a Port: not an endpoint"))
        if m.carried():
            if m.unsupported:
                raise SystemExit("emit_endpoints: the endpoint walker cannot skip %s"
                                 % "; ".join(m.unsupported))
            carrying.append(m)
    carrying.sort(key=lambda m: m.api_key)
    found.sort(key=lambda t: (t[0].api_key, t[1].path))
    skipped.sort()
    return carrying, found, skipped


def reachable(m, target, v):
    def walk(st):
        if st is target:
            return True
        return any(f.present(v) and f.sub is not None and walk(f.sub) for f in st.fields)
    return walk(m.top)


def emit(jar):
    """(ka_endpoint_table.h, ka_endpoint_table.c, ENDPOINTS.md) texts."""
    carrying, found, skipped = find(jar)
    note = GENERATED_NOTE.format(src="*Response.json specs")
    h = ["/*\n * ka_endpoint_table.h: the responses that carry broker endpoints, and their\n"
         " * schemas as tables for the rewrite's walker (protocol/ka_endpoints.c).\n *\n"
         " * A message's table lists every field of every struct, tagged ones included,\n"
         " * with the versions it is present in; holds_versions marks the fields that may\n"
         " * contain an endpoint struct, so the walker descends only into those and stops\n"
         " * where none follows. The list in words is ENDPOINTS.md beside this file.\n *\n"
         " * %s\n */" % note]
    h.append("#ifndef KA_ENDPOINT_TABLE_H\n#define KA_ENDPOINT_TABLE_H\n\n#include <stdint.h>\n")
    h.append("/* How a field is encoded. */")
    h.append("enum ka_epf_kind {")
    h.append("KA_EPF_FIXED = 0,  /* size bytes: ints, bool, float64, uuid */")
    h.append("KA_EPF_STRING = 1, /* int16 or compact length, then bytes */")
    h.append("KA_EPF_BYTES = 2,  /* int32 or compact length, then bytes (bytes, records) */")
    h.append("KA_EPF_STRUCT = 3, /* the fields of sub, in order */")
    h.append("};\n")
    h.append("/* What a field is to the rewrite. */")
    h.append("enum ka_epf_role {")
    h.append("KA_EPR_NONE = 0,")
    h.append("KA_EPR_NODE_ID = 1, /* the broker's id (int32) in an endpoint struct */")
    h.append("KA_EPR_HOST = 2,    /* the broker's host (string) */")
    h.append("KA_EPR_PORT = 3,    /* the broker's port (int32, or uint16 when size is 2) */")
    h.append("};\n")
    h.append("/* One field of a struct, in wire order. */")
    h.append("struct ka_ep_field {")
    h.append("const char *name;       /* the spec's name, e.g. \"NodeEndpoints\" */")
    h.append("uint8_t kind;           /* enum ka_epf_kind */")
    h.append("uint8_t size;           /* wire size of a KA_EPF_FIXED value */")
    h.append("uint8_t array;          /* 1: an array of the kind */")
    h.append("uint8_t role;           /* enum ka_epf_role */")
    h.append("int16_t tag;            /* the tag of a tagged field, else -1 */")
    h.append("int16_t sub;            /* KA_EPF_STRUCT: index in ka_ep_structs, else -1 */")
    h.append("uint64_t versions;      /* bit v: present in version v (tagged: may be sent) */")
    h.append("uint64_t nullable;      /* bit v: may be null in version v */")
    h.append("uint64_t holds;         /* bit v: may contain an endpoint struct in version v */")
    h.append("};\n")
    h.append("/* One struct: its fields are ka_ep_fields[first .. first + count). */")
    h.append("struct ka_ep_struct {")
    h.append("const char *path;       /* e.g. \"MetadataResponse/Brokers\" */")
    h.append("uint16_t first;")
    h.append("uint16_t count;")
    h.append("uint16_t min_size;      /* fewest wire bytes of one instance: bounds counts */")
    h.append("uint64_t endpoint;      /* bit v: a broker endpoint in version v */")
    h.append("};\n")
    h.append("/* One response that carries broker endpoints in some versions. */")
    h.append("struct ka_ep_message {")
    h.append("int16_t api_key;")
    h.append("const char *name;       /* e.g. \"MetadataResponse\" */")
    h.append("int16_t min_version;")
    h.append("int16_t max_version;")
    h.append("int16_t first_flexible; /* -1 if no version is flexible */")
    h.append("uint16_t top;           /* the body's struct, in ka_ep_structs */")
    h.append("uint64_t carried;       /* bit v: version v may carry endpoints */")
    h.append("};\n")
    h.append("extern const struct ka_ep_field ka_ep_fields[];")
    h.append("extern const struct ka_ep_struct ka_ep_structs[];")
    h.append("extern const struct ka_ep_message ka_ep_messages[];")
    h.append("extern const unsigned ka_ep_messages_count;\n")
    h.append("/* The message for api_key, or NULL when its responses never carry endpoints. */")
    h.append("const struct ka_ep_message *ka_ep_message_find(int16_t api_key);\n")
    h.append("#endif")

    c = ["/*\n * ka_endpoint_table.c: response schemas for the endpoint rewrite (see\n"
         " * ka_endpoint_table.h).\n *\n * %s\n */" % note]
    c.append('#include "ka_endpoint_table.h"\n\n#include <stddef.h>\n')
    structs, fields = [], []
    for m in carrying:
        base = len(structs)
        for st in m.structs:
            st.gidx = base + st.idx
        for st in m.structs:
            first = len(fields)
            for f in st.fields:
                vs = [v for v in m.versions() if f.present(v)]
                ns = [v for v in vs if in_range(f.nullable, v)]
                hs = [v for v in vs if f.holds(v)]
                fields.append('{"%s", KA_EPF_%s, %d, %d, KA_EPR_%s, %d, %d, %s, %s, %s},' % (
                    f.name, f.kind, f.size, 1 if f.array else 0, f.role, f.tag,
                    f.sub.gidx if f.sub is not None else -1, mask(vs), mask(ns), mask(hs)))
            eps = [v for v in m.versions() if st.endpoint_at(v)]
            structs.append('{"%s", %d, %d, %d, %s},' % (st.path, first, len(st.fields),
                                                       min(st.min_size(), 65535), mask(eps)))
    c.append("const struct ka_ep_field ka_ep_fields[] = {")
    c.extend(fields)
    c.append("};\n")
    c.append("const struct ka_ep_struct ka_ep_structs[] = {")
    c.extend(structs)
    c.append("};\n")
    c.append("const struct ka_ep_message ka_ep_messages[] = {")
    for m in carrying:
        c.append('{%d, "%s", %d, %d, %d, %d, %s},' % (m.api_key, m.name, m.lo, m.hi,
                                                     m.first_flexible(), m.top.gidx,
                                                     mask(m.carried())))
    c.append("};\n")
    c.append("const unsigned ka_ep_messages_count = %d;\n" % len(carrying))
    c.append("const struct ka_ep_message *ka_ep_message_find(int16_t api_key)\n{")
    c.append("for (unsigned i = 0; i < ka_ep_messages_count; i++)\nif (ka_ep_messages[i].api_key "
             "== api_key)\nreturn &ka_ep_messages[i];")
    c.append("return NULL;\n}")

    d = ["# Broker endpoints in Kafka responses", "",
         "Generated by protocol/gen/generate.py from Kafka %s's *Response.json specs; do not "
         "edit." % jar.version, "",
         "The gateway's rewrite (protocol/ka_endpoints.h) replaces the host and port of every "
         "struct listed here, in the versions listed, and nothing else.", "",
         "| API key | Response | Versions | Endpoint struct | Id | Port |",
         "|---|---|---|---|---|---|"]
    for m, st, vs in found:
        where = st.path
        tagged = [f for f in path_fields(m, st) if f.tag >= 0]
        if tagged:
            where += " (tagged field, tag %d)" % tagged[-1].tag
        d.append("| %d | %s | %s | %s | %s | %s |" % (
            m.api_key, m.name, spans(vs), where, st.id.name,
            "uint16" if st.port.size == 2 else "int32"))
    d += ["", "Looked like an endpoint, left alone:", "",
          "| Struct | Why |", "|---|---|"]
    for path, why in skipped:
        d.append("| %s | %s |" % (path, why))
    return "\n".join(h) + "\n", "\n".join(c) + "\n", "\n".join(d) + "\n"


def path_fields(m, target):
    """The fields leading from the top struct to target."""
    def walk(st, trail):
        if st is target:
            return trail
        for f in st.fields:
            if f.sub is not None:
                got = walk(f.sub, trail + [f])
                if got is not None:
                    return got
        return None
    return walk(m.top, []) or []
