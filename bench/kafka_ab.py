#!/usr/bin/env python3
"""Two kadmit builds side by side on one Kafka cluster: the suite's producer, fixed-rate latency and
consumer runs (bench/suite.py's `kafka` part) for direct, kadmit A (before) and kadmit B (after),
alternated within every round (not a test: nothing is asserted).

A change to the data path is judged by what it does to a real client's throughput and latency, and
two whole suite runs on a shared 2-core machine differ by more than most changes do. Here both
builds run at once, each a sidecar in front of every broker on its own broker listener (A on a
BEFORE listener that advertises A's port, B on the harness's usual one), and every round runs the
three paths in an order that rotates from round to round, so drift in the machine's load falls on
all three alike.

    KADMIT_TEST_PORT_BASE=0 python3 bench/kafka_ab.py --a before/kadmit --b build/kadmit \\
        [--rounds 3] [--json OUT.json]

Parameters are the suite's (BENCH_BROKERS, BENCH_RECORDS, BENCH_WARMUP_RECORDS, BENCH_RECORD_SIZE,
BENCH_LATENCY_RATE, BENCH_LATENCY_RECORDS, BENCH_LATENCY_WARMUP, BENCH_PARTITIONS; --smoke takes
the short ones). Any tool that fails fails the run (exit 1): its figures are never reported.
Ports: the harness's, plus 21090+i (the BEFORE listeners) and 24090+i (sidecar A), and the port
base.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import suite  # noqa: E402
from suite import HOST, kc  # noqa: E402

OFF_BEFORE_BOUND, OFF_BEFORE_FRONT = 21090, 24090  # + node id + port base
PATHS = ("direct", "A", "B")


class ABCluster(suite.BenchCluster):
    """The suite's cluster plus a BEFORE listener per node, advertised at sidecar A's port, so a
    client that came in through A is told to stay on A."""

    def before_bound(self, n: kc.Node) -> int:
        return OFF_BEFORE_BOUND + n.id + self.port_base

    def before_front(self, n: kc.Node) -> int:
        return OFF_BEFORE_FRONT + n.id + self.port_base

    def write_configs(self) -> None:
        super().write_configs()
        self.add_listener("BEFORE", self.before_bound, self.before_front)


class ABKafka(suite.Kafka):
    def __init__(self, p: dict, workdir: Path, a: Path, b: Path):
        super().__init__(p, workdir)
        self.c = ABCluster(self.dir, p["BENCH_BROKERS"], heap="-Xms1g -Xmx2g")
        self.sidecars = kc.Sidecars(self.c, binary=b)
        self.a_bin = a
        self.a_procs: list[kc.Proc] = []

    def start(self) -> None:
        kc.ensure_kafka()
        self.c.start()
        self.sidecars.start()
        for n in self.c.nodes:
            front = self.c.before_front(n)
            self.a_procs.append(suite.spawn(
                f"kadmit-a-{n.id}", self.workdir,
                [str(self.a_bin), "--listen", f"{HOST}:{front}", "--upstream",
                 f"{HOST}:{self.c.before_bound(n)}", "--admin", "off", "--log-level", "warn"],
                f"--listen\0{HOST}:{front}", front))

    def stop(self) -> None:
        for p in self.a_procs:
            p.stop(5)
        self.sidecars.stop()
        self.c.stop()

    def bootstrap(self, path: str) -> str:
        if path == "A":
            return ",".join(f"{HOST}:{self.c.before_front(n)}" for n in self.c.nodes)
        return {"direct": self.c.direct_bootstrap, "B": self.c.bootstrap}[path]

    def dead(self) -> list[str]:
        return ([f"{p.name} died" for p in self.a_procs if not p.alive()]
                + self.sidecars.problems())


def run(k: ABKafka, p: dict, rounds: int) -> dict:
    runs: dict[str, dict[str, list[dict]]] = {x: {"producer": [], "latency": [], "consumer": []}
                                              for x in PATHS}
    for r, order in suite.rotations(rounds, PATHS):
        topics = {}
        for path in order:
            topics[path] = f"bench-ab-{path}-{r}"
            k.create(topics[path], p["BENCH_PARTITIONS"])
            res = suite.produce(k, path, topics[path], p["BENCH_RECORDS"],
                                p["BENCH_WARMUP_RECORDS"])
            runs[path]["producer"].append(res["steady"] | {"load1": suite.load_triplet()[0]})
            suite.log(f"producer round {r + 1} {path}: {res['steady']['mb_per_s']:.1f} MB/s "
                      f"p99 {res['steady']['p99_ms']:.0f} ms")
        for path in order if p["BENCH_LATENCY_RATE"] > 0 else ():
            res = suite.produce(k, path, topics[path], p["BENCH_LATENCY_RECORDS"],
                                p["BENCH_LATENCY_WARMUP"], p["BENCH_LATENCY_RATE"])
            runs[path]["latency"].append(res["steady"])
            suite.log(f"latency round {r + 1} {path}: p50 {res['steady']['p50_ms']:.0f} "
                      f"p99 {res['steady']['p99_ms']:.0f} ms")
        total = p["BENCH_RECORDS"] + p["BENCH_WARMUP_RECORDS"]
        for path in order:
            res = suite.consume(k, path, topics[path], total,
                                f"bench-ab-{path}-{r}-{time.time_ns()}")
            runs[path]["consumer"].append(res)
            suite.log(f"consumer round {r + 1} {path}: {res['fetch_mb_per_s']:.1f} MB/s (fetch)")
        for t in topics.values():
            k.delete(t)
        dead = k.dead()
        if dead:
            raise RuntimeError("; ".join(dead))
    return runs


def markdown(runs: dict, p: dict, rounds: int, load: tuple) -> str:
    med = suite.median

    def m(path: str, part: str, key: str) -> float:
        return med([x[key] for x in runs[path][part]])

    rows = [("producer MB/s (steady)", "producer", "mb_per_s"),
            ("producer p99 ms (steady)", "producer", "p99_ms"),
            (f"latency p50 ms at {p['BENCH_LATENCY_RATE']}/s", "latency", "p50_ms"),
            (f"latency p99 ms at {p['BENCH_LATENCY_RATE']}/s", "latency", "p99_ms"),
            ("consumer MB/s (fetch)", "consumer", "fetch_mb_per_s")]
    out = [f"{rounds} rounds, paths alternated; {p['BENCH_BROKERS']} broker(s), "
           f"{p['BENCH_RECORDS']} records of {p['BENCH_RECORD_SIZE']} B after "
           f"{p['BENCH_WARMUP_RECORDS']} warmup; load average at the end "
           f"{' '.join(f'{x:.1f}' for x in load)}", "",
           "| median | direct | A (before) | B (after) | B / A | B / direct |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, part, key in rows:
        if not runs["direct"][part]:
            continue
        d, a, b = (m(x, part, key) for x in PATHS)
        out.append(f"| {name} | {d:.1f} | {a:.1f} | {b:.1f} | {suite.ratio(b, a):.3f} | "
                   f"{suite.ratio(b, d):.3f} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="kadmit binary A (before)")
    ap.add_argument("--b", required=True, help="kadmit binary B (after)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="the suite's short parameters")
    ap.add_argument("--json", help="write every run here")
    args = ap.parse_args()
    p = suite.params(args.smoke)
    for b in (args.a, args.b):
        if not os.access(b, os.X_OK):
            print(f"not an executable: {b}", file=sys.stderr)
            return 2
    work = Path(tempfile.mkdtemp(prefix="kadmit-kafka-ab-"))
    (work / "logs").mkdir()
    suite.LOGS.append(work / "logs")  # the tools' raw outputs
    k = ABKafka(p, work, Path(args.a).resolve(), Path(args.b).resolve())
    try:
        k.start()
        runs = run(k, p, args.rounds)
    finally:
        k.stop()
    text = markdown(runs, p, args.rounds, os.getloadavg())
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"params": p, "runs": runs, "markdown": text},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
