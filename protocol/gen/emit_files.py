"""Whole generated files: a codec's header and source, the API table, the codec table."""

from emit_fields import (decode_field, encode_field, mark_unused_version, member_comment,
                         member_decl, c_default, min_size, tagged_cond)
from ka_spec import GENERATED_NOTE

def emit_header(msg):
    guard = msg.prefix.upper() + "_H"
    o = []
    o.append("/*\n * %s.h: the %s codec, versions %d-%d.\n *\n * %s\n */" % (
        msg.prefix, msg.name, msg.lo, msg.hi, GENERATED_NOTE.format(src=msg.src)))
    o.append("#ifndef %s\n#define %s\n" % (guard, guard))
    o.append('#include "ka_codec.h"\n')
    up = msg.prefix.upper()
    o.append("#define %s_API_KEY %d" % (up, msg.api_key))
    o.append("#define %s_MIN_VERSION %d" % (up, msg.lo))
    o.append("#define %s_MAX_VERSION %d" % (up, msg.hi))
    o.append("/* -1 when no version is flexible. */")
    o.append("#define %s_FIRST_FLEXIBLE_VERSION %d\n" % (up, msg.first_flexible()))
    # Innermost structs first so that each is complete before it is used.
    for st in msg.structs:
        tagged = [f for f in st.fields if f.tagged]
        note = ""
        if tagged:
            note = "\n * Tagged fields kept verbatim in tagged_fields: %s." % ", ".join(
                "%s (tag %s)" % (f.name, f.spec_tag) for f in tagged)
        if st is msg.top:
            o.append("/* The whole %s body, every version's fields.%s */" % (msg.name, note))
        else:
            o.append("/* One %s entry of %s.%s */" % (st.name, msg.name, note))
        o.append("struct %s {" % st.cname)
        for f in st.members:
            o.append("%s %s" % (member_decl(f), member_comment(f)))
        if msg.first_flexible() >= 0:
            o.append("/* The tagged-field section, verbatim, in flexible versions (%d+); "
                     "empty means none. */" % msg.first_flexible())
            o.append("ka_slice_t tagged_fields;")
        o.append("};\n")
    for st in msg.structs:
        o.append("/* Sets every field of a %s to its spec default. */" % st.name)
        o.append("void %s_init(struct %s *m);\n" % (st.cname, st.cname))
    o.append("/*\n * Decodes a %s body (the bytes after the header) of the given version.\n"
             " * The body must be consumed exactly; arrays come from arena and strings\n"
             " * point into the reader's buffer. Returns 0 or a negative ka_err recorded\n"
             " * on the reader.\n */" % msg.name)
    o.append("int %s_decode(ka_reader_t *r, int16_t version, ka_arena_t *arena, struct %s *out);\n"
             % (msg.prefix, msg.prefix))
    o.append("/* Encodes a %s body; fields absent from the version are skipped. */" % msg.name)
    o.append("int %s_encode(ka_writer_t *w, int16_t version, const struct %s *in);\n"
             % (msg.prefix, msg.prefix))
    o.append("#endif")
    return "\n".join(o) + "\n"


