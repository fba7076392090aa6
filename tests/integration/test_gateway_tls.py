"""Gateway mode over TLS (docs/gateway.md): one TLS port routed by SNI, SASL_SSL toward the brokers.

Three brokers whose client listener speaks SASL_SSL (PLAIN, SCRAM-SHA-512) on 127.0.0.<id>, each
with a certificate naming its own address only. One kadmit gateway with `--tls-cert` and
`--gateway-sni-domain kafka.test` on one port of the veth: SNI `broker-<id>.kafka.test` reaches
broker <id>, `bootstrap.kafka.test` any live broker. Toward the brokers kadmit speaks TLS,
verifying each broker under its own address (`--upstream-tls`, `--upstream-ca`); the clients'
SASL passes through, so the broker authenticates the client; kadmit's own metadata, ledger and
limits clients log in as `kadmit` (--metadata-sasl-*), the latter straight to the brokers
(bootstrapping from --upstream, as gateway mode derives). Clients run in the namespace kgw-sni, whose /etc/hosts points the
kafka.test names at the gateway.

Its own cluster on ports $KADMIT_TEST_PORT_BASE + 800. Needs root (network namespaces).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
import tls_certs  # noqa: E402
from admin_client import get_json  # noqa: E402
from gateway_env import ClientNetns, Gateway, SecureGatewayCluster, start_cluster  # noqa: E402
from kafka_cluster import HOST, kadmit_bin, port_base, port_open  # noqa: E402

OFFSET = 800
DOMAIN = "kafka.test"
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
NS_CLIENT = HERE / "gateway_ns_client.py"
POLICY_BASE = {"metadata.refresh.interval.ms": 1000, "metadata.max.staleness.ms": 20000,
               "metadata.refresh.before.decision.ms": 500}


def uniq(prefix: str) -> str:
    return f"gwt-{prefix}-{uuid.uuid4().hex[:8]}"


class Env:
    def __init__(self, d: Path, c: SecureGatewayCluster, ns: ClientNetns):
        self.d, self.c, self.ns = d, c, ns
        self.g: Gateway | None = None
        self.policy_file = d / "policy.json"

    def sasl(self, mech: str = "SCRAM-SHA-512", user: str = "alice",
             password: str | None = None) -> dict[str, str]:
        if mech == "OAUTHBEARER":  # an unsecured JWT naming the principal
            return {"security.protocol": "sasl_ssl", "sasl.mechanisms": mech,
                    "enable.sasl.oauthbearer.unsecure.jwt": "true",
                    "sasl.oauthbearer.config": f"principal={user}",
                    "ssl.ca.location": str(self.c.ca.cert)}
        pw = SecureGatewayCluster.USERS[user] if password is None else password
        return {"security.protocol": "sasl_ssl", "sasl.mechanisms": mech,
                "sasl.username": user, "sasl.password": pw, "ssl.ca.location": str(self.c.ca.cert)}

    def kcat(self, *args: str, input_: str | None = None, check: bool = True, **sasl):
        """kcat logs in with PLAIN: its librdkafka (2.0.x) fails SCRAM against Kafka 4.x."""
        sasl.setdefault("mech", "PLAIN")
        props = [x for k, v in self.sasl(**sasl).items() for x in ("-X", f"{k}={v}")]
        p = self.ns.run([clients.KCAT, "-b", self.g.bootstrap, *props, *args], input=input_,
                        timeout=60)
        if check:
            assert p.returncode == 0, f"kcat {args}: {p.stderr[-2000:]}"
        return p

    def rdk(self, *args: str, mech: str = "SCRAM-SHA-512") -> dict:
        """confluent-kafka in the namespace (its own librdkafka speaks SCRAM to Kafka 4.x)."""
        env = {"GW_RDK_PROPS": ";".join(f"{k}={v}" for k, v in self.sasl(mech=mech).items())}
        p = self.ns.run(["python3", str(NS_CLIENT), args[0], self.g.bootstrap, *args[1:]],
                        timeout=150, env=dict(os.environ, **env))
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    def rdk_create(self, name: str, partitions: int, rf: int = 3) -> tuple[int, str | None]:
        code, msg = self.rdk("create", f"{name}:{partitions}:{rf}")[name]
        return code, msg

    def java(self, *args: str) -> list[str]:
        s = self.sasl()
        props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                 "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                     f'required username="alice" password="{s["sasl.password"]}";',
                 "ssl.truststore.type": "PEM", "ssl.truststore.location": s["ssl.ca.location"]}
        env = dict(os.environ, GW_CLIENT_PROPS="\n".join(f"{k}={v}" for k, v in props.items()))
        argv = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp",
                f"{self.d / 'java'}:{self.c.home}/libs/*", "-Dlog4j2.level=off", "GatewayClient",
                args[0], self.g.bootstrap, *args[1:]]
        p = self.ns.run(argv, timeout=150, env=env)
        assert p.returncode == 0, f"{args}: {p.stdout[-2000:]} {p.stderr[-3000:]}"
        return p.stdout.splitlines()

    def counts(self) -> dict[int, int]:
        md = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10)
        out = {b[0]: 0 for b in md["brokers"]}
        for t in md["topics"]:
            for p in t["partitions"]:
                for r in p["replicas"]:
                    out[r] = out.get(r, 0) + 1
        return out

    def exists(self, topic: str) -> bool:
        (t,) = kafka_wire.metadata(HOST, self.c.nodes[0].direct_port, timeout=10,
                                   topics=[topic])["topics"]
        return t["error"] == 0 and bool(t["partitions"])

    def set_headroom(self, headroom: int) -> dict[int, int]:
        deadline = time.monotonic() + 45
        while True:
            counts = self.counts()
            _, doc = get_json(self.g.admin_port, "/v1/brokers")
            view = {b["id"]: b for b in doc.get("brokers", [])}
            if {b: v["partitions"] for b, v in view.items()} == counts and \
                    all(v["reserved"] == 0 for v in view.values()):
                break
            assert time.monotonic() < deadline, f"never settled: {counts} {view}"
            time.sleep(0.2)
        limits = {b: n + headroom for b, n in counts.items()}
        self.write_policy(limits)
        deadline = time.monotonic() + 15
        while True:
            _, doc = get_json(self.g.admin_port, "/v1/brokers")
            if {b["id"]: b["limit"] for b in doc["brokers"]} == limits:
                return limits
            assert time.monotonic() < deadline, "policy not reloaded"
            time.sleep(0.1)

    def write_policy(self, limits: dict[int, int]) -> None:
        policy = dict(POLICY_BASE, **{"max.broker.partitions": max(limits.values()),
                                      "brokers": {str(b): {"max.broker.partitions": n}
                                                  for b, n in limits.items()}})
        tmp = self.policy_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(policy))
        tmp.replace(self.policy_file)


@pytest.fixture(scope="module")
def env(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-gwtls-"))
    base = port_base() + OFFSET
    c = SecureGatewayCluster(d, base, d / "certs")
    busy = [p for n in c.nodes for p in (n.client_port, n.direct_port) if port_open(p)]
    if busy:
        pytest.fail(f"ports {busy} are already in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    ns = ClientNetns("sni", 22)
    e = Env(d, c, ns)
    failed = True
    try:
        ns.create()
        ns.set_hosts({f"bootstrap.{DOMAIN}": ns.host_ip,
                      **{f"broker-{n.id}.{DOMAIN}": ns.host_ip for n in c.nodes}})
        gw_cert = tls_certs.make_cert(d / "certs", "gateway", c.ca,
                                      san=f"DNS:*.{DOMAIN},DNS:bootstrap.{DOMAIN}")
        pw = d / "kadmit.password"
        pw.write_text(SecureGatewayCluster.USERS["kadmit"] + "\n")
        with ThreadPoolExecutor(2) as ex:
            java = ex.submit(clients.run, ["javac", "-nowarn", "-cp", f"{c.home}/libs/*", "-d",
                                           str(d / "java"), str(HERE / "java" / "GatewayClient.java")],
                             180)
            start_cluster(c)
            java.result()
        e.write_policy({1: 100000, 2: 100000, 3: 100000})
        e.g = Gateway(binary, c, d, ns.host_ip, port_base_=base, sni_domain=DOMAIN, extra=(
            "--tls-cert", str(gw_cert.cert), "--tls-key", str(gw_cert.key),
            "--upstream-tls", "true", "--upstream-ca", str(c.ca.cert),
            "--metadata-sasl-mechanism", "PLAIN", "--metadata-sasl-username", "kadmit",
            "--metadata-sasl-password-file", str(pw),
            "--policy", str(e.policy_file), "--ledger", "on",
            "--ledger-timeout-ms", "3000", "--ledger-intent-ttl-ms", "30000"))
        e.g.start()
        deadline = time.monotonic() + 90
        while e.rdk_create(uniq("warmup"), 1)[0] != 0:
            assert time.monotonic() < deadline, "the gateway never admits:\n" + e.g.log_text()[-3000:]
            time.sleep(0.5)
        before = request.session.testsfailed
        yield e
        failed = request.session.testsfailed > before
    finally:
        rc = e.g.stop() if e.g is not None else 0
        c.stop()
        ns.delete()
        if failed:
            sys.stderr.write(f"\ngateway tls: cluster dir kept: {d}\n")
        else:
            shutil.rmtree(d, ignore_errors=True)
    assert rc == 0, f"the gateway exited {rc} on SIGTERM"


@pytest.fixture(autouse=True)
def _alive(env):
    yield
    assert env.g.alive(), env.g.log_text()[-3000:]
    # Every broker connection's TLS handshake succeeds: a client's first request that came
    # with its handshake waits for the broker's handshake too (clients would retry, and hide it).
    failed = [l for l in env.g.log_text().splitlines() if "TLS handshake with upstream failed" in l]
    assert not failed, failed[:5]


def test_brokers_are_unreachable_and_metadata_names_sni_hosts(env: Env):
    for n in env.c.nodes:
        assert not env.ns.can_connect(env.c.host_of(n.id), n.client_port)
    out = env.kcat("-L", "-m", "20").stdout
    for n in env.c.nodes:
        assert f"broker {n.id} at broker-{n.id}.{DOMAIN}:{env.g.bootstrap_port}" in out, out
        assert env.c.host_of(n.id) not in out, out


def test_kcat_plain_round_trip_by_sni(env: Env):
    """Produce and consume through the one TLS port: each broker's connection routed by SNI
    and verified upstream under that broker's own address (three partitions: all three
    brokers lead one); the client's SASL PLAIN login is the broker's to judge."""
    topic = uniq("plain")
    assert env.rdk_create(topic, 3) == (0, None)
    lines = [f"plain-{i}" for i in range(100)]
    env.kcat("-P", "-t", topic, input_="\n".join(lines) + "\n")
    out = env.kcat("-C", "-t", topic, "-o", "beginning", "-e", "-q").stdout
    assert sorted(out.split()) == sorted(lines)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_kafka_scram_group_round_trip_by_sni(env: Env, protocol: str):
    """confluent-kafka with SCRAM-SHA-512: producer and group consumer; the group
    coordinator is reached by its SNI name."""
    topic = uniq(f"scram-{protocol}")
    assert env.rdk_create(topic, 3) == (0, None)
    got = env.rdk("roundtrip", topic, "100", uniq("grp"), protocol)
    assert got == {"produced": 100, "consumed": 100}, got


def test_kcat_oauthbearer_round_trip_by_sni(env: Env):
    """OAUTHBEARER passes through the gateway like the other mechanisms: the broker validates the
    client's token itself (Kafka's unsecured JWT validator here), and records go both ways."""
    topic = uniq("oauth")
    assert env.rdk_create(topic, 1) == (0, None)
    lines = [f"oauth-{i}" for i in range(20)]
    env.kcat("-P", "-t", topic, input_="\n".join(lines) + "\n", mech="OAUTHBEARER")
    out = env.kcat("-C", "-t", topic, "-o", "beginning", "-e", "-q", mech="OAUTHBEARER").stdout
    assert sorted(out.split()) == sorted(lines)


def test_a_wrong_password_is_refused_by_the_broker(env: Env):
    p = env.kcat("-L", "-m", "15", check=False, password="wrong")
    assert p.returncode != 0
    assert "Authentication failed" in p.stderr or "SASL authentication error" in p.stderr, \
        p.stderr[-2000:]


def test_java_admin_create_refused_88_and_group_consumer_over_sni(env: Env):
    env.set_headroom(3)
    ok, big = uniq("jok"), uniq("jbig")
    assert "RESULT OK" in env.java("create", ok, "1", "3")
    (line,) = [l for l in env.java("create", big, "3", "3") if l.startswith("RESULT")]
    assert "code=88" in line and REJECT in line, line
    assert not env.exists(big)
    env.write_policy({1: 100000, 2: 100000, 3: 100000})
    time.sleep(2)
    assert "PRODUCED 30" in env.java("produce", ok, "30")
    out = env.java("consume", ok, uniq("grp"), "30", "consumer")
    assert "CONSUMED 30" in out, out
