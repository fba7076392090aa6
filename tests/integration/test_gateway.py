"""Gateway mode (docs/gateway.md): kadmit in front of a cluster it may not reconfigure.

Three unmodified brokers listen and advertise on 127.0.0.1 in the root namespace. Three kadmit
gateways (`--mode gateway --gateway-port-base`, instance k on ports +100k) listen on the host end
of a veth pair; every client runs inside the namespace kgw-gw, whose only route is to that veth:
a broker address that leaked into a response could not be reached from there. The gateways
share one --policy file, the ledger and the limits topic (`--ledger on`, one cluster secret).

Clients: kcat, confluent-kafka (tests/integration/gateway_ns_client.py), and the Java
AdminClient, producer and consumer (classic group and KIP-848 `group.protocol=consumer`) and
transactions (tests/integration/java/GatewayClient.java). Limit checks count the replicas on
the brokers themselves (their DIRECT listener, from the root namespace), never through kadmit.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 500. Needs root (network namespaces).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from admin_client import get_json  # noqa: E402
from gateway_env import ClientNetns, Gateway, GatewayCluster, broker_peers, start_cluster  # noqa: E402
from kafka_cluster import HOST, kadmit_bin, port_base, port_open  # noqa: E402

OFFSET = 500
GATEWAYS = 3
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
WILL_EXCEED = 88
POLICY_BASE = {"metadata.refresh.interval.ms": 1000, "metadata.max.staleness.ms": 20000,
               "metadata.refresh.before.decision.ms": 500}
NS_CLIENT = HERE / "gateway_ns_client.py"


def uniq(prefix: str) -> str:
    return f"gw-{prefix}-{uuid.uuid4().hex[:8]}"


class GW:
    def __init__(self, d: Path, c: GatewayCluster, ns: ClientNetns):
        self.d, self.c, self.ns = d, c, ns
        self.policy_file = d / "policy.json"
        self.gateways: list[Gateway] = []
        self.java: Path | None = None

    # -- clients inside the namespace
    def kcat(self, *args: str, input_: str | None = None, timeout: float = 60) -> str:
        p = self.ns.run([clients.KCAT, *args], input=input_, timeout=timeout)
        assert p.returncode == 0, f"kcat {args}: {p.stderr[-2000:]}"
        return p.stdout

    def rdk(self, *args: str, timeout: float = 150) -> dict:
        p = self.ns.run(["python3", str(NS_CLIENT), *args], timeout=timeout)
        assert p.returncode == 0, f"{args}: {p.stdout[-2000:]} {p.stderr[-3000:]}"
        return json.loads(p.stdout.strip().splitlines()[-1])

    def java_client(self, *args: str, timeout: float = 150) -> list[str]:
        argv = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp",
                f"{self.java}:{self.c.home}/libs/*", "-Dlog4j2.level=off", "GatewayClient", *args]
        p = self.ns.run(argv, timeout=timeout)
        assert p.returncode == 0, f"GatewayClient {args}: {p.stdout[-2000:]} {p.stderr[-3000:]}"
        return p.stdout.splitlines()

    def create(self, g: int, name: str, partitions: int = 1, rf: int = 3) -> tuple[int, str | None]:
        code, msg = self.rdk("create", self.gateways[g].bootstrap, f"{name}:{partitions}:{rf}")[name]
        return code, msg

    # -- the brokers' own truth (DIRECT listener, root namespace)
    def direct_metadata(self, topics: list[str] | None = None) -> dict:
        for n in self.c.nodes:
            if n.proc.alive():
                return kafka_wire.metadata(HOST, n.direct_port, timeout=10, topics=topics)
        raise AssertionError("no broker runs")

    def counts(self) -> dict[int, int]:
        md = self.direct_metadata()
        hosted = Counter({b[0]: 0 for b in md["brokers"]})
        hosted.update(r for t in md["topics"] for p in t["partitions"] for r in p["replicas"])
        return dict(hosted)

    def exists(self, topic: str) -> bool:
        (t,) = self.direct_metadata([topic])["topics"]
        return t["error"] == 0 and bool(t["partitions"])

    def wait_topics(self, names: list[str], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        pending = list(names)
        while pending:
            pending = [n for n in pending if not self.exists(n)]
            assert time.monotonic() < deadline or not pending, f"topics not created: {pending}"
            if pending:
                time.sleep(0.2)

    # -- limits, on every gateway
    def admin_brokers(self, g: Gateway) -> dict[int, dict]:
        status, doc = get_json(g.admin_port, "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}

    def write_policy(self, limits: dict[int, int]) -> None:
        policy = dict(POLICY_BASE, **{"max.broker.partitions": max(limits.values()),
                                      "brokers": {str(b): {"max.broker.partitions": n}
                                                  for b, n in limits.items()}})
        tmp = self.policy_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(policy))
        tmp.replace(self.policy_file)

    def settle(self, timeout: float = 45.0) -> dict[int, int]:
        deadline = time.monotonic() + timeout
        while True:
            counts = self.counts()
            views = [self.admin_brokers(g) for g in self.gateways]
            if all({b: v["partitions"] for b, v in view.items()} == counts
                   and all(v["reserved"] == 0 for v in view.values()) for view in views):
                return counts
            assert time.monotonic() < deadline, f"gateways never settled: {counts} {views}"
            time.sleep(0.2)

    def roomy(self) -> None:
        """Limits out of reach again (after a test that set a headroom)."""
        limits = {b: 100000 for b in (1, 2, 3)}
        self.write_policy(limits)
        self.wait_limits(limits)

    def wait_limits(self, limits: dict[int, int]) -> None:
        deadline = time.monotonic() + 15
        for g in self.gateways:
            while {b: v["limit"] for b, v in self.admin_brokers(g).items()} != limits:
                assert time.monotonic() < deadline, f"{g.name} did not reload the policy"
                time.sleep(0.1)

    def set_headroom(self, headroom: int) -> dict[int, int]:
        counts = self.settle()
        limits = {b: n + headroom for b, n in counts.items()}
        self.write_policy(limits)
        self.wait_limits(limits)
        return limits


@pytest.fixture(scope="module")
def gw(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    if shutil.which("ip") is None:
        pytest.fail("the gateway tests need iproute2 (ip netns) and root", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-gw-"))
    base = port_base() + OFFSET
    c = GatewayCluster(d, brokers=3, port_base_=base)
    busy = [p for n in c.nodes for p in (n.client_port, n.direct_port) if port_open(p)]
    if busy:
        pytest.fail(f"ports {busy} are already in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    ns = ClientNetns("gw", 21)
    e = GW(d, c, ns)
    failed = True
    try:
        ns.create()
        with ThreadPoolExecutor(2) as ex:  # the JVMs start while javac runs
            java = ex.submit(clients.run, ["javac", "-nowarn", "-cp", f"{c.home}/libs/*", "-d",
                                           str(d / "java"), str(HERE / "java" / "GatewayClient.java")],
                             180)
            start_cluster(c)
            java.result()
        e.java = d / "java"
        e.write_policy({b: 100000 for b in (1, 2, 3)})
        for k in range(GATEWAYS):
            e.gateways.append(Gateway(binary, c, d, ns.host_ip, instance=k, port_base_=base,
                                      extra=("--policy", str(e.policy_file), "--ledger", "on",
                                             "--ledger-timeout-ms", "2000",
                                             "--ledger-intent-ttl-ms", "30000")))
        for g in e.gateways:
            g.start()
        # Every gateway decides once the ledger is read: one create through each.
        deadline = time.monotonic() + 90
        for k in range(GATEWAYS):
            while e.create(k, uniq(f"warmup{k}"))[0] != 0:
                assert time.monotonic() < deadline, f"gateway {k} never admits"
                time.sleep(0.5)
        before = request.session.testsfailed
        yield e
        failed = request.session.testsfailed > before
    finally:
        codes = {g.name: g.stop() for g in e.gateways}
        c.stop()
        ns.delete()
        if failed:
            sys.stderr.write(f"\ngateway: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)
    # SIGTERM drains: every gateway exits 0 (listeners, sessions and its metadata client closed).
    assert all(rc == 0 for rc in codes.values()), codes


@pytest.fixture(autouse=True)
def _gateways_alive(gw):
    yield
    for g in gw.gateways:
        assert g.alive(), f"{g.name} exited:\n{g.log_text()[-3000:]}"
        bad = [l for l in g.log_text().splitlines() if "Sanitizer" in l or "runtime error" in l]
        assert not bad, bad


# --- 1. the layout: clients reach kadmit only ---------------------------------------------------

def test_clients_in_the_namespace_cannot_reach_the_brokers(gw: GW):
    """The premise of every other test: from the namespace, no broker port answers, on the
    brokers' own address or on the veth's; the gateway's ports do."""
    for n in gw.c.nodes:
        for host in (HOST, gw.ns.host_ip):
            assert not gw.ns.can_connect(host, n.client_port), (host, n.client_port)
    g = gw.gateways[0]
    assert gw.ns.can_connect(g.listen_ip, g.bootstrap_port)
    for n in gw.c.nodes:
        assert gw.ns.can_connect(g.listen_ip, g.broker_port(n.id))