def emit_source(msg):
    o = []
    o.append("/*\n * %s.c: decode and encode %s.\n *\n * %s\n */" % (
        msg.prefix, msg.name, GENERATED_NOTE.format(src=msg.src)))
    o.append('#include "%s.h"\n' % msg.prefix)
    has_tags = msg.first_flexible() >= 0
    tcond, _ = tagged_cond(msg)
    nversions = msg.hi + 1
    for st in msg.structs:
        if st.in_array:
            sizes = [min_size(msg, st, v) if v >= msg.lo else 0 for v in range(nversions)]
            o.append("/* Fewest wire bytes of one %s, per version: bounds its array counts. */"
                     % st.name)
            o.append("static const uint16_t %s_min_size[%d] = {%s};\n" % (
                st.cname, nversions, ", ".join(str(s) for s in sizes)))
    for st in msg.structs:
        o.append("void %s_init(struct %s *m)\n{" % (st.cname, st.cname))
        o.append("memset(m, 0, sizeof(*m));")
        for f in st.members:
            d = c_default(f)
            if f.is_array:
                if d != "0":
                    o.append("m->%s.count = %s;" % (f.cname, d))
            elif d is not None and d not in ("0", "(ka_slice_t){NULL, 0}"):
                o.append("m->%s = %s;" % (f.cname, d))
            elif f.struct and not f.by_pointer:
                o.append("%s_init(&m->%s);" % (f.struct.cname, f.cname))
        o.append("}\n")
    for st in msg.structs:
        short = st.cname[3:]
        uses_items = any(f.is_array or f.by_pointer for f in st.members)
        uses_arena = uses_items or any(f.struct for f in st.members)
        start = len(o)
        o.append("static int decode_%s(ka_reader_t *r, int16_t version, ka_arena_t *arena, "
                 "struct %s *out)\n{" % (short, st.cname))
        if uses_items:
            o.append("void *items;")
        if any(f.by_pointer and f.nullable for f in st.members):
            o.append("int8_t marker;")
        if not uses_arena:
            o.append("(void)arena;")
        o.append("%s_init(out);" % st.cname)
        for f in st.members:
            o.append(decode_field(msg, st, f))
        if has_tags:
            if tcond:
                o.append("if (%s)" % tcond)
            o.append("KA_TRY(ka_read_tagged_fields(r, &out->tagged_fields));")
        o.append("return 0;\nerr_parse:\nreturn ka_codec_error(r);\n}\n")
        mark_unused_version(o, start)
        start = len(o)
        o.append("static int encode_%s(ka_writer_t *w, int16_t version, const struct %s *in)\n{"
                 % (short, st.cname))
        for f in st.members:
            o.append(encode_field(msg, st, f))
        if has_tags:
            if tcond:
                o.append("if (%s)" % tcond)
            o.append("KA_WTRY(ka_write_tagged_fields(w, in->tagged_fields));")
        o.append("return 0;\nerr_write:\nreturn w->err != 0 ? w->err : KA_EINVALID;\n}\n")
        mark_unused_version(o, start)
    up = msg.prefix.upper()
    o.append("int %s_decode(ka_reader_t *r, int16_t version, ka_arena_t *arena, struct %s *out)\n{"
             % (msg.prefix, msg.prefix))
    o.append("if (version < %s_MIN_VERSION || version > %s_MAX_VERSION)" % (up, up))
    o.append("return ka_reader_fail(r, KA_EUNSUPPORTED);")
    o.append("int rc = decode_%s(r, version, arena, out);" % msg.prefix[3:])
    o.append("if (rc < 0)\nreturn rc;")
    o.append("/* A body must be consumed exactly: leftovers mean a version mismatch or a lie. */")
    o.append("if (ka_reader_remaining(r) != 0)\nreturn ka_reader_fail(r, KA_ETRAILING);")
    o.append("return 0;\n}\n")
    o.append("int %s_encode(ka_writer_t *w, int16_t version, const struct %s *in)\n{"
             % (msg.prefix, msg.prefix))
    o.append("if (version < %s_MIN_VERSION || version > %s_MAX_VERSION)" % (up, up))
    o.append("return KA_EUNSUPPORTED;")
    o.append("return encode_%s(w, version, in);\n}" % msg.prefix[3:])
    return "\n".join(o) + "\n"


def emit_api_table(apis, decoded):
    h = []
    h.append("/*\n * ka_api_table.h: every API in the specs, its versions and its header rules,\n"
             " * and the versions kadmit decodes.\n *\n * %s\n */"
             % GENERATED_NOTE.format(src="*Request.json specs"))
    h.append("#ifndef KA_API_TABLE_H\n#define KA_API_TABLE_H\n\n#include <stdint.h>\n")
    h.append("/* What the specs say about one API. */")
    h.append("struct ka_api_info {")
    h.append("int16_t api_key;")
    h.append("const char *name; /* e.g. \"CreateTopics\" */")
    h.append("int16_t min_version;")
    h.append("int16_t max_version;")
    h.append("/* First version with compact types, tagged fields and the flexible headers; -1 "
             "if none. */")
    h.append("int16_t first_flexible_version;")
    h.append("/* Request versions below this one use request header v0 (no client id). */")
    h.append("int16_t request_header_v0_below;")
    h.append("/* 1 when every response uses response header v0, flexible or not. */")
    h.append("uint8_t response_header_always_v0;")
    h.append("};\n")
    h.append("/* The table, sorted by api_key; NULL when api_key is not in the specs. */")
    h.append("const struct ka_api_info *ka_api_info_find(int16_t api_key);")
    h.append("/* The API's name, or \"Unknown\". */")
    h.append("const char *ka_api_name(int16_t api_key);\n")
    h.append("/* The versions kadmit decodes; -1 for APIs it does not decode. */")
    h.append("int16_t ka_decoded_min_version(int16_t api_key);")
    h.append("int16_t ka_decoded_max_version(int16_t api_key);\n#endif")
    c = []
    c.append("/*\n * ka_api_table.c: API versions and header rules (see ka_api_table.h).\n *\n"
             " * %s\n */" % GENERATED_NOTE.format(src="*Request.json specs"))
    c.append('#include "ka_api_table.h"\n\n#include <stddef.h>\n')
    c.append("static const struct ka_api_info api_table[] = {")
    for a in apis:
        c.append('{%d, "%s", %d, %d, %d, %d, %d},' % a)
    c.append("};\n")
    c.append("const struct ka_api_info *ka_api_info_find(int16_t api_key)\n{")
    c.append("size_t lo = 0, hi = sizeof(api_table) / sizeof(api_table[0]);")
    c.append("while (lo < hi) {\nsize_t mid = lo + (hi - lo) / 2;")
    c.append("if (api_table[mid].api_key == api_key)\nreturn &api_table[mid];")
    c.append("if (api_table[mid].api_key < api_key)\nlo = mid + 1;\nelse\nhi = mid;\n}")
    c.append("return NULL;\n}\n")
    c.append("const char *ka_api_name(int16_t api_key)\n{")
    c.append("const struct ka_api_info *info = ka_api_info_find(api_key);")
    c.append('return info != NULL ? info->name : "Unknown";\n}\n')
    for which in ("min", "max"):
        c.append("int16_t ka_decoded_%s_version(int16_t api_key)\n{\nswitch (api_key) {" % which)
        for key, lo, hi in decoded:
            c.append("case %d:\nreturn %d;" % (key, lo if which == "min" else hi))
        c.append("default:\nreturn -1;\n}\n}\n")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"


