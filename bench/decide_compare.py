#!/usr/bin/env python3
"""Decision cost before and after, in one run: two bench_policy_decide binaries.

Runs each binary (the default shape: 1,000 topics x 10 partitions x RF 3
against 100 brokers and 200,000 partitions) alternately, several rounds,
and prints the median of each figure both print (`view built in X ms`,
`place ... median X ms`, `bound ... median X ms`) with the ratio after/before,
as wall clock and as the thread's CPU time (`[cpu X ms]`), which a loaded
machine inflates less.
A binary from an older tree prints only those; the newer lines are listed
for `after` alone.

  python3 bench/decide_compare.py BEFORE_BIN AFTER_BIN [--rounds 3] [--runs 7]
"""
import argparse
import re
import statistics
import subprocess
import sys

PATTERNS = {
    "view build ms": re.compile(r"^view built in ([0-9.]+) ms"),
    "place 1000 topics ms": re.compile(r"^place\s+1000 topics .*median ([0-9.]+) ms"),
    "bound 1000 topics ms": re.compile(r"^bound\s+1000 topics .*median ([0-9.]+) ms"),
    "place 100 topics ms": re.compile(r"^place\s+100 topics .*median ([0-9.]+) ms"),
    "one-topic create us": re.compile(r"^create 1 topic .*median ([0-9.]+) us"),
}


CPU = re.compile(r"\[cpu ([0-9.]+) [mu]s\]")


def run(binary: str, runs: int) -> dict:
    out = subprocess.run([binary, "--runs", str(runs)], check=True, capture_output=True,
                         text=True).stdout
    found = {}
    for line in out.splitlines():
        for name, pat in PATTERNS.items():
            m = pat.match(line)
            if m:
                found[name] = float(m.group(1))
                c = CPU.search(line)
                if c:
                    found["cpu " + name] = float(c.group(1))
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=7, help="runs per figure in each binary")
    a = ap.parse_args()
    got = {"before": [], "after": []}
    for r in range(a.rounds):
        order = [("before", a.before), ("after", a.after)]
        for name, binary in order if r % 2 == 0 else order[::-1]:
            got[name].append(run(binary, a.runs))
    print(f"medians of {a.rounds} alternating rounds (wall clock, then CPU time)\n")
    print("| figure | before | after | after/before |")
    print("|---|---:|---:|---:|")
    for name in list(PATTERNS) + ["cpu " + n for n in PATTERNS]:
        vals = {k: [x[name] for x in v if name in x] for k, v in got.items()}
        b = statistics.median(vals["before"]) if vals["before"] else None
        f = statistics.median(vals["after"]) if vals["after"] else None
        print(f"| {name} | {'' if b is None else f'{b:.2f}'} | {'' if f is None else f'{f:.2f}'} "
              f"| {'' if b is None or f is None else f'{f / b:.3f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
