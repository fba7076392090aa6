#!/usr/bin/env python3
"""Memory per idle client connection and the accept rate, kadmit against HAProxy (TCP mode, one
thread), through each to one real Kafka broker (`bench/run.sh --only conns`; never run as a test).

For each path (direct to the broker, through kadmit, through HAProxy) the client opens N
connections (default 10,000), 256 at a time; on each it sends one ApiVersions v0 and reads the
answer, so every connection has really been carried to the broker and back (kadmit also decodes
and lowers that answer). Then all N stay open and idle. The accept rate is N over the time from
the first connect to the last answer. Each run starts a fresh proxy process (one that
held connections before keeps their freed memory). Its RSS and PSS (/proc/<pid>/smaps_rollup) are
read before the first connection and 2 s after the last; the difference over N is the memory per idle
connection. Then all are closed and the RSS is read again. Any connection that fails, or a
kadmit_connections_active that is not N, fails the run.

Each connection needs a source port on the client's side and another on the proxy's side toward
the broker, more than the machine's ephemeral port range may hold (61000-65500 on some hosts),
so the whole measurement runs in its own network namespace (`unshare --net`, root), with its own
loopback and `ip_local_port_range` 20000-65000: nothing outside it is touched, and its ports
cannot collide with anything else on the machine. The open-file limit is raised as far as the
process may (200,000, or the hard limit without CAP_SYS_RESOURCE) for this process and its
children; a proxy holds 2N descriptors, so N is capped at (limit - 100) / 2.

    python3 bench/idle_conns.py [--conns 10000] [--rounds 1] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
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
sys.path.insert(0, str(HERE))

PARAMS = {
    "BENCH_CONNS": (10000, 500, "conns part: idle client connections per path"),
    "BENCH_CONNS_ROUNDS": (1, 1, "conns part: interleaved rounds"),
}
NOFILE = 200000
PORT_RANGE = "20000 65000"
OFF_HAP_FRONT = 8000  # HAProxy's frontend in the namespace (the broker's ports are 9090+ etc.)
CONCURRENCY = 256


def api_versions_v0(cid: int) -> bytes:
    client = b"kadmit-bench-conns"
    body = struct.pack(">hhih", 18, 0, cid, len(client)) + client
    return struct.pack(">i", len(body)) + body


async def open_all(port: int, n: int) -> tuple[list, float, list[str]]:
    """n connections, each after one ApiVersions round trip; (writers, seconds, errors)."""
    sem = asyncio.Semaphore(CONCURRENCY)
    writers, errors = [], []

    async def one(i: int) -> None:
        async with sem:
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
                w.write(api_versions_v0(i + 1))
                await w.drain()
                (size,) = struct.unpack(">i", await asyncio.wait_for(r.readexactly(4), 30))
                resp = await asyncio.wait_for(r.readexactly(size), 30)
                cid, code = struct.unpack_from(">ih", resp, 0)
                if cid != i + 1 or code != 0:
                    errors.append(f"conn {i}: correlation {cid}, error {code}")
                writers.append(w)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                errors.append(f"conn {i}: {type(e).__name__} {e}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return writers, time.perf_counter() - t0, errors


def mem(pid: int) -> dict:
    out = {}
    for ln in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        f = ln.split()
        if f[0] in ("Rss:", "Pss:"):
            out[f[0][:-1].lower()] = int(f[1]) * 1024
    return out


def kadmit_active(admin_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith("kadmit_connections_active "):
                return int(float(ln.split()[1]))
    return -1


def measure(n: int, rounds: int) -> dict:
    import kafka_cluster as kc
    import suite
    kc.ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-bench-conns-"))
    c = kc.KafkaCluster(d, brokers=1, port_base_=0, heap="-Xms512m -Xmx1g")
    node = c.nodes[0]
    procs = []
    out = {"n": n, "rounds": [], "load_start": suite.load_triplet()}
    try:
        c.start()
        hap_port = OFF_HAP_FRONT + node.id

        def fresh(path: str):
            """A new proxy process for each run: a process that held N connections before keeps
            their freed memory, and the next run's growth would read as zero."""
            if path == "kadmit":
                return suite.spawn("conns-kadmit", d, [
                    str(kc.kadmit_bin()), "--listen", f"127.0.0.1:{node.sidecar_port}",
                    "--upstream", f"127.0.0.1:{node.client_port}", "--admin",
                    f"127.0.0.1:{node.admin_port}", "--max-connections", str(n + 1000),
                    "--log-level", "warn"], f"--listen\0127.0.0.1:{node.sidecar_port}",
                    node.sidecar_port)
            if path == "haproxy":  # HAProxy wants 2 x maxconn descriptors
                return suite.start_haproxy(d, "conns-haproxy", [(hap_port, node.direct_port)],
                                           maxconn=n + 10)
            return None
        ports = {"direct": node.direct_port, "kadmit": node.sidecar_port, "haproxy": hap_port}
        out["versions"] = {"haproxy": suite.sh([suite.HAPROXY, "-v"]).splitlines()[0]}
        for r, order in suite.rotations(rounds):
            row = {}
            for path in order:
                port, proc = ports[path], fresh(path)
                if proc:
                    procs.append(proc)
                    time.sleep(1.0)  # its start-up allocations (kadmit's metadata client) done
                pid = proc.pid() if proc else node.proc.pid()
                before = mem(pid)
                res, errors = asyncio.run(open_and_hold(port, n, path, node, pid))
                if proc:
                    proc.stop(10)
                    procs.remove(proc)
                if errors:
                    raise RuntimeError(f"conns {path}: {len(errors)} of {n} connections failed: "
                                       + "; ".join(errors[:5]))
                suite.log(f"conns round {r + 1} {path}: {res['accept_per_s']:.0f} conn/s, "
                          f"RSS {before['rss'] / 2**20:.1f} -> {res['after']['rss'] / 2**20:.1f} "
                          f"MiB, {(res['after']['rss'] - before['rss']) / n:.0f} B/conn")
                row[path] = res | {"before": before}
            row["load"] = suite.load_triplet()
            out["rounds"].append(row)
        out["load_end"] = suite.load_triplet()
        return out
    finally:
        for p in procs:
            p.stop(10)
        c.stop()
        shutil.rmtree(d, ignore_errors=True)


