"""C code for one field of a generated codec: declarations, defaults, reads, writes.

A field is read differently depending on the version (classic or compact,
nullable or not); these helpers group versions that read alike and emit one
branch per group, so the generated code reads like the spec.
"""

import re

from ka_spec import PRIMITIVES, PRIMITIVE_ARRAYS, version_cond

def c_default(f):
    d = f.default
    if f.struct is not None and not f.is_array:
        # Set by the struct's own init (by value) or NULL (by pointer).
        return None
    if f.is_array:
        return "-1" if d == "null" else "0"
    if f.elem in ("string", "bytes"):
        if d is None or d == "":
            return "(ka_slice_t){NULL, 0}"
        if d == "null":
            return "(ka_slice_t){NULL, -1}"
        return '(ka_slice_t){(const uint8_t *)"%s", %d}' % (d, len(d.encode()))
    if f.elem == "bool":
        return "1" if d == "true" else "0"
    if f.elem == "uuid":
        return None
    if d is None:
        return "0"
    if f.elem == "float64":
        return repr(float(d))
    v = int(d, 0)
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16}[f.elem]
    if f.elem != "uint16" and v >= 1 << (bits - 1):
        v -= 1 << bits
    if f.elem == "int64":
        return "INT64_MIN" if v == -(1 << 63) else "INT64_C(%d)" % v
    if f.elem == "int32" and v == -(1 << 31):
        return "INT32_MIN"
    return str(v)


def member_decl(f):
    if f.is_array:
        if f.struct:
            return "struct {\n int32_t count; /* -1 for null */\n struct %s *items;\n } %s;" % (
                f.struct.cname, f.cname)
        return "%s %s;" % (PRIMITIVE_ARRAYS[f.elem], f.cname)
    if f.struct:
        if f.by_pointer:
            return "struct %s *%s;" % (f.struct.cname, f.cname)
        return "struct %s %s;" % (f.struct.cname, f.cname)
    if f.elem in ("string", "bytes"):
        return "ka_slice_t %s;" % f.cname
    if f.elem == "uuid":
        return "uint8_t %s[16];" % f.cname
    return "%s %s;" % (PRIMITIVES[f.elem][0], f.cname)


def range_text(rng):
    if rng is None:
        return "none"
    if rng[1] is None:
        return "%d+" % rng[0]
    if rng[0] == rng[1]:
        return "%d" % rng[0]
    return "%d-%d" % rng


def member_comment(f):
    parts = ["versions " + range_text(f.versions)]
    if f.by_pointer:
        parts.insert(0, "NULL for null")
    if f.nullable:
        parts.append("nullable " + range_text(f.nullable))
    if f.default is not None:
        parts.append("default " + f.default)
    return "/* %s */" % ", ".join(parts)


def min_size(msg, st, v):
    """The fewest bytes one instance of st occupies at version v."""
    n = 1 if msg.flexible(v) else 0
    for f in st.members:
        if not f.present(v):
            continue
        flex = f.flexible(msg, v)
        if f.is_array:
            n += 1 if flex else 4
        elif f.struct:
            n += 1 if f.by_pointer else min_size(msg, f.struct, v)
        elif f.elem == "string":
            n += 1 if flex else 2
        elif f.elem == "bytes":
            n += 1 if flex else 4
        else:
            n += PRIMITIVES[f.elem][2]
    return n


def elem_min_size(msg, f, v):
    if f.struct:
        return min_size(msg, f.struct, v)
    if f.elem == "string":
        return 1 if f.flexible(msg, v) else 2
    return PRIMITIVES[f.elem][2]


def group_versions(msg, st_fields_key):
    groups = {}
    for v in msg.versions():
        k = st_fields_key(v)
        if k is None:
            continue
        groups.setdefault(k, []).append(v)
    return sorted(groups.items(), key=lambda kv: kv[1][0])


