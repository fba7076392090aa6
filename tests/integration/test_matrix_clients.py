"""The client matrix: live clients, old and new, through kadmit.

Each client, on one 1-broker cluster of the pinned Kafka behind a kadmit sidecar:
creates a topic (admitted), asks for one beyond the limit (rejected: once with the default
reject.error.code 88 and once with 44), produces records and consumes them back in a consumer
group. Clients: the Java client 2.8, 3.9 and 4.4 (kafka-clients from Maven Central, the one
program tests/clients/java/ClientMatrix.java), confluent-kafka (librdkafka), kafka-python,
franz-go and sarama (tests/clients/go, built once from the Go module proxy and cached), and
kcat, which has no admin API: its "create" is Metadata auto-creation, and its rejection is the
denied auto-creation. One run of the Java 4.4 client and one of confluent-kafka use the KIP-848
consumer group protocol (group.protocol=consumer).

Each test prints what the client showed for each rejection (`-rA` or `-s`); docs/compatibility.md
records it. Marked `matrix`. Ports: $KADMIT_TEST_PORT_BASE + 520.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from admin_client import policy_version, wait_policy_version_above  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base)

pytestmark = pytest.mark.matrix

REPO = HERE.parents[1]
CLIENTS = REPO / "tests" / "clients"
CACHE = Path(os.environ.get("KADMIT_CACHE", Path.home() / ".cache" / "kadmit"))
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
LIMIT = 500
BIG = 1000  # partitions of the topic that must be rejected
RECORDS = 20
OFFSET = 520
JAVA_VERSIONS = ("2.8.2", "3.9.2", "4.4.0")
GO_CLIENTS = ("franz", "sarama")


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars, policy: Path):
        self.d, self.c, self.sc, self.policy = d, c, sc, policy
        self.bootstrap = c.bootstrap
        self.admin_port = c.nodes[0].admin_port
        self.shown: list[str] = []

    def set_policy(self, limit: int = LIMIT, code: int = 88) -> None:
        """Atomically replace the policy file and wait until kadmit has it in force (an
        unchanged file is no new version)."""
        doc = json.dumps({"max.broker.partitions": limit, "reject.error.code": code,
                          "metadata.refresh.before.decision.ms": 500})
        if doc == self.policy.read_text():
            return
        before = policy_version(self.admin_port)
        tmp = self.policy.with_suffix(".tmp")
        tmp.write_text(doc)
        os.replace(tmp, self.policy)
        wait_policy_version_above(self.admin_port, before, timeout=15)

    def exists(self, topic: str) -> bool:
        md = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, topics=[topic])
        return md["topics"][0]["error"] == 0

    def replicas(self) -> int:
        md = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port)
        return sum(len(p["replicas"]) for t in md["topics"] for p in t["partitions"])


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-clients-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + OFFSET, heap="-Xms256m -Xmx512m")
    sc = Sidecars(c, binary)
    (d / "config").mkdir()
    policy = d / "config" / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": LIMIT}))
    with own_cluster(d, c, sc, "client matrix", request):
        c.start()
        sc.start(args=("--policy", str(policy)))
        e = Env(d, c, sc, policy)
        e.set_policy()
        yield e
        gc.collect()
        sys.stderr.write("\nclient matrix, what each client shows for a rejection:\n"
                         + "\n".join(e.shown) + "\n")


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def lines_with(prefix: str, p: subprocess.CompletedProcess) -> list[str]:
    return [ln[len(prefix):] for ln in clients.text(p).splitlines() if ln.startswith(prefix)]


# --- the clients, as (create, produce, consume) over one command line each -------------------

def java_argv(version: str) -> list[str]:
    libs = Path(clients.text(clients.run(["bash", str(CLIENTS / "java" / "fetch.sh"), version],
                                         timeout=600)).strip().splitlines()[-1])
    classes = CACHE / "java-clients-classes" / f"{version}-{digest(CLIENTS / 'java')}"
    if not (classes / "ClientMatrix.class").exists():
        tmp = Path(tempfile.mkdtemp(dir=CACHE))
        clients.run(["javac", "-nowarn", "-cp", f"{libs}/*", "-d", str(tmp),
                     str(CLIENTS / "java" / "ClientMatrix.java")], timeout=180)
        classes.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(classes, ignore_errors=True)
        tmp.rename(classes)
    return ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{classes}:{libs}/*", "ClientMatrix"]


def digest(folder: Path) -> str:
    """A short hash of a folder's source files: the cache key of what is built from them."""
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.suffix in (".java", ".go", ".mod", ".sum"):
            h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def go_argv(prog: str) -> list[str]:
    """The Go client, built once per source digest into the cache (like scripts/lint-deploy.sh)."""
    src = CLIENTS / "go"
    out = CACHE / "tools" / f"client-{prog}-{digest(src)}"
    if not out.exists():
        if shutil.which("go") is None:
            pytest.fail("go is missing: the Go toolchain builds tests/clients/go", pytrace=False)
        tmp = out.with_suffix(".tmp")
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-mod=readonly", "-trimpath", "-o", str(tmp), f"./{prog}"],
                       cwd=src, check=True, timeout=600, env=dict(os.environ, GOFLAGS="-buildvcs=false"))
        tmp.rename(out)
    return [str(out)]