async def open_and_hold(port: int, n: int, path: str, node, pid: int) -> tuple:
    writers, secs, errors = await open_all(port, n)
    await asyncio.sleep(2.0)  # the proxy's allocations settle; every connection is idle now
    after = mem(pid)
    active = kadmit_active(node.admin_port) if path == "kadmit" else None
    if active is not None and active != n:
        errors.append(f"kadmit_connections_active {active}, expected {n}")
    for w in writers:
        w.close()
    await asyncio.sleep(3.0)
    closed = mem(pid)
    res = {"seconds": secs, "accept_per_s": n / secs, "after": after, "closed": closed,
           "active": active, "opened": len(writers)}
    return res, errors


def summary(res: dict) -> dict:
    import statistics
    n = res["n"]
    out = {}
    for path in ("direct", "kadmit", "haproxy"):
        rows = [r[path] for r in res["rounds"]]
        out[path] = {
            "accept_per_s": statistics.median(x["accept_per_s"] for x in rows),
            "rss_per_conn": statistics.median((x["after"]["rss"] - x["before"]["rss"]) / n
                                              for x in rows),
            "pss_per_conn": statistics.median((x["after"]["pss"] - x["before"]["pss"]) / n
                                              for x in rows),
            "rss_before": statistics.median(x["before"]["rss"] for x in rows),
            "rss_after": statistics.median(x["after"]["rss"] for x in rows),
            "rss_closed": statistics.median(x["closed"]["rss"] for x in rows)}
    return out


def markdown(res: dict) -> list[str]:
    s = res["summary"]
    L = ["## Idle client connections", "",
         f"{res['n']} connections per path"
         + (f" (of {res['requested']} asked: the open-file limit here is {res['nofile']}, and a "
            "proxy holds two descriptors per connection)" if res.get("requested", res["n"])
            > res["n"] else "") + ", each after one ApiVersions v0 round trip through the "
         "path to one Kafka broker, then idle; memory from /proc/<pid>/smaps_rollup before and 2 s "
         f"after; medians of {len(res['rounds'])} round(s); load average "
         f"{res['load_start'][0]:.1f} at the start, {res['load_end'][0]:.1f} at the end.", "",
         "| path | accepted conn/s (with ApiVersions) | RSS before MiB | RSS with N idle MiB | "
         "RSS per idle conn B | PSS per idle conn B | RSS after closing MiB |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for path in ("direct", "kadmit", "haproxy"):
        x = s[path]
        mem_cols = (["(broker JVM)"] * 5 if path == "direct" else
                    [f"{x['rss_before'] / 2**20:.1f}", f"{x['rss_after'] / 2**20:.1f}",
                     f"{x['rss_per_conn']:.0f}", f"{x['pss_per_conn']:.0f}",
                     f"{x['rss_closed'] / 2**20:.1f}"])
        L.append(f"| {path} | {x['accept_per_s']:.0f} | " + " | ".join(mem_cols) + " |")
    return L + [""]


def inner(args) -> int:
    """Inside the namespace: loopback up, a wide port range, then the measurement."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    Path("/proc/sys/net/ipv4/ip_local_port_range").write_text(PORT_RANGE)
    res = measure(args.conns, args.rounds)
    res["summary"] = summary(res)
    Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


def run(p: dict, workdir: Path, suite_mod=None) -> dict:
    """From bench/suite.py: runs inner() in a fresh network namespace, returns its results."""
    out = Path(workdir) / "conns.json"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:  # raising the hard limit needs CAP_SYS_RESOURCE; without it, the soft one up to it
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, max(NOFILE, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    # a proxy holds two descriptors per connection (client and broker legs) plus its own few
    n = min(p["BENCH_CONNS"], (limit - 100) // 2)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(["unshare", "--net", "--", sys.executable, __file__, "--inner", "--conns",
                    str(n), "--rounds", str(p["BENCH_CONNS_ROUNDS"]), "--json",
                    str(out)], check=True, env=env, timeout=1800)
    res = json.loads(out.read_text())
    res |= {"requested": p["BENCH_CONNS"], "nofile": limit}
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args)
    with tempfile.TemporaryDirectory() as d:
        res = run({"BENCH_CONNS": args.conns, "BENCH_CONNS_ROUNDS": args.rounds}, Path(d))
    print("\n".join(markdown(res)))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
