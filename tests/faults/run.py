#!/usr/bin/env python3
"""The fault-injection suite's entry point: a real 3-broker Kafka cluster with 3 kadmit sidecars
(suite.py), the concurrent workload (workload.py), the faults (faults.py) and the independent
checker (checker.py), in phases that alternate fault-free and faulty.

    python3 tests/faults/run.py --short              # one of each fault, about 5 minutes
    python3 tests/faults/run.py --duration 1800      # faults in turn until the time is up
    options: --seed N, --out DIR (the report and the samples), --keep (keep the cluster dir)

Each phase starts with the workload idle: the sidecars settle (their views show the brokers'
counts, nothing reserved), old workload topics are deleted when the brokers host too many, and
the limits become count + HEADROOM on every broker (policy file, hot reload). A fault-free
phase runs the mixed workload, then fills: creates only, until every broker is refused; its
"headroom used" is the fraction of (limit - count at its start) filled when it ends. A faulty
phase has a headroom of only FAULT_HEADROOM, so the workload is at the limit while the fault is
injected and undone (mixed; creates only for forged records). At a violation the workload stops
until the next phase.

Exit status: 0 when no sample was over a limit and no sidecar died unasked; 1 otherwise; 2 when
the suite itself could not run. The report is printed and written to DIR/report.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import suite  # noqa: E402,F401  (puts the harness and the clients on sys.path)
import faults  # noqa: E402
from checker import Checker, print_summary  # noqa: E402
from suite import ROOT, Suite, find_toxiproxy, log  # noqa: E402
from workload import Workload  # noqa: E402

from kafka_cluster import kadmit_bin, tail  # noqa: E402

HEADROOM = 24  # replicas per broker a fault-free phase may add (and must fill)
FAULT_HEADROOM = 6  # a faulty phase runs at the limit: refusals from its first seconds on
KEEP_PER_BROKER = 90  # above this, a phase starts by deleting old workload topics
ORDER = ["broker_kill", "sidecar_kill", "network", "sidecar_pause", "forged_ledger", "clock",
         "rolling_restart", "forged_limits"]


class Run:
    def __init__(self, args, out: Path):
        self.args = args
        self.out = out
        self.rng = random.Random(args.seed)
        self.phases: list[dict] = []
        self.faults_done: dict[str, int] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []  # the suite's own trouble (not findings about kadmit)

    def begin_phase(self, s: Suite, wl: Workload, ck: Checker, name: str,
                    headroom: int = HEADROOM) -> dict:
        wl.quiesce()
        for n in s.c.nodes:  # a fault that could not restart its broker: the next phase needs it
            if not n.proc.alive():
                self.notes.append(f"broker {n.id} was down at the start of phase {name}")
                log(f"phase {name}: broker {n.id} is down; starting it")
                s.start_broker(n.id)
        removed = wl.cleanup(s, KEEP_PER_BROKER)
        counts, settled = s.settle(40)
        if not settled:
            log(f"phase {name}: the sidecars did not settle; limits from the brokers' counts")
        counts = s.counts()
        limits = {b: counts[b] + headroom for b in (1, 2, 3)}
        confirmed = s.set_limits(limits)
        counts = s.counts()  # nothing runs: the same, unless a late creation landed
        ck.phase = name
        wl.phase_stats.clear()
        wl.halted = False
        log(f"phase {name}: counts {counts}, limits {limits}"
            f"{'' if confirmed else ' (not confirmed by every sidecar)'}"
            f"{f', {removed} old topics deleted' if removed else ''}")
        return {"name": name, "start_counts": counts, "limits": limits, "settled": settled,
                "limits_confirmed": confirmed, "t_start": round(time.monotonic() - ck.t0, 1),
                "violations_before": len(ck.violations)}

    def end_phase(self, s: Suite, wl: Workload, ck: Checker, ph: dict) -> None:
        wl.quiesce()
        time.sleep(2)  # a creation admitted late is in the brokers' metadata by now
        counts = s.counts()
        ph["end_counts"] = counts
        ph["t_end"] = round(time.monotonic() - ck.t0, 1)
        ph["ops"] = {f"{k}:{r}": n for (k, r), n in sorted(wl.phase_stats.items())}
        ph["violations"] = len(ck.violations) - ph.pop("violations_before")
        if ph["kind"] == "fault-free":
            room = sum(ph["limits"][b] - ph["start_counts"][b] for b in (1, 2, 3))
            left = sum(max(0, ph["limits"][b] - counts.get(b, 0)) for b in (1, 2, 3))
            ph["headroom_used"] = round(1 - left / room, 3) if room > 0 else None
        probs = [p for p in s.died_unasked() if p not in self.problems]
        if probs:
            ph["problems"] = probs
            self.problems += probs
            log(f"phase {ph['name']}: PROBLEMS {probs}")
            for i in (1, 2, 3):  # keep the suite going: bring it back, and say so
                if not s.sc[i].proc.alive():
                    log(tail(s.sc[i].log, 30))
                    try:
                        s.spawn(i, ready=False)
                        s.wait_admission(i, 60)
                    except (RuntimeError, TimeoutError) as e:
                        log(f"kadmit {i} does not start again: {e}")
        log(f"phase {ph['name']} done: {ph['violations']} violating samples, end counts {counts}"
            + (f", headroom used {ph['headroom_used']}" if "headroom_used" in ph else ""))
        self.phases.append(ph)

    def free_phase(self, s, wl, ck, seconds: float) -> None:
        ph = self.begin_phase(s, wl, ck, f"free-{len(self.phases)}")
        ph["kind"] = "fault-free"
        wl.set_mode("mixed")
        time.sleep(seconds * 0.4)
        # Fill: the deletes of the mixed part are over; create until every broker is refused.
        wl.quiesce()
        wl.set_mode("fill")
        deadline = time.monotonic() + max(seconds * 0.6, 25)
        while time.monotonic() < deadline:
            last, lim = ck.last, s.limits.current()
            if all(last.get(b, 0) >= lim[b] for b in (1, 2, 3)):
                break
            time.sleep(0.2)
        self.end_phase(s, wl, ck, ph)

    def fault_phase(self, s, wl, ck, kind: str, seconds: float) -> None:
        ph = self.begin_phase(s, wl, ck, f"{kind}-{len(self.phases)}", FAULT_HEADROOM)
        ph["kind"] = kind
        wl.set_mode("push" if kind == "forged_limits" else "mixed")
        t0 = time.monotonic()
        try:
            ph["fault"] = faults.ALL[kind](s, self.rng, max(3.0, seconds * 0.5))
            self.faults_done[kind] = self.faults_done.get(kind, 0) + 1
        except Exception as e:  # noqa: BLE001 - the suite reports a fault it could not inject
            first = str(e).splitlines()[0][:300] if str(e) else ""
            ph["fault_error"] = f"{type(e).__name__}: {first}"
            log(f"fault {kind} failed: {traceback.format_exc()}")
        rest = seconds - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)
        # After the fault: the brokers' leadership and ISRs come back before the next phase.
        try:
            s.c.wait_all_isr(120)
        except TimeoutError:
            ph["isr_not_complete"] = True
        self.end_phase(s, wl, ck, ph)


def report(r: Run, s: Suite, wl: Workload, ck: Checker, t_total: float) -> dict:
    free = [p["headroom_used"] for p in r.phases if p.get("headroom_used") is not None]
    ck_sum = ck.summary()
    for p in r.phases:  # samples are the phase's until the next phase's limits are in force
        p["violations"] = ck_sum["violating_samples_by_phase"].get(p["name"], 0)
    # Who admitted what in the phase, up to 15 s before its first violation.
    traces = []
    seen = set()
    for v in ck.violations:
        if v["phase"] in seen:
            continue
        seen.add(v["phase"])
        t = ck.t0 + v["t"]
        ph_start = ck.t0 + next((p["t_start"] for p in r.phases if p["name"] == v["phase"]), 0)
        near = [a for a in wl.recent if max(t - 15, ph_start) <= a["t"] <= t + 0.5]
        traces.append({"phase": v["phase"], "t": v["t"], "over": v["over"],
                       "counts": v["counts"], "limits": v["limits"],
                       "admitted_in_15s_before": near[-40:]})
    return {
        "seed": r.args.seed, "duration_s": round(t_total, 1), "short": r.args.short,
        "operations": wl.totals(),
        "faults_injected": r.faults_done,
        "faults_failed": {p["kind"]: p["fault_error"] for p in r.phases if "fault_error" in p},
        "samples": ck_sum["samples"], "samples_failed": ck_sum["samples_failed"],
        "samples_over_limit": ck_sum["violations"], "checker": ck_sum,
        "violation_traces": traces,
        "headroom_used_fault_free": {"min": min(free) if free else None,
                                     "mean": round(sum(free) / len(free), 3) if free else None,
                                     "phases": free},
        "sidecar_problems": r.problems,
        "suite_notes": r.notes,
        "sidecar_starts": dict(s.sidecar_starts),
        "phases": r.phases,
    }


def print_report(rep: dict, ck_text: str) -> None:
    print("\n=== fault-injection report ===")
    print(f"duration {rep['duration_s']}s, seed {rep['seed']}")
    print("operations (kind: result=count):")
    for kind, res in rep["operations"].items():
        print(f"  {kind}: " + ", ".join(f"{k}={n}" for k, n in sorted(res.items())))
    print("faults injected: " + ", ".join(f"{k}={n}" for k, n in rep["faults_injected"].items()))
    if rep["faults_failed"]:
        print(f"faults that failed: {rep['faults_failed']}")
    print(ck_text)
    h = rep["headroom_used_fault_free"]
    print(f"headroom used in fault-free phases: min {h['min']}, mean {h['mean']} ({h['phases']})")
    for p in rep["phases"]:
        print(f"  phase {p['name']}: {p['violations']} violating samples"
              + (f", headroom used {p['headroom_used']}" if p.get("headroom_used") is not None
                 else "") + (f", fault {p.get('fault') or p.get('fault_error')}"
                             if p["kind"] != "fault-free" else ""))
    for tr in rep["violation_traces"]:
        print(f"VIOLATION in {tr['phase']} at t={tr['t']}s: over {tr['over']} "
              f"(counts {tr['counts']}, limits {tr['limits']})")
        for a in tr["admitted_in_15s_before"][-10:]:
            print(f"    admitted {a['kind']} via sidecar {a['sidecar']}: {a['topic']} "
                  + json.dumps({k: v for k, v in a.items()
                                if k not in ('kind', 'sidecar', 'topic', 't', 'wall')}))
    if rep["sidecar_problems"]:
        print(f"SIDECAR PROBLEMS: {rep['sidecar_problems']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds (long mode)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--short", action="store_true", help="one of each fault, short phases")
    ap.add_argument("--out", type=Path, default=None,
                    help="report directory (default build/faults/<time>)")
    ap.add_argument("--keep", action="store_true", help="keep the cluster directory")
    ap.add_argument("--faults", default=",".join(ORDER), help="fault kinds, comma-separated")
    args = ap.parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    kinds = [k for k in args.faults.split(",") if k]
    bad = [k for k in kinds if k not in faults.ALL]
    if bad:
        ap.error(f"unknown faults {bad}; known: {list(faults.ALL)}")
    binary = kadmit_bin()
    if not binary.exists():
        print(f"kadmit binary not found at {binary} (set KADMIT_BIN)", file=sys.stderr)
        return 2
    d = Path(tempfile.mkdtemp(prefix="kadmit-faults-"))
    out = args.out or ROOT / "build" / "faults" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    toxiproxy = find_toxiproxy()
    if toxiproxy is None:
        kinds = [k for k in kinds if k not in ("network", "clock")]
    s = Suite(d, binary, toxiproxy)
    r = Run(args, out)
    log(f"seed {args.seed}; cluster in {d}; report in {out}")
    try:
        s.start()
    except Exception:  # noqa: BLE001
        log(f"the cluster did not start:\n{traceback.format_exc()}")
        s.stop()
        return 2
    ck = Checker(s, out / "samples.jsonl")
    wl = Workload(s, args.seed, out / "admissions.jsonl")
    wl.suite_checker_last = lambda: ck.last
    ck.on_violation = wl.halt
    ck.start()
    wl.start()
    rc = 0
    try:
        if args.short:
            free_s, fault_s = 20.0, 14.0
            r.free_phase(s, wl, ck, 25.0)
            for k in kinds:
                r.fault_phase(s, wl, ck, k, fault_s)
            r.free_phase(s, wl, ck, free_s)
        else:
            end = t_start + args.duration
            free_s, fault_s = 45.0, 40.0
            n = 0
            while time.monotonic() + free_s + fault_s + 60 < end:
                r.free_phase(s, wl, ck, free_s)
                r.fault_phase(s, wl, ck, kinds[n % len(kinds)], fault_s)
                n += 1
            r.free_phase(s, wl, ck, free_s)
    except KeyboardInterrupt:
        log("interrupted")
        rc = 2
    except Exception:  # noqa: BLE001
        log(f"the suite failed:\n{traceback.format_exc()}")
        rc = 2
    finally:
        wl.quiesce(5)
        wl.stop_ev.set()
        ck.stop()
        rep = report(r, s, wl, ck, time.monotonic() - t_start)
        s.stop()
        wl.stop()
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    print_report(rep, print_summary(ck.summary()))
    print(f"report: {out / 'report.json'}")
    if rep["samples_over_limit"] or rep["sidecar_problems"]:
        rc = 1
    if rc == 0 and not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    elif rc:
        print(f"cluster dir kept: {d}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
