#!/usr/bin/env python3
"""Producer throughput over TLS through kadmit versus TLS direct to the broker (not a test:
nothing is asserted).

Starts its own 1-broker cluster (secure_cluster.py, at KADMIT_TEST_PORT_BASE + 160) and one
kadmit terminating TLS toward the client and originating TLS to the broker's SSL listener.
Runs kafka-producer-perf-test (1 KiB records, acks=all, security.protocol=SSL) alternately
direct (the broker's DIRECTTLS listener) and through kadmit (which goes first alternates by
round), ROUNDS times each, on a fresh
1-partition topic per run, and prints each run, the medians and the ratio kadmit/direct.
The first WARMUP records of a run are left out, from the perf tool's 5-second windows.

    KADMIT_BIN=build/kadmit KADMIT_TEST_PORT_BASE=0 RECORDS=500000 ROUNDS=3 \\
        python3 bench/tls_ratio.py

bench/run.sh runs it as its "tls" part (bench/suite.py) and reports it with the other paths.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
# The cluster harness; the TLS cluster and certificates above are still the test suite's.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "harness"))

import clients  # noqa: E402
import tls_certs  # noqa: E402
from kafka_cluster import HOST, ensure_kafka, port_base, tool  # noqa: E402
from secure_cluster import Kadmit, SecureKafkaCluster  # noqa: E402

WINDOW = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec")


def steady_rate(output: str, warmup: int) -> float:
    rows = [(int(m.group(1)), float(m.group(2)))
            for m in (WINDOW.match(line) for line in output.splitlines()) if m]
    windows, total = rows[:-1], rows[-1]
    seen = recs = 0
    secs = 0.0
    for n, rate in windows:
        if seen >= warmup and rate > 0:
            recs += n
            secs += n / rate
        seen += n
    return recs / secs if secs > 0 else total[1]


def run(bootstrap: str, props: Path, topic: str, records: int, warmup: int,
        direct: str) -> float:
    clients.topics(direct, "--command-config", str(props), "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "1")
    p = clients.run([tool("kafka-producer-perf-test"), "--topic", topic, "--num-records",
                     str(records), "--record-size", "1024", "--throughput", "-1",
                     "--producer.config", str(props), "--producer-props",
                     f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
                     "batch.size=65536"], timeout=900)
    clients.topics(direct, "--command-config", str(props), "--delete", "--topic", topic)
    return steady_rate(clients.text(p), warmup)


def main() -> int:
    records = int(os.environ.get("RECORDS", "500000"))
    warmup = int(os.environ.get("WARMUP", str(records // 10)))
    rounds = int(os.environ.get("ROUNDS", "3"))
    ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-tls-ratio-"))
    c = SecureKafkaCluster(d / "cluster", port_base() + 160, d / "certs")
    k = None
    try:
        c.start()
        kc = tls_certs.make_cert(d / "certs", "kadmit", c.ca, serial=100)
        k = Kadmit(d, "tls", c.tls_sidecar_port, c.tls_port, 15591 + c.port_base,
                   ["--tls-cert", str(kc.cert), "--tls-key", str(kc.key), "--upstream-tls",
                    "true", "--upstream-ca", str(c.ca.cert), "--log-level", "warn"])
        props = c.java_props(d / "ssl.properties")
        direct = f"{HOST}:{c.direct_tls_port}"
        through = f"{HOST}:{c.tls_sidecar_port}"
        rates: dict[str, list[float]] = {"direct": [], "kadmit": []}
        for r in range(rounds):
            order = [("direct", direct), ("kadmit", through)]
            if r % 2:  # alternate who goes first, so order effects fall on both sides
                order.reverse()
            for mode, bootstrap in order:
                rate = run(bootstrap, props, f"tls-ratio-{mode}-{r}", records, warmup, direct)
                rates[mode].append(rate)
                print(f"round {r + 1} {mode:6s} {rate:10.0f} records/s "
                      f"({rate * 1024 / 1e6:.1f} MB/s)", flush=True)
        md, mk = statistics.median(rates["direct"]), statistics.median(rates["kadmit"])
        print(f"median direct TLS  {md:.0f} records/s")
        print(f"median kadmit TLS  {mk:.0f} records/s")
        print(f"ratio kadmit/direct {mk / md:.3f} ({records} x 1 KiB, acks=all, {rounds} rounds)")
        # CPU is less noisy than throughput on a shared machine: kadmit's own cost per MB.
        ticks = os.sysconf("SC_CLK_TCK")
        fields = Path(f"/proc/{k.proc.pid()}/stat").read_text().rsplit(")", 1)[1].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / ticks
        mb = rounds * records * 1024 / 1e6
        print(f"kadmit CPU {cpu_s:.1f} s for {mb:.0f} MB produced through it "
              f"({cpu_s * 1000 / mb:.2f} ms/MB, TLS decrypt + re-encrypt included)")
        problems = k.problems()
        if problems:
            print("\n".join(problems))
            return 1
        return 0
    finally:
        if k is not None:
            k.proc.stop()
        c.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