def test_metadata_names_each_gateway_never_a_broker(gw: GW):
    """kcat -L through each gateway: every broker at that gateway's host and its port for the
    broker's id (base + id), the brokers' own 127.0.0.1 ports nowhere."""
    for g in gw.gateways:
        out = gw.kcat("-b", g.bootstrap, "-L", "-m", "20")
        for n in gw.c.nodes:
            assert f"broker {n.id} at {g.listen_ip}:{g.broker_port(n.id)}" in out, out
            assert str(n.client_port) not in out, out
        m = g.metrics()
        assert m["kadmit_gateway_brokers"] == 3
        assert m['kadmit_gateway_responses_total{result="rewritten"}'] > 0


def test_kcat_produce_and_consume_through_the_gateway(gw: GW):
    topic = uniq("kcat")
    assert gw.create(0, topic, 3, 3) == (0, None)
    lines = [f"kcat-{i}" for i in range(200)]
    gw.kcat("-b", gw.gateways[0].bootstrap, "-P", "-t", topic, input_="\n".join(lines) + "\n")
    out = gw.kcat("-b", gw.gateways[1].bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                  "-q", timeout=60)
    assert sorted(out.split()) == sorted(lines)


def test_only_kadmit_connects_to_the_broker_ports(gw: GW):
    """ss: every connection to a broker's client listener comes from a gateway process (their
    sessions, metadata and ledger clients), none from a client; the namespace's address is no
    peer of any broker port."""
    topic = uniq("ss")
    assert gw.create(1, topic) == (0, None)
    gw.kcat("-b", gw.gateways[1].bootstrap, "-P", "-t", topic, input_="a\nb\n")
    client_ports = {n.client_port for n in gw.c.nodes}
    peers = broker_peers(gw.c.broker_ports())
    assert not [p for p in peers if gw.ns.ns_ip in p[2]], peers
    pids = {g.p.pid for g in gw.gateways}
    out = subprocess.run(["ss", "-Htnp", "state", "established"], capture_output=True,
                         text=True, check=True).stdout
    # Recv-Q Send-Q Local Peer Process: the client ends of connections to a client listener.
    to_client_port = [line for line in out.splitlines()
                      if len(line.split()) >= 4
                      and int(line.split()[3].rsplit(":", 1)[1]) in client_ports]
    assert to_client_port, "no connection to any broker client port: the gateways forward nothing?"
    for line in to_client_port:
        assert any(f"pid={pid}," in line for pid in pids), line


