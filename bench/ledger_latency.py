#!/usr/bin/env python3
"""What the cluster-wide ledger adds to an admitted CreateTopics (not a test: nothing is asserted).

A 3-broker KRaft cluster (the harness's kafka_cluster.py) with two kadmit sidecars per broker,
both judging with the same permissive --policy: one with `--ledger on` (the decision waits for
its intent to come back from `__kadmit_ledger`), one with `--ledger off` (the sidecar decides
alone). Each round creates one single-partition RF-3 topic on each path, direct to the broker
too, in an order that rotates from round to round; round k goes to broker k mod 3, through that
broker's sidecars. One connection per path and broker stays open, as a client's would, and the
time is from sending the request to reading its answer. The first WARMUP rounds are reported
apart from the steady state. Each round also times Kafka's own floor for what the ledger waits
for (class Floor: one acks=all record on a 3-replica partition, append to read back, no kadmit),
so the ledger's added time can be read against what Kafka needs for it on the same machine.

    KADMIT_BIN=build/kadmit KADMIT_TEST_PORT_BASE=0 N=200 WARMUP=20 REPEAT=1 \\
        python3 bench/ledger_latency.py [--json OUT.json]

Any error answer (its time is never counted as a latency) or a sidecar that died fails the run
(exit 1). REPEAT runs the whole measurement that many times, each on a fresh cluster, and ends
with the medians of the rounds' ledger on - ledger off differences.

Ports: the harness's, plus KADMIT_TEST_PORT_BASE + 370; the ledger-off sidecars listen 100
above the ledger-on ones (listener and admin port).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import struct
import sys
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for where in (ROOT / "scripts" / "harness", ROOT / "tests" / "integration"):
    if (where / "kafka_cluster.py").exists():
        sys.path.insert(0, str(where))
        break
import kafka_cluster as kc  # noqa: E402

OFFSET = 370
OFF_SHIFT = 100  # the ledger-off sidecars' ports, above the ledger-on ones
PATHS = ("direct", "ledger off", "ledger on")


# --- CreateTopics v4 on one persistent connection ----------------------------------------------

def _kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Wire:
    """A blocking connection that sends one CreateTopics v4 at a time."""

    def __init__(self, port: int):
        self.sock = socket.create_connection((kc.HOST, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.cid = 0

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(left)
            if not chunk:
                raise ConnectionError("connection closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def create(self, topic: str, partitions: int = 1, rf: int = 3) -> tuple[float, int, str]:
        """(seconds from send to answer, error code, error message)."""
        self.cid += 1
        body = (struct.pack(">i", 1) + _kstr(topic) + struct.pack(">ihii", partitions, rf, 0, 0)
                + struct.pack(">i?", 30000, False))
        head = struct.pack(">hhi", 19, 4, self.cid) + _kstr("kadmit-bench-ledger")
        frame = struct.pack(">i", len(head) + len(body)) + head + body
        t0 = time.perf_counter()
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", self._read(4))
        resp = self._read(size)
        elapsed = time.perf_counter() - t0
        cid, _, _, name_len = struct.unpack_from(">iiih", resp, 0)  # cid, throttle, count, name
        assert cid == self.cid
        (code, msg_len) = struct.unpack_from(">hh", resp, 14 + name_len)
        msg = resp[18 + name_len:18 + name_len + max(0, msg_len)].decode(errors="replace")
        return elapsed, code, msg

    def close(self) -> None:
        self.sock.close()


class Floor:
    """Kafka's own cost of what the ledger waits for, in the same run: one record appended
    (acks=all, idempotent, linger 0, as kadmit's ledger producer) to a 3-replica partition with
    min.insync.replicas 2, timed until a consumer reads it back (fetch.wait.max.ms 5,
    fetch.min.bytes 1, as kadmit's ledger consumer). No kadmit is on this path."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Consumer, Producer, TopicPartition
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})]
                            )[topic].result(30)
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 0,
                                  "socket.nagle.disable": True})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kadmit-bench-floor",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 5,
                                  "fetch.min.bytes": 1, "socket.nagle.disable": True})
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.seq = 0
        self.round_trip()  # connects both clients; untimed

    def round_trip(self) -> float:
        """Seconds from append to read back; raises on an error or after 30 s."""
        self.seq += 1
        want = str(self.seq).encode()
        t0 = time.perf_counter()
        self.producer.produce(self.topic, want)
        self.producer.poll(0)
        deadline = t0 + 30
        while time.perf_counter() < deadline:
            m = self.consumer.poll(1.0)
            if m is None:
                continue
            if m.error():
                raise RuntimeError(f"floor read-back failed: {m.error()}")
            if m.value() == want:
                return time.perf_counter() - t0
        raise TimeoutError("floor record not read back in 30 s")

    def close(self) -> None:
        self.producer.flush(10)
        self.consumer.close()
        self.producer = None  # destroyed now, not after the cluster stopped (its retries' noise)


# --- the cluster and the two sidecar sets ------------------------------------------------------