def emit_codecs(msgs):
    h = []
    h.append("/*\n * ka_codecs.h: every generated codec behind one generic signature, for the\n"
             " * tests, fuzzers and benchmarks that walk them all.\n *\n * %s\n */"
             % GENERATED_NOTE.format(src="specs"))
    h.append("#ifndef KA_CODECS_H\n#define KA_CODECS_H\n\n#include \"ka_codec.h\"\n")
    for m in msgs:
        h.append('#include "%s.h"' % m.prefix)
    h.append("")
    h.append("struct ka_codec {")
    h.append("int16_t api_key;")
    h.append("enum ka_direction direction;")
    h.append("const char *name; /* the spec's message name */")
    h.append("int16_t min_version;")
    h.append("int16_t max_version;")
    h.append("size_t struct_size; /* bytes of the decoded struct */")
    h.append("int (*decode)(ka_reader_t *r, int16_t version, ka_arena_t *arena, void *out);")
    h.append("int (*encode)(ka_writer_t *w, int16_t version, const void *in);")
    h.append("};\n")
    h.append("/* All codecs, in api_key order, requests before responses. */")
    h.append("extern const struct ka_codec ka_codecs[];")
    h.append("extern const size_t ka_codecs_count;\n")
    h.append("/* The codec for one API and direction, or NULL. */")
    h.append("const struct ka_codec *ka_codec_find(int16_t api_key, enum ka_direction direction);")
    h.append("\n#endif")
    c = []
    c.append("/*\n * ka_codecs.c: the generic codec table (see ka_codecs.h).\n *\n * %s\n */"
             % GENERATED_NOTE.format(src="specs"))
    c.append('#include "ka_codecs.h"\n')
    for m in msgs:
        c.append("static int %s_decode_any(ka_reader_t *r, int16_t version, ka_arena_t *arena, "
                 "void *out)\n{\nreturn %s_decode(r, version, arena, out);\n}\n"
                 % (m.prefix[3:], m.prefix))
        c.append("static int %s_encode_any(ka_writer_t *w, int16_t version, const void *in)\n{\n"
                 "return %s_encode(w, version, in);\n}\n" % (m.prefix[3:], m.prefix))
    c.append("const struct ka_codec ka_codecs[] = {")
    for m in msgs:
        c.append('{%d, %s, "%s", %d, %d, sizeof(struct %s), %s_decode_any, %s_encode_any},' % (
            m.api_key, "KA_REQUEST" if m.kind == "request" else "KA_RESPONSE", m.name, m.lo,
            m.hi, m.prefix, m.prefix[3:], m.prefix[3:]))
    c.append("};\n")
    c.append("const size_t ka_codecs_count = sizeof(ka_codecs) / sizeof(ka_codecs[0]);\n")
    c.append("const struct ka_codec *ka_codec_find(int16_t api_key, enum ka_direction direction)"
             "\n{\nfor (size_t i = 0; i < ka_codecs_count; i++) {")
    c.append("if (ka_codecs[i].api_key == api_key && ka_codecs[i].direction == direction)")
    c.append("return &ka_codecs[i];\n}\nreturn NULL;\n}")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"


# ---------------------------------------------------------------------------
