"""The README's first command, `scripts/run.sh`, as a new user runs it: it starts a 3-broker KRaft
cluster with a sidecar per broker, creates a topic through kadmit (admitted) and then one that
exceeds max.broker.partitions (rejected with KIP-578's message). The test checks both, and that
the rejection's "current" figure of every broker is the true count of replicas the brokers
themselves report (internal topics and the topic just created through whichever sidecar
included), then `scripts/run.sh stop`.

The demo runs in a directory of its own (KADMIT_DEMO_DIR) on ports $KADMIT_TEST_PORT_BASE + 460.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from kafka_cluster import KafkaCluster, kadmit_bin, port_base, port_open  # noqa: E402

# CI runs the demo once, on the release binary the README's command uses (scripts/test.sh).
pytestmark = pytest.mark.release_only

OFFSET = 460
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit on brokers"
CONCERN = re.compile(r"(\d+) \(limit (\d+), current (\d+), projected (\d+)\)")


def run_demo(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts" / "run.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def true_replica_counts(cluster: KafkaCluster) -> dict[int, int]:
    """Replicas per broker as the brokers report them (their own listeners, not kadmit)."""
    out = clients.text(clients.topics(cluster.direct_bootstrap, "--describe"))
    counts: collections.Counter = collections.Counter()
    for m in re.finditer(r"Replicas: ([\d,]+)", out):
        counts.update(int(b) for b in m.group(1).split(","))
    return dict(counts)


@pytest.fixture(scope="module")
def demo():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-demo-")) / "state"
    env = dict(os.environ, KADMIT_BIN=str(binary), KADMIT_DEMO_DIR=str(d),
               KADMIT_TEST_PORT_BASE=str(port_base() + OFFSET))
    # As a user runs it: the suite's KADMIT_LEDGER=off (conftest) is not the demo's setting;
    # the demo's sidecars decide through the cluster-wide ledger, as kadmit does by default.
    env.pop("KADMIT_LEDGER", None)
    cluster = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET)
    busy = [p for n in cluster.nodes for p in (n.sidecar_port, n.client_port, n.admin_port)
            if port_open(p)]
    if busy:
        pytest.fail(f"ports {busy} are in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    try:
        p = run_demo(env)
        yield p, cluster
    finally:
        stopped = run_demo(env, "stop", timeout=120)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    shutil.rmtree(d.parent, ignore_errors=True)


def test_demo_admits_a_create_and_rejects_the_oversized_one_with_the_message(demo):
    p, _ = demo
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "Created topic kadmit-demo." in out, out
    assert REJECT in out, out
    # The rejected topic does not exist: the broker never saw the request.
    assert "Created topic kadmit-demo-too-big" not in out, out


def test_demo_rejection_shows_the_true_current_counts(demo):
    p, cluster = demo
    line = next(ln for ln in p.stdout.splitlines() if REJECT in ln)
    shown = {int(b): (int(limit), int(cur), int(proj))
             for b, limit, cur, proj in CONCERN.findall(line)}
    assert set(shown) == {1, 2, 3}, line
    truth = true_replica_counts(cluster)
    # kadmit-demo (3 x 3 replicas) and kadmit's own topics: every broker holds replicas.
    assert all(truth.get(b, 0) >= 3 for b in (1, 2, 3)), truth
    for b, (limit, current, projected) in shown.items():
        assert limit == 100, line
        assert current == truth[b], (b, line, truth)
        assert projected == current + 200, line