class Program:
    """A client behind the common command line of tests/clients (see ClientMatrix.java)."""

    def __init__(self, argv: list[str], group_protocol: str | None = None):
        self.argv = argv
        self.group_protocol = group_protocol

    def create(self, bootstrap: str, topic: str, partitions: int) -> tuple[int, str]:
        p = clients.run([*self.argv, "create", bootstrap, topic, str(partitions)], timeout=120)
        (result,) = lines_with("RESULT ", p)
        if result == "OK":
            return 0, ""
        code = int(result.split("code=", 1)[1].split(" ", 1)[0])
        return code, result

    def produce(self, bootstrap: str, topic: str, n: int) -> None:
        p = clients.run([*self.argv, "produce", bootstrap, topic, str(n)], timeout=120)
        assert lines_with("PRODUCED ", p) == [str(n)], clients.text(p)

    def consume(self, bootstrap: str, topic: str, group: str, n: int) -> int:
        extra = [self.group_protocol] if self.group_protocol else []
        p = clients.run([*self.argv, "consume", bootstrap, topic, group, str(n), *extra],
                        timeout=120, check=False)
        got = lines_with("CONSUMED ", p)
        assert got, f"exit {p.returncode}: {clients.text(p)} {p.stderr.decode(errors='replace')[-2000:]}"
        return int(got[-1])


class ConfluentKafka:
    def __init__(self, group_protocol: str | None = None):
        self.group_protocol = group_protocol

    def create(self, bootstrap: str, topic: str, partitions: int) -> tuple[int, str]:
        code, msg = clients.rdk_create_topics(bootstrap, [(topic, partitions, 1)])[topic]
        if code == 0:
            return 0, ""
        from confluent_kafka import KafkaError
        return code, f"KafkaError code={code} {KafkaError(code).name()}: {msg}"

    def produce(self, bootstrap: str, topic: str, n: int) -> None:
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        errors = []
        for i in range(n):
            p.produce(topic, f"rdk-{i}".encode(), on_delivery=lambda e, m: e and errors.append(e))
        assert p.flush(60) == 0 and not errors, errors

    def consume(self, bootstrap: str, topic: str, group: str, n: int) -> int:
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": False}
        if self.group_protocol:
            conf["group.protocol"] = self.group_protocol
        c = Consumer(conf)
        try:
            c.subscribe([topic])
            got, deadline = 0, time.monotonic() + 60
            while got < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None:
                    assert m.error() is None, m.error()
                    got += 1
            c.commit(asynchronous=False)
            return got
        finally:
            c.close()


