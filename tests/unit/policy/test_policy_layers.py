"""policy/'s files use each other one way only (docs/architecture.md, "Inside policy/").

A unit is a source with the header of its name (ka_engine.c and ka_engine.h), or a header
that has no source of its name (ka_policy.h, ka_engine_work.h). Unit A uses unit B when a
file of A includes a header of B, or when A's object in the library needs a symbol that
B's object defines (read with nm, so a call through a header that declares another file's
functions counts for the file that defines them). The test fails, naming the files of each
loop, when the graph has one; otherwise it prints the units bottom first.

usage: test_policy_layers.py POLICY_SOURCE_DIR LIBKA_POLICY_A
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
# nm -A on an archive: "lib.a:ka_engine.c.o: 0000000000000040 T ka_work_init" or "... U name".
NM_LINE = re.compile(r"^[^:]*:([^:]+\.c\.o):\s*(?:[0-9a-fA-F]+)?\s+([A-Za-z])\s+(\S+)$")


def unit_of(path: Path, sources: set[str]) -> str:
    """The unit a file belongs to: its stem when a source of that stem exists."""
    stem = path.name.rsplit(".", 1)[0]
    return stem if stem in sources else path.name


def include_edges(src: Path, sources: set[str]) -> set[tuple[str, str]]:
    local = {p.name for p in src.iterdir() if p.suffix in (".c", ".h")}
    edges = set()
    for path in src.iterdir():
        if path.suffix not in (".c", ".h"):
            continue
        for name in INCLUDE.findall(path.read_text()):
            if name in local:
                edges.add((unit_of(path, sources), unit_of(src / name, sources)))
    return edges


def symbol_edges(archive: Path) -> set[tuple[str, str]]:
    out = subprocess.run(["nm", "-A", str(archive)], check=True, capture_output=True,
                         text=True).stdout
    defined: dict[str, str] = {}
    needed: list[tuple[str, str]] = []
    for line in out.splitlines():
        m = NM_LINE.match(line.strip())
        if not m:
            continue
        member, kind, name = m.groups()
        unit = member[: -len(".c.o")]
        if kind == "U":
            needed.append((unit, name))
        elif kind.isupper():  # a global definition (T, D, B, R, ...)
            defined[name] = unit
    return {(unit, defined[name]) for unit, name in needed if name in defined}


def circles(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a != b:
            succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                scc = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    scc.append(top)
                    if top == node:
                        break
                if len(scc) > 1:
                    found.append(sorted(scc))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def bottom_first(nodes: set[str], edges: set[tuple[str, str]]) -> list[str]:
    uses = {n: {b for a, b in edges if a == n and b != n} for n in nodes}
    order: list[str] = []
    placed: set[str] = set()
    while len(placed) < len(nodes):
        ready = sorted(n for n in nodes if n not in placed and uses[n] <= placed)
        order.extend(ready)
        placed.update(ready)
    return order


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    if shutil.which("nm") is None:
        print("FAIL: nm (binutils, installed with the compilers) is missing")
        return 1
    src, archive = Path(sys.argv[1]), Path(sys.argv[2])
    sources = {p.stem for p in src.glob("*.c")}
    inc = include_edges(src, sources)
    sym = symbol_edges(archive)
    if not sym:
        print(f"FAIL: no symbol of {archive} is used by another object: nm read nothing")
        return 1
    nodes = {u for e in inc | sym for u in e} | sources
    loops = circles(nodes, inc | sym)
    for loop in loops:
        print("FAIL: these files of policy/ use each other in a circle: " + ", ".join(loop))
        for a, b in sorted(inc | sym):
            if a in loop and b in loop and a != b:
                how = "includes" if (a, b) in inc else "uses a symbol of"
                print(f"  {a} {how} {b}")
    if loops:
        return 1
    print("policy/ bottom first: " + " ".join(bottom_first(nodes, inc | sym)))
    print(f"1 passed, 0 failed ({len(nodes)} units, {len(inc | sym)} uses, no circle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
