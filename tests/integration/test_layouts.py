"""The ledger and limits clients in each security layout: three brokers, three sidecars.

kadmit's own Kafka clients (the ledger, the limits topic) bootstrap from one address, then follow
the brokers' advertised listeners, which are the sidecars. So they must speak what the sidecars
require from clients, whatever the broker side speaks. Before, they spoke the upstream side: with
TLS toward clients and plaintext toward the broker, `/v1/admission` never became ready and every
create was refused.

One cluster for every layout; between layouts only the sidecars restart, with other flags:

    plain     plaintext on both sides (the own clients bootstrap from the upstream)
    tls       TLS toward clients, plaintext upstream; the sidecars' CA in KADMIT_LEDGER_CA
    mtls      mTLS toward clients (--tls-client-ca): no ledger flag at all, kadmit derives it
    sasl-tls  SASL_SSL toward clients in front of a SASL_PLAINTEXT broker listener, kadmit's
              metadata identity and the test client on PLAIN
    sasl-scram  the same on SCRAM-SHA-512, kadmit's own clients included; kadmit runs with a
              librdkafka >= 2.6.1 (the system one, 2.0.2, fails SCRAM against Kafka 4.x
              brokers even without kadmit): scram_librdkafka_env

In each, every sidecar becomes ready, and RF-3 single-partition creates rotated over the three
sidecars (each over its own client connection in the layout's protocol) are admitted exactly up
to the headroom: HEADROOM admitted, the next refused with 88 and kadmit's message.

Listeners (b = $KADMIT_TEST_PORT_BASE + OFFSET; node n):
    CLIENT      PLAINTEXT       19091+2n+b, advertised at the sidecars 9091+2n+b
    SASLCLIENT  SASL_PLAINTEXT  19101+2n+b, advertised at the SASL sidecars 9101+2n+b
    DIRECT      PLAINTEXT       29091+2n+b (counts taken bypassing kadmit)
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import tempfile
import time
import types
import uuid
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
import sasl_wire  # noqa: E402
import tls_certs  # noqa: E402
from admin_client import get_json, wait_ready  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Proc, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open, tail)

OFFSET = 780
SASL_SHIFT = 10  # the SASL listener's and its sidecars' ports: the plain ones + 10
HEADROOM = 2
WILL_EXCEED = 88
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
USERS = {"alice": "alice-secret", "kadmit": "kadmit-secret"}
POLICY_BASE = {"metadata.refresh.interval.ms": 1000, "metadata.max.staleness.ms": 20000,
               "metadata.refresh.before.decision.ms": 500}


class LayoutsCluster(KafkaCluster):
    """The harness's 3-broker cluster plus a SASL_PLAINTEXT client listener."""

    def __init__(self, directory: Path, port_base_: int):
        super().__init__(directory, brokers=3, port_base_=port_base_)
        # Odd ports only: Linux gives connect() even ephemeral ports first, and on a busy
        # machine those ephemeral ports overlap this range (a broker then cannot bind).
        for n in self.nodes:
            for attr in ("client_port", "sidecar_port", "direct_port", "internal_port",
                         "controller_port", "admin_port"):
                setattr(n, attr, getattr(n, attr) + n.id + 1 - (port_base_ % 2))
        for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            for user, pw in USERS.items():
                self.format_args += ["--add-scram", f"{mech}=[name={user},password={pw}]"]

    def write_configs(self) -> None:
        super().write_configs()
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        for n in self.nodes:
            props = dict(line.split("=", 1) for line in n.config.read_text().splitlines())
            sasl, sasl_sidecar = n.client_port + SASL_SHIFT, n.sidecar_port + SASL_SHIFT
            props["listeners"] += f",SASLCLIENT://{HOST}:{sasl}"
            props["advertised.listeners"] += f",SASLCLIENT://{HOST}:{sasl_sidecar}"
            props["listener.security.protocol.map"] += ",SASLCLIENT:SASL_PLAINTEXT"
            props.update({
                "listener.name.saslclient.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
                "listener.name.saslclient.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "listener.name.saslclient.plain.sasl.jaas.config":
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f"{plain_users};",
            })
            n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


