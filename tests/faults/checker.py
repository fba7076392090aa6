"""The independent checker: the brokers' own replica counts, sampled every 100 ms, against the
limits the suite put in force.

It never asks kadmit. Each sample is a Metadata request (all topics, internal ones included) on
a broker's DIRECT listener, which bypasses the sidecars; it tries the live brokers in turn, so a
killed broker only costs the samples that hit it. Replicas are counted per broker id over every
partition's replica set (during a reassignment that set is the union of the old and new
replicas, which is what the broker really hosts then). Each sample is judged against the limits
in force at the moment its request was sent (suite.Limits.at); one where some broker's count
exceeds its limit is a violation, kept with its time, the broker and by how much. Every sample is
also written as one JSON line to samples.jsonl, so a run can be examined afterwards.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import kafka_wire
from suite import HOST, Suite, replica_counts

INTERVAL = 0.1


class Checker:
    def __init__(self, suite: Suite, out: Path):
        self.suite = suite
        self.out = open(out, "w")
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._run, name="checker", daemon=True)
        self.samples = 0
        self.failed = 0  # no broker answered
        self.violations: list[dict] = []
        self.last: dict[int, int] = {}
        self.max_seen: dict[int, int] = {}
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.phase = "start"
        self.lock = threading.Lock()
        self._next = 0
        self.on_violation = None  # called at each violation (run.py halts the workload)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_ev.set()
        self.thread.join(10)
        self.out.close()

    def _metadata(self) -> tuple[dict | None, int]:
        nodes = self.suite.c.nodes
        for k in range(len(nodes)):
            n = nodes[(self._next + k) % len(nodes)]
            if not n.proc.alive():
                continue
            try:
                md = kafka_wire.metadata(HOST, n.direct_port, timeout=2.0)
                self._next = (self._next + k + 1) % len(nodes)
                return md, n.id
            except (OSError, ConnectionError, ValueError, IndexError):
                continue
        return None, 0

    def sample(self) -> dict | None:
        t = time.monotonic()
        limits = self.suite.limits.at(t)
        md, via = self._metadata()
        if md is None:
            self.failed += 1
            return None
        counts = replica_counts(md)
        over = {b: n - limits[b] for b, n in counts.items() if b in limits and n > limits[b]}
        rec = {"t": round(t - self.t0, 3), "wall": round(time.time(), 3), "via": via,
               "phase": self.phase, "counts": counts, "limits": limits}
        with self.lock:
            self.samples += 1
            self.last = counts
            for b, n in counts.items():
                self.max_seen[b] = max(self.max_seen.get(b, 0), n)
            if over:
                rec["over"] = over
                self.violations.append(rec)
        if over and self.on_violation:
            self.on_violation()
        self.out.write(json.dumps(rec) + "\n")
        return rec

    def _run(self) -> None:
        while not self.stop_ev.is_set():
            t = time.monotonic()
            try:
                self.sample()
            except Exception as e:  # noqa: BLE001 - a parse error must not stop the checker
                self.failed += 1
                self.out.write(json.dumps({"t": round(t - self.t0, 3), "error": repr(e)}) + "\n")
            self.stop_ev.wait(max(0.0, INTERVAL - (time.monotonic() - t)))

    def summary(self) -> dict:
        with self.lock:
            worst: dict[str, dict] = {}
            for v in self.violations:
                for b, by in v["over"].items():
                    w = worst.get(str(b))
                    if w is None or by > w["by"]:
                        worst[str(b)] = {"by": by, "t": v["t"], "phase": v["phase"],
                                         "count": v["counts"][b], "limit": v["limits"][b]}
            phases: dict[str, int] = {}
            for v in self.violations:
                phases[v["phase"]] = phases.get(v["phase"], 0) + 1
            return {"samples": self.samples, "samples_failed": self.failed,
                    "violations": len(self.violations), "worst_by_broker": worst,
                    "violating_samples_by_phase": phases,
                    "first_violations": self.violations[:5]}


def print_summary(s: dict) -> str:
    lines = [f"checker: {s['samples']} samples ({s['samples_failed']} without an answer), "
             f"{s['violations']} over a limit"]
    for b, w in sorted(s["worst_by_broker"].items()):
        lines.append(f"  broker {b}: up to {w['by']} over ({w['count']} > {w['limit']}) "
                     f"at t={w['t']}s in phase {w['phase']}")
    for ph, n in s["violating_samples_by_phase"].items():
        lines.append(f"  phase {ph}: {n} violating samples")
    return "\n".join(lines)
