#!/usr/bin/env python3
"""kadmit benchmark suite: what kadmit costs a Kafka client, next to a direct connection and
HAProxy (TCP mode), measured in one run. Started by bench/run.sh; never run as a test.

Parts (each repetition interleaves the paths, rotating which goes first):
  fwd       raw forwarding: bench_fwd_gen -> [kadmit | haproxy] -> bench_fwd_sink, or direct;
            bytes/s, request latency, and the proxy's CPU seconds per GB (utime+stime)
  producer  kafka-producer-perf-test with --warmup-records (KIP-1052): steady state apart from
            warmup; direct, kadmit, haproxy, each on its own broker listener
  consumer  kafka-consumer-perf-test on the same three paths
  sweep     producer throughput with 10 .. ~19,000 partitions on one broker, direct and through
            kadmit; records grow with the partitions, and each point waits for the broker's logs
  limit     kadmit with a max.broker.partitions policy: topics are created until rejected (88),
            and the broker's partition count stays at or below the limit
  ledger    the latency the cluster-wide ledger adds to an admitted CreateTopics, 3 brokers,
            ledger on / ledger off / direct (bench/ledger_latency.py, its own cluster)
  load      millicores per MB/s at a fixed offered rate and MB/s per core at saturation: 10
            topics, 1 KiB records, a producer and a consumer per path, direct, kadmit, haproxy
            (bench/kafka_load.py; not in the default set)
  conns     memory per idle client connection (10,000 through kadmit and HAProxy to the
            broker) and the accept rate (bench/idle_conns.py, its own broker; not in the default
            set)
  gateway   kadmit --mode gateway in front of 3 brokers vs HAProxy (a port per broker, the
            brokers advertising HAProxy) vs direct: producer, CPU per GB, the Metadata rewrite
            at 200,000 partitions, Metadata latency on a large cluster (bench/gateway.py, its
            own cluster; not in the default set)

Writes OUT/results.json, OUT/results.md and OUT/*.png (gnuplot). Parameters come from the
environment (see PARAMS below); every port is an offset plus $KADMIT_TEST_PORT_BASE.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "scripts" / "harness"))
import kafka_cluster as kc  # noqa: E402
import kafka_wire  # noqa: E402

PATHS = ("direct", "kadmit", "haproxy")
HOST = kc.HOST
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
LOGS: list[Path] = []  # where raw tool outputs are kept (OUT/logs)


def keep(name: str, text: str) -> None:
    if LOGS:
        (LOGS[0] / f"{name}.txt").write_text(text)

# name: (default, smoke default, meaning)
PARAMS = {
    "BENCH_BROKERS": (1, 1, "brokers in the Kafka cluster (1 or 3)"),
    "BENCH_ROUNDS": (3, 1, "interleaved repetitions of fwd, producer and consumer runs"),
    "BENCH_RECORDS": (200000, 30000, "producer records per run (after warmup)"),
    "BENCH_WARMUP_RECORDS": (50000, 10000, "producer --warmup-records"),
    "BENCH_RECORD_SIZE": (1024, 1024, "record bytes"),
    "BENCH_LATENCY_RATE": (5000, 2000, "records/s of the fixed-rate latency runs (0: skip)"),
    "BENCH_LATENCY_RECORDS": (40000, 6000, "records per latency run (after warmup)"),
    "BENCH_LATENCY_WARMUP": (10000, 2000, "warmup records per latency run"),
    "BENCH_PARTITIONS": (6, 3, "partitions of the producer/consumer topics"),
    "BENCH_FWD_SECONDS": (5, 1, "measured seconds per forwarding run"),
    "BENCH_FWD_SHAPES": ("4x16x1024,4x4x65536", "2x8x1024", "conns x depth x request bytes"),
    "BENCH_SWEEP": ("10,100,1000,10000", "", "partition counts of the sweep (empty: skip)"),
    "BENCH_SWEEP_RECORDS": (150000, 0, "producer records per sweep run (after warmup), at least"),
    "BENCH_SWEEP_WARMUP": (50000, 0, "warmup records per sweep run, at least"),
    "BENCH_SWEEP_PER_PARTITION": (16, 0, "sweep records per partition per run (64 x 1 KiB fill "
                                  "one batch.size); warmup is a quarter of it"),
    "BENCH_LIMIT_HEADROOM": (100, 0, "limit run: max.broker.partitions = current + this (0: skip)"),
    "BENCH_TLS_RECORDS": (300000, 20000, "producer records per TLS run, both legs TLS (0: skip)"),
    "BENCH_LEDGER_CREATES": (200, 0, "sequential creates per path of the ledger part (0: skip)"),
    "BENCH_LEDGER_WARMUP": (20, 0, "of those, the first ones reported apart as warmup"),
}

OFF_FWD_SINK, OFF_FWD_KADMIT, OFF_FWD_HAPROXY = 31000, 31010, 31020
OFF_HAPROXY_BOUND, OFF_HAPROXY_FRONT = 23090, 25090  # + node id


def params(smoke: bool) -> dict:
    import gateway  # its parameters too (the module imports this one)
    import idle_conns
    import kafka_load
    out = {}
    every = PARAMS | gateway.PARAMS | kafka_load.PARAMS | idle_conns.PARAMS
    for k, (default, smoke_default, _) in every.items():
        d = smoke_default if smoke else default
        v = os.environ.get(k)
        out[k] = d if v is None else (type(d)(v) if not isinstance(d, str) else v)
    return out


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load_triplet() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def sh(argv: list[str], timeout: float = 600, check: bool = True) -> str:
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}... exit {p.returncode}:\n{p.stdout[-3000:]}")
    return p.stdout


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def rotations(rounds: int, items: tuple = PATHS):
    """Round r runs the items rotated by r, so no path always goes first."""
    for r in range(rounds):
        k = r % len(items)
        yield r, items[k:] + items[:k]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> dict:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), "?")
    mem_kb = int(next(ln.split()[1] for ln in open("/proc/meminfo") if ln.startswith("MemTotal")))
    java = sh(["java", "-version"], check=False).splitlines()[0]
    hap = sh([HAPROXY, "-v"], check=False).splitlines()[0]
    kafka = sh([kc.tool("kafka-topics"), "--version"], check=False).strip()
    kafka = kafka.splitlines()[-1] if kafka else "?"
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gib": round(mem_kb / 1048576, 1),
            "kernel": platform.release(), "java": java, "kafka": kafka, "haproxy": hap,
            "perf_counters": perf_counters()}


def perf_counters() -> bool:
    """Whether `perf stat -e instructions` counts here (virtual machines often lack PMU)."""
    if not shutil.which("perf"):
        return False
    out = sh(["perf", "stat", "-e", "instructions", "true"], check=False)
    return "instructions" in out and "not supported" not in out


# --- processes ------------------------------------------------------------------------------

def spawn(name: str, workdir: Path, argv: list[str], marker: str, port: int | None = None,
          timeout: float = 15) -> kc.Proc:
    p = kc.Proc(name, workdir / f"{name}.pid", workdir / f"{name}.log", marker)
    p.spawn(argv)
    deadline = time.monotonic() + timeout
    while port is not None and not kc.port_open(port):
        if not p.alive():
            raise RuntimeError(f"{name} exited at start:\n{kc.tail(p.logfile)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} not listening on {port}")
        time.sleep(0.05)
    return p


def start_haproxy(workdir: Path, name: str, pairs: list[tuple[int, int]],
                  stats: Path | None = None, maxconn: int = 4000) -> kc.Proc:
    """HAProxy 2.6 in TCP mode, one thread (kadmit uses one loop thread), one frontend per
    (listen port, target port) pair. With stats, a stats socket there (byte counters)."""
    cfg = workdir / f"{name}.cfg"
    text = ["global", "    nbthread 1", f"    maxconn {maxconn}"]
    if stats is not None:
        text += [f"    stats socket {stats} mode 600 level admin"]
    text += ["defaults", "    mode tcp",
             "    timeout connect 5s", "    timeout client 10m", "    timeout server 10m"]
    for i, (listen, target) in enumerate(pairs):
        text += [f"listen p{i}", f"    bind {HOST}:{listen}", f"    server s{i} {HOST}:{target}"]
    cfg.write_text("\n".join(text) + "\n")
    return spawn(name, workdir, [HAPROXY, "-db", "-f", str(cfg)], str(cfg), pairs[0][0])


def start_kadmit(workdir: Path, name: str, listen: int, upstream: int, admin: int | None = None,
                 policy: Path | None = None) -> kc.Proc:
    argv = [str(kc.kadmit_bin()), "--listen", f"{HOST}:{listen}", "--upstream",
            f"{HOST}:{upstream}", "--admin", f"{HOST}:{admin}" if admin else "off",
            "--log-level", "warn"]
    if policy is not None:
        argv += ["--policy", str(policy)]
    return spawn(name, workdir, argv, f"--listen\0{HOST}:{listen}", listen)


# --- part 1: raw forwarding -----------------------------------------------------------------

def bench_fwd(p: dict, base: int, workdir: Path, build: Path) -> dict:
    sink_port, kad_port, hap_port = (OFF_FWD_SINK + base, OFF_FWD_KADMIT + base,
                                     OFF_FWD_HAPROXY + base)
    procs = []
    try:
        sink = spawn("fwd-sink", workdir, [str(build / "bench_fwd_sink"), "--listen",
                                           f"{HOST}:{sink_port}"], f"{HOST}:{sink_port}", sink_port)
        procs.append(sink)
        kad = start_kadmit(workdir, "fwd-kadmit", kad_port, sink_port)
        procs.append(kad)
        hap = start_haproxy(workdir, "fwd-haproxy", [(hap_port, sink_port)])
        procs.append(hap)
        target = {"direct": (sink_port, sink), "kadmit": (kad_port, kad),
                  "haproxy": (hap_port, hap)}
        shapes = []
        for shape in p["BENCH_FWD_SHAPES"].split(","):
            conns, depth, size = (int(x) for x in shape.split("x"))
            runs = {k: [] for k in PATHS}
            for r, order in rotations(p["BENCH_ROUNDS"]):
                for path in order:
                    port, proc = target[path]
                    c0, t0 = cpu_seconds(proc.pid()), time.monotonic()
                    out = sh([str(build / "bench_fwd_gen"), "--connect", f"{HOST}:{port}",
                              "--conns", str(conns), "--depth", str(depth), "--size", str(size),
                              "--seconds", str(p["BENCH_FWD_SECONDS"]), "--warmup", "1"])
                    cpu = cpu_seconds(proc.pid()) - c0
                    res = json.loads(out.strip().splitlines()[-1])
                    res["wall_s"] = time.monotonic() - t0
                    res["proc_cpu_s"] = cpu  # the proxy's, or the sink's on the direct path
                    res["cpu_s_per_gb"] = cpu / (res["all_bytes"] / 1e9)
                    runs[path].append(res)
                    log(f"fwd {shape} round {r + 1} {path}: {res['bytes_per_s'] / 1e6:.0f} MB/s "
                        f"p99 {res['p99_us']:.0f} us, {res['cpu_s_per_gb']:.2f} CPU s/GB")
            shapes.append({"shape": shape, "conns": conns, "depth": depth, "size": size,
                           "runs": runs, "median": summarize(runs, ("bytes_per_s", "p50_us",
                                                                    "p99_us", "p999_us",
                                                                    "cpu_s_per_gb"))})
        return {"shapes": shapes}
    finally:
        for x in procs:
            x.stop(5)


def summarize(runs: dict, keys: tuple) -> dict:
    return {path: {k: median([x[k] for x in rs]) for k in keys} for path, rs in runs.items() if rs}


# --- Kafka cluster with a third listener for HAProxy ----------------------------------------

class BenchCluster(kc.KafkaCluster):
    """The test harness cluster plus a HAPROXY listener per node, bound at 23090+i and
    advertised at HAProxy's frontend 25090+i (plus the port base), so clients that came in
    through HAProxy are told to stay on HAProxy."""

    def hap_bound(self, n: kc.Node) -> int:
        return OFF_HAPROXY_BOUND + n.id + self.port_base

    def hap_front(self, n: kc.Node) -> int:
        return OFF_HAPROXY_FRONT + n.id + self.port_base

    @property
    def haproxy_bootstrap(self) -> str:
        return ",".join(f"{HOST}:{self.hap_front(n)}" for n in self.nodes)

    def add_listener(self, name: str, bound, front) -> None:
        """A PLAINTEXT listener NAME on every node, bound at bound(node) and advertised at
        front(node): the port of whatever forwards to it."""
        for n in self.nodes:
            lines = []
            for ln in n.config.read_text().splitlines():
                if ln.startswith("listeners="):
                    ln += f",{name}://{HOST}:{bound(n)}"
                elif ln.startswith("advertised.listeners="):
                    ln += f",{name}://{HOST}:{front(n)}"
                elif ln.startswith("listener.security.protocol.map="):
                    ln += f",{name}:PLAINTEXT"
                lines.append(ln)
            n.config.write_text("\n".join(lines) + "\n")

    def write_configs(self) -> None:
        super().write_configs()
        self.add_listener("HAPROXY", self.hap_bound, self.hap_front)
        for n in self.nodes:
            # a deleted sweep topic keeps one open file per partition until its logs are gone;
            # the next point must not start beside them (the broker's default delay is 60 s)
            with n.config.open("a") as f:
                f.write("log.segment.delete.delay.ms=1000\n")


class Kafka:
    def __init__(self, p: dict, workdir: Path):
        self.p = p
        self.dir = workdir / "cluster"
        # the tests' heap is too small for the sweep: 2 GiB, and 1 GiB more per 10,000
        # partitions beyond 10,000 on a broker
        most = max(sweep_counts(p), default=0) // p["BENCH_BROKERS"]
        heap_gib = 2 + max(0, -(-(most - 10000) // 10000))
        self.c = BenchCluster(self.dir, p["BENCH_BROKERS"], heap=f"-Xms1g -Xmx{heap_gib}g")
        self.sidecars = kc.Sidecars(self.c)
        self.hap: kc.Proc | None = None
        self.workdir = workdir
        self.rf = min(3, p["BENCH_BROKERS"])

    def start(self) -> None:
        kc.ensure_kafka()
        self.c.start()
        self.sidecars.start()
        self.hap_stats = self.workdir / "kafka-haproxy.sock"
        self.hap = start_haproxy(self.workdir, "kafka-haproxy",
                                 [(self.c.hap_front(n), self.c.hap_bound(n)) for n in self.c.nodes],
                                 stats=self.hap_stats)

    def stop(self) -> None:
        if self.hap:
            self.hap.stop(5)
        self.sidecars.stop()
        self.c.stop()

    def bootstrap(self, path: str) -> str:
        return {"direct": self.c.direct_bootstrap, "kadmit": self.c.bootstrap,
                "haproxy": self.c.haproxy_bootstrap}[path]

    def topics(self, *args: str, timeout: float = 600) -> str:
        return sh([kc.tool("kafka-topics"), "--bootstrap-server", self.c.direct_bootstrap, *args],
                  timeout=timeout)

    def create(self, topic: str, partitions: int, timeout: float = 900) -> None:
        """KRaft refuses one operation of more than 10,000 metadata records ("excessively large
        batch operation"), so a large topic is created with 5,000 partitions and grown in
        steps of 5,000."""
        step = 5000
        have = min(partitions, step)
        self.topics("--create", "--topic", topic, "--partitions", str(have),
                    "--replication-factor", str(self.rf), timeout=timeout)
        while have < partitions:
            have = min(partitions, have + step)
            self.topics("--alter", "--topic", topic, "--partitions", str(have), timeout=timeout)
        self.c.wait_topic_healthy(topic, timeout=timeout)

    def delete(self, topic: str) -> None:
        self.topics("--delete", "--topic", topic)


STEADY = re.compile(r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, "
                    r"(\d+) ms 99.9th")


def parse_producer(out: str) -> dict:
    """The producer tool prints a window line every 5 s, then summary lines; with
    --warmup-records the last summary is the steady state (after warmup) and the one before it
    covers the whole run."""
    summaries = [ln for ln in out.splitlines() if STEADY.search(ln) and "records sent" in ln]
    if not summaries:
        raise RuntimeError("no summary line in producer output:\n" + out[-2000:])

    def fields(ln: str) -> dict:
        m = STEADY.search(ln)
        return {"records_per_s": float(m.group(1)), "mb_per_s": float(m.group(2)),
                "avg_ms": float(m.group(3)), "max_ms": float(m.group(4)),
                "p50_ms": float(m.group(5)), "p95_ms": float(m.group(6)),
                "p99_ms": float(m.group(7)), "p999_ms": float(m.group(8))}

    steady = [ln for ln in summaries if "steady" in ln.lower()]
    whole = [ln for ln in summaries if "steady" not in ln.lower()]
    res = {"steady": fields(steady[-1]) if steady else fields(summaries[-1]),
           "whole": fields(whole[-1])}
    return res


def produce(k: Kafka, path: str, topic: str, records: int, warmup: int, rate: int = -1) -> dict:
    """One producer run; rate -1 is as fast as possible (throughput), a positive rate is a
    fixed load well below capacity, where latency is not the producer's own queueing."""
    argv = [kc.tool("kafka-producer-perf-test"), "--topic", topic,
            "--num-records", str(records + warmup), "--record-size",
            str(k.p["BENCH_RECORD_SIZE"]), "--throughput", str(rate),
            "--command-property", f"bootstrap.servers={k.bootstrap(path)}", "acks=all",
            "linger.ms=5", "batch.size=65536"]
    if warmup:
        argv[7:7] = ["--warmup-records", str(warmup)]
    t0 = time.monotonic()
    out = sh(argv, timeout=1800)
    keep(f"producer-{path}-{topic}{'' if rate < 0 else f'-rate{rate}'}", out)
    res = parse_producer(out)
    res["wall_s"] = time.monotonic() - t0
    return res


def consume(k: Kafka, path: str, topic: str, records: int, group: str) -> dict:
    out = sh([kc.tool("kafka-consumer-perf-test"), "--bootstrap-server", k.bootstrap(path),
              "--topic", topic, "--num-records", str(records), "--group", group,
              "--timeout", "60000"], timeout=900)
    keep(f"consumer-{path}-{topic}", out)
    lines = [ln for ln in out.splitlines() if re.match(r"^\d{4}-\d\d-\d\d", ln)]
    if not lines:
        raise RuntimeError("no result line in consumer output:\n" + out[-2000:])
    f = [x.strip() for x in lines[-1].split(",")]
    # start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch rec/s
    return {"mb": float(f[2]), "mb_per_s": float(f[3]), "records": int(f[4]),
            "records_per_s": float(f[5]), "rebalance_ms": float(f[6]), "fetch_ms": float(f[7]),
            "fetch_mb_per_s": float(f[8]), "fetch_records_per_s": float(f[9])}


def bench_kafka(k: Kafka, p: dict) -> dict:
    prod = {x: [] for x in PATHS}
    lat = {x: [] for x in PATHS}
    cons = {x: [] for x in PATHS}
    for r, order in rotations(p["BENCH_ROUNDS"]):
        topics = {}
        for path in order:
            topic = topics[path] = f"bench-{path}-{r}"
            k.create(topic, p["BENCH_PARTITIONS"])
            res = produce(k, path, topic, p["BENCH_RECORDS"], p["BENCH_WARMUP_RECORDS"])
            prod[path].append(res)
            s = res["steady"]
            log(f"producer round {r + 1} {path}: steady {s['mb_per_s']:.1f} MB/s p50 "
                f"{s['p50_ms']:.0f} p99 {s['p99_ms']:.0f} p99.9 {s['p999_ms']:.0f} ms "
                f"(warmup incl.: p99 {res['whole']['p99_ms']:.0f} ms)")
        for path in order if p["BENCH_LATENCY_RATE"] > 0 else ():
            res = produce(k, path, topics[path], p["BENCH_LATENCY_RECORDS"],
                          p["BENCH_LATENCY_WARMUP"], p["BENCH_LATENCY_RATE"])
            lat[path].append(res)
            s = res["steady"]
            log(f"latency round {r + 1} {path} at {p['BENCH_LATENCY_RATE']} records/s: p50 "
                f"{s['p50_ms']:.0f} p99 {s['p99_ms']:.0f} p99.9 {s['p999_ms']:.0f} ms")
        total = p["BENCH_RECORDS"] + p["BENCH_WARMUP_RECORDS"]
        for path in order:
            res = consume(k, path, topics[path], total, f"bench-{path}-{r}-{time.time_ns()}")
            cons[path].append(res)
            log(f"consumer round {r + 1} {path}: {res['fetch_mb_per_s']:.1f} MB/s (fetch), "
                f"{res['mb_per_s']:.1f} MB/s (incl. group join)")
        for t in topics.values():
            k.delete(t)
    steady = {path: [x["steady"] for x in rs] for path, rs in prod.items()}
    return {"producer": {"runs": prod,
                         "median": summarize(steady, ("mb_per_s", "records_per_s", "p50_ms",
                                                      "p99_ms", "p999_ms")),
                         "median_whole": summarize({a: [x["whole"] for x in b]
                                                    for a, b in prod.items()},
                                                   ("mb_per_s", "p99_ms", "p999_ms"))},
            "latency": {"runs": lat,
                        "median": summarize({a: [x["steady"] for x in b] for a, b in lat.items()},
                                            ("records_per_s", "avg_ms", "p50_ms", "p95_ms",
                                             "p99_ms", "p999_ms"))},
            "consumer": {"runs": cons,
                         "median": summarize(cons, ("fetch_mb_per_s", "mb_per_s"))}}


def sweep_counts(p: dict) -> list[int]:
    return [int(x) for x in p["BENCH_SWEEP"].split(",") if x.strip()]


def sweep_records(p: dict, n: int) -> tuple[int, int]:
    """Records and warmup records of each run at n partitions. The producer's partitioner
    stays on a partition for one batch.size (64 KiB: 64 records of 1 KiB) before it moves on,
    so a fixed count would leave most of a large topic's partitions unwritten."""
    per = p["BENCH_SWEEP_PER_PARTITION"]
    return max(p["BENCH_SWEEP_RECORDS"], n * per), max(p["BENCH_SWEEP_WARMUP"], n * per // 4)


# What a broker needs per partition it hosts, measured here on Kafka 4.4 (one segment per
# partition): one open file (the active segment's log; its indexes are mapped, and the file
# behind a mapping is closed) and two memory maps (offset and time index), plus a base of
# about 160 files and 430 maps. The margins cover that base, client sockets and the JVM.
SWEEP_FILES_BASE, SWEEP_MAPS_BASE = 1000, 5000


def sweep_check(p: dict) -> None:
    """Fails before any broker starts when a sweep point needs more open files or memory maps
    than this machine gives one process, naming the limit to raise."""
    brokers, rf = p["BENCH_BROKERS"], min(3, p["BENCH_BROKERS"])
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    maps = int(Path("/proc/sys/vm/max_map_count").read_text())
    for n in sweep_counts(p):
        hosted = -(-n * rf // brokers)
        if hosted + SWEEP_FILES_BASE > files:
            sys.exit(f"sweep: {n} partitions put {hosted} on a broker, which needs about "
                     f"{hosted + SWEEP_FILES_BASE} open files (one per partition's log segment); "
                     f"the hard limit on open files (ulimit -Hn, RLIMIT_NOFILE) is {files}, so "
                     f"one broker here holds at most {files - SWEEP_FILES_BASE} partitions. Raise "
                     "the hard limit (limits.conf, or the container's nofile ulimit) or drop the "
                     "point from BENCH_SWEEP.")
        if 2 * hosted + SWEEP_MAPS_BASE > maps:
            sys.exit(f"sweep: {n} partitions put {hosted} on a broker, which needs about "
                     f"{2 * hosted + SWEEP_MAPS_BASE} memory maps (two index files per "
                     f"partition); sysctl vm.max_map_count is {maps}. Raise it (sysctl -w "
                     f"vm.max_map_count={max(262144, 4 * hosted)}) or drop the point from "
                     "BENCH_SWEEP.")


def broker_files(k: Kafka) -> dict:
    """The largest open-file and memory-map counts among the brokers (from /proc)."""
    fds, maps = 0, 0
    for node in k.c.nodes:
        pid = node.proc.pid()
        try:
            fds = max(fds, len(os.listdir(f"/proc/{pid}/fd")))
            with open(f"/proc/{pid}/maps") as f:
                maps = max(maps, sum(1 for _ in f))
        except (OSError, TypeError):
            pass
    return {"open_files": fds, "maps": maps}


def topic_logs(k: Kafka, topic: str) -> int:
    """Partition directories of topic in the brokers' log dirs, the ones being deleted too."""
    pat = re.compile(re.escape(topic) + r"-\d+(\.|$)")
    return sum(1 for node in k.c.nodes for d in (node.dir / "data").iterdir()
               if pat.match(d.name))


def wait_logs(k: Kafka, topic: str, want: int, timeout: float) -> None:
    """Waits until the brokers hold want partition logs of topic (want 0: all deleted). The
    controller answers a create long before the broker has made each log (about 100 a second
    here), and a producer that starts earlier measures the broker's log creation."""
    deadline = time.monotonic() + timeout
    while (have := topic_logs(k, topic)) != want:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: {have} partition logs on disk after {timeout:.0f} s, "
                               f"waiting for {want}")
        time.sleep(1)


def bench_sweep(k: Kafka, p: dict, out: list[dict]) -> None:
    """Appends one row per point to out as it completes, so a run cut short keeps its points."""
    for i, n in enumerate(sweep_counts(p)):
        topic = f"sweep-{n}"
        records, warmup = sweep_records(p, n)
        row = {"partitions": n, "records": records, "warmup": warmup, "load_start": load_triplet()}
        t0 = time.monotonic()
        k.create(topic, n)
        row["create_s"] = time.monotonic() - t0
        wait_logs(k, topic, n * k.rf, timeout=max(600, n / 10))
        row["logs_s"] = time.monotonic() - t0
        row["broker_after_create"] = broker_files(k)
        log(f"sweep {n} partitions: created in {row['create_s']:.0f} s, logs on disk after "
            f"{row['logs_s']:.0f} s; broker {row['broker_after_create']}; {records} records "
            f"after {warmup} warmup per run")
        # the first producer on a new topic is slower whichever path it takes: one unmeasured
        # priming run of the warmup count
        t1 = time.monotonic()
        produce(k, "direct", topic, warmup, 0)
        row["prime_s"] = time.monotonic() - t1
        order = ("direct", "kadmit") if i % 2 == 0 else ("kadmit", "direct")
        for path in order:
            res = produce(k, path, topic, records, warmup)
            row[path] = res
            log(f"sweep {n} partitions {path}: steady {res['steady']['mb_per_s']:.1f} MB/s, "
                f"p99 {res['steady']['p99_ms']:.0f} ms ({res['wall_s']:.0f} s)")
        row["broker_after_runs"] = broker_files(k)
        k.delete(topic)
        wait_logs(k, topic, 0, timeout=max(600, n / 10))
        row["wall_s"] = time.monotonic() - t0
        row["load_end"] = load_triplet()
        out.append(row)


# --- the policy holding a broker at its limit -----------------------------------------------

def create_topics_raw(port: int, names: list[str], partitions: int, rf: int) -> list[tuple]:
    """CreateTopics v4 straight on the wire, so the error code is seen as sent (the Java
    admin client maps 88 to an exception class). Returns (name, error_code, message)."""
    body = struct.pack(">i", len(names))
    for name in names:
        body += (kafka_wire._str(name) + struct.pack(">ih", partitions, rf)
                 + struct.pack(">i", 0) + struct.pack(">i", 0))
    body += struct.pack(">i?", 30000, False)
    with kafka_wire.Connection(HOST, port, timeout=60) as conn:
        _, resp = conn.call(kafka_wire.request(19, 4, 7, body))
    off = 4  # throttle time
    (count,) = struct.unpack_from(">i", resp, off)
    off += 4
    out = []
    for _ in range(count):
        (ln,) = struct.unpack_from(">h", resp, off)
        name = resp[off + 2:off + 2 + ln].decode()
        off += 2 + ln
        code, mlen = struct.unpack_from(">hh", resp, off)
        off += 4
        msg = resp[off:off + mlen].decode() if mlen >= 0 else None
        off += max(mlen, 0)
        out.append((name, code, msg))
    return out


def admin_brokers(port: int) -> dict:
    with urllib.request.urlopen(f"http://{HOST}:{port}/v1/brokers", timeout=10) as r:
        return json.loads(r.read())


def bench_limit(k: Kafka, p: dict, workdir: Path) -> dict:
    """Restarts node 1's sidecar with a policy whose max.broker.partitions is the current count
    plus BENCH_LIMIT_HEADROOM, then creates 16-partition topics through it until one is
    rejected. Counts come from the broker (Metadata on DIRECT) and from /v1/brokers."""
    node = k.c.nodes[0]
    side = k.sidecars[1]
    md = kafka_wire.metadata(HOST, node.direct_port)
    hosted = sum(1 for t in md["topics"] for q in t["partitions"] if node.id in q["replicas"])
    limit = hosted + p["BENCH_LIMIT_HEADROOM"]
    pol = workdir / "limit-policy.json"
    pol.write_text(json.dumps({"max.broker.partitions": limit,
                               "metadata.refresh.before.decision.ms": 0}))
    side.stop()
    proc = start_kadmit(workdir, "limit-kadmit", node.sidecar_port, node.client_port,
                        node.admin_port, pol)
    steps = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                admin_brokers(node.admin_port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        per = 16
        count = hosted

        def attempt(name: str, parts: int) -> int:
            (_, code, msg), = create_topics_raw(node.sidecar_port, [name], parts, k.rf)
            if code == 0:
                k.c.wait_topic_healthy(name)
            md = kafka_wire.metadata(HOST, node.direct_port)
            n = sum(1 for t in md["topics"] for q in t["partitions"] if node.id in q["replicas"])
            adm = next(b for b in admin_brokers(node.admin_port)["brokers"] if b["id"] == node.id)
            steps.append({"topic": name, "partitions": parts, "error_code": code, "message": msg,
                          "broker_partitions": n, "admin_partitions": adm["partitions"],
                          "admin_reserved": adm["reserved"], "limit": limit})
            log(f"limit: create {name} ({parts} partitions) -> error {code}; broker hosts {n} "
                f"(limit {limit})")
            return n if code == 0 else -code

        # 16-partition topics until one is rejected; then exactly the headroom left (admitted,
        # the broker is then at its limit), then one more partition (rejected)
        for i in range(limit // per + 3):
            r = attempt(f"limit-{i}", per)
            if r < 0:
                break
            count = r
        if limit - count > 0:
            attempt("limit-fill", limit - count)
        attempt("limit-one-more", 1)
        return {"limit": limit, "start_partitions": hosted, "per_topic": per, "steps": steps,
                "max_seen": max(s["broker_partitions"] for s in steps),
                "rejected_code": steps[-1]["error_code"], "rejected_message": steps[-1]["message"]}
    finally:
        proc.stop(10)
        side.start()


# --- output ---------------------------------------------------------------------------------

def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


TLS_ROUND = re.compile(r"^round (\d+) (direct|kadmit)\s+([\d.]+) records/s", re.M)


def bench_tls(p: dict) -> dict:
    """TLS on both legs: the producer through kadmit (TLS toward the client and toward the
    broker) against TLS direct to the broker, in interleaved rounds (bench/tls_ratio.py, which
    starts its own broker with an SSL listener)."""
    env = dict(os.environ, RECORDS=str(p["BENCH_TLS_RECORDS"]), ROUNDS=str(p["BENCH_ROUNDS"]))
    log(f"tls: {p['BENCH_TLS_RECORDS']} records x {p['BENCH_ROUNDS']} rounds per path")
    run = subprocess.run([sys.executable, str(HERE / "tls_ratio.py")], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=3600)
    if LOGS:
        (LOGS[0] / "tls_ratio.txt").write_text(run.stdout)
    if run.returncode != 0:
        raise RuntimeError(f"bench/tls_ratio.py exit {run.returncode}:\n{run.stdout[-3000:]}")
    rounds: dict[str, list[float]] = {"direct": [], "kadmit": []}
    for m in TLS_ROUND.finditer(run.stdout):
        rounds[m.group(2)].append(float(m.group(3)))
    median = {k: statistics.median(v) for k, v in rounds.items()}
    cpu = re.search(r"\(([\d.]+) ms/MB", run.stdout)
    out = {"records": p["BENCH_TLS_RECORDS"], "rounds": rounds, "median": median,
           "ratio": median["kadmit"] / median["direct"],
           "kadmit_cpu_ms_per_mb": float(cpu.group(1)) if cpu else None}
    log(f"tls: kadmit/direct {out['ratio']:.3f}")
    return out


def write_outputs(res: dict, out: Path) -> None:
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    plots(res, out)
    (out / "results.md").write_text(markdown(res))


def table(head: list[str], rows: list[list]) -> list[str]:
    """A Markdown table, then a blank line."""
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""])


def markdown(res: dict) -> str:
    m = res["machine"]
    p = res["params"]
    L = [f"# kadmit benchmark results ({res['started']})", "",
         f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, Linux {m['kernel']}; "
         f"{m['java']}; Kafka {m['kafka']}; {m['haproxy']}.",
         f"Load average (1/5/15 min) at start {res['load_start']}, at end {res['load_end']}. "
         f"Suite wall time {res['wall_s'] / 60:.1f} min. Kafka brokers: {p['BENCH_BROKERS']}"
         + (" (the gateway part: 3, its own cluster)." if res.get("gateway") else "."),
         ""]
    for ses in res.get("sessions", [])[1:]:
        L += [f"Parts {ses['parts']} were run separately at {ses['started']}, load average "
              f"{ses['load_start']} at start, {ses.get('load_end')} at end.", ""]
    if res.get("targets"):
        L += ["## Targets", ""] + table(
            ["target", "measured", "met"],
            [[t["target"], t["measured"], "yes" if t["met"] else "**no**"] for t in res["targets"]])
    kaf = res.get("kafka")
    if kaf:
        pm, pw = kaf["producer"]["median"], kaf["producer"]["median_whole"]
        d = pm["direct"]["mb_per_s"]
        L += ["## Producer (kafka-producer-perf-test, steady state after warmup)", "",
              f"{p['BENCH_RECORDS']} records of {p['BENCH_RECORD_SIZE']} B after "
              f"{p['BENCH_WARMUP_RECORDS']} warmup records, acks=all, linger.ms=5, "
              f"batch.size=65536, {p['BENCH_PARTITIONS']} partitions; medians of "
              f"{p['BENCH_ROUNDS']} interleaved rounds.", ""]
        L += table(["path", "MB/s", "records/s", "ratio to direct", "p50 ms", "p99 ms", "p99.9 ms",
                    "p99 ms incl. warmup", "p99.9 ms incl. warmup"],
                   [[x, f"{pm[x]['mb_per_s']:.1f}", f"{pm[x]['records_per_s']:.0f}",
                     f"{ratio(pm[x]['mb_per_s'], d):.3f}", f"{pm[x]['p50_ms']:.0f}",
                     f"{pm[x]['p99_ms']:.0f}", f"{pm[x]['p999_ms']:.0f}", f"{pw[x]['p99_ms']:.0f}",
                     f"{pw[x]['p999_ms']:.0f}"] for x in PATHS])
        L += ["Per round (steady MB/s, in run order within a round): " + "; ".join(
            f"{x} " + ", ".join(f"{r['steady']['mb_per_s']:.1f}"
                                for r in kaf["producer"]["runs"][x]) for x in PATHS), ""]
        lm = kaf.get("latency", {}).get("median")
        if lm:
            L += ["## Producer latency at a fixed rate (steady state after warmup)", "",
                  f"{p['BENCH_LATENCY_RECORDS']} records after {p['BENCH_LATENCY_WARMUP']} warmup "
                  f"records at --throughput {p['BENCH_LATENCY_RATE']} records/s, well below "
                  "capacity, so latency is the path's and the broker's rather than the producer's "
                  "own queue; same settings otherwise; medians of the rounds.", ""]
            L += table(["path", "records/s", "avg ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms",
                        "p99 added vs direct ms"],
                       [[x, f"{lm[x]['records_per_s']:.0f}", f"{lm[x]['avg_ms']:.1f}",
                         f"{lm[x]['p50_ms']:.0f}", f"{lm[x]['p95_ms']:.0f}",
                         f"{lm[x]['p99_ms']:.0f}", f"{lm[x]['p999_ms']:.0f}",
                         f"{lm[x]['p99_ms'] - lm['direct']['p99_ms']:+.0f}"] for x in PATHS])
        cm = kaf["consumer"]["median"]
        L += ["## Consumer (kafka-consumer-perf-test)", ""] + table(
            ["path", "fetch MB/s", "ratio to direct", "MB/s incl. group join"],
            [[x, f"{cm[x]['fetch_mb_per_s']:.1f}",
              f"{ratio(cm[x]['fetch_mb_per_s'], cm['direct']['fetch_mb_per_s']):.3f}",
              f"{cm[x]['mb_per_s']:.1f}"] for x in PATHS])
    fwd = res.get("fwd")
    if fwd:
        L += ["## Raw forwarding (bench_fwd_gen -> proxy -> bench_fwd_sink)", "",
              f"Medians of {p['BENCH_ROUNDS']} interleaved rounds of {p['BENCH_FWD_SECONDS']} s; "
              "CPU s/GB is the proxy's utime+stime per GB forwarded (both directions); on the "
              "direct path it is the sink's. Both proxies run one thread.", ""]
        L += table(["shape (conns x depth x bytes)", "path", "MB/s", "p50 us", "p99 us",
                    "p99.9 us", "CPU s/GB", "MB per proxy CPU-second"],
                   [[sh_["shape"], x, f"{sh_['median'][x]['bytes_per_s'] / 1e6:.0f}",
                     f"{sh_['median'][x]['p50_us']:.0f}", f"{sh_['median'][x]['p99_us']:.0f}",
                     f"{sh_['median'][x]['p999_us']:.0f}", f"{sh_['median'][x]['cpu_s_per_gb']:.2f}",
                     "" if x == "direct" else f"{1e3 / sh_['median'][x]['cpu_s_per_gb']:.0f}"]
                    for sh_ in fwd["shapes"] for x in PATHS])
    tls = res.get("tls")
    if tls:
        rec = 1024  # bench/tls_ratio.py sends 1 KiB records
        L += ["## Producer over TLS on both legs", "",
              f"{tls['records']} records of 1 KiB per run (the first tenth left out as warmup), "
              "acks=all, 1 partition; the client speaks TLS to kadmit and kadmit TLS to the "
              f"broker's SSL listener, against TLS direct; medians of {len(tls['rounds']['direct'])}"
              " interleaved rounds (bench/tls_ratio.py).", ""]
        L += table(["path", "records/s", "MB/s", "ratio to direct", "rounds (records/s)"],
                   [[x, f"{tls['median'][x]:.0f}", f"{tls['median'][x] * rec / 1e6:.1f}",
                     f"{tls['median'][x] / tls['median']['direct']:.3f}",
                     ", ".join(f"{v:.0f}" for v in tls["rounds"][x])] for x in ("direct", "kadmit")])
        if tls.get("kadmit_cpu_ms_per_mb") is not None:
            L += [f"kadmit's CPU: {tls['kadmit_cpu_ms_per_mb']:.2f} ms per MB produced through it "
                  "(decrypt and re-encrypt included).", ""]
    sw = res.get("sweep")
    if sw:
        L += ["## Partition sweep (producer, steady state)", "",
              f"Records of {p['BENCH_RECORD_SIZE']} B per run: the larger of "
              f"{p['BENCH_SWEEP_RECORDS']} and {p.get('BENCH_SWEEP_PER_PARTITION', 0)} per "
              f"partition, after warmup records (the larger of {p['BENCH_SWEEP_WARMUP']} and a "
              "quarter of that); one topic of N partitions, primed by one unmeasured run of the "
              "warmup count once the broker holds every partition's log. create s: until the "
              "controller has the topic; logs s: until every log is on the broker's disk. "
              "Broker files and maps: its open files and memory maps after the runs.", ""]
        L += table(["partitions", "records/run", "create s", "logs s", "direct MB/s",
                    "kadmit MB/s", "ratio", "direct p99 ms", "kadmit p99 ms", "broker files",
                    "broker maps", "point wall s", "load avg"],
                   [[r["partitions"], r.get("records", p["BENCH_SWEEP_RECORDS"]),
                     f"{r['create_s']:.0f}",
                     f"{r['logs_s']:.0f}" if "logs_s" in r else "",
                     f"{r['direct']['steady']['mb_per_s']:.1f}",
                     f"{r['kadmit']['steady']['mb_per_s']:.1f}",
                     f"{ratio(r['kadmit']['steady']['mb_per_s'], r['direct']['steady']['mb_per_s']):.3f}",
                     f"{r['direct']['steady']['p99_ms']:.0f}",
                     f"{r['kadmit']['steady']['p99_ms']:.0f}",
                     r.get("broker_after_runs", {}).get("open_files", ""),
                     r.get("broker_after_runs", {}).get("maps", ""), f"{r['wall_s']:.0f}",
                     f"{r['load_start'][0]:.1f} -> {r['load_end'][0]:.1f}"
                     if "load_end" in r else ""] for r in sw])
    lim = res.get("limit")
    if lim:
        L += ["## Policy at its limit", "",
              f"max.broker.partitions = {lim['limit']} (broker hosted {lim['start_partitions']} "
              f"at start); CreateTopics v4 requests through kadmit: {lim['per_topic']}-partition topics "
              "until one is rejected, then exactly the headroom left, then one partition more.",
              ""]
        L += table(["topic", "partitions", "error code", "broker hosts (Metadata)",
                    "/v1/brokers partitions", "reserved", "limit"],
                   [[s["topic"], s.get("partitions", lim["per_topic"]), s["error_code"], s["broker_partitions"], s["admin_partitions"],
                     s["admin_reserved"], s["limit"]] for s in lim["steps"]])
        L += [f"Rejection message: {lim['rejected_message']}", ""]
    if res.get("load"):
        import kafka_load
        L += kafka_load.markdown(res["load"], p)
    if res.get("conns"):
        import idle_conns
        L += idle_conns.markdown(res["conns"])
    if res.get("gateway", {}).get("load_end"):
        import gateway
        L += gateway.markdown(res["gateway"], p)
    led = res.get("ledger")
    if led:
        L += ["## Cluster-wide ledger: latency added to an admitted CreateTopics", "",
              led["markdown"], ""]
    L += ["## Plots", ""] + [f"![{x}]({x})" for x in res.get("plots", [])] + [""]
    return "\n".join(L)


def gnuplot(out: Path, name: str, script: str) -> str | None:
    if not shutil.which("gnuplot"):
        return None
    png = f"{name}.png"
    head = (f"set terminal pngcairo size 800,480 noenhanced\nset output '{out / png}'\n"
            "set grid ytics\nset key outside right top\n")
    p = subprocess.run(["gnuplot"], input=head + script, text=True, capture_output=True)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return None
    return png


HISTOGRAM = """set style data histogram
set style histogram clustered gap 1
set style fill solid 0.6
set yrange [0:*]
"""


def plots(res: dict, out: Path) -> None:
    made = []
    kaf = res.get("kafka")
    if kaf:
        pm = kaf["producer"]["median"]
        lm = kaf.get("latency", {}).get("median") or pm
        data = out / "producer.dat"
        data.write_text("".join(f"{i} {path} {pm[path]['mb_per_s']} {lm[path]['p50_ms']} "
                                f"{lm[path]['p99_ms']} {lm[path]['p999_ms']}\n"
                                for i, path in enumerate(PATHS)))
        what = ("at " + str(res["params"]["BENCH_LATENCY_RATE"]) + " records/s"
                if kaf.get("latency", {}).get("median") else "at saturation")
        made.append(gnuplot(out, "producer_throughput", f"""
set title 'Producer steady-state throughput (median)'
set ylabel 'MB/s'
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
unset key
plot '{data}' using 1:3:xtic(2) with boxes
"""))
        made.append(gnuplot(out, "producer_latency", f"""
set title 'Producer steady-state latency {what} (median of rounds)'
set ylabel 'ms'
{HISTOGRAM}plot '{data}' using 4:xtic(2) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9'
"""))
    fwd = res.get("fwd")
    if fwd:
        data = out / "fwd.dat"
        rows = []
        for sh_ in fwd["shapes"]:
            m = sh_["median"]
            rows.append(f"{sh_['shape']} " + " ".join(
                f"{m[p]['bytes_per_s'] / 1e6} {m[p]['cpu_s_per_gb']} {m[p]['p99_us']}"
                for p in PATHS))
        data.write_text("\n".join(rows) + "\n")
        made.append(gnuplot(out, "fwd_throughput", f"""
set title 'Raw forwarding throughput (median)'
set ylabel 'MB/s'
{HISTOGRAM}plot '{data}' using 2:xtic(1) title 'direct', '' using 5 title 'kadmit', '' using 8 title 'haproxy'
"""))
        made.append(gnuplot(out, "fwd_cpu", f"""
set title 'Proxy CPU seconds per GB forwarded (median; lower is better)'
set ylabel 'CPU s/GB'
{HISTOGRAM}plot '{data}' using 6:xtic(1) title 'kadmit', '' using 9 title 'haproxy'
"""))
    sw = res.get("sweep")
    if sw:
        data = out / "sweep.dat"
        data.write_text("".join(f"{r['partitions']} {r['direct']['steady']['mb_per_s']} "
                                f"{r['kadmit']['steady']['mb_per_s']}\n" for r in sw))
        made.append(gnuplot(out, "partition_sweep", f"""
set title 'Producer throughput by partition count (steady state)'
set xlabel 'partitions'
set ylabel 'MB/s'
set logscale x
set yrange [0:*]
plot '{data}' using 1:2 with linespoints title 'direct', '' using 1:3 with linespoints title 'kadmit'
"""))
    lim = res.get("limit")
    if lim:
        data = out / "limit.dat"
        data.write_text(f"0 {lim['start_partitions']} {lim['limit']}\n" + "".join(
            f"{i + 1} {s['broker_partitions']} {s['limit']}\n" for i, s in enumerate(lim["steps"])))
        made.append(gnuplot(out, "policy_limit", f"""
set title 'Broker partition count while creating topics through kadmit'
set xlabel 'create attempt'
set ylabel 'partitions on the broker'
set key inside right bottom
set xtics 1
set yrange [0:{lim['limit'] * 1.15:.0f}]
plot '{data}' using 1:2 with linespoints lw 2 title 'hosted', '' using 1:3 with lines lw 2 dt 2 title 'max.broker.partitions'
"""))
    res["plots"] = [x for x in made if x]


def targets(res: dict) -> list[dict]:
    out = []
    kaf = res.get("kafka")
    if kaf:
        pm = kaf["producer"]["median"]
        r = ratio(pm["kadmit"]["mb_per_s"], pm["direct"]["mb_per_s"])
        out.append({"target": "steady-state producer throughput kadmit/direct >= 0.97",
                    "measured": f"{r:.3f} ({pm['kadmit']['mb_per_s']:.1f} / "
                                f"{pm['direct']['mb_per_s']:.1f} MB/s)", "met": r >= 0.97})
        lm = kaf.get("latency", {}).get("median")
        for name, m in (("fixed rate", lm), ("at saturation", pm)):
            if not m:
                continue
            ka = m["kadmit"]["p99_ms"] - m["direct"]["p99_ms"]
            ha = m["haproxy"]["p99_ms"] - m["direct"]["p99_ms"]
            out.append({"target": f"producer p99 latency added ({name}): kadmit <= HAProxy",
                        "measured": f"kadmit {ka:+.0f} ms, HAProxy {ha:+.0f} ms (direct p99 "
                                    f"{m['direct']['p99_ms']:.0f} ms)", "met": ka <= ha})
    fwd = res.get("fwd")
    if fwd:
        for sh_ in fwd["shapes"]:
            m = sh_["median"]
            k, h = 1e3 / m["kadmit"]["cpu_s_per_gb"], 1e3 / m["haproxy"]["cpu_s_per_gb"]
            out.append({"target": f"raw forwarding MB/s per CPU ({sh_['shape']}): kadmit >= "
                                  "HAProxy",
                        "measured": f"kadmit {k:.0f}, HAProxy {h:.0f} MB per CPU-second "
                                    f"(ratio {k / h:.2f})", "met": k >= h})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="a tiny run (< 60 s) that checks the "
                    "suite works; the numbers mean nothing")
    ap.add_argument("--out", help="output directory (default bench/results/<timestamp>)")
    ap.add_argument("--only", default="fwd,kafka,sweep,limit,tls,ledger",
                    help="comma-separated parts to run (default all)")
    ap.add_argument("--build", default=str(ROOT / "build" / "bench"),
                    help="directory with bench_fwd_gen and bench_fwd_sink")
    ap.add_argument("--merge", action="store_true",
                    help="add the parts run now to the results already in --out")
    ap.add_argument("--render", metavar="DIR",
                    help="only rewrite DIR/results.md and the plots from DIR/results.json")
    args = ap.parse_args()
    if args.render:
        res = json.loads((Path(args.render) / "results.json").read_text())
        res["targets"] = targets(res) if not res.get("smoke") else []
        write_outputs(res, Path(args.render))
        return 0
    p = params(args.smoke)
    base = kc.port_base()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else HERE / "results" / stamp
    out.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    # stop cleanly (cluster, proxies) on Ctrl-C or SIGTERM, even when started in the background
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    (out / "logs").mkdir(exist_ok=True)
    LOGS.append(out / "logs")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the brokers inherit it
    if "sweep" in parts:
        sweep_check(p)

    t0 = time.monotonic()
    res = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "params": p, "port_base": base, "smoke": args.smoke, "load_start": load_triplet(),
           "machine": machine()}
    if args.merge and (out / "results.json").exists():
        # add this run's parts to an earlier run's results; each invocation keeps its load
        old = json.loads((out / "results.json").read_text())
        old.setdefault("sessions", [{k: old.get(k) for k in ("started", "load_start", "load_end",
                                                             "wall_s")} | {"parts": "earlier"}])
        res = old | {"params": old["params"] | p}
        res["sessions"].append({"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                                "parts": args.only, "load_start": load_triplet()})
    log(f"results in {out}; load average {res['load_start']}")
    workdir = Path(tempfile.mkdtemp(prefix="kadmit-bench."))
    try:
        if "fwd" in parts:
            res["fwd"] = bench_fwd(p, base, workdir, Path(args.build))
        if parts & {"kafka", "sweep", "limit", "load"}:
            k = Kafka(p, workdir)
            try:
                t1 = time.monotonic()
                k.start()
                log(f"cluster of {k.c.n} broker(s) ready in {time.monotonic() - t1:.0f} s")
                if "kafka" in parts:
                    res["kafka"] = bench_kafka(k, p)
                if "load" in parts:
                    import kafka_load
                    res["load"] = kafka_load.run(k, p, sys.modules[__name__])
                if "sweep" in parts and p["BENCH_SWEEP"]:
                    res["sweep"] = []
                    bench_sweep(k, p, res["sweep"])
                if "limit" in parts and p["BENCH_LIMIT_HEADROOM"] > 0:
                    res["limit"] = bench_limit(k, p, workdir)
            finally:
                k.stop()
        if "tls" in parts and p["BENCH_TLS_RECORDS"] > 0:
            res["tls"] = bench_tls(p)
        if "conns" in parts:
            import idle_conns
            res["conns"] = idle_conns.run(p, workdir, sys.modules[__name__])
        if "gateway" in parts:
            import gateway
            res["gateway"] = {}
            gateway.run(p, workdir, Path(args.build), LOGS[0], res["gateway"])
        if "ledger" in parts and p["BENCH_LEDGER_CREATES"] > 0:
            import ledger_latency
            res["ledger"] = ledger_latency.run(p["BENCH_LEDGER_CREATES"], p["BENCH_LEDGER_WARMUP"])
            if res["ledger"]["problems"]:  # an error or a dead sidecar: not a clean measurement
                raise RuntimeError("ledger part failed: " + "; ".join(res["ledger"]["problems"][:5]))
    finally:
        if args.merge and res.get("sessions"):
            res["sessions"][-1] |= {"load_end": load_triplet(), "wall_s": time.monotonic() - t0}
        else:
            res["load_end"] = load_triplet()
            res["wall_s"] = time.monotonic() - t0
        res["targets"] = targets(res) if not args.smoke else []
        write_outputs(res, out)
        shutil.rmtree(workdir, ignore_errors=True)
    log(f"done in {res['wall_s'] / 60:.1f} min: {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