def emit_branches(msg, f, body):
    """Emits body(flex, nullable) once per group of versions that read f alike."""
    fixed = not f.is_array and f.struct is None and f.elem not in ("string", "bytes")

    def key(v):
        if not f.present(v):
            return None
        # Fixed-size fields read the same in every version that has them.
        if fixed:
            return (False, False)
        return (f.flexible(msg, v), f.is_nullable(v))
    groups = group_versions(msg, key)
    covered = sum(len(vs) for _, vs in groups) == msg.hi - msg.lo + 1
    out = []
    for i, ((flex, nullable), vs) in enumerate(groups):
        cond = version_cond(vs, msg.lo, msg.hi)
        code = body(flex, nullable, vs)
        if cond is None:
            out.append(code)
            continue
        if i == 0:
            out.append("if (%s) {\n%s" % (cond, code))
        elif covered and i == len(groups) - 1:
            out.append("} else {\n%s" % code)
        else:
            out.append("} else if (%s) {\n%s" % (cond, code))
    if len(out) > 1 or (groups and version_cond(groups[0][1], msg.lo, msg.hi) is not None):
        out.append("}")
    return "\n".join(out)


def str_fn(kind, elem, flex, nullable):
    return "ka_%s_%s%s%s" % (kind, "compact_" if flex else "", "nullable_" if nullable else "",
                             elem)


def presence_cond(msg, f):
    return version_cond([v for v in msg.versions() if f.present(v)], msg.lo, msg.hi)


def string_elem_branches(msg, f, kind, target):
    """The read or write of one element of a []string, per flexibility."""
    fn = "ka_%s_%%sstring" % kind
    flex_vs = [v for v in msg.versions() if f.present(v) and f.flexible(msg, v)]
    arg = "r, &%s" % target if kind == "read" else "w, %s" % target
    try_ = "KA_TRY" if kind == "read" else "KA_WTRY"
    if not flex_vs:
        return "%s(%s(%s));" % (try_, fn % "", arg)
    if len(flex_vs) == len([v for v in msg.versions() if f.present(v)]):
        return "%s(%s(%s));" % (try_, fn % "compact_", arg)
    cond = version_cond(flex_vs, msg.lo, msg.hi)
    return "if (%s)\n%s(%s(%s));\nelse\n%s(%s(%s));" % (
        cond, try_, fn % "compact_", arg, try_, fn % "", arg)


def with_count(msg, f, counts, lines):
    """Joins an array's count branches with its element loop.

    When the count is read the same way in every version that has the
    array, the loop goes inside that single branch; otherwise it follows
    the branches, guarded by the array's presence.
    """
    cond = presence_cond(msg, f)
    if cond is None:
        return counts + "\n" + "\n".join(lines)
    if counts.startswith("if (%s) {\n" % cond) and counts.count("} else") == 0:
        return counts[: -1] + "\n".join(lines) + "\n}"
    return "%s\nif (%s) {\n%s\n}" % (counts, cond, "\n".join(lines))


def decode_single_struct(msg, f, tgt):
    """A struct that is not in an array: inline, or behind a presence byte when nullable."""
    call = "KA_TRY(decode_%s(r, version, arena, %s));" % (f.struct.cname[3:], tgt)
    if not f.by_pointer:
        return emit_branches(msg, f, lambda flex, nullable, vs: call.replace(tgt, "&" + tgt))

    def body(flex, nullable, vs):
        alloc = ("KA_TRY(ka_codec_alloc(r, arena, 1, sizeof(*%s), &items));\n%s = items;\n%s"
                 % (tgt, tgt, call))
        if not nullable:
            return alloc
        # Kafka writes -1 for null and 1 for present; anything else would not
        # re-encode to the same bytes, so it is refused.
        return ("KA_TRY(ka_read_i8(r, &marker));\nif (marker == 1) {\n%s\n"
                "} else if (marker != -1) {\nKA_TRY(ka_reader_fail(r, KA_EINVALID));\n}" % alloc)
    return emit_branches(msg, f, body)


def encode_single_struct(msg, f, src):
    call = "KA_WTRY(encode_%s(w, version, %s));" % (f.struct.cname[3:], src)
    if not f.by_pointer:
        return emit_branches(msg, f, lambda flex, nullable, vs: call.replace(src, "&" + src))

    def body(flex, nullable, vs):
        if not nullable:
            return "if (%s == NULL)\nreturn KA_EINVALID;\n%s" % (src, call)
        return ("if (%s == NULL) {\nKA_WTRY(ka_write_i8(w, -1));\n} else {\n"
                "KA_WTRY(ka_write_i8(w, 1));\n%s\n}" % (src, call))
    return emit_branches(msg, f, body)


