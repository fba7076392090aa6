"""The fault-injection suite's short run (run.py --short) as a test: its own 3-broker cluster
with 3 sidecars, one of each fault, the checker sampling the brokers every 100 ms. It passes only
when no sample was over a limit, no sidecar died unasked, every fault was injected, the checker
really sampled, and the fault-free phases filled their headroom (so the workload did push to the
limit: a suite that never reaches the limit could not find an overshoot).

    KADMIT_BIN=build/kadmit KADMIT_TEST_PORT_BASE=N python3 -m pytest -m faults tests/faults
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.faults
def test_short_fault_run_never_over_a_limit(tmp_path: Path):
    p = subprocess.run([sys.executable, str(HERE / "run.py"), "--short", "--out", str(tmp_path)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    out = p.stdout
    sys.stdout.write(out[-12000:])
    rep_path = tmp_path / "report.json"
    assert rep_path.exists(), f"no report (exit {p.returncode}):\n{out[-6000:]}"
    rep = json.loads(rep_path.read_text())
    assert rep["samples_over_limit"] == 0, json.dumps(rep["violation_traces"], indent=1)[:8000]
    assert not rep["sidecar_problems"], rep["sidecar_problems"]
    assert p.returncode == 0, out[-6000:]
    assert not rep["faults_failed"], rep["faults_failed"]
    assert set(rep["faults_injected"]) == {"broker_kill", "rolling_restart", "sidecar_kill",
                                           "sidecar_pause", "network", "clock", "forged_limits",
                                           "forged_ledger"}, rep
    # At 100 ms the run takes thousands of samples; far fewer means the checker was blind.
    assert rep["samples"] >= 5 * rep["duration_s"], (rep["samples"], rep["duration_s"])
    assert rep["headroom_used_fault_free"]["min"] >= 0.9, rep["headroom_used_fault_free"]
    ops = rep["operations"]
    assert ops.get("create", {}).get("admitted", 0) > 0 and ops.get("fill", {}).get("admitted")