# --- 2. admission: one budget over three gateways -----------------------------------------------

def test_java_admin_create_and_refusal_with_88(gw: GW):
    """The Java AdminClient in the namespace: a topic within the headroom is created; one that
    would exceed it is refused with Kafka error 88 and kadmit's message, and not created."""
    gw.set_headroom(3)
    ok, big = uniq("jok"), uniq("jbig")
    (line,) = [l for l in gw.java_client("create", gw.gateways[2].bootstrap, ok, "1", "3")
               if l.startswith("RESULT")]
    assert line == "RESULT OK"
    (line,) = [l for l in gw.java_client("create", gw.gateways[2].bootstrap, big, "3", "3")
               if l.startswith("RESULT")]
    assert "code=88" in line or str(WILL_EXCEED) in line, line
    assert REJECT in line, line
    gw.wait_topics([ok])
    assert not gw.exists(big)


def test_rotating_creates_over_three_gateways_admit_exactly_the_headroom(gw: GW):
    """RF-3 creates through gateways 0, 1, 2, 0, ... with 10 replicas of headroom per broker:
    ten fit, the next two are refused (88) by whichever gateway judges them."""
    limits = gw.set_headroom(10)
    names = [uniq(f"rot{k}") for k in range(12)]
    results = [gw.create(k % GATEWAYS, n) for k, n in enumerate(names)]
    assert [code for code, _ in results[:10]] == [0] * 10, results
    for code, msg in results[10:]:
        assert code == WILL_EXCEED and REJECT in (msg or ""), (code, msg)
    gw.wait_topics(names[:10])
    assert not any(gw.exists(n) for n in names[10:])
    assert gw.counts() == limits


