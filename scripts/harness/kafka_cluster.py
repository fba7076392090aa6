#!/usr/bin/env python3
"""A real Apache Kafka KRaft cluster on loopback, with one kadmit sidecar per broker.

The harness that scripts/run.sh, the benchmarks (bench/) and the integration tests share (the
tests' conftest.py puts this directory on sys.path). Pure Python, standard library only. From
the command line:

    python3 scripts/harness/kafka_cluster.py start  --brokers 3 --dir DIR [--sidecars] [--kafka-version V]
    python3 scripts/harness/kafka_cluster.py status --dir DIR
    python3 scripts/harness/kafka_cluster.py stop   --dir DIR

Topology (ARCHITECTURE.md section 6), node i (1-based), every port plus
$KADMIT_TEST_PORT_BASE (default 0):

    CLIENT      bound 127.0.0.1:1909i, advertised at the sidecar 127.0.0.1:909i
    DIRECT      bound and advertised 127.0.0.1:2909i (bypasses kadmit)
    INTERNAL    127.0.0.1:1709i (inter-broker)
    CONTROLLER  127.0.0.1:2709i (every node is a voter; combined mode)
    ADMIN       127.0.0.1:1509i (the sidecar's admin HTTP API)
Every fixed port stays below Linux's ephemeral range (32768 and up by default),
so an outgoing connection elsewhere on the machine can never be holding one
when a broker starts.

Other shapes (KafkaCluster arguments): controllers=K adds K process.roles=controller nodes
(ids n+1.., CONTROLLER 2709(n+k)) and makes the brokers process.roles=broker; zookeeper=True
(Kafka 3.x) runs the brokers in ZooKeeper mode against a ZooKeeper on 12090; racks sets
broker.rack. version= or home= picks the Kafka (tests/kafka/fetch.sh VERSION).

The sidecar is `$KADMIT_BIN --listen 127.0.0.1:909i --upstream 127.0.0.1:1909i
--admin 127.0.0.1:1509i`.
Processes started by the CLI outlive it; their pids are kept in DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kafka_wire  # noqa: E402

REPO_ROOT = HERE.parent.parent
KAFKA_BIN = REPO_ROOT / "tests" / "kafka" / "bin"
FETCH = REPO_ROOT / "tests" / "kafka" / "fetch.sh"
HOST = "127.0.0.1"

SANITIZER_PATTERNS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def port_base() -> int:
    return int(os.environ.get("KADMIT_TEST_PORT_BASE", "0"))


def kafka_home(version: str | None = None) -> Path:
    """Where tests/kafka/fetch.sh puts a Kafka version (default: $KAFKA_HOME, else the pin)."""
    if version is None and os.environ.get("KAFKA_HOME"):
        return Path(os.environ["KAFKA_HOME"])
    out = subprocess.run([str(FETCH.parent / "kafka-home"), *([version] if version else [])],
                         check=True, stdout=subprocess.PIPE, text=True)
    return Path(out.stdout.strip())


def ensure_kafka(version: str | None = None) -> Path:
    """Run tests/kafka/fetch.sh for a version (default the pin; idempotent, quick when the
    jars are cached) and return that version's Kafka home."""
    out = subprocess.run(["bash", str(FETCH), *([version] if version else [])], check=True,
                         stdout=subprocess.PIPE, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def pinned_version() -> str:
    """The Kafka version pinned in tests/kafka/pom.xml."""
    import re
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", (FETCH.parent / "pom.xml").read_text())
    if not m:
        raise RuntimeError("no <kafka.version> in tests/kafka/pom.xml")
    return m.group(1)


def home_version(home: Path) -> str | None:
    """The Kafka version of a fetched home, read from its kafka_2.13 jar's name."""
    for jar in (Path(home) / "libs").glob("kafka_2.13-*.jar"):
        v = jar.name[len("kafka_2.13-"):-len(".jar")]
        if v and v[0].isdigit() and "-" not in v:
            return v
    return None


def kadmit_bin() -> Path:
    """$KADMIT_BIN (relative paths from the repository root), else build/kadmit, else
    build/proxy/kadmit (where CMake puts it unless told otherwise)."""
    if os.environ.get("KADMIT_BIN"):
        p = Path(os.environ["KADMIT_BIN"])
        return p if p.is_absolute() else (REPO_ROOT / p)
    default = REPO_ROOT / "build" / "kadmit"
    fallback = REPO_ROOT / "build" / "proxy" / "kadmit"
    return fallback if not default.exists() and fallback.exists() else default


def tool(name: str) -> str:
    """Path of a Kafka CLI wrapper in tests/kafka/bin."""
    return str(KAFKA_BIN / name)



@contextlib.contextmanager
def own_cluster(d: Path, c: "KafkaCluster", sc: "Sidecars", label: str, request):
    """The teardown of a test module's own cluster, around its fixture's yield: stops the
    sidecars and the brokers, keeps the directory `d` (and says where) when a test of the
    module failed or a sidecar had problems, removes it otherwise, and fails on sidecar
    problems (an exit, a sanitizer report)."""
    failed = True
    try:
        before = request.session.testsfailed
        yield
        failed = request.session.testsfailed > before
    finally:
        sc.stop()
        c.stop()
        problems = [p for s in sc.items for p in s.problems(expect_alive=False)]
        if problems or failed:
            sys.stderr.write(f"\n{label}: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)
        assert not problems, "kadmit sidecar problems:\n" + "\n".join(problems)

def port_open(port: int, host: str = HOST, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read().decode(errors="replace")
    except OSError as e:
        return f"<{path}: {e}>"
    return "\n".join(data.splitlines()[-lines:])


def _pid_alive(pid: int, marker: str) -> bool:
    """True when pid runs and its command line mentions marker (guards pid reuse)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().decode(errors="replace")
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("Z"):
                return False
    except OSError:
        return False
    return marker in cmd


# Every sidecar the harness starts signs and checks kadmit's own records, as a production
# cluster should: the same secret for all of them, unless a test passes its own
# (--cluster-secret-file, or KADMIT_CLUSTER_SECRET in env; "" means none).
HARNESS_CLUSTER_SECRET = "kadmit-harness-cluster-secret-7f3a9c0e5b1d4e2f8a6c"


def own_record_mac(kind: str, key: bytes | None, value: bytes | None,
                   secret: str = HARNESS_CLUSTER_SECRET) -> bytes:
    """The kadmit-mac header of a record of kadmit's own topics (kind "ledger" or "limits"),
    as a sidecar holding `secret` signs it: HMAC-SHA256 over the domain tag, the key and the
    value, each prefixed by its length as 8 big-endian bytes (null: 2^64-1)."""
    import hashlib
    import hmac
    import struct

    def part(b: bytes | None) -> bytes:
        return struct.pack(">Q", 2**64 - 1) if b is None else struct.pack(">Q", len(b)) + b
    msg = part(f"kadmit-{kind}-v1".encode()) + part(key) + part(value)
    return hmac.new(secret.encode(), msg, hashlib.sha256).digest()


def with_cluster_secret(argv: list[str], env: dict | None) -> dict:
    """env (default: this process's) with KADMIT_CLUSTER_SECRET set for a kadmit started with
    argv, unless it already has a secret of its own."""
    out = dict(os.environ if env is None else env)
    if ("--cluster-secret-file" not in argv and "KADMIT_CLUSTER_SECRET" not in out
            and "KADMIT_CLUSTER_SECRET_FILE" not in out):
        out["KADMIT_CLUSTER_SECRET"] = HARNESS_CLUSTER_SECRET
    return out


class Proc:
    """A child process recorded by a pid file, so another process can stop it."""

    def __init__(self, name: str, pidfile: Path, logfile: Path, marker: str):
        self.name = name
        self.pidfile = pidfile
        self.logfile = logfile
        self.marker = marker
        self.popen: subprocess.Popen | None = None

    def spawn(self, argv: list[str], env: dict | None = None) -> None:
        if self.alive():
            raise RuntimeError(f"{self.name} already running (pid {self.pid()})")
        if Path(argv[0]).name == "kadmit":
            env = with_cluster_secret(argv, env)
        log = open(self.logfile, "ab")
        log.write(f"\n=== {time.strftime('%H:%M:%S')} start: {' '.join(argv)}\n".encode())
        log.flush()
        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      env=env, start_new_session=True)
        log.close()
        self.pidfile.write_text(str(self.popen.pid))

    def pid(self) -> int | None:
        if self.popen is not None:  # our own child: no need for the file (it may be gone)
            return self.popen.pid
        try:
            return int(self.pidfile.read_text())
        except (OSError, ValueError):
            return None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        pid = self.pid()
        return pid is not None and _pid_alive(pid, self.marker)

    def returncode(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def signal(self, sig: int) -> None:
        pid = self.pid()
        if pid is not None and self.alive():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.05)
        return not self.alive()

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after timeout."""
        if not self.alive():
            self._reap()
            return
        self.signal(signal.SIGTERM)
        if not self.wait(timeout):
            self.signal(signal.SIGKILL)
            self.wait(10)
        self._reap()

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(10)
        self._reap()

    def _reap(self) -> None:
        if self.popen is not None:
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


class Node:
    def __init__(self, cluster: "KafkaCluster", node_id: int):
        b = cluster.port_base
        self.id = node_id
        self.dir = cluster.dir / f"node-{node_id}"
        self.client_port = 19090 + node_id + b
        self.sidecar_port = 9090 + node_id + b
        self.direct_port = 29090 + node_id + b
        self.internal_port = 17090 + node_id + b
        self.controller_port = 27090 + node_id + b
        self.admin_port = 15090 + node_id + b
        self.config = self.dir / "server.properties"
        self.log = self.dir / "broker.log"
        self.proc = Proc(f"broker {node_id}", self.dir / "broker.pid", self.log, str(self.config))


class ControllerNode(Node):
    """A KRaft node with process.roles=controller (separate-controller clusters): ids follow
    the brokers' (n+1, n+2, ...); only its CONTROLLER port is used."""

    def __init__(self, cluster: "KafkaCluster", node_id: int):
        super().__init__(cluster, node_id)
        self.dir = cluster.dir / f"controller-{node_id}"
        self.config = self.dir / "server.properties"
        self.log = self.dir / "controller.log"
        self.proc = Proc(f"controller {node_id}", self.dir / "controller.pid", self.log,
                         str(self.config))


class ZooKeeper:
    """A standalone ZooKeeper server for ZooKeeper-mode clusters (Kafka 3.x), started from the
    zookeeper jar that Maven Central serves with that Kafka (it is in the Kafka home's libs).
    Port 12090 + the cluster's port base."""

    def __init__(self, cluster: "KafkaCluster"):
        self.cluster = cluster
        self.port = 12090 + cluster.port_base
        self.dir = cluster.dir / "zookeeper"
        self.config = self.dir / "zookeeper.properties"
        self.log = self.dir / "zookeeper.log"
        self.proc = Proc("zookeeper", self.dir / "zookeeper.pid", self.log, str(self.config))

    @property
    def connect(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in {
            "dataDir": self.dir / "data", "clientPort": self.port, "clientPortAddress": HOST,
            "maxClientCnxns": 0, "admin.enableServer": "false", "tickTime": 500,
            "4lw.commands.whitelist": "ruok"}.items()))
        env = self.cluster.env(KAFKA_HEAP_OPTS="-Xms64m -Xmx256m",
                               KAFKA_LOG4J_OPTS="-Dlog4j2.configurationFile="
                               f"{self.cluster.home}/config/log4j2-broker.xml")
        self.proc.spawn([str(FETCH.parent / "kafka-run-class"),
                         "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(self.config)],
                        env=env)
        deadline = time.monotonic() + timeout
        while not self.ruok():
            if not self.proc.alive():
                raise RuntimeError(f"zookeeper exited at start:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"zookeeper not answering on {self.connect}")
            time.sleep(0.2)

    def ruok(self) -> bool:
        try:
            with socket.create_connection((HOST, self.port), timeout=1.0) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def stop(self, timeout: float = 15.0) -> None:
        self.proc.stop(timeout)


class KafkaCluster:
    def __init__(self, directory: Path | str, brokers: int = 3, port_base_: int | None = None,
                 heap: str = "-Xms256m -Xmx768m", version: str | None = None,
                 home: Path | str | None = None, controllers: int = 0, zookeeper: bool = False,
                 racks: list[str] | None = None):
        """version: a Kafka version fetched by tests/kafka/fetch.sh (fetched here when missing);
        home: a Kafka home to use as it is. Neither: $KAFKA_HOME, else the pin (as before).
        Every Kafka process of this cluster runs from that home (KAFKA_HOME in its env).

        The shape: by default every node is broker and controller (combined KRaft mode).
        controllers=K runs K nodes with process.roles=controller beside the brokers, which
        then have process.roles=broker. zookeeper=True runs a ZooKeeper-mode cluster (Kafka
        3.x only) with its own ZooKeeper server. racks gives broker.rack per broker, in order."""
        if brokers not in (1, 3):
            raise ValueError("brokers must be 1 or 3")
        if zookeeper and controllers:
            raise ValueError("a ZooKeeper-mode cluster has no KRaft controllers")
        if racks is not None and len(racks) != brokers:
            raise ValueError("racks needs one rack per broker")
        self.dir = Path(directory).resolve()
        self.n = brokers
        self.port_base = port_base() if port_base_ is None else port_base_
        self.heap = heap
        self.nodes = [Node(self, i) for i in range(1, brokers + 1)]
        self.controller_nodes = [ControllerNode(self, brokers + i) for i in range(1, controllers + 1)]
        self.zookeeper = ZooKeeper(self) if zookeeper else None
        self.racks = racks
        if home is not None:
            self.home = Path(home)
        elif version is not None:
            self.home = kafka_home(version)
            if not (self.home / "libs").is_dir() or home_version(self.home) != version:
                self.home = ensure_kafka(version)
        else:
            self.home = kafka_home()
        self.version = version or home_version(self.home)
        self.format_args: list[str] = []  # extra kafka-storage format arguments (subclasses)

    # -- addresses
    @property
    def bootstrap(self) -> str:
        """The kadmit sidecars (what clients use)."""
        return ",".join(f"{HOST}:{n.sidecar_port}" for n in self.nodes)

    @property
    def direct_bootstrap(self) -> str:
        return ",".join(f"{HOST}:{n.direct_port}" for n in self.nodes)

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - 1]

    @property
    def mode(self) -> str:
        """combined, separate (KRaft controllers on their own nodes) or zookeeper."""
        if self.zookeeper is not None:
            return "zookeeper"
        return "separate" if self.controller_nodes else "combined"

    # -- setup
    def write_configs(self) -> None:
        voter_nodes = self.controller_nodes or self.nodes
        voters = ",".join(f"{n.id}@{HOST}:{n.controller_port}" for n in voter_nodes)
        for n in self.nodes:
            (n.dir / "data").mkdir(parents=True, exist_ok=True)
            props = {
                "process.roles": "broker,controller",
                "node.id": n.id,
                "controller.quorum.voters": voters,
                "listeners": (f"CLIENT://{HOST}:{n.client_port},DIRECT://{HOST}:{n.direct_port},"
                              f"INTERNAL://{HOST}:{n.internal_port},"
                              f"CONTROLLER://{HOST}:{n.controller_port}"),
                "advertised.listeners": (f"CLIENT://{HOST}:{n.sidecar_port},"
                                         f"DIRECT://{HOST}:{n.direct_port},"
                                         f"INTERNAL://{HOST}:{n.internal_port}"),
                "listener.security.protocol.map": ("CLIENT:PLAINTEXT,DIRECT:PLAINTEXT,"
                                                   "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"),
                "inter.broker.listener.name": "INTERNAL",
                "controller.listener.names": "CONTROLLER",
                "log.dirs": str(n.dir / "data"),
                "auto.create.topics.enable": "true",
                "num.partitions": 1,
                "default.replication.factor": min(3, self.n),
                "offsets.topic.replication.factor": self.n,
                "offsets.topic.num.partitions": 10,
                "transaction.state.log.replication.factor": self.n,
                "transaction.state.log.min.isr": 1,
                "transaction.state.log.num.partitions": 10,
                "group.initial.rebalance.delay.ms": 0,
                "num.network.threads": 2,
                "num.io.threads": 4,
                "num.recovery.threads.per.data.dir": 1,
                "log.segment.bytes": 256 * 1024 * 1024,
                "controlled.shutdown.enable": "true",
                "controller.quorum.election.timeout.ms": 1000,
                "controller.quorum.fetch.timeout.ms": 2000,
                "broker.heartbeat.interval.ms": 500,
                "broker.session.timeout.ms": 6000,
                "replica.lag.time.max.ms": 10000,
                "share.coordinator.state.topic.replication.factor": self.n,
                "share.coordinator.state.topic.min.isr": 1,
            }
            self._shape_broker_props(n, props)
            n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        for n in self.controller_nodes:  # a controller-only node: its listener and metadata log
            props = {"log.dirs": str(n.dir / "data"), "process.roles": "controller",
                     "listeners": f"CONTROLLER://{HOST}:{n.controller_port}",
                     "node.id": n.id, "controller.quorum.voters": voters,
                     "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                     "controller.listener.names": "CONTROLLER",
                     "controller.quorum.election.timeout.ms": 1000,
                     "controller.quorum.fetch.timeout.ms": 2000,
                     "broker.session.timeout.ms": 6000, "num.partitions": 1,
                     "default.replication.factor": min(3, self.n)}
            (n.dir / "data").mkdir(parents=True, exist_ok=True)
            n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _shape_broker_props(self, n: Node, props: dict) -> None:
        """Turn a combined-mode broker's properties into this cluster's shape."""
        if self.racks is not None:
            props["broker.rack"] = self.racks[n.id - 1]
        if self.mode == "combined":
            return
        # Neither shape has a controller listener on the broker.
        props["listeners"] = props["listeners"].rsplit(",CONTROLLER://", 1)[0]
        if self.mode == "separate":
            props["process.roles"] = "broker"
            return
        for k in ("process.roles", "node.id", "controller.quorum.voters",
                  "controller.listener.names", "controller.quorum.election.timeout.ms",
                  "controller.quorum.fetch.timeout.ms", "broker.heartbeat.interval.ms",
                  "broker.session.timeout.ms"):
            props.pop(k, None)
        props["listener.security.protocol.map"] = "CLIENT:PLAINTEXT,DIRECT:PLAINTEXT,INTERNAL:PLAINTEXT"
        props["broker.id"] = n.id
        props["zookeeper.connect"] = self.zookeeper.connect
        props["zookeeper.connection.timeout.ms"] = 30000
        props["zookeeper.session.timeout.ms"] = 18000

    def format(self) -> None:
        """Write configs and format every node's storage (in parallel)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.write_configs()
        cluster_id = kafka_wire_uuid()
        (self.dir / "cluster-id").write_text(cluster_id)

        def fmt(n: Node) -> None:
            with open(n.dir / "format.log", "wb") as log:
                subprocess.run([tool("kafka-storage"), "format", "--ignore-formatted",
                                "-t", cluster_id, "-c", str(n.config), *self.format_args],
                               stdout=log, stderr=subprocess.STDOUT, check=True, env=self.env())

        if self.zookeeper is None:  # ZooKeeper-mode brokers format nothing
            kraft = self.nodes + self.controller_nodes
            with ThreadPoolExecutor(len(kraft)) as ex:
                list(ex.map(fmt, kraft))
        (self.dir / "cluster.json").write_text(json.dumps(
            {"brokers": self.n, "port_base": self.port_base, "home": str(self.home)}))

    def env(self, **extra: str) -> dict:
        """The environment of this cluster's Kafka processes and tools: its own Kafka home."""
        return dict(os.environ, KAFKA_HOME=str(self.home), **extra)

    # -- lifecycle
    def start_node(self, node_id: int) -> None:
        n = self.node(node_id)
        self._spawn(n, self.heap)

    def _spawn(self, n: Node, heap: str) -> None:
        env = self.env(KAFKA_HEAP_OPTS=heap)
        env.pop("KAFKA_JVM_OPTS", None)
        env.pop("KAFKA_LOG4J_OPTS", None)
        n.proc.spawn([tool("kafka-server-start"), str(n.config)], env=env)

    def start(self, timeout: float = 120.0) -> None:
        for n in self.nodes:
            for port in (n.client_port, n.direct_port, n.internal_port, n.controller_port):
                if port_open(port):
                    raise RuntimeError(f"port {port} is already in use; another cluster running? "
                                       "(set KADMIT_TEST_PORT_BASE to move)")
        if not self.dir.joinpath("cluster-id").exists() or not all(
                (n.dir / "data" / "meta.properties").exists()
                for n in self.nodes + self.controller_nodes):
            self.format()
        if self.zookeeper is not None:
            self.zookeeper.start()
        for n in self.controller_nodes:
            self._spawn(n, "-Xms128m -Xmx384m")
        for n in self.nodes:
            self.start_node(n.id)
        self.wait_ready(timeout)

    def broker_ready(self, node_id: int) -> bool:
        """A broker answers Metadata on DIRECT with every broker registered, and CLIENT is open."""
        n = self.node(node_id)
        try:
            md = kafka_wire.metadata(HOST, n.direct_port, timeout=2.0)
        except (OSError, ConnectionError, ValueError):
            return False
        return len(md["brokers"]) == self.n and port_open(n.client_port)

    def wait_ready(self, timeout: float = 120.0, nodes: list[int] | None = None) -> None:
        ids = nodes or [n.id for n in self.nodes]
        deadline = time.monotonic() + timeout
        pending = set(ids)
        while pending:
            for i in sorted(pending):
                if not self.node(i).proc.alive():
                    raise RuntimeError(f"broker {i} exited during startup:\n"
                                       + tail(self.node(i).log, 60))
                if self.broker_ready(i):
                    pending.discard(i)
            if not pending:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"brokers {sorted(pending)} not ready after {timeout}s:\n"
                                   + self.diagnostics())
            time.sleep(0.25)

    def wait_topic_healthy(self, topic: str, timeout: float = 60.0) -> None:
        """Every partition of topic has a leader and a full ISR (seen on DIRECT)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                md = kafka_wire.metadata(HOST, self.nodes[0].direct_port, topics=[topic])
                t = md["topics"][0]
                if (t["error"] == 0 and t["partitions"]
                        and all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"])
                                for p in t["partitions"])):
                    return
            except (OSError, ConnectionError, IndexError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic} not healthy after {timeout}s")
            time.sleep(0.25)

    def wait_all_isr(self, timeout: float = 90.0) -> None:
        """Every partition of every topic has its full ISR (after a restart)."""
        deadline = time.monotonic() + timeout
        while True:
            ok = False
            try:
                md = kafka_wire.metadata(HOST, self.nodes[0].direct_port)
                ok = all(p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"])
                         for t in md["topics"] for p in t["partitions"])
            except (OSError, ConnectionError):
                pass
            if ok:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("ISR not complete after restart")
            time.sleep(0.5)

    def stop_node(self, node_id: int, timeout: float = 30.0) -> None:
        self.node(node_id).proc.stop(timeout)

    def kill_node(self, node_id: int) -> None:
        self.node(node_id).proc.kill()

    def restart_node(self, node_id: int, timeout: float = 90.0) -> None:
        self.stop_node(node_id)
        self.start_node(node_id)
        self.wait_ready(timeout, nodes=[node_id])

    def stop(self, timeout: float = 15.0) -> None:
        # Brokers first: their controlled shutdown needs the controllers (or ZooKeeper).
        with ThreadPoolExecutor(self.n) as ex:
            list(ex.map(lambda n: n.proc.stop(timeout), self.nodes))
        for n in self.controller_nodes:
            n.proc.stop(timeout)
        if self.zookeeper is not None:
            self.zookeeper.stop(timeout)

    def status(self) -> dict:
        return {n.id: {"pid": n.proc.pid() if n.proc.alive() else None,
                       "ready": n.proc.alive() and self.broker_ready(n.id)} for n in self.nodes}

    def diagnostics(self, lines: int = 30) -> str:
        out = []
        procs = [(f"broker {n.id}", n.proc, n.log) for n in self.nodes]
        procs += [(f"controller {n.id}", n.proc, n.log) for n in self.controller_nodes]
        if self.zookeeper is not None:
            procs.append(("zookeeper", self.zookeeper.proc, self.zookeeper.log))
        for label, proc, log in procs:
            out.append(f"--- {label} ({'alive' if proc.alive() else 'DOWN'}) {log}")
            out.append(tail(log, lines))
        return "\n".join(out)


def kafka_wire_uuid() -> str:
    """A Kafka cluster id: 16 random bytes, url-safe base64 without padding."""
    import base64
    while True:  # one starting with '-' would be read as an option by kafka-storage
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if cid[0].isalnum():
            return cid


class Sidecar:
    def __init__(self, node: Node, directory: Path, binary: Path):
        self.node = node
        self.binary = binary
        self.listen = f"{HOST}:{node.sidecar_port}"
        self.upstream = f"{HOST}:{node.client_port}"
        self.admin = f"{HOST}:{node.admin_port}"
        self.log = directory / f"kadmit-{node.id}.log"
        self.proc = Proc(f"kadmit {node.id}", directory / f"kadmit-{node.id}.pid", self.log,
                         f"--listen\0{self.listen}")
        self.log_offset = 0

    def start(self, timeout: float = 15.0, log_level: str = "info", args: tuple = ()) -> None:
        """args: more kadmit flags (e.g. ("--policy", path))."""
        if not self.binary.exists():
            raise FileNotFoundError(f"kadmit binary not found: {self.binary} "
                                    "(build it, or set KADMIT_BIN)")
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        self.proc.spawn([str(self.binary), "--listen", self.listen, "--upstream", self.upstream,
                         "--admin", self.admin, "--log-level", log_level, *args], env=env)
        deadline = time.monotonic() + timeout
        while not port_open(self.node.sidecar_port):
            if not self.proc.alive():
                raise RuntimeError(f"kadmit {self.node.id} exited at start:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"kadmit {self.node.id} not listening on {self.listen}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        self.proc.stop(timeout)

    def restart(self) -> None:
        self.stop()
        self.start()

    def problems(self, expect_alive: bool = True) -> list[str]:
        """What is wrong with this sidecar: died, or sanitizer reports in its log."""
        out = []
        if expect_alive and not self.proc.alive():
            out.append(f"kadmit {self.node.id} is not running (exit {self.proc.returncode()})")
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            text = ""
        for line in text.splitlines():
            if any(p in line for p in SANITIZER_PATTERNS):
                out.append(f"kadmit {self.node.id}: {line.strip()}")
        return out


class Sidecars:
    def __init__(self, cluster: KafkaCluster, binary: Path | None = None):
        self.cluster = cluster
        self.binary = binary or kadmit_bin()
        self.items = [Sidecar(n, cluster.dir, self.binary) for n in cluster.nodes]

    def __getitem__(self, node_id: int) -> Sidecar:
        return self.items[node_id - 1]

    def start(self, args: tuple = ()) -> None:
        for s in self.items:
            if port_open(s.node.sidecar_port):
                raise RuntimeError(f"port {s.node.sidecar_port} is already in use")
            s.start(args=args)

    def stop(self) -> None:
        for s in self.items:
            s.stop()

    def problems(self) -> list[str]:
        return [p for s in self.items for p in s.problems()]

    def check(self) -> None:
        probs = self.problems()
        if probs:
            raise AssertionError("kadmit sidecar problems:\n" + "\n".join(probs)
                                 + "\n" + self.diagnostics())

    def diagnostics(self, lines: int = 30) -> str:
        out = []
        for s in self.items:
            out.append(f"--- kadmit {s.node.id} ({'alive' if s.proc.alive() else 'DOWN'}) {s.log}")
            out.append(tail(s.log, lines))
        return "\n".join(out)


# --- CLI ----------------------------------------------------------------------

def _load(directory: str, brokers: int | None) -> KafkaCluster:
    d = Path(directory)
    meta = d / "cluster.json"
    saved = json.loads(meta.read_text()) if meta.exists() else {}
    n = brokers or saved.get("brokers", 3)
    return KafkaCluster(d, n, saved.get("port_base"), home=saved.get("home"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["start", "stop", "status"])
    ap.add_argument("--brokers", type=int, default=None, help="1 or 3 (default 3)")
    ap.add_argument("--dir", required=True, help="cluster state directory")
    ap.add_argument("--sidecars", action="store_true",
                    help="also start a kadmit sidecar per broker ($KADMIT_BIN)")
    ap.add_argument("--kafka-version", default=None,
                    help="Kafka version (fetched by tests/kafka/fetch.sh; default the pin)")
    args = ap.parse_args(argv)

    if args.command == "start":
        home = ensure_kafka(args.kafka_version)
        c = _load(args.dir, args.brokers)
        if args.kafka_version and not (c.dir / "cluster.json").exists():
            c = KafkaCluster(c.dir, c.n, c.port_base, home=home)
        if (c.dir / "cluster.json").exists() and c.port_base != port_base():
            print(f"note: reusing port base {c.port_base} recorded in {c.dir}", file=sys.stderr)
        t0 = time.monotonic()
        try:
            c.start()
            if args.sidecars:
                Sidecars(c).start()
        except Exception:
            Sidecars(c).stop()
            c.stop()
            raise
        print(f"cluster ready in {time.monotonic() - t0:.1f}s: {c.n} broker(s) in {c.dir}")
        if args.sidecars:
            print(f"bootstrap (kadmit): {c.bootstrap}")
        print(f"bootstrap (direct): {c.direct_bootstrap}")
        return 0

    c = _load(args.dir, args.brokers)
    sc = Sidecars(c)
    if args.command == "stop":
        sc.stop()
        c.stop()
        print("stopped")
        return 0
    st = c.status()
    for i, s in st.items():
        side = sc[i]
        print(f"broker {i}: {'ready' if s['ready'] else ('up' if s['pid'] else 'down')}"
              f" pid={s['pid']}  kadmit {side.listen}: "
              f"{'up pid=' + str(side.proc.pid()) if side.proc.alive() else 'down'}")
    return 0 if all(s["ready"] for s in st.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
