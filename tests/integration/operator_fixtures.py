"""What the operator-facing tests (test_prometheus.py, test_status_page.py) share: a KRaft
cluster of their own with one policy-enforcing sidecar per broker, started and torn down the
way every module's own cluster is (kafka_cluster.own_cluster)."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import pytest

import clients
from admin_client import spawn_sidecar, wait_ready
from kafka_cluster import KafkaCluster, Sidecars, kadmit_bin, own_cluster, port_base, port_open

HERE = Path(__file__).resolve().parent
TOKEN = "operator-test-token"


@contextlib.contextmanager
def enforcing_cluster(request, label: str, offset: int, policy: dict, brokers: int = 1,
                      extra_ports: tuple[int, ...] = (), sidecar_args: tuple[str, ...] = ()):
    """Yields (dir, cluster, sidecars) once every sidecar is ready. extra_ports are offsets
    from node 1's admin port that the module's own servers will use; they must be free too."""
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"no kadmit binary at {binary}: build it or set KADMIT_BIN", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    d = Path(tempfile.mkdtemp(prefix=f"kadmit-{label}-"))
    c = KafkaCluster(d, brokers=brokers, port_base_=port_base() + offset)
    sc = Sidecars(c, binary)
    ports = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port)]
    ports += [c.node(1).admin_port + x for x in extra_ports]
    busy = [p for p in ports if port_open(p)]
    if busy:
        pytest.fail(f"ports {busy} are in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    (d / "policy.json").write_text(json.dumps(policy))
    (d / "admin.token").write_text(TOKEN + "\n")
    with own_cluster(d, c, sc, f"{label} integration", request):
        c.start()
        for n in c.nodes:
            spawn_sidecar(sc[n.id], d / "policy.json", d / "admin.token", *sidecar_args)
        for n in c.nodes:
            wait_ready(n.admin_port)
        yield d, c, sc