def test_concurrent_creates_over_three_gateways_never_overshoot(gw: GW):
    """30 RF-3 creates at once, 10 through each gateway, against 12 replicas of headroom per
    broker: no broker ends over its limit, and the headroom is used (at least 90%)."""
    headroom = 12
    limits = gw.set_headroom(headroom)
    names = [uniq(f"cc{i}") for i in range(30)]
    barrier = threading.Barrier(len(names))

    def one(i: int) -> tuple[int, str | None]:
        barrier.wait(60)
        return gw.create(i % GATEWAYS, names[i])

    with ThreadPoolExecutor(len(names)) as ex:
        results = list(ex.map(one, range(len(names))))
    ok = [n for n, (code, _) in zip(names, results) if code == 0]
    for code, msg in results:
        assert code == 0 or code == WILL_EXCEED and REJECT in (msg or ""), (code, msg)
    gw.wait_topics(ok)
    counts = gw.counts()
    assert all(counts[b] <= limits[b] for b in limits), (counts, limits)
    assert len(ok) >= 0.9 * headroom, f"only {len(ok)} of {headroom} admitted: {results}"
    assert all(counts[b] == limits[b] - headroom + len(ok) for b in limits), (counts, limits)


# --- 3. every client and coordinator through the gateway ----------------------------------------

@pytest.fixture
def roomy(gw: GW):
    gw.roomy()

def test_java_describe_cluster_names_the_gateway(gw: GW):
    """DescribeCluster (AdminClient.describeCluster) is rewritten too."""
    g = gw.gateways[1]
    nodes = [l.split() for l in gw.java_client("describe", g.bootstrap) if l.startswith("NODE ")]
    assert sorted((int(i), hp) for _, i, hp in nodes) == [
        (n.id, f"{g.listen_ip}:{g.broker_port(n.id)}") for n in gw.c.nodes]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_producer_and_group_consumer(gw: GW, roomy, protocol: str):
    """The Java producer (acks=all) and a group consumer, classic or KIP-848: FindCoordinator
    and the consumer-group heartbeats go to the coordinator through its gateway port."""
    g = gw.gateways[0]
    topic = uniq(f"java-{protocol}")
    assert gw.create(0, topic, 3, 3) == (0, None)
    assert "PRODUCED 50" in gw.java_client("produce", g.bootstrap, topic, "50")
    out = gw.java_client("consume", g.bootstrap, topic, uniq("grp"), "50", protocol)
    assert "CONSUMED 50" in out, out


