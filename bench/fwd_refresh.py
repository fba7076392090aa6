#!/usr/bin/env python3
"""Forwarding latency while the cluster view refreshes against a big cluster.

bench_fwd_gen -> kadmit -> bench_fwd_sink carries the traffic; kadmit's
metadata client asks bench_md_serve, a generated metadata broker of
--partitions partitions (default 200,000; bench only, never in tests). Each
round runs every kadmit binary given (--bin NAME=PATH; e.g. main's build as
"before" and this tree's as "after") twice: with metadata.refresh.interval.ms
= 1000 (a refresh every second) and with refreshes 120 s apart (one view
at start, then none within a case). Cases rotate within each round. Prints a table of
median p50 / p99 / p99.9 request latency, the latency added by refreshing
and its ratios, and, where the binary has them, the loop-turn metrics.

  KADMIT_TEST_PORT_BASE=4000 python3 bench/fwd_refresh.py \
      --bin before=/path/to/main/build/kadmit --bin after=build/kadmit \
      [--rounds 3] [--seconds 8] [--partitions 200000] [--json out.json]
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
BASE = int(os.environ.get("KADMIT_TEST_PORT_BASE", "4000")) + 450
SINK, MD, LISTEN, ADMIN = BASE, BASE + 1, BASE + 2, BASE + 3
# "No refreshes": the longest interval the policy allows (metadata.max.staleness.ms),
# far longer than a case, so only the first view is built.
NONE = 120000


def wait_port(port: int, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} never opened")


def metrics() -> dict:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{ADMIN}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("kadmit_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    # The table's keys, whichever naming the binary under test renders (a
    # "before" build may predate the Prometheus-convention names).
    for new, old, scale in (('kadmit_metadata_refreshes_total{result="ok"}',
                             "kadmit_metadata_refreshes", 1),
                            ("kadmit_loop_turns_over_1ms_total", "kadmit_loop_turns_over_1ms", 1),
                            ("kadmit_loop_control_turns_over_1ms_total",
                             "kadmit_control_turns_over_1ms", 1),
                            ("kadmit_metadata_offloop_seconds_total",
                             "kadmit_metadata_offloop_us_sum", 1e6),
                            ("kadmit_loop_turn_max_seconds", "kadmit_loop_turn_max_us", 1e6)):
        if new in out:
            out[old] = out[new] * scale
    return out


def run_case(kadmit: str, interval_ms: int, a, work: Path) -> dict:
    policy = work / f"policy-{interval_ms}.json"
    policy.write_text(json.dumps({"max.broker.partitions": 10000000,
                                  "metadata.refresh.interval.ms": interval_ms}))
    log = open(work / "kadmit.log", "ab")
    p = subprocess.Popen([kadmit, "--listen", f"{HOST}:{LISTEN}", "--upstream", f"{HOST}:{SINK}",
                          "--metadata-upstream", f"{HOST}:{MD}", "--admin", f"{HOST}:{ADMIN}",
                          "--policy", str(policy), "--log-level", "warn", "--ledger", "off",
                          # kadmit's own topics (limits) would ask md_serve, which speaks
                          # only ApiVersions v0 and Metadata: point them at a closed port.
                          "--ledger-bootstrap", f"{HOST}:{BASE + 9}"],
                         stdout=log, stderr=log)
    try:
        wait_port(LISTEN)
        wait_port(ADMIN)
        end = time.time() + 60
        while metrics().get("kadmit_metadata_refreshes", 0) < 1 and time.time() < end:
            time.sleep(0.2)  # the first view, so every case measures with one in place
        m0 = metrics()
        out = subprocess.run([str(a.tools / "bench_fwd_gen"), "--connect", f"{HOST}:{LISTEN}",
                              "--conns", str(a.conns), "--depth", str(a.depth),
                              "--size", str(a.size), "--seconds", str(a.seconds),
                              "--warmup", "1"], check=True, capture_output=True, text=True)
        m1 = metrics()
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["refreshes"] = m1.get("kadmit_metadata_refreshes", 0) - m0.get(
            "kadmit_metadata_refreshes", 0)
        for k in ("kadmit_loop_turns_over_1ms", "kadmit_control_turns_over_1ms",
                  "kadmit_metadata_offloop_us_sum"):
            if k in m1:
                r[k] = m1[k] - m0.get(k, 0)
        if "kadmit_loop_turn_max_us" in m1:
            r["kadmit_loop_turn_max_us"] = m1["kadmit_loop_turn_max_us"]
        return r
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH of a kadmit")
    ap.add_argument("--tools", type=Path, default=Path("build/bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--partitions", type=int, default=200000)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    work = Path(tempfile.mkdtemp(prefix="kadmit-fwd-refresh-"))
    sink = subprocess.Popen([str(a.tools / "bench_fwd_sink"), "--listen", f"{HOST}:{SINK}"])
    md = subprocess.Popen([str(a.tools / "bench_md_serve"), "--listen", f"{HOST}:{MD}",
                           "--partitions", str(a.partitions)],
                          stderr=open(work / "md_serve.log", "ab"))
    cases = [(name, path, iv) for name, path in bins for iv in (1000, NONE)]
    runs = {c[:1] + c[2:]: [] for c in cases}
    try:
        wait_port(SINK)
        wait_port(MD)
        for rnd in range(a.rounds):
            k = rnd % len(cases)
            for name, path, iv in cases[k:] + cases[:k]:
                r = run_case(path, iv, a, work)
                runs[(name, iv)].append(r)
                print(f"round {rnd + 1} {name} refresh={'1s' if iv == 1000 else 'none'}: "
                      f"p50 {r['p50_us']:.0f} us, p99 {r['p99_us']:.0f}, p99.9 {r['p999_us']:.0f}, "
                      f"{r['refreshes']:.0f} refreshes", file=sys.stderr)
    finally:
        for p in (sink, md):
            p.send_signal(signal.SIGTERM)
            p.wait()
    med = {c: {k: statistics.median(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}
           for c, rs in runs.items()}
    print(f"\n{a.partitions} partitions served by bench_md_serve; {a.conns}x{a.depth}x{a.size} "
          f"requests; medians of {a.rounds} rounds of {a.seconds:.0f} s\n")
    print("| kadmit | refresh | view refreshes | p50 us | p99 us | p99.9 us | longest loop turn us "
          "| turns > 1 ms | control turns > 1 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (name, iv), m in med.items():
        g = lambda k: f"{m[k]:.0f}" if k in m else "n/a"
        print(f"| {name} | {'every 1 s' if iv == 1000 else 'none'} | {m['refreshes']:.0f} "
              f"| {m['p50_us']:.0f} | {m['p99_us']:.0f} | {m['p999_us']:.0f} "
              f"| {g('kadmit_loop_turn_max_us')} | {g('kadmit_loop_turns_over_1ms')} "
              f"| {g('kadmit_control_turns_over_1ms')} |")
    print("\n| kadmit | p99 added by refreshing us | p99.9 added us | p99 ratio | p99.9 ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in bins:
        on, off = med[(name, 1000)], med[(name, NONE)]
        print(f"| {name} | {on['p99_us'] - off['p99_us']:+.0f} | {on['p999_us'] - off['p999_us']:+.0f} "
              f"| {on['p99_us'] / off['p99_us']:.2f} | {on['p999_us'] / off['p999_us']:.2f} |")
    if a.json:
        a.json.write_text(json.dumps({f"{n}/{iv}": rs for (n, iv), rs in runs.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