def decode_field(msg, st, f):
    tgt = "out->" + f.cname
    if f.struct and not f.is_array:
        return decode_single_struct(msg, f, tgt)
    if not f.is_array:
        def body(flex, nullable, vs):
            if f.elem in ("string", "bytes"):
                return "KA_TRY(%s(r, &%s));" % (str_fn("read", f.elem, flex, nullable), tgt)
            if f.elem == "uuid":
                return "KA_TRY(ka_read_uuid(r, %s));" % tgt
            return "KA_TRY(ka_read_%s(r, &%s));" % (PRIMITIVES[f.elem][1], tgt)
        return emit_branches(msg, f, body)

    if f.struct:
        min_expr = "%s_min_size[version]" % f.struct.cname
    else:
        sizes = sorted(set(elem_min_size(msg, f, v) for v in msg.versions() if f.present(v)))
        min_expr = str(sizes[0])

    def count_body(flex, nullable, vs):
        count_fn = str_fn("read", "array_count", flex, nullable)
        return "KA_TRY(%s(r, %s, KA_MAX_ARRAY_COUNT, &%s.count));" % (count_fn, min_expr, tgt)
    lines = ["KA_TRY(ka_codec_alloc(r, arena, %s.count, sizeof(*%s.items), &items));"
             % (tgt, tgt),
             "%s.items = items;" % tgt,
             "for (int32_t i = 0; i < %s.count; i++) {" % tgt]
    if f.struct:
        lines.append("KA_TRY(decode_%s(r, version, arena, &%s.items[i]));"
                     % (f.struct.cname[3:], tgt))
    elif f.elem == "string":
        lines.append(string_elem_branches(msg, f, "read", tgt + ".items[i]"))
    elif f.elem == "uuid":
        lines.append("KA_TRY(ka_read_uuid(r, %s.items[i]));" % tgt)
    else:
        lines.append("KA_TRY(ka_read_%s(r, &%s.items[i]));" % (PRIMITIVES[f.elem][1], tgt))
    lines.append("}")
    return with_count(msg, f, emit_branches(msg, f, count_body), lines)


def encode_field(msg, st, f):
    src = "in->" + f.cname
    if f.struct and not f.is_array:
        return encode_single_struct(msg, f, src)
    if not f.is_array:
        def body(flex, nullable, vs):
            if f.elem in ("string", "bytes"):
                return "KA_WTRY(%s(w, %s));" % (str_fn("write", f.elem, flex, nullable), src)
            if f.elem == "uuid":
                return "KA_WTRY(ka_write_uuid(w, %s));" % src
            return "KA_WTRY(ka_write_%s(w, %s));" % (PRIMITIVES[f.elem][1], src)
        return emit_branches(msg, f, body)

    def count_body(flex, nullable, vs):
        return "KA_WTRY(%s(w, %s.count));" % (str_fn("write", "array_count", flex, nullable), src)
    lines = ["if (%s.count > 0 && %s.items == NULL)" % (src, src),
             "return KA_EINVALID;",
             "for (int32_t i = 0; i < %s.count; i++) {" % src]
    if f.struct:
        lines.append("KA_WTRY(encode_%s(w, version, &%s.items[i]));" % (f.struct.cname[3:], src))
    elif f.elem == "string":
        lines.append(string_elem_branches(msg, f, "write", src + ".items[i]"))
    elif f.elem == "uuid":
        lines.append("KA_WTRY(ka_write_uuid(w, %s.items[i]));" % src)
    else:
        lines.append("KA_WTRY(ka_write_%s(w, %s.items[i]));" % (PRIMITIVES[f.elem][1], src))
    lines.append("}")
    return with_count(msg, f, emit_branches(msg, f, count_body), lines)


def mark_unused_version(o, start):
    """Adds (void)version to the function at o[start:] when nothing reads it."""
    body = "\n".join(o[start + 1:])
    if not re.search(r"\bversion\b", body):
        o.insert(start + 1, "(void)version;")


def tagged_cond(msg):
    vs = [v for v in msg.versions() if msg.flexible(v)]
    if not vs:
        return None, False
    return version_cond(vs, msg.lo, msg.hi), True
