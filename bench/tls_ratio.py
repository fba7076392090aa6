#!/usr/bin/env python3
"""Producer throughput and CPU per GB over TLS through kadmit versus TLS direct to the broker
(not a test: nothing is asserted).

Starts its own 1-broker cluster (secure_cluster.py, at KADMIT_TEST_PORT_BASE + 160) and a
kadmit terminating TLS toward the client and originating TLS to the broker's SSL listener.
Runs kafka-producer-perf-test (1 KiB records, acks=all, security.protocol=SSL) alternately
direct (the broker's DIRECTTLS listener) and through kadmit (the rounds go through every order
of the paths: use a multiple of 2 rounds, or of 6 with KADMIT_BIN_B), ROUNDS times each, on a
fresh 1-partition topic per run, and prints each run, the medians and the ratio kadmit/direct.
The first WARMUP records of a run are left out, from the perf tool's 5-second windows.

Throughput on a shared 2-core machine moves with everyone else's load, so each run also reports
CPU seconds per GB produced: the producer's (its rusage), the broker's and kadmit's (from
/proc), summed for the path. CPU time is much less sensitive to other processes than wall time.

KADMIT_BIN_B names a second kadmit binary (say, a build from before a change): each round then
also runs it, on the same port (the broker advertises that one port, so the two binaries take
turns there, each started before its own run and stopped after), and the two are compared
side by side in the same rounds.

    KADMIT_BIN=build/kadmit KADMIT_TEST_PORT_BASE=0 RECORDS=500000 ROUNDS=3 \\
        [KADMIT_BIN_B=old/kadmit] python3 bench/tls_ratio.py

bench/run.sh runs it as its "tls" part (bench/suite.py) and reports it with the other paths.
"""

from __future__ import annotations

import itertools
import os
import re
import resource
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
TICKS = os.sysconf("SC_CLK_TCK")


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


