#!/usr/bin/env python3
"""How soon a sidecar can decide on a new cluster: the time from starting every sidecar (`--ledger
on`, a policy) to `/v1/admission` answering 200 on each, and what a create sent 1 s after the start
gets (it should wait for the ledger and be judged, not be refused).

Each run starts a fresh KRaft cluster (the integration harness; no kadmit topic exists yet), starts
one sidecar per broker at once, sends one CreateTopics (1 partition, RF 1) through sidecar 1 at
+1 s, and polls every sidecar's /v1/admission every 50 ms. It reports, per run, the seconds to ready
per sidecar, the early create's error code, message and latency, and where each sidecar's time
went (its log: the ledger client's start-up profile from the "ledger reading" line, view_ms,
topic_ms, clock_ms, ready_ms, each since the client started, and when the limits topic was read,
limits_ms, since the sidecar's first log line). With several runs it ends with the medians. A run
fails (exit 1) on a sidecar that never gets ready within 60 s.

  KADMIT_TEST_PORT_BASE=3000 python3 bench/cold_start.py [--brokers 1,3] [--runs 2] [--bin build/kadmit]
      [--early-at 1.0] [--json OUT] [--offset 700]
"""
import argparse
import datetime
import json
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts" / "harness"))
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

import clients  # noqa: E402
import kafka_cluster as kc  # noqa: E402


def admission_status(admin: str) -> int:
    try:
        with urllib.request.urlopen(f"http://{admin}/v1/admission", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def _log_time(line: str) -> float | None:
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ", line)
    return datetime.datetime.fromisoformat(m.group(1)).timestamp() if m else None


def profile(log: Path) -> dict:
    """The start-up steps one sidecar logged (ms), or {} when it never got there."""
    out: dict = {}
    first = None
    for line in log.read_text(errors="replace").splitlines():
        t = _log_time(line)
        if t is None:
            continue
        first = first if first is not None else t
        if " ledger reading " in line and "ready_ms" not in out:
            for k in ("view_ms", "topic_ms", "clock_ms", "ready_ms"):
                m = re.search(rf"\b{k}=(-?\d+)", line)
                if m:
                    out[k] = int(m.group(1))
        if " cluster limits read " in line and "limits_ms" not in out:
            out["limits_ms"] = round(1000 * (t - first))
    return out


def one_run(brokers: int, binary: Path, base: int, early_at: float, extra: list[str]) -> dict:
    d = Path(tempfile.mkdtemp(prefix="kadmit-cold-"))
    c = kc.KafkaCluster(d, brokers=brokers, port_base_=base)
    sc = kc.Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 100000}))
    c.start()
    early: dict = {}
    try:
        t0 = time.monotonic()
        for s in sc.items:
            s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream,
                          "--admin", s.admin, "--policy", str(policy), "--ledger", "on",
                          "--sidecar-id", f"cold-{s.node.id}", "--log-level", "info", *extra])

        def create_early() -> None:
            time.sleep(max(0.0, t0 + early_at - time.monotonic()))
            while not kc.port_open(sc.items[0].node.sidecar_port):
                time.sleep(0.02)
            t = time.monotonic()
            body = clients.raw_call(sc.items[0].node.sidecar_port,
                                    clients.create_topics_v5(1, [("cold-early", 1, 1)]))
            (_, code, msg), = clients.parse_create_topics_v5(body)
            early.update(code=code, message=msg, sent_at_s=round(t - t0, 2),
                         latency_s=round(time.monotonic() - t, 2))

        th = threading.Thread(target=create_early)
        th.start()
        ready: dict[int, float] = {}
        while len(ready) < len(sc.items):
            for s in sc.items:
                if s.node.id not in ready and admission_status(s.admin) == 200:
                    ready[s.node.id] = round(time.monotonic() - t0, 2)
            if time.monotonic() - t0 > 60:
                break
            time.sleep(0.05)
        th.join(timeout=60)
        return {"brokers": brokers, "ready_s": ready, "early_create": early,
                "all_ready": len(ready) == len(sc.items),
                "steps_ms": {s.node.id: profile(Path(s.log)) for s in sc.items}}
    finally:
        for s in sc.items:
            s.proc.stop()
        c.stop()
        if sys.exc_info()[0] is None:
            shutil.rmtree(d, ignore_errors=True)
        else:  # the sidecars' and brokers' logs say why
            print(f"cold start run failed: its directory is kept: {d}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", default="1,3")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--bin", default=str(HERE.parent / "build" / "kadmit"))
    ap.add_argument("--early-at", type=float, default=1.0,
                    help="seconds after the start at which the early create is sent")
    ap.add_argument("--json", help="also write every run and the medians here")
    ap.add_argument("--kadmit-arg", action="append", default=[],
                    help="one more kadmit argument (repeat it), e.g. --kadmit-arg=--ledger-properties")
    ap.add_argument("--offset", type=int, default=700,
                    help="the cluster's ports: KADMIT_TEST_PORT_BASE plus this")
    args = ap.parse_args()
    results = []
    counts = [int(x) for x in args.brokers.split(",")]
    for n in counts:
        for _ in range(args.runs):
            r = one_run(n, Path(args.bin), kc.port_base() + args.offset, args.early_at,
                        args.kadmit_arg)
            print(json.dumps(r), flush=True)
            results.append(r)
    medians = {}
    for n in counts:
        runs = [r for r in results if r["brokers"] == n and r["all_ready"]]
        if not runs:
            continue
        med = {"runs": len(runs),
               "ready_s (slowest sidecar)": statistics.median(max(r["ready_s"].values())
                                                              for r in runs),
               "early_create_latency_s": statistics.median(r["early_create"].get("latency_s", -1)
                                                           for r in runs),
               "early_create_codes": [r["early_create"].get("code") for r in runs]}
        for k in ("view_ms", "topic_ms", "clock_ms", "ready_ms", "limits_ms"):
            xs = [s[k] for r in runs for s in r["steps_ms"].values() if k in s]
            if xs:
                med[k] = statistics.median(xs)
        medians[n] = med
        print(json.dumps({"brokers": n, "median": med}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": results, "medians": medians}, indent=1))
    return 0 if all(r["all_ready"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
