"""The layout of the generated C: the generator's own, not a local clang-format's.

The emitters write one statement, declaration or brace per line and leave
the indentation to this module, so that the output is the same on every
machine. The layout is close to the repository's style (4-space indents,
Linux braces, case labels at the switch's level, goto labels in column 0,
lines wrapped after a comma at 100 columns), but protocol/generated/ is
not clang-formatted: it is checked against the generator instead.
"""

import re

WIDTH = 100
INDENT = "    "

# A control line whose single-statement body follows on the next line.
BODYLESS = re.compile(r"^(if|for|while) \(.*\)$|^else$|^else if \(.*\)$|^\} else$|^\} else if \(.*\)$")
CASE = re.compile(r"^(case .*|default):$")
LABEL = re.compile(r"^[a-z_][a-z0-9_]*:$")


def outside_strings(code):
    """(index, character) for each character of code outside string literals."""
    in_str = False
    for i, c in enumerate(code):
        if in_str:
            if c == '"' and code[i - 1] != "\\":
                in_str = False
        elif c == '"':
            in_str = True
        else:
            yield i, c


def code_part(line):
    """The line up to a trailing comment."""
    for i, _ in outside_strings(line):
        if line.startswith("/*", i):
            return line[:i]
    return line


def break_points(code):
    """Each ", ", "|| " and "&& " outside strings inside brackets: (position
    after the comma or operator, position of the innermost open bracket)."""
    points, opened = [], []
    for i, c in outside_strings(code):
        if c in "({":
            opened.append(i)
        elif c in ")}" and opened:
            opened.pop()
        elif c == "," and code[i + 1:i + 2] == " " and opened:
            points.append((i + 1, opened[-1]))
        elif code[i:i + 3] in ("|| ", "&& ") and opened:
            points.append((i + 2, opened[-1]))
    return points


def wrap(indent, text):
    """Breaks text after commas so that lines fit WIDTH where they can, each
    continuation under the innermost open bracket, as clang-format would;
    when that still overflows, breaks after an open bracket instead and packs
    its arguments one indent deeper."""
    if len(indent) + len(text) <= WIDTH:
        return [indent + text]
    code = code_part(text)
    points = break_points(code)
    # The candidates: aligned under brackets, or broken after one open
    # bracket; the fewest overflowing lines win, then the fewest lines.
    tries = [wrap_aligned(indent, text, points)]
    for b in open_brackets(code):
        if code[b + 1:b + 2] not in (")", "}", ""):
            tries.append(pack(indent, text, b, [p for p, pb in points if pb == b]))
    return min(tries, key=lambda t: (sum(len(line) > WIDTH for line in t), len(t),
                                     max(len(line) for line in t)))


def open_brackets(code):
    return [i for i, c in outside_strings(code) if c in "({"]


def pack(indent, text, bracket, points):
    """text broken after bracket, then its arguments packed greedily one indent deeper."""
    out = [indent + text[:bracket + 1]]
    inner = indent + INDENT
    start, last = bracket + 1, None
    for p in points + [len(text)]:
        if len(inner) + p - start > WIDTH and last is not None:
            out.append(inner + text[start:last].strip())
            start = last
        last = p
    out.append(inner + text[start:].strip())
    return out


def wrap_aligned(indent, text, points):
    lines = []  # (start in text, column where it starts)
    start, col = 0, len(indent)
    while True:
        fits = [p for p in points if p[0] > start and col + p[0] - start <= WIDTH]
        later = [p for p in points if p[0] > start]
        if col + len(text) - start <= WIDTH or not later:
            break
        pos, bracket = fits[-1] if fits else later[0]
        lines.append((start, col, pos))
        # The bracket's output column: where its line starts, plus its offset there.
        owner = [(s, c) for s, c, _ in lines if s <= bracket][-1]
        col = owner[1] + bracket - owner[0] + 1
        start = pos + 1
    out = []
    for s, c, e in lines:
        out.append(" " * c + text[s:e])
    out.append(" " * col + text[start:])
    return out


def layout(text):
    """Indents text (one construct per line, any leading spaces ignored)."""
    out = []
    depth = 0
    single = 0  # pending single-statement bodies
    in_comment = False
    for raw in text.split("\n"):
        line = raw.strip()
        if in_comment:
            # A block comment's inner lines keep their " * " shape.
            out.append(INDENT * depth + " " + line)
            in_comment = "*/" not in line
            continue
        if not line:
            out.append("")
            continue
        if line.startswith("#"):
            out.append(line)
            continue
        if line.startswith("/*") and "*/" not in line:
            out.append(INDENT * depth + line)
            in_comment = True
            continue
        if line.startswith("}"):
            depth -= 1
        level = depth + single
        if LABEL.match(line) and not CASE.match(line):
            level = 0
        elif CASE.match(line):
            level = depth - 1
        out.extend(wrap(INDENT * max(level, 0), line))
        code = code_part(line).rstrip()
        if code.endswith("{"):
            depth += 1
            single = 0
        elif BODYLESS.match(code):
            single += 1
        elif not line.startswith("/*"):
            single = 0
    return "\n".join(align(out)).rstrip("\n") + "\n"


TRAILING = re.compile(r"^(\s*)(\S.*?;)\s+(/\*.*\*/)$")
MACRO = re.compile(r"^(#define [A-Za-z0-9_]+)\s+(\S.*)$")


def align(lines):
    """Aligns the trailing comments of consecutive declarations, and the
    values of consecutive #defines, where the result still fits WIDTH."""
    out = list(lines)
    for pattern, width_of in ((TRAILING, lambda m: len(m.group(1)) + len(m.group(2))),
                              (MACRO, lambda m: len(m.group(1)))):
        i = 0
        while i < len(out):
            j = i
            while j < len(out) and pattern.match(out[j]) and \
                    (j == i or leading(out[j]) == leading(out[i])):
                j += 1
            if j - i > 1:
                ms = [pattern.match(line) for line in out[i:j]]
                col = max(width_of(m) for m in ms) + 1
                if all(col + len(m.group(m.lastindex)) <= WIDTH for m in ms):
                    for k, m in enumerate(ms):
                        head = out[i + k][:m.end(m.lastindex - 1)]
                        out[i + k] = head.ljust(col) + m.group(m.lastindex)
            i = max(j, i + 1)
    return out


def leading(line):
    return len(line) - len(line.lstrip(" "))