def proc_cpu(pid: int | None, part: str = "both") -> float:
    """User ("user"), system ("sys") or both CPU seconds of a running process (0 when there
    is none)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user, sys_ = int(fields[11]) / TICKS, int(fields[12]) / TICKS
    return {"user": user, "sys": sys_, "both": user + sys_, "minflt": int(fields[7])}[part]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(bootstrap: str, props: Path, topic: str, records: int, warmup: int, direct: str,
        broker_pid: int, kadmit_pid: int | None) -> dict:
    clients.topics(direct, "--command-config", str(props), "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "1")
    c0, b0, k0 = children_cpu(), proc_cpu(broker_pid), proc_cpu(kadmit_pid)
    ks0, kf0 = proc_cpu(kadmit_pid, "sys"), proc_cpu(kadmit_pid, "minflt")
    p = clients.run([tool("kafka-producer-perf-test"), "--topic", topic, "--num-records",
                     str(records), "--record-size", "1024", "--throughput", "-1",
                     "--producer.config", str(props), "--producer-props",
                     f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
                     "batch.size=65536"], timeout=900)
    client, broker = children_cpu() - c0, proc_cpu(broker_pid) - b0
    kadmit, kadmit_sys = proc_cpu(kadmit_pid) - k0, proc_cpu(kadmit_pid, "sys") - ks0
    kadmit_faults = proc_cpu(kadmit_pid, "minflt") - kf0
    clients.topics(direct, "--command-config", str(props), "--delete", "--topic", topic)
    gb = records * 1024 / 1e9
    return {"rate": steady_rate(clients.text(p), warmup), "client": client / gb,
            "broker": broker / gb, "kadmit": kadmit / gb, "kadmit_sys": kadmit_sys / gb,
            "kadmit_faults": kadmit_faults / gb,
            "total": (client + broker + kadmit) / gb}


def main() -> int:
    records = int(os.environ.get("RECORDS", "500000"))
    warmup = int(os.environ.get("WARMUP", str(records // 10)))
    rounds = int(os.environ.get("ROUNDS", "3"))
    bin_b = os.environ.get("KADMIT_BIN_B", "")
    ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-tls-ratio-"))
    c = SecureKafkaCluster(d / "cluster", port_base() + 160, d / "certs")
    live: list[Kadmit] = []
    problems: list[str] = []
    try:
        c.start()
        broker_pid = c.nodes[0].proc.pid()
        kc = tls_certs.make_cert(d / "certs", "kadmit", c.ca, serial=100)
        args = ["--tls-cert", str(kc.cert), "--tls-key", str(kc.key), "--upstream-tls", "true",
                "--upstream-ca", str(c.ca.cert), "--log-level", "warn"]
        bins = {"kadmit": os.environ.get("KADMIT_BIN", "")}
        if bin_b:
            bins["kadmit_b"] = bin_b

        def start(mode: str) -> Kadmit:
            env = {"KADMIT_BIN": bins[mode]} if bins[mode] else {}
            saved = os.environ.get("KADMIT_BIN")
            os.environ.update(env)  # kadmit_bin() reads it when Kadmit spawns
            try:
                k = Kadmit(d, mode, c.tls_sidecar_port, c.tls_port, 15591 + c.port_base, args)
            finally:
                if saved is None:
                    os.environ.pop("KADMIT_BIN", None)
                else:
                    os.environ["KADMIT_BIN"] = saved
            live.append(k)
            return k

        def stop(k: Kadmit) -> None:
            problems.extend(k.problems())
            k.proc.stop()
            live.remove(k)

        props = c.java_props(d / "ssl.properties")
        direct = f"{HOST}:{c.direct_tls_port}"
        through = f"{HOST}:{c.tls_sidecar_port}"
        modes = ["direct", *bins]
        orders = list(itertools.permutations(modes))
        res: dict[str, list[dict]] = {m: [] for m in modes}
        for r in range(rounds):
            # The rounds go through every order of the paths, so each path takes each place
            # and follows each other path equally often (the broker's background work after
            # a run, such as deleting its topic, falls on whichever run comes next): use a
            # multiple of 2 rounds for two paths, of 6 for three.
            order = list(orders[r % len(orders)])
            for mode in order:
                k = start(mode) if mode != "direct" else None
                x = run(direct if k is None else through, props, f"tls-ratio-{mode}-{r}",
                        records, warmup, direct, broker_pid, k.proc.pid() if k else None)
                if k is not None:
                    stop(k)
                res[mode].append(x)
                print(f"round {r + 1} {mode:6s} {x['rate']:10.0f} records/s "
                      f"({x['rate'] * 1024 / 1e6:.1f} MB/s); CPU s/GB: path {x['total']:.1f} "
                      f"= client {x['client']:.1f} + broker {x['broker']:.1f} + kadmit "
                      f"{x['kadmit']:.2f} (system {x['kadmit_sys']:.2f}, "
                      f"{x['kadmit_faults']:.0f} page faults/GB); "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        med = {m: {f: statistics.median(x[f] for x in res[m]) for f in res[m][0]} for m in modes}
        md = med["direct"]
        for m in modes:
            print(f"median {m:8s} TLS {med[m]['rate']:.0f} records/s, path CPU "
                  f"{med[m]['total']:.1f} s/GB (kadmit {med[m]['kadmit']:.2f} s/GB, of which "
                  f"system {med[m]['kadmit_sys']:.2f})")
        for m in bins:
            print(f"ratio {m}/direct {med[m]['rate'] / md['rate']:.3f} throughput, "
                  f"{md['total'] / med[m]['total']:.3f} GB per path CPU-second "
                  f"({records} x 1 KiB, acks=all, {rounds} rounds)")
        mk = med["kadmit"]["kadmit"]
        # The suite reads the first "(N ms/MB" as kadmit's own cost.
        print(f"kadmit CPU ({mk:.2f} ms/MB, median per run, TLS decrypt + re-encrypt included)")
        if problems:
            print("\n".join(problems))
            return 1
        return 0
    finally:
        for k in list(live):
            k.proc.stop()
        c.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