class Env:
    def __init__(self, d: Path, c: LayoutsCluster):
        self.d, self.c = d, c
        certs = d / "certs"
        self.ca = tls_certs.make_ca(certs)
        # serverAuth and clientAuth: the sidecars present it to clients and, toward mTLS
        # sidecars, to each other (the ledger client's default certificate).
        self.sidecar_cert = tls_certs.make_cert(certs, "sidecar", self.ca)
        self.client_cert = tls_certs.make_cert(certs, "client", self.ca, serial=2, client=True)
        self.policy_file = d / "policy.json"
        self.procs: list[Proc] = []
        self.layout: dict = {}

    # -- the brokers' own truth
    def counts(self) -> dict[int, int]:
        md = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10)
        hosted = Counter({b[0]: 0 for b in md["brokers"]})
        hosted.update(r for t in md["topics"] for p in t["partitions"] for r in p["replicas"])
        return dict(hosted)

    def exists(self, topic: str) -> bool:
        (t,) = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10,
                                   topics=[topic])["topics"]
        return t["error"] == 0 and bool(t["partitions"])

    # -- sidecars
    def ports(self, n, sasl: bool) -> tuple[int, int, int]:
        shift = SASL_SHIFT if sasl else 0
        return n.sidecar_port + shift, n.client_port + shift, n.admin_port + shift

    def start(self, layout: dict) -> None:
        """Stops the sidecars of the previous layout and starts this one's on every broker."""
        self.stop()
        self.layout = layout
        for n in self.c.nodes:
            listen, upstream, admin = self.ports(n, layout["sasl"])
            name = f"{layout['name']}-{n.id}"
            proc = Proc(f"kadmit {name}", self.d / f"kadmit-{name}.pid",
                        self.d / f"kadmit-{name}.log", f"--listen\0{HOST}:{listen}")
            env = dict(os.environ, **layout["env"])
            env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
            env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            proc.spawn([str(kadmit_bin()), "--listen", f"{HOST}:{listen}",
                        "--upstream", f"{HOST}:{upstream}", "--admin", f"{HOST}:{admin}",
                        "--policy", str(self.policy_file), "--log-level", "info", "--ledger", "on",
                        "--sidecar-id", name, "--ledger-timeout-ms", "3000",
                        *layout["args"]], env=env)
            self.procs.append(proc)
        for p, n in zip(self.procs, self.c.nodes):
            listen, _, admin = self.ports(n, layout["sasl"])
            deadline = time.monotonic() + 15
            while not (port_open(listen) and port_open(admin)):
                assert p.alive(), f"{p.name} exited:\n{tail(p.logfile)}"
                assert time.monotonic() < deadline, f"{p.name} not listening"
                time.sleep(0.05)

    def stop(self) -> None:
        for p in self.procs:
            p.stop()
        self.procs = []

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{tail(p.logfile, 25)}" for p in self.procs)

    def problems(self) -> list[str]:
        out = []
        for p in self.procs:
            for line in p.logfile.read_text(errors="replace").splitlines():
                if any(m in line for m in ("AddressSanitizer", "LeakSanitizer", "runtime error:")):
                    out.append(f"{p.name}: {line.strip()}")
        return out

    def admin_port(self, node_id: int) -> int:
        return self.ports(self.c.node(node_id), self.layout["sasl"])[2]

    # -- one client connection in the layout's protocol
    def connect(self, node_id: int) -> kafka_wire.Connection:
        port = self.ports(self.c.node(node_id), self.layout["sasl"])[0]
        conn = kafka_wire.Connection(HOST, port, timeout=60)
        if self.layout.get("plain"):
            return conn
        ctx = ssl.create_default_context(cafile=str(self.ca.cert))
        if self.layout.get("client_cert"):
            ctx.load_cert_chain(str(self.client_cert.cert), str(self.client_cert.key))
        conn.sock = ctx.wrap_socket(conn.sock, server_hostname=HOST)
        if self.layout.get("scram"):
            sasl_wire.scram_login(conn, "alice", USERS["alice"])  # with its own handshake
        elif self.layout["sasl"]:
            assert sasl_wire.handshake(conn, 1, "PLAIN") == 0
            code, msg, _ = sasl_wire.authenticate(conn, 2, b"\0alice\0" + USERS["alice"].encode())
            assert code == 0, (code, msg)
        return conn

    def create(self, node_id: int, name: str) -> tuple[int, str | None]:
        with self.connect(node_id) as conn:
            _, body = conn.call(clients.create_topics_v5(7, [(name, 1, 3)]))
        (got, code, msg), = clients.parse_create_topics_v5(body)
        assert got == name
        return code, msg

    # -- limits
    def brokers(self, node_id: int) -> dict[int, dict]:
        status, doc = get_json(self.admin_port(node_id), "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}

    def set_headroom(self, headroom: int) -> dict[int, int]:
        """Limit = the brokers' count + headroom, once every sidecar's view shows those counts."""
        deadline = time.monotonic() + 45
        while True:
            counts = self.counts()
            views = [self.brokers(n.id) for n in self.c.nodes]
            if all({b: v["partitions"] for b, v in view.items()} == counts
                   and all(v["reserved"] == 0 for v in view.values()) for view in views):
                break
            assert time.monotonic() < deadline, f"views never settled: {counts} {views}"
            time.sleep(0.2)
        limits = {b: n + headroom for b, n in counts.items()}
        self.write_policy(limits)
        for n in self.c.nodes:
            deadline = time.monotonic() + 15
            while {b: v["limit"] for b, v in self.brokers(n.id).items()} != limits:
                assert time.monotonic() < deadline, f"policy not reloaded on sidecar {n.id}"
                time.sleep(0.1)
        return limits

    def write_policy(self, limits: dict[int, int]) -> None:
        policy = dict(POLICY_BASE, **{"max.broker.partitions": max(limits.values()),
                                      "brokers": {str(b): {"max.broker.partitions": n}
                                                  for b, n in limits.items()}})
        tmp = self.policy_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(policy))
        tmp.replace(self.policy_file)


