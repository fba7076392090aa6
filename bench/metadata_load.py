#!/usr/bin/env python3
"""What one metadata refresh costs the broker: bytes and broker CPU.

Each kadmit sidecar asks its broker for the metadata of every topic every
metadata.refresh.interval.ms (30 s by default), and before decisions. This
starts a one-broker KRaft cluster (the integration harness), creates topics
up to each partition count asked for, and then sends full Metadata requests
(all topics, as the metadata client does) straight to the broker, as N
sidecars would, reading the broker's CPU time from /proc before and after.
It prints bytes per answer, broker CPU per refresh, and what N sidecars
refreshing every 30 s cost the broker per second.

  KADMIT_TEST_PORT_BASE=4000 python3 bench/metadata_load.py [--partitions 1000,5000]
      [--refreshes 40] [--sidecars 1,3,10]
"""
import argparse
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
from clients import create_topics_v5, parse_create_topics_v5  # noqa: E402

HOST = "127.0.0.1"


def broker_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="1000,5000")
    ap.add_argument("--refreshes", type=int, default=40)
    ap.add_argument("--sidecars", default="1,3,10")
    a = ap.parse_args()
    base = int(os.environ.get("KADMIT_TEST_PORT_BASE", "4000")) + 500
    d = Path(tempfile.mkdtemp(prefix="kadmit-mdload-"))
    c = kafka_cluster.KafkaCluster(d, brokers=1, port_base_=base, heap="-Xms512m -Xmx1g")
    rows = []
    try:
        c.start()
        node = c.node(1)
        pid = node.proc.pid()
        have = 0
        for target in [int(x) for x in a.partitions.split(",")]:
            with kafka_wire.Connection(HOST, node.direct_port, timeout=120) as conn:
                while have < target:  # 100 topics x 10 partitions per request
                    n = min(100, (target - have) // 10)
                    topics = [(f"load-{have // 10 + i}", 10, 1) for i in range(n)]
                    _, body = conn.call(create_topics_v5(1, topics, timeout_ms=120000))
                    failed = [t for t in parse_create_topics_v5(body) if t[1] != 0]
                    if failed:
                        raise RuntimeError(f"CreateTopics refused: {failed[:3]}")
                    have += 10 * n
            time.sleep(10)  # let the controller and the logs settle before measuring
            with kafka_wire.Connection(HOST, node.direct_port, timeout=120) as conn:
                conn.call(kafka_wire.metadata_request(1))  # warm
                cpu0, t0, size = broker_cpu_s(pid), time.time(), 0
                for i in range(a.refreshes):
                    _, body = conn.call(kafka_wire.metadata_request(i + 2))
                    size = len(body) + 8
                busy = broker_cpu_s(pid) - cpu0
                took = time.time() - t0
            # The broker's own background work over as long, idle, is not the refreshes'.
            idle0 = broker_cpu_s(pid)
            time.sleep(took)
            idle = broker_cpu_s(pid) - idle0
            cpu = max(busy - idle, 0.0) / a.refreshes
            wall = took / a.refreshes
            rows.append((have, size, cpu * 1e3, wall * 1e3))
            print(f"{have} partitions: answer {size} bytes, broker CPU {cpu * 1e3:.1f} ms "
                  f"per refresh, {wall * 1e3:.1f} ms each", file=sys.stderr)
    finally:
        c.stop()
    sidecars = [int(x) for x in a.sidecars.split(",")]
    print("\n| partitions | Metadata answer bytes | bytes per partition | broker CPU ms per refresh "
          "| refresh wall ms | " + " | ".join(f"{n} sidecars: KB/s, broker CPU %" for n in sidecars)
          + " |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * len(sidecars))
    for p, size, cpu, wall in rows:
        cells = [f"{n * size / 30 / 1024:.0f} KB/s, {n * cpu / 30000 * 100:.2f} %" for n in sidecars]
        print(f"| {p} | {size} | {size / p:.0f} | {cpu:.1f} | {wall:.1f} | " + " | ".join(cells)
              + " |")
    print("\n(per second: N sidecars x one refresh per 30 s; Metadata v4 here, kadmit asks v12, "
          "which adds topic ids and a few fields per partition)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
