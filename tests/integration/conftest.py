"""pytest fixtures: one 3-broker KRaft cluster per session, with a kadmit sidecar per broker.

Environment:
  KADMIT_BIN              kadmit binary (default build/kadmit under the repo root). Tests fail,
                          not skip, when it is missing.
  KADMIT_TEST_PORT_BASE   offset added to every port (default 0).
  KADMIT_TEST_DIR         where to put the cluster (default: a fresh temp dir). The directory is
                          removed after a passing session and kept (and printed) after a failure.

The modules that test one sidecar's own behaviour run their sidecars with the cluster-wide ledger
off (KADMIT_LEDGER=off, inherited by every kadmit the suite starts); the cluster-wide modules start
theirs with `--ledger on`, which wins over the environment.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The cluster harness (kafka_cluster, kafka_wire) belongs to scripts/, shared with the benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "harness"))
os.environ.setdefault("KADMIT_LEDGER", "off")
# splice(2) ships off by default (with it, test_memory_bound's policy case lost a consumer's
# connection in 1 of 3 runs), so every kadmit the tests start turns it on unless told otherwise:
# it is exercised against Kafka throughout, and test_memory_bound runs what ships.
os.environ.setdefault("KADMIT_SPLICE", "auto")

from kafka_cluster import KafkaCluster, Sidecars, ensure_kafka, kadmit_bin  # noqa: E402

_STATE: dict = {"cluster": None, "sidecars": None, "failed": False}

DISRUPTIVE_ORDER = ("test_broker_restart", "test_kadmit_restart")
# What CI runs on the release binary besides the matrix (the whole suite runs under ASan):
# what only the shipped binary can show (memory bound, the container's runtime) and a plain
# round trip. scripts/test.sh selects them with -m release.
RELEASE_MODULES = ("test_memory_bound", "test_container_runtime", "test_produce_consume_roundtrip")


def pytest_configure(config):
    config.addinivalue_line("markers", "disruptive: restarts brokers or sidecars; runs last")
    config.addinivalue_line("markers", "matrix: the broker and client matrix (other Kafka versions "
                            "and clients); scripts/test.sh runs it in its own stage")
    config.addinivalue_line("markers", "release: also run against the release binary in CI "
                            "(RELEASE_MODULES, or marked in the module)")
    config.addinivalue_line("markers", "release_only: CI runs it on the release binary only "
                            "(the demo: the README's first command, as a new user runs it)")


def pytest_collection_modifyitems(session, config, items):
    """Tests that restart brokers or sidecars run after the others."""
    def rank(item):
        mod = item.module.__name__.rsplit(".", 1)[-1]
        return DISRUPTIVE_ORDER.index(mod) + 1 if mod in DISRUPTIVE_ORDER else 0
    items.sort(key=rank)
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in RELEASE_MODULES:
            item.add_marker(pytest.mark.release)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        _STATE["failed"] = True
        c, s = _STATE["cluster"], _STATE["sidecars"]
        if c is not None:
            rep.sections.append(("kafka broker logs (tail)", c.diagnostics(25)))
            rep.sections.append(("cluster dir (kept)", str(c.dir)))
        if s is not None:
            rep.sections.append(("kadmit sidecar logs (tail)", s.diagnostics(25)))


@pytest.fixture(scope="session")
def kafka_home() -> Path:
    return ensure_kafka()


@pytest.fixture(scope="session")
def cluster(kafka_home):
    """The running 3-broker cluster; clients use cluster.bootstrap (the kadmit sidecars)."""
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary}: build it (cmake) or set KADMIT_BIN",
                    pytrace=False)
    if os.environ.get("KADMIT_TEST_DIR"):
        d = Path(os.environ["KADMIT_TEST_DIR"]).resolve()
        if d.exists() and any(d.iterdir()):
            if not (d / "cluster.json").exists():  # never wipe a directory that is not ours
                pytest.fail(f"KADMIT_TEST_DIR {d} is not empty and holds no test cluster",
                            pytrace=False)
            shutil.rmtree(d)
        d.mkdir(parents=True, exist_ok=True)
    else:
        d = Path(tempfile.mkdtemp(prefix="kadmit-it-"))
    c = KafkaCluster(d, brokers=3)
    sc = Sidecars(c, binary)
    _STATE["cluster"], _STATE["sidecars"] = c, sc
    try:
        c.start()
        sc.start()
    except BaseException:
        sys.stderr.write(c.diagnostics(60) + "\n" + sc.diagnostics(60) + "\n")
        sc.stop()
        c.stop()
        _STATE["failed"] = True
        sys.stderr.write(f"cluster dir kept: {d}\n")
        raise
    c.sidecars = sc
    atexit.register(_emergency_stop, c, sc)  # e.g. pytest killed by a second Ctrl-C
    yield c
    sc.stop()
    c.stop()
    problems = [p for s in sc.items for p in s.problems(expect_alive=False)]
    if problems or _STATE["failed"]:
        sys.stderr.write(f"\nkadmit integration: cluster dir kept: {d}\n")
    else:
        shutil.rmtree(d, ignore_errors=True)
    if problems:
        pytest.fail("kadmit sidecar problems at shutdown:\n" + "\n".join(problems), pytrace=False)


def _emergency_stop(c: KafkaCluster, sc: Sidecars) -> None:
    for s in sc.items:
        s.proc.kill()
    for n in c.nodes:
        n.proc.kill()


def _dead_brokers(c: KafkaCluster) -> list[str]:
    return [f"broker {n.id} is not running (exit {n.proc.returncode()})"
            for n in c.nodes if not n.proc.alive()]


@pytest.fixture(autouse=True)
def sidecars_healthy(request):
    """Before each test: the brokers run (else fail at once, not after client timeouts).
    After each test: brokers and sidecars still run, no sanitizer report in kadmit's logs."""
    uses = "cluster" in request.fixturenames
    c = _STATE["cluster"]
    if uses and c is not None and _dead_brokers(c):
        pytest.fail("the test cluster is down: " + "; ".join(_dead_brokers(c)), pytrace=False)
    yield
    if uses and _STATE["sidecars"] is not None:
        dead = _dead_brokers(_STATE["cluster"])
        if dead:
            raise AssertionError("; ".join(dead) + "\n" + _STATE["cluster"].diagnostics(40))
        _STATE["sidecars"].check()


@pytest.fixture
def topic_name(request) -> str:
    return f"{request.node.name.replace('[', '-').replace(']', '')[:60]}-{uuid.uuid4().hex[:6]}"