def start_cluster(d: Path) -> LayoutsCluster:
    """Starts the cluster; on a port another process holds for a moment (this machine's
    ephemeral ports overlap the harness's), stops it and tries the next port block."""
    for attempt in range(3):
        c = LayoutsCluster(d / f"try{attempt}", port_base() + OFFSET + 10 * attempt)
        ports = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port,
                                               n.direct_port, n.controller_port,
                                               n.internal_port, n.sidecar_port + SASL_SHIFT,
                                               n.client_port + SASL_SHIFT)]
        if any(port_open(p) for p in ports):
            continue
        try:
            c.start()
            return c
        except RuntimeError:
            c.stop()
            if attempt == 2:
                raise
    pytest.fail("every port block is in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)


@pytest.fixture(scope="module")
def env(request):
    if not kadmit_bin().exists():
        pytest.fail(f"kadmit binary not found at {kadmit_bin()} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-layouts-"))
    holder = types.SimpleNamespace(e=None)
    with own_cluster(d, Stoppable(holder), sidecars_of(holder), "layouts", request):
        c = start_cluster(d)
        e = holder.e = Env(d, c)
        e.write_policy({b: 100000 for b in (1, 2, 3)})
        yield e
        e.stop()


class Stoppable:
    """The cluster own_cluster stops: the one that started, if any."""

    def __init__(self, holder):
        self.holder = holder

    def stop(self) -> None:
        if self.holder.e is not None:
            self.holder.e.c.stop()


def sidecars_of(holder):
    """What own_cluster needs of a Sidecars: stop() and items with problems()."""
    class Item:
        def problems(self, expect_alive: bool = True) -> list[str]:
            return holder.e.problems() if holder.e is not None else []

    class Ns:
        items = [Item()]

        def stop(self) -> None:
            if holder.e is not None:
                holder.e.stop()
    return Ns()