def start_sidecar(c: kc.KafkaCluster, node: kc.Node, ledger: str, policy: Path) -> tuple:
    shift = OFF_SHIFT if ledger == "off" else 0
    listen, admin = node.sidecar_port + shift, node.admin_port + shift
    proc = kc.Proc(f"kadmit-{ledger}-{node.id}", c.dir / f"kadmit-{ledger}-{node.id}.pid",
                   c.dir / f"kadmit-{ledger}-{node.id}.log", f"--listen\0{kc.HOST}:{listen}")
    proc.spawn([str(kc.kadmit_bin()), "--listen", f"{kc.HOST}:{listen}", "--upstream",
                f"{kc.HOST}:{node.client_port}", "--admin", f"{kc.HOST}:{admin}", "--policy",
                str(policy), "--ledger", ledger, "--sidecar-id", f"bench-{ledger}-{node.id}",
                "--log-level", "warn"])
    return proc, listen, admin


def wait_ready(procs: list[tuple], timeout: float = 60.0) -> None:
    import urllib.request
    deadline = time.monotonic() + timeout
    for proc, _, admin in procs:
        while True:
            try:
                with urllib.request.urlopen(f"http://{kc.HOST}:{admin}/v1/admission", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited:\n{kc.tail(proc.logfile)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{proc.name} not ready")
            time.sleep(0.2)


def ledger_round_trip_ms(procs: list[tuple]) -> float | None:
    """The ledger-on sidecars' own mean intent round trip (append to read back, warmup included),
    from kadmit_ledger_round_trip_seconds: the ledger's cost without the broker's CreateTopics."""
    import urllib.request
    total, count = 0.0, 0.0
    for proc, _, admin in procs:
        if "-on-" not in proc.name:
            continue
        with urllib.request.urlopen(f"http://{kc.HOST}:{admin}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("kadmit_ledger_round_trip_seconds_sum "):
                    total += float(line.split()[1])
                elif line.startswith("kadmit_ledger_round_trip_seconds_count "):
                    count += float(line.split()[1])
    return 1000 * total / count if count else None


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank, in milliseconds."""
    s = sorted(xs)
    return 1000 * s[min(len(s), max(1, math.ceil(q * len(s)))) - 1]


def measure(n: int, warmup: int) -> dict:
    kc.ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-bench-ledger-"))
    c = kc.KafkaCluster(d, brokers=3, port_base_=kc.port_base() + OFFSET)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 1000000}))
    procs: list[tuple] = []
    problems: list[str] = []
    wires: dict[tuple[str, int], Wire] = {}
    try:
        c.start()
        for node in c.nodes:
            for ledger in ("on", "off"):
                procs.append(start_sidecar(c, node, ledger, policy))
        wait_ready(procs)
        ports = {("ledger on", nd.id): nd.sidecar_port for nd in c.nodes}
        ports |= {("ledger off", nd.id): nd.sidecar_port + OFF_SHIFT for nd in c.nodes}
        ports |= {("direct", nd.id): nd.direct_port for nd in c.nodes}
        wires = {k: Wire(p) for k, p in ports.items()}
        for nd in c.nodes:  # untimed: until each ledger-on sidecar's ledger client is up
            deadline = time.monotonic() + 60
            while wires[("ledger on", nd.id)].create(f"bench-ledger-ready-{nd.id}-"
                                                      f"{time.monotonic_ns()}")[1] != 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the ledger-on sidecar of broker {nd.id} never admits")
                time.sleep(0.5)
        floor = Floor(c.direct_bootstrap, "bench-ledger-floor")
        floor_s: list[float] = []
        times: dict[str, list[float]] = {p: [] for p in PATHS}
        errors: dict[str, int] = {p: 0 for p in PATHS}
        stamp = time.strftime("%H%M%S")
        t0 = time.monotonic()
        for r in range(n):
            node = r % 3 + 1
            order = PATHS[r % 3:] + PATHS[:r % 3]
            for path in order:
                topic = f"bench-ledger-{stamp}-{path.replace(' ', '-')}-{r}"
                elapsed, code, msg = wires[(path, node)].create(topic)
                if code != 0:
                    # An error's time is not a latency of an admitted create: it is never
                    # counted, and any error fails the run.
                    errors[path] += 1
                    problems.append(f"{path} round {r} broker {node} ({topic}, "
                                    f"{1000 * elapsed:.0f} ms): CreateTopics error {code}: {msg}")
                    continue
                times[path].append(elapsed)
            floor_s.append(floor.round_trip())
        floor.close()
        wall = time.monotonic() - t0
        problems += [f"{p.name} died" for p, _, _ in procs if not p.alive()]
        return {"n": n, "warmup": warmup, "wall_s": wall, "errors": errors, "problems": problems,
                "load": os.getloadavg(), "times_s": times,
                "round_trip_ms": ledger_round_trip_ms(procs), "floor_s": floor_s}
    finally:
        for w in wires.values():
            w.close()
        with ThreadPoolExecutor(max(1, len(procs))) as ex:
            list(ex.map(lambda t: t[0].stop(10), procs))
        c.stop()
        if sys.exc_info()[0] is None and not problems:
            shutil.rmtree(d, ignore_errors=True)
        else:  # the sidecars' and brokers' logs say why
            print(f"ledger bench failed: its directory is kept: {d}", file=sys.stderr)


def summarize(res: dict) -> dict:
    w = res["warmup"]
    out = {}
    for path, xs in res["times_s"].items():
        warm, steady = xs[:w], xs[w:]
        out[path] = {"warmup_p50_ms": pct(warm, 0.5) if warm else None,
                     "warmup_p99_ms": pct(warm, 0.99) if warm else None,
                     "p50_ms": pct(steady, 0.5), "p99_ms": pct(steady, 0.99),
                     "mean_ms": 1000 * statistics.fmean(steady), "errors": res["errors"][path]}
    fl = res.get("floor_s", [])[w:]
    if fl:
        out["kafka floor"] = {"p50_ms": pct(fl, 0.5), "p99_ms": pct(fl, 0.99),
                              "mean_ms": 1000 * statistics.fmean(fl)}
    return out


def markdown(res: dict, summary: dict) -> str:
    off, on = summary["ledger off"], summary["ledger on"]
    lines = [f"{res['n']} sequential single-partition RF-3 CreateTopics per path (3 brokers, "
             f"interleaved), first {res['warmup']} as warmup; load average "
             f"{' '.join(f'{x:.1f}' for x in res['load'])}", "",
             "| path | warmup p50 ms | warmup p99 ms | p50 ms | p99 ms | errors |",
             "|---|---:|---:|---:|---:|---:|"]
    for path in PATHS:
        s = summary[path]
        wp50 = f"{s['warmup_p50_ms']:.1f}" if s["warmup_p50_ms"] is not None else "-"
        wp99 = f"{s['warmup_p99_ms']:.1f}" if s["warmup_p99_ms"] is not None else "-"
        lines.append(f"| {path} | {wp50} | {wp99} | {s['p50_ms']:.1f} | {s['p99_ms']:.1f} | "
                     f"{s['errors']} |")
    if res.get("round_trip_ms") is not None:
        lines += ["", f"The ledger-on sidecars' own mean intent round trip (append to read back, "
                      f"kadmit_ledger_round_trip_seconds): {res['round_trip_ms']:.1f} ms"]
    fl = summary.get("kafka floor")
    if fl:
        lines += ["", f"Kafka's floor in the same rounds (one acks=all record on a 3-replica "
                      f"partition, append to read back, no kadmit): p50 {fl['p50_ms']:.1f} ms, "
                      f"p99 {fl['p99_ms']:.1f} ms; ledger on - ledger off - floor, p50: "
                      f"{on['p50_ms'] - off['p50_ms'] - fl['p50_ms']:+.1f} ms"]
    lines += ["", "| steady state | p50 | p99 |", "|---|---:|---:|",
              f"| ledger on - ledger off (ms) | {on['p50_ms'] - off['p50_ms']:+.1f} | "
              f"{on['p99_ms'] - off['p99_ms']:+.1f} |",
              f"| ledger on / ledger off | {on['p50_ms'] / off['p50_ms']:.2f} | "
              f"{on['p99_ms'] / off['p99_ms']:.2f} |",
              f"| ledger on / direct | {on['p50_ms'] / summary['direct']['p50_ms']:.2f} | "
              f"{on['p99_ms'] / summary['direct']['p99_ms']:.2f} |"]
    return "\n".join(lines)


def run(n: int, warmup: int) -> dict:
    """The measurement and its summary (used by bench/suite.py's `ledger` part)."""
    res = measure(n, warmup)
    summary = summarize(res)
    return {"params": {"n": n, "warmup": warmup}, "summary": summary, "wall_s": res["wall_s"],
            "round_trip_ms": res.get("round_trip_ms"),
            "load": res["load"], "problems": res["problems"], "markdown": markdown(res, summary),
            "times_s": res["times_s"], "floor_s": res.get("floor_s")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write every timing and the summary here")
    args = ap.parse_args()
    n = int(os.environ.get("N", "200"))
    warmup = int(os.environ.get("WARMUP", "20"))
    repeat = int(os.environ.get("REPEAT", "1"))
    outs = []
    for _ in range(repeat):  # each on a fresh cluster; the medians of the rounds end the output
        out = run(n, warmup)
        print(out["markdown"], flush=True)
        for p in out["problems"]:
            print(p, file=sys.stderr)
        outs.append(out)
    deltas = {k: statistics.median(o["summary"]["ledger on"][k] - o["summary"]["ledger off"][k]
                                   for o in outs) for k in ("p50_ms", "p99_ms")}
    if repeat > 1:
        print(f"\nmedian over {repeat} rounds, ledger on - ledger off: "
              f"p50 {deltas['p50_ms']:+.1f} ms, p99 {deltas['p99_ms']:+.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": outs, "median_delta_ms": deltas},
                                              indent=1))
    # Any error, or a sidecar that died, fails the run: its figures are not a clean measurement.
    return 1 if any(o["problems"] for o in outs) else 0


if __name__ == "__main__":
    sys.exit(main())
