"""Sample frames for every version of every codec, encoded here in Python.

They are encoded independently of the C encoder, so that decoding them in C
and encoding them again checks one implementation against the other. They
also seed the fuzzers.
"""

import os
import struct as pystruct

from ka_spec import GENERATED_NOTE, PRIMITIVES

class SampleWriter:
    def __init__(self, full):
        self.full = full
        self.counter = 0
        self.out = bytearray()

    def nextval(self):
        self.counter += 1
        return self.counter

    def uvarint(self, v):
        while v >= 0x80:
            self.out.append((v & 0x7F) | 0x80)
            v >>= 7
        self.out.append(v)

    def be(self, v, n):
        self.out += (v & ((1 << (8 * n)) - 1)).to_bytes(n, "big")

    def tags(self):
        if self.full:
            # Two unknown tags, strictly increasing, to prove verbatim round trips.
            self.uvarint(2)
            self.uvarint(7)
            self.uvarint(2)
            self.out += b"\x01\x02"
            self.uvarint(300)
            self.uvarint(1)
            self.out += b"\x2a"
        else:
            self.uvarint(0)

    def string(self, s, flex, nullable, elem="string"):
        if s is None:
            if flex:
                self.uvarint(0)
            else:
                self.be(-1, 2 if elem == "string" else 4)
            return
        b = s.encode()
        if flex:
            self.uvarint(len(b) + 1)
        else:
            self.be(len(b), 2 if elem == "string" else 4)
        self.out += b

    def count(self, n, flex):
        if flex:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.be(-1 if n is None else n, 4)

    def prim(self, t):
        v = self.nextval()
        if t == "bool":
            self.be(v & 1, 1)
        elif t == "uuid":
            self.out += bytes((v + i) & 0xFF for i in range(16))
        elif t == "float64":
            self.out += pystruct.pack(">d", v + 0.5)
        else:
            size = PRIMITIVES[t][2]
            # Alternate signs so negative values are exercised too.
            self.be(v if v % 3 else -v, size)


def write_struct(msg, st, v, w, depth):
    flex_msg = msg.flexible(v)
    for f in st.members:
        if not f.present(v):
            continue
        flex = f.flexible(msg, v)
        nullable = f.is_nullable(v)
        if f.is_array:
            if not w.full:
                w.count(None if nullable else 0, flex)
                continue
            n = 2 if depth < 3 else 1
            w.count(n, flex)
            for i in range(n):
                if f.struct:
                    write_struct(msg, f.struct, v, w, depth + 1)
                elif f.elem == "string":
                    w.string("%s-%d" % (f.cname, w.nextval()), flex, False)
                else:
                    w.prim(f.elem)
        elif f.struct:
            if f.by_pointer and nullable:
                if not w.full:
                    w.be(-1, 1)
                    continue
                w.be(1, 1)
            write_struct(msg, f.struct, v, w, depth + 1)
        elif f.elem in ("string", "bytes"):
            if nullable and not w.full:
                w.string(None, flex, True, f.elem)
            else:
                w.string("%s-%d" % (f.cname, w.nextval()), flex, nullable, f.elem)
        else:
            w.prim(f.elem)
    if flex_msg:
        w.tags()


def samples_for(msg):
    out = []
    for v in msg.versions():
        for full in (True, False):
            w = SampleWriter(full)
            write_struct(msg, msg.top, v, w, 0)
            out.append((v, "full" if full else "empty", bytes(w.out)))
    return out


def c_bytes(data):
    lines = []
    for i in range(0, len(data), 16):
        lines.append(", ".join("0x%02x" % b for b in data[i:i + 16]) + ",")
    return "\n".join(lines) if lines else "0x00,"


def emit_samples(msgs):
    h = """/*
 * generated_samples.h: sample frames for every version of every codec.
 *
 * %s
 */
#ifndef KA_GENERATED_SAMPLES_H
#define KA_GENERATED_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

/* One message body (no size prefix, no header), encoded by the generator. */
struct ka_sample {
    int16_t api_key;
    int direction; /* enum ka_direction */
    int16_t version;
    const char *kind; /* "full": every array filled; "empty": empty or null */
    const uint8_t *data;
    size_t len;
};

extern const struct ka_sample ka_samples[];
extern const size_t ka_samples_count;

#endif
""" % GENERATED_NOTE.format(src="specs")
    c = ["/*\n * generated_samples.c: sample frames (see generated_samples.h).\n *\n * %s\n */"
         % GENERATED_NOTE.format(src="specs"), '#include "generated_samples.h"\n']
    table = []
    for m in msgs:
        for v, kind, data in samples_for(m):
            name = "%s_v%d_%s" % (m.prefix[3:], v, kind)
            c.append("static const uint8_t %s[] = {\n%s\n};" % (name, c_bytes(data)))
            table.append("{%d, %d, %d, \"%s\", %s, %d}," % (
                m.api_key, 0 if m.kind == "request" else 1, v, kind, name, len(data)))
    c.append("\nconst struct ka_sample ka_samples[] = {\n%s\n};\n" % "\n".join(table))
    c.append("const size_t ka_samples_count = sizeof(ka_samples) / sizeof(ka_samples[0]);")
    return h, "\n".join(c) + "\n"


def write_corpus(msgs, corpus_dir):
    files = {}
    for m in msgs:
        target = "fuzz_%s_%s" % (m.api.lower(), m.kind)
        for v, kind, data in samples_for(m):
            sel = (v - m.lo).to_bytes(2, "big")
            files[os.path.join(target, "v%d-%s.bin" % (v, kind))] = sel + data
        if m.api == "ApiVersions" and m.kind == "response":
            for v, kind, data in samples_for(m):
                # The clamp target: request version, then correlation id and body.
                files[os.path.join("fuzz_apiversions_clamp", "v%d-%s.bin" % (v, kind))] = \
                    v.to_bytes(2, "big") + b"\x00\x00\x00\x07" + data
    # Header seeds: a selector byte (bit 0: response; bits 1-2: version), then the header.
    files[os.path.join("fuzz_headers", "request-v1.bin")] = \
        b"\x02" + b"\x00\x13\x00\x04\x00\x00\x00\x01\x00\x03abc"
    files[os.path.join("fuzz_headers", "request-v2.bin")] = \
        b"\x04" + b"\x00\x13\x00\x07\x00\x00\x00\x01\x00\x03abc\x01\x00\x01\x05"
    files[os.path.join("fuzz_headers", "response-v1.bin")] = b"\x03" + b"\x00\x00\x00\x01\x00"
    for rel, data in sorted(files.items()):
        path = os.path.join(corpus_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