def layouts(e: Env) -> dict[str, dict]:
    tls = ["--tls-cert", str(e.sidecar_cert.cert), "--tls-key", str(e.sidecar_cert.key)]
    return {
        "plain": {"name": "plain", "sasl": False, "plain": True, "args": [], "env": {}},
        # The sidecars' CA through the environment (KADMIT_LEDGER_CA): a binary without the
        # option still starts, and shows the defect rather than an unknown flag.
        "tls": {"name": "tls", "sasl": False, "args": tls,
                "env": {"KADMIT_LEDGER_CA": str(e.ca.cert)}},
        # mTLS: the client CA verifies the sidecars too, the sidecar certificate is presented.
        "mtls": {"name": "mtls", "sasl": False, "client_cert": True,
                 "args": tls + ["--tls-client-ca", str(e.ca.cert)], "env": {}},
        "sasl-tls": {"name": "sasltls", "sasl": True,
                     "args": tls + ["--metadata-sasl-mechanism", "PLAIN",
                                    "--metadata-sasl-username", "kadmit"],
                     "env": {"KADMIT_LEDGER_CA": str(e.ca.cert),
                             "KADMIT_METADATA_SASL_PASSWORD": USERS["kadmit"]}},
        # SCRAM-SHA-512 end to end: the test client, kadmit's metadata connection (its own SCRAM
        # client) and its ledger and limits clients (librdkafka) all log in with SCRAM.
        "sasl-scram": {"name": "saslscram", "sasl": True, "scram": True,
                       "args": tls + ["--metadata-sasl-mechanism", "SCRAM-SHA-512",
                                      "--metadata-sasl-username", "kadmit"],
                       "env": {"KADMIT_LEDGER_CA": str(e.ca.cert),
                               "KADMIT_METADATA_SASL_PASSWORD": USERS["kadmit"],
                               **scram_librdkafka_env(e.d)}},
    }


def scram_librdkafka_env(d: Path) -> dict[str, str]:
    """librdkafka before 2.6.1 fails SCRAM against Kafka 4.x brokers, with or without kadmit, and
    Debian 12's is 2.0.2 (kadmit's image is built on Debian 13, whose is 2.8.0). This layout runs
    kadmit with the newer librdkafka that the confluent-kafka wheel carries (same soname, same
    ABI: librdkafka keeps it across 1.x and 2.x), by LD_LIBRARY_PATH, and checks it loaded."""
    import confluent_kafka
    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so.1"))
    assert found, f"no librdkafka in {libs}: confluent-kafka's wheel layout changed"
    lib = d / "librdkafka-new"
    lib.mkdir(exist_ok=True)
    link = lib / "librdkafka.so.1"
    if not link.exists():
        link.symlink_to(found[0])
    return {"LD_LIBRARY_PATH": str(lib)}


@pytest.mark.parametrize("layout", ["plain", "tls", "mtls", "sasl-tls", "sasl-scram"])
def test_layout_admits_exactly_the_headroom(env: Env, layout: str):
    """Every sidecar becomes ready; rotating RF-3 creates over the three sidecars are admitted
    exactly up to the headroom, and the next one is refused with 88 and kadmit's message."""
    env.start(layouts(env)[layout])
    for n in env.c.nodes:
        try:
            wait_ready(env.admin_port(n.id), timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{env.logs()}") from None
    if "LD_LIBRARY_PATH" in env.layout["env"]:
        for p in env.procs:
            maps = Path(f"/proc/{p.pid()}/maps").read_text()
            assert "confluent_kafka.libs/librdkafka" in maps, f"{p.name}: the newer librdkafka " \
                "was not loaded"
            assert "older than 2.6.1" not in p.logfile.read_text(errors="replace")
    limits = env.set_headroom(HEADROOM)
    names = [f"ly-{layout}-{k}-{uuid.uuid4().hex[:6]}" for k in range(HEADROOM + 1)]
    results = [(k % 3 + 1, *env.create(k % 3 + 1, n)) for k, n in enumerate(names)]
    assert [code for _, code, _ in results[:HEADROOM]] == [0] * HEADROOM, results
    sidecar, code, msg = results[HEADROOM]
    assert code == WILL_EXCEED and msg is not None and REJECT in msg, (sidecar, code, msg)
    deadline = time.monotonic() + 30
    while not all(env.exists(n) for n in names[:HEADROOM]):
        assert time.monotonic() < deadline, "admitted topics never appeared"
        time.sleep(0.2)
    assert not env.exists(names[HEADROOM])
    assert env.counts() == limits
    assert not env.problems(), env.problems()