def test_java_transactions(gw: GW, roomy):
    """A transactional producer (FindCoordinator for the transaction coordinator,
    InitProducerId, AddPartitionsToTxn, EndTxn) commits one batch and aborts another; a
    read_committed consumer sees exactly the committed one."""
    g = gw.gateways[2]
    topic = uniq("txn")
    assert gw.create(2, topic, 1, 3) == (0, None)
    assert "COMMITTED 20" in gw.java_client("txn", g.bootstrap, topic, uniq("txid"), "20")
    out = gw.java_client("readcommitted", g.bootstrap, topic, uniq("grp"), "20")
    assert "CONSUMED 20" in out, out
    values = gw.kcat("-b", g.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                     "-X", "isolation.level=read_committed").split()
    assert sorted(values) == sorted(f"committed-{i}" for i in range(20)), values


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_kafka_producer_and_group_consumer(gw: GW, roomy, protocol: str):
    g = gw.gateways[1]
    topic = uniq(f"rdk-{protocol}")
    assert gw.create(1, topic, 3, 3) == (0, None)
    got = gw.rdk("roundtrip", g.bootstrap, topic, "100", uniq("grp"), protocol)
    assert got == {"produced": 100, "consumed": 100}, got


# --- 4. the cluster changes under the gateways (last: it takes a broker away) -------------------

HOLD_OPEN = """
import socket, struct, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
# ApiVersions v0, so the session is relaying to the broker before we wait
body = struct.pack(">hhih", 18, 0, 7, 2) + b"gw"
s.sendall(struct.pack(">i", len(body)) + body)
s.settimeout(120)
assert s.recv(4), "no answer"
print("READY", flush=True)
t0 = time.monotonic()
try:
    while s.recv(65536):
        pass
except OSError:
    pass
print(f"CLOSED {time.monotonic() - t0:.1f}", flush=True)
"""


def test_broker_that_leaves_loses_its_port_and_connections_then_rejoins(gw: GW):
    """Broker 3 freezes (SIGSTOP: its sockets stay open, no FIN) and is fenced: once kadmit's own
    view no longer lists it, every gateway closes broker 3's port and the client connections to
    it. It resumes (SIGCONT) and registers again: its port is served again without a restart,
    and clients produce to partitions it leads."""
    g = gw.gateways[0]
    node = gw.c.node(3)
    before = {x.name: x.metrics() for x in gw.gateways}
    holder = gw.ns.popen(["python3", "-c", HOLD_OPEN, g.listen_ip, str(g.broker_port(3))],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "READY"
        pid = node.proc.pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            line = holder.stdout.readline().strip()  # the gateway closes it
            assert line.startswith("CLOSED"), line
            assert float(line.split()[1]) < 60, line
            for x in gw.gateways:
                deadline = time.monotonic() + 30
                while x.metrics()['kadmit_gateway_listeners_total{event="closed"}'] < \
                        before[x.name].get('kadmit_gateway_listeners_total{event="closed"}', 0) + 1:
                    assert time.monotonic() < deadline, f"{x.name} kept broker 3's port open"
                    time.sleep(0.2)
            assert not gw.ns.can_connect(g.listen_ip, g.broker_port(3))
            m = g.metrics()
            assert m['kadmit_gateway_connections_closed_total{reason="broker_left"}'] >= 1
            assert m["kadmit_gateway_brokers"] == 2
            out = gw.kcat("-b", g.bootstrap, "-L", "-m", "20")
            assert "broker 3 at" not in out, out
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        holder.kill()
        holder.wait()
    gw.c.wait_ready(90, nodes=[3])
    for x in gw.gateways:
        deadline = time.monotonic() + 60
        while not gw.ns.can_connect(x.listen_ip, x.broker_port(3)):
            assert time.monotonic() < deadline, f"{x.name} does not serve broker 3 again"
            time.sleep(0.5)
        assert x.metrics()["kadmit_gateway_brokers"] == 3
    gw.roomy()
    topic = uniq("rejoin")
    assert gw.create(0, topic, 6, 1) == (0, None)
    gw.wait_topics([topic])
    (t,) = gw.direct_metadata([topic])["topics"]
    assert 3 in {p["leader"] for p in t["partitions"]}, t
    lines = [f"r{i}" for i in range(60)]
    gw.kcat("-b", g.bootstrap, "-P", "-t", topic, input_="\n".join(lines) + "\n")
    out = gw.kcat("-b", g.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert sorted(out.split()) == sorted(lines)
