#!/usr/bin/env python3
"""What the metadata refresh costs Kafka: bytes and broker CPU, before and after the idle mode.

Each kadmit sidecar asks its broker for the metadata of every topic every
metadata.refresh.interval.ms (30 s by default), before decisions, and with
at most every 10 s of those refreshes the partial-view check
(DescribeLogDirs of every replica on its broker). This starts a one-broker
KRaft cluster (the integration harness) and, for each partition count asked:

1. creates topics up to that count and waits until the broker's Metadata
   answer lists every one of them (CreateTopics answers once the controller
   has committed the records; the broker applies them, creating each
   partition's log, seconds later on a busy machine, so a Metadata request
   sent right after creation sees only part of them);
2. sends full Metadata v12 requests (all topics, as the metadata client does)
   and DescribeLogDirs v4 requests (all topics) straight to the broker, back
   to back for at least --busy seconds, reading the broker's CPU time from
   /proc before and after, less its CPU over as long a quiet spell measured
   right after (its own background work).

Then, at the last partition count (--sidecar-minutes > 0), it runs idle sidecars
against the same broker: N = 1 and 3 of the binary given by --before (main's
kadmit) and then of --after (this tree's), each for --sidecar-minutes,
with the timing keys scaled down by --scale (the default policy's 30 s /
120 s / 90 s idle, divided by 10) so that a minute holds enough refreshes,
and counts each sidecar's refreshes and partial-view checks from /metrics and
the broker's CPU over the window less its quiet CPU.

  KADMIT_TEST_PORT_BASE=2000 python3 bench/metadata_load.py \\
      [--partitions 2000,10000,20000] [--busy 8] [--sidecars 1,3] \\
      [--before main/build/kadmit --after build/kadmit --sidecar-minutes 1 --scale 10]
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "harness"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import kafka_cluster  # noqa: E402
import kafka_wire  # noqa: E402
from clients import _flex_request, create_topics_v5, parse_create_topics_v5  # noqa: E402
from kadmit_proc import Kadmit  # noqa: E402

HOST = "127.0.0.1"
TICK = os.sysconf("SC_CLK_TCK")
DEFAULT_INTERVAL_MS, DEFAULT_STALENESS_MS, DEFAULT_IDLE_MS = 30000, 120000, 90000


def broker_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def metadata_v12(cid: int) -> bytes:
    # topics null (every topic), no auto-creation, no topic authorized operations, no tags
    return _flex_request(3, 12, cid, b"\x00\x00\x00\x00")


def describe_log_dirs_v4(cid: int) -> list[bytes]:
    return [_flex_request(35, 4, cid, b"\x00\x00")]  # topics null: every replica; no tags


def _cstr(x: str) -> bytes:
    return bytes([len(x) + 1]) + x.encode()


CONFIG_KEYS = ("num.partitions", "default.replication.factor", "auto.create.topics.enable",
               "min.insync.replicas", "log.retention.ms", "log.retention.minutes",
               "log.retention.hours", "log.retention.bytes", "log.cleanup.policy",
               "message.max.bytes", "log.segment.bytes")


def refresh_requests(cid: int) -> list[bytes]:
    """One refresh as the metadata client sends it: Metadata v12, DescribeCluster v2 (brokers,
    fenced included), DescribeConfigs v4 of broker 1's defaults."""
    cluster = b"\x00\x01\x01\x00"  # no authorized operations, endpoint type brokers, fenced
    keys = bytes([len(CONFIG_KEYS) + 1]) + b"".join(_cstr(k) for k in CONFIG_KEYS)
    configs = b"\x02" + b"\x04" + _cstr("1") + keys + b"\x00" + b"\x00\x00\x00"
    return [metadata_v12(cid), _flex_request(60, 2, cid + 1, cluster),
            _flex_request(32, 4, cid + 2, configs)]


def topic_count(port: int) -> int:
    return len(kafka_wire.metadata(HOST, port, timeout=120)["topics"])