class KafkaPython:
    def create(self, bootstrap: str, topic: str, partitions: int) -> tuple[int, str]:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        try:
            admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})
            return 0, ""
        except KafkaError as e:
            return getattr(e, "errno", -1), f"{type(e).__name__} code={getattr(e, 'errno', None)}: {e}"
        finally:
            admin.close()

    def produce(self, bootstrap: str, topic: str, n: int) -> None:
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(n):
            p.send(topic, f"kpy-{i}".encode()).get(timeout=60)
        p.close()

    def consume(self, bootstrap: str, topic: str, group: str, n: int) -> int:
        from kafka import KafkaConsumer
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          consumer_timeout_ms=60000)
        got = 0
        for _ in c:
            got += 1
            if got == n:
                break
        c.commit()
        c.close()
        return got


def make_client(kind: str):
    if kind.startswith("java-"):
        version, _, proto = kind[len("java-"):].partition("-")
        return Program(java_argv(version), proto or None)
    if kind in GO_CLIENTS:
        return Program(go_argv(kind))
    if kind.startswith("confluent-kafka"):
        return ConfluentKafka("consumer" if kind.endswith("kip848") else None)
    return KafkaPython()


KINDS = [f"java-{v}" for v in JAVA_VERSIONS] + ["java-4.4.0-consumer", "confluent-kafka",
                                                "confluent-kafka-kip848", "kafka-python",
                                                *GO_CLIENTS]


@pytest.mark.parametrize("kind", KINDS)
def test_client_creates_is_rejected_with_the_message_produces_and_consumes_in_a_group(env, kind):
    client = make_client(kind)
    ok = name(f"{kind}-ok")
    assert client.create(env.bootstrap, ok, 2) == (0, ""), "the admitted create failed"
    env.c.wait_topic_healthy(ok)
    for code in (88, 44):
        env.set_policy(code=code)
        big = name(f"{kind}-big")
        got, shown = client.create(env.bootstrap, big, BIG)
        env.shown.append(f"  {kind:24} reject.error.code={code}: {shown}")
        assert got == code, shown
        assert REJECT in shown, shown
        assert not env.exists(big)
    env.set_policy()
    client.produce(env.bootstrap, ok, RECORDS)
    assert client.consume(env.bootstrap, ok, name(f"{kind}-group"), RECORDS) == RECORDS


def kcat(*args: str, input_: bytes | None = None) -> subprocess.CompletedProcess:
    return clients.run(["kcat", "-b", args[0], *args[1:], "-X", "topic.metadata.refresh.interval.ms=1000"],
                       input_=input_, check=False, timeout=90)


def test_kcat_auto_creates_is_denied_at_the_limit_produces_and_consumes_in_a_group(env):
    ok = name("kcat-ok")
    values = [f"kcat-{i}" for i in range(RECORDS)]
    p = kcat(env.bootstrap, "-P", "-t", ok, "-X", "message.timeout.ms=10000",
             input_="".join(v + "\n" for v in values).encode())
    assert p.returncode == 0 and b"ERROR" not in p.stderr, p.stderr
    assert env.exists(ok)
    env.set_policy(limit=env.replicas())  # no headroom: the next auto-creation is judged over
    denied = name("kcat-denied")
    p = kcat(env.bootstrap, "-P", "-t", denied, "-X", "message.timeout.ms=6000", input_=b"x\n")
    shown = " | ".join(ln for ln in p.stderr.decode(errors="replace").splitlines() if ln.strip())[:300]
    env.shown.append(f"  {'kcat':24} auto-creation denied: exit {p.returncode}: {shown}")
    assert p.returncode != 0 or b"ERROR" in p.stderr, p.stderr
    assert not env.exists(denied)
    assert "auto-creation denied" in env.sc[1].log.read_text(errors="replace")
    env.set_policy()
    group = name("kcat-group")
    p = kcat(env.bootstrap, "-G", group, ok, "-o", "beginning", "-e", "-q", "-f", "%s\\n",
             "-X", "auto.offset.reset=earliest", "-X", "enable.partition.eof=true")
    assert sorted(clients.text(p).split()) == sorted(values), p.stderr
