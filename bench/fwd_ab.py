#!/usr/bin/env python3
"""Raw forwarding, two kadmit builds and HAProxy side by side, alternated.

bench_fwd_gen -> {kadmit A, kadmit B, HAProxy} -> bench_fwd_sink, the same shapes as the suite's
fwd part (bench/suite.py), with the path order rotating every round so that no build always runs
first. For each run it records the proxy's CPU (utime+stime from /proc, over the whole run, as the
suite does), the generator's throughput and latency percentiles, and, when `perf` can count the
raw_syscalls tracepoint, the proxy's system calls per frame (requests and responses both count as
frames) over the measured seconds. It prints medians per shape and path and the ratios that the
second-pass targets use (docs/benchmarks.md, "Second pass").

    KADMIT_TEST_PORT_BASE=4000 python3 bench/fwd_ab.py --a main/build/kadmit --b build/kadmit \
        --rounds 5 --seconds 5 --shapes 4x16x1024,4x4x65536

On a shared machine, run one benchmark at a time; the load average at the start and the end is
printed with the results, since a loaded machine inflates every CPU figure.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
SYSCALLS = ("read", "write", "writev", "recvfrom", "sendto", "sendmsg", "splice", "epoll_wait",
            "epoll_ctl", "clock_gettime")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited at start")
        try:
            socket.create_connection((HOST, port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port}")


def perf_works() -> bool:
    perf = shutil.which("perf")
    if perf is None:
        return False
    r = subprocess.run([perf, "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "not supported" not in r.stderr


def count_syscalls(pid: int, delay: float, seconds: float, out: dict) -> None:
    """Counts pid's system calls over [delay, delay + seconds) of the run."""
    time.sleep(delay)
    events = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{n}" for n in SYSCALLS]
    r = subprocess.run(["perf", "stat", "-x,", "-p", str(pid), "-e", ",".join(events), "--",
                        "sleep", str(seconds)], capture_output=True, text=True)
    for line in r.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].strip().isdigit():
            name = f[2].split(":")[-1].replace("sys_enter_", "")
            out["all" if name == "sys_enter" else name] = int(f[0])


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="kadmit binary A (before)")
    ap.add_argument("--b", help="kadmit binary B (after); omitted: A against HAProxy only")
    ap.add_argument("--build", default=str(ROOT / "build" / "bench"),
                    help="directory with bench_fwd_gen and bench_fwd_sink")
    ap.add_argument("--shapes", default="4x16x1024,4x4x65536")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--response-bytes", type=int, default=64,
                    help="the sink's answer body (large: a consumer's Fetch-like shape)")
    ap.add_argument("--no-haproxy", action="store_true")
    ap.add_argument("--direct", action="store_true", help="also gen -> sink (the sink's CPU)")
    ap.add_argument("--no-syscalls", action="store_true")
    ap.add_argument("--json", help="write every run here")
    args = ap.parse_args()

    base = int(os.environ.get("KADMIT_TEST_PORT_BASE", "0"))
    sink_port, a_port, b_port, hap_port = (32000 + base, 32001 + base, 32002 + base,
                                           32003 + base)
    build = Path(args.build)
    work = Path(tempfile.mkdtemp(prefix="kadmit-fwd-ab."))
    syscalls = not args.no_syscalls and perf_works()
    procs: dict[str, subprocess.Popen] = {}
    logs = []

    def spawn(name: str, argv: list[str], port: int) -> None:
        log = open(work / f"{name}.log", "w")
        logs.append(log)
        procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        wait_port(port, procs[name])

    def kadmit(binary: str, port: int) -> list[str]:
        return [binary, "--listen", f"{HOST}:{port}", "--upstream", f"{HOST}:{sink_port}",
                "--admin", "off", "--log-level", "warn"]

    load0 = os.getloadavg()
    try:
        spawn("sink", [str(build / "bench_fwd_sink"), "--listen", f"{HOST}:{sink_port}",
                       "--response-bytes", str(args.response_bytes)], sink_port)
        paths = {"A": a_port}
        spawn("A", kadmit(args.a, a_port), a_port)
        if args.b:
            spawn("B", kadmit(args.b, b_port), b_port)
            paths["B"] = b_port
        if not args.no_haproxy:
            cfg = work / "haproxy.cfg"
            cfg.write_text("global\n    nbthread 1\n    maxconn 4000\ndefaults\n    mode tcp\n"
                           "    timeout connect 5s\n    timeout client 10m\n"
                           "    timeout server 10m\n"
                           f"listen p\n    bind {HOST}:{hap_port}\n"
                           f"    server s {HOST}:{sink_port}\n")
            spawn("haproxy", [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f",
                              str(cfg)], hap_port)
            paths["haproxy"] = hap_port
        if args.direct:
            paths["direct"] = sink_port  # the CPU figure is then the sink's, as in the suite
            procs["direct"] = procs["sink"]
        names = list(paths)
        results = []
        for shape in args.shapes.split(","):
            conns, depth, size = (int(x) for x in shape.split("x"))
            runs: dict[str, list[dict]] = {n: [] for n in names}
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    pid = procs[name].pid
                    sc: dict = {}
                    t = None
                    if syscalls:
                        t = threading.Thread(target=count_syscalls,
                                             args=(pid, args.warmup + 0.2, args.seconds - 0.4, sc))
                        t.start()
                    c0 = cpu_seconds(pid)
                    out = subprocess.run(
                        [str(build / "bench_fwd_gen"), "--connect", f"{HOST}:{paths[name]}",
                         "--conns", str(conns), "--depth", str(depth), "--size", str(size),
                         "--seconds", str(args.seconds), "--warmup", str(args.warmup)],
                        capture_output=True, text=True, check=True).stdout
                    cpu = cpu_seconds(pid) - c0
                    if t is not None:
                        t.join()
                    res = json.loads(out.strip().splitlines()[-1])
                    res.update(shape=shape, path=name, round=r, proc_cpu_s=cpu,
                               load1=os.getloadavg()[0],
                               cpu_s_per_gb=cpu / (res["all_bytes"] / 1e9))
                    res["mb_per_cpu_s"] = 1.0 / res["cpu_s_per_gb"] * 1000
                    if res["requests_per_s"] <= 0:
                        raise RuntimeError(f"{name}: no requests answered: {out}")
                    if sc:
                        frames = 2 * res["requests_per_s"] * (args.seconds - 0.4)
                        res["syscalls"] = sc
                        res["syscalls_per_frame"] = sc.get("all", 0) / frames
                    runs[name].append(res)
                    results.append(res)
                    print(f"{shape} r{r + 1} {name:8s} {res['bytes_per_s'] / 1e6:7.0f} MB/s "
                          f"p99.9 {res['p999_us']:7.0f} us  {res['cpu_s_per_gb']:.3f} CPU s/GB"
                          + (f"  {res['syscalls_per_frame']:.3f} syscalls/frame"
                             if "syscalls_per_frame" in res else "")
                          + f"  load {res['load1']:.1f}", flush=True)
            print(f"\n{shape}: medians of {args.rounds} rounds")
            print("| path | MB/s | p50 us | p99 us | p99.9 us | CPU s/GB | MB per CPU-s "
                  "| syscalls/frame | " + " | ".join(SYSCALLS) + " |")
            med = {}
            for name in names:
                rs = runs[name]
                m = {k: median([x[k] for x in rs]) for k in
                     ("bytes_per_s", "p50_us", "p99_us", "p999_us", "cpu_s_per_gb",
                      "mb_per_cpu_s")}
                m["spf"] = median([x.get("syscalls_per_frame", float("nan")) for x in rs])
                per = []
                for n in SYSCALLS:
                    v = [x["syscalls"].get(n, 0) / (2 * x["requests_per_s"] * (args.seconds - 0.4))
                         for x in rs if "syscalls" in x]
                    per.append(f"{median(v):.3f}" if v else "")
                med[name] = m
                print(f"| {name} | {m['bytes_per_s'] / 1e6:.0f} | {m['p50_us']:.0f} | "
                      f"{m['p99_us']:.0f} | {m['p999_us']:.0f} | {m['cpu_s_per_gb']:.3f} | "
                      f"{m['mb_per_cpu_s']:.0f} | {m['spf']:.3f} | " + " | ".join(per) + " |")
            if "haproxy" in med:
                for name in names:
                    if name not in ("haproxy", "direct"):
                        print(f"{name}: MB per CPU-s / HAProxy's = "
                              f"{med[name]['mb_per_cpu_s'] / med['haproxy']['mb_per_cpu_s']:.2f}")
            if "direct" in med:
                for name in names:
                    if name != "direct":
                        print(f"{name}: CPU per GB / direct's = "
                              f"{med[name]['cpu_s_per_gb'] / med['direct']['cpu_s_per_gb']:.2f}")
            print()
        load1 = os.getloadavg()
        print(f"load average at start {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}, "
              f"at end {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}")
        if args.json:
            Path(args.json).write_text(json.dumps({"load_start": load0, "load_end": load1,
                                                   "runs": results}, indent=1))
    finally:
        procs.pop("direct", None)
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for log in logs:
            log.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