def create_up_to(node, have: int, target: int) -> int:
    """Topics of 10 partitions, RF 1, up to target partitions; waits until Metadata lists them."""
    with kafka_wire.Connection(HOST, node.direct_port, timeout=300) as conn:
        while have < target:
            n = min(100, (target - have) // 10)
            topics = [(f"load-{have // 10 + i}", 10, 1) for i in range(n)]
            _, body = conn.call(create_topics_v5(1, topics, timeout_ms=300000))
            failed = [t for t in parse_create_topics_v5(body) if t[1] != 0]
            if failed:
                raise RuntimeError(f"CreateTopics refused: {failed[:3]}")
            have += 10 * n
    deadline = time.monotonic() + 600
    while topic_count(node.direct_port) < have // 10:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker's Metadata still lacks topics of the {have} partitions")
        time.sleep(2)
    return have


def quiet_cpu(pid: int, seconds: float) -> float:
    c0 = broker_cpu_s(pid)
    time.sleep(seconds)
    return broker_cpu_s(pid) - c0


def cost(node, pid: int, make, busy_s: float) -> tuple[int, float, float, int]:
    """(answer bytes, broker CPU ms per request, wall ms per request, requests) of requests
    from make(cid), back to back for busy_s, less the broker's quiet CPU over as long."""
    with kafka_wire.Connection(HOST, node.direct_port, timeout=120) as conn:
        size, n = sum(len(conn.call(f)[1]) + 4 for f in make(1)), 0  # warm
        cpu0, t0 = broker_cpu_s(pid), time.monotonic()
        while n < 5 or time.monotonic() - t0 < busy_s:
            for f in make(10 * n + 10):
                conn.call(f)
            n += 1
        busy, took = broker_cpu_s(pid) - cpu0, time.monotonic() - t0
    idle = quiet_cpu(pid, took)
    if busy - idle < 20 / TICK:
        print(f"warning: CPU delta {busy - idle:.3f} s is within 20 clock ticks", file=sys.stderr)
    return size, max(busy - idle, 0.0) * 1e3 / n, took * 1e3 / n, n


def sidecar_policy(d: Path, scale: int) -> Path:
    p = d / f"policy-scale{scale}.json"
    p.write_text(json.dumps({"max.broker.partitions": 1000000,
                             "metadata.refresh.interval.ms": DEFAULT_INTERVAL_MS // scale,
                             "metadata.max.staleness.ms": DEFAULT_STALENESS_MS // scale,
                             "metadata.refresh.before.decision.ms": 5000 // scale}))
    return p


def run_sidecars(d: Path, c, pid: int, binary: Path, label: str, n: int, minutes: float,
                 scale: int, base: int) -> dict:
    """n idle sidecars of binary on the broker for minutes: refreshes, checks and broker CPU
    per minute. The first refresh (at start) and the warm-up are outside the window."""
    node = c.node(1)
    policy = sidecar_policy(d, scale)
    ks = [Kadmit(binary, d, f"{label}-{n}-{i}", 9090 + base + 10 + i, node.client_port,
                 15090 + base + 10 + i, "--policy", str(policy)) for i in range(n)]
    try:
        for k in ks:
            k.start()
        # The first refresh, and long enough for the idle mode to begin.
        time.sleep(3 + (DEFAULT_IDLE_MS + DEFAULT_INTERVAL_MS) / scale / 1000)
        refreshes = "kadmit_metadata_refreshes_total{result=\"ok\"}"
        checks = [f"kadmit_cluster_view_checks_total{{result=\"{r}\"}}"
                  for r in ("complete", "missing", "unauthorized", "failed")]

        def sample():
            ms = [k.metrics() for k in ks]
            return (sum(m.get(refreshes, 0) for m in ms),
                    sum(m.get(x, 0) for m in ms for x in checks))

        r0, k0 = sample()
        cpu0, t0 = broker_cpu_s(pid), time.monotonic()
        time.sleep(minutes * 60)
        cpu, took = broker_cpu_s(pid) - cpu0, time.monotonic() - t0
        r1, k1 = sample()
        idle = [k.metrics().get("kadmit_metadata_refresh_idle", -1) for k in ks]
    finally:
        for k in ks:
            k.stop()
    per_min = 60 / took
    return {"refreshes": (r1 - r0) * per_min, "checks": (k1 - k0) * per_min,
            "cpu_s": cpu * per_min, "idle_gauge": idle}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="2000,10000,20000")
    ap.add_argument("--busy", type=float, default=8.0, help="seconds of requests per point")
    ap.add_argument("--sidecars", default="1,3")
    ap.add_argument("--before", type=Path, help="main's kadmit binary")
    ap.add_argument("--after", type=Path, default=ROOT / "build" / "kadmit")
    ap.add_argument("--sidecar-minutes", type=float, default=0.0)
    ap.add_argument("--scale", type=int, default=10)
    a = ap.parse_args()
    base = int(os.environ.get("KADMIT_TEST_PORT_BASE", "4000")) + 500
    d = Path(tempfile.mkdtemp(prefix="kadmit-mdload-"))
    c = kafka_cluster.KafkaCluster(d, brokers=1, port_base_=base, heap="-Xms1g -Xmx2g")
    rows, side = [], []
    try:
        c.start()
        node = c.node(1)
        pid = node.proc.pid()
        have = 0
        for target in [int(x) for x in a.partitions.split(",")]:
            t0 = time.monotonic()
            have = create_up_to(node, have, target)
            print(f"{have} partitions listed after {time.monotonic() - t0:.0f} s", file=sys.stderr)
            time.sleep(10)  # the logs' creation settles before measuring
            with kafka_wire.Connection(HOST, node.direct_port, timeout=120) as conn:
                mdb = len(conn.call(metadata_v12(1))[1])
            md = cost(node, pid, refresh_requests, a.busy)
            ld = cost(node, pid, describe_log_dirs_v4, a.busy)
            rows.append((have, mdb + 4, md, ld))
            print(f"{have}: Metadata {md}, DescribeLogDirs {ld}", file=sys.stderr)
        if a.sidecar_minutes > 0:
            quiet = quiet_cpu(pid, a.sidecar_minutes * 60) / a.sidecar_minutes
            for label, binary in (("before", a.before), ("after", a.after)):
                if binary is None:
                    continue
                for n in [int(x) for x in a.sidecars.split(",")]:
                    r = run_sidecars(d, c, pid, binary, label, n, a.sidecar_minutes, a.scale,
                                     base)
                    side.append((label, n, r))
                    print(f"{label} x{n}: {r}", file=sys.stderr)
    finally:
        c.stop()
    sidecars = [int(x) for x in a.sidecars.split(",")]
    print("\nrefresh: Metadata v12 + DescribeCluster v2 + DescribeConfigs v4 (broker defaults), "
          "as the metadata client sends them; the partial-view check is DescribeLogDirs v4.")
    print("\n| partitions | request | answer bytes | bytes per partition | broker CPU ms "
          "| wall ms | count | " + " | ".join(f"{n} sidecar(s) at 30 s" for n in sidecars)
          + " |")
    print("|---:|---|---:|---:|---:|---:|---:|" + "---:|" * len(sidecars))
    for p, mdb, md, ld in rows:
        print(f"| {p:,} | Metadata v12 alone | {mdb:,} | {mdb / p:.1f} | | | | |")
        for name, (size, cpu, wall, n) in (("refresh", md), ("DescribeLogDirs v4", ld)):
            cells = [f"{k * size / 30 / 1024:.1f} KB/s, {k * cpu / 30000 * 100:.3f} % CPU"
                     for k in sidecars]
            print(f"| {p:,} | {name} | {size:,} | {size / p:.1f} | {cpu:.2f} | {wall:.1f} | {n} | "
                  + " | ".join(cells) + " |")
    if side:
        p, _, (md_size, md_cpu, _, _), (ld_size, ld_cpu, _, _) = rows[-1]
        print(f"\nIdle sidecars on {p:,} partitions, timing keys / {a.scale}"
              f" (broker quiet CPU {quiet * 1e3:.0f} ms per minute, subtracted):\n")
        print("| binary | sidecars | refreshes / min | checks / min | KiB / min | broker CPU ms "
              "/ min (counts x cost) | broker CPU ms / min (measured, less quiet) | idle gauge |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for label, n, r in side:
            nbytes = r["refreshes"] * md_size + r["checks"] * ld_size
            cpu = r["refreshes"] * md_cpu + r["checks"] * ld_cpu
            gauge = ",".join("n/a" if g < 0 else f"{g:.0f}" for g in r["idle_gauge"])
            print(f"| {label} | {n} | {r['refreshes']:.1f} | {r['checks']:.1f} | "
                  f"{nbytes / 1024:,.0f} | {cpu:.0f} | {(r['cpu_s'] - quiet) * 1e3:.0f} | "
                  f"{gauge} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
