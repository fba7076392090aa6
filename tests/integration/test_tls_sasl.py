"""TLS on both legs and SASL through kadmit, against a real 1-broker Kafka with SSL and
SASL_SSL listeners (secure_cluster.py). Own cluster at KADMIT_TEST_PORT_BASE + 130.

Two kadmit instances, both terminating TLS toward clients and originating TLS to the broker:
  tls   127.0.0.1:9591+b -> broker SSL listener; served certificate CN=kadmit (rotated below)
  sasl  127.0.0.1:9091+b -> broker SASL_SSL listener; with a policy (max.broker.partitions)
        and its metadata connection authenticating with SCRAM-SHA-512 over TLS
  mtls  127.0.0.1:9691+b -> broker SSL listener; client certificates required (bootstrap only:
        the broker advertises the tls instance)
  and short-lived instances at 9491+b, 9791+b, 9891+b, 9991+b. Each has its admin API at 6000 above.

kcat here links librdkafka 2.0.2, whose SCRAM fails against Kafka 4.1 even without kadmit,
so SCRAM through librdkafka uses confluent-kafka (a newer librdkafka); kcat uses PLAIN.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import struct
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

import clients
import kafka_wire
import tls_certs
from kafka_cluster import HOST, ensure_kafka, kadmit_bin, port_base, tool
from secure_cluster import Kadmit, SecureKafkaCluster

OFFSET = 130
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"


@pytest.fixture(scope="module")
def env():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    ensure_kafka()
    d = Path(tempfile.mkdtemp(prefix="kadmit-tls-"))
    certs = d / "certs"
    c = SecureKafkaCluster(d / "cluster", port_base() + OFFSET, certs)
    kt = ks = km = None
    ok = False
    try:
        c.start()
        kcert = tls_certs.make_cert(certs, "kadmit", c.ca, serial=100, cn="kadmit")
        live = d / "live"  # the files kadmit serves, replaced during the rotation test
        live.mkdir()
        shutil.copy(kcert.cert, live / "server.pem")
        shutil.copy(kcert.key, live / "server.key")
        tls_args = ["--tls-cert", str(live / "server.pem"), "--tls-key", str(live / "server.key"),
                    "--upstream-tls", "true", "--upstream-ca", str(c.ca.cert)]
        b = c.port_base
        kt = Kadmit(d, "tls", c.tls_sidecar_port, c.tls_port, 15591 + b, tls_args)
        policy = d / "policy.json"
        policy.write_text('{"max.broker.partitions": 40, "metadata.refresh.interval.ms": 2000}')
        pw = d / "kadmit.password"
        pw.write_text("kadmit-secret\n")
        ks = Kadmit(d, "sasl", c.sasl_sidecar_port, c.sasl_port, c.nodes[0].admin_port,
                    tls_args + ["--policy", str(policy),
                                "--metadata-sasl-mechanism", "SCRAM-SHA-512",
                                "--metadata-sasl-username", "kadmit",
                                "--metadata-sasl-password-file", str(pw)])
        km = Kadmit(d, "mtls", 9691 + b, c.tls_port, 15691 + b,
                    tls_args + ["--tls-client-ca", str(c.ca.cert)])  # alone: required
        yield {"cluster": c, "tls": kt, "sasl": ks, "mtls": km, "dir": d, "live": live}
        ks_all = [kt, ks, km]
        probs = [p for k in ks_all for p in k.problems()]
        for k in ks_all:
            k.proc.stop()  # sanitizer leak reports are written at exit
        probs += [p for k in ks_all for p in k.problems(alive=False)]
        assert not probs, "\n".join(probs)
        ok = True
    finally:
        for k in (kt, ks, km):
            if k is not None:
                k.proc.stop()
        c.stop()
        if ok:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"kept {d}")


def tls_bootstrap(c: SecureKafkaCluster) -> str:
    return f"{HOST}:{c.tls_sidecar_port}"


def sasl_bootstrap(c: SecureKafkaCluster) -> str:
    return f"{HOST}:{c.sasl_sidecar_port}"


def console_produce(bootstrap: str, props: Path, topic: str, lines: list[str]) -> None:
    clients.run([tool("kafka-console-producer"), "--bootstrap-server", bootstrap,
                 "--producer.config", str(props), "--topic", topic,
                 "--producer-property", "acks=all"],
                input_=("\n".join(lines) + "\n").encode(), timeout=90)


def console_consume(bootstrap: str, props: Path, topic: str, count: int) -> list[str]:
    p = clients.run([tool("kafka-console-consumer"), "--bootstrap-server", bootstrap,
                     "--consumer.config", str(props), "--topic", topic, "--from-beginning",
                     "--max-messages", str(count), "--timeout-ms", "30000"], timeout=90)
    # Kafka 4.2+ warns on stdout that --consumer.config is deprecated; 4.1 has no replacement.
    return [line for line in clients.text(p).splitlines()
            if not (line.startswith("Option --") and "deprecated" in line)]


def kcat(*args: str, timeout: float = 60.0, input_: bytes | None = None, check: bool = True):
    return clients.run([clients.KCAT, *args], timeout=timeout, input_=input_, check=check)


def tls_connection(port: int, ca: Path) -> kafka_wire.Connection:
    conn = kafka_wire.Connection(HOST, port)
    ctx = ssl.create_default_context(cafile=str(ca))
    conn.sock = ctx.wrap_socket(conn.sock, server_hostname=HOST)
    return conn


def create_topics_v4(cid: int, topic: str, partitions: int) -> bytes:
    body = (struct.pack(">i", 1) + kafka_wire._str(topic) + struct.pack(">ihii", partitions, 1, 0, 0)
            + struct.pack(">i?", 30000, False))
    return kafka_wire.request(19, 4, cid, body)


def create_topics_error(body: bytes) -> tuple[int, str | None]:
    r = kafka_wire.Reader(body)
    r.take(">i")  # throttle
    assert r.take(">i") == 1
    r.string()
    return r.take(">h"), r.string()


# --- TLS -------------------------------------------------------------------------------

def test_java_and_kcat_round_trip_over_tls(env, tmp_path):
    c, kt = env["cluster"], env["tls"]
    props = c.java_props(tmp_path / "ssl.properties")
    ssl_x = c.kcat_args()
    java_lines = [f"java-tls-{i:05d}" for i in range(300)]
    console_produce(tls_bootstrap(c), props, "tls-java", java_lines)
    out = tmp_path / "from-kcat.txt"
    clients.kcat_consume_to_file(tls_bootstrap(c), "tls-java", out, *ssl_x[1::2])
    assert out.read_text().splitlines() == java_lines

    kcat_lines = [f"kcat-tls-{i:05d}" for i in range(300)]
    src = tmp_path / "kcat.txt"
    src.write_text("\n".join(kcat_lines) + "\n")
    clients.kcat_produce_file(tls_bootstrap(c), "tls-kcat", src, *ssl_x[1::2])
    assert console_consume(tls_bootstrap(c), props, "tls-kcat", 300) == kcat_lines
    assert kt.metric("kadmit_tls_handshakes_total") >= 4
    assert kt.metric("kadmit_tls_handshake_failures_total") == 0


def kernel_lists_tls_ulp() -> bool:
    """The kernel's own list of TCP upper-layer protocols (read after kadmit's probe, which
    loads the tls module where it can be loaded)."""
    return "tls" in Path("/proc/sys/net/ipv4/tcp_available_ulp").read_text().split()


def test_ktls_auto_probes_the_kernel_and_reports_each_leg(env):
    """--tls-ktls auto (the default): the start-up probe says what the kernel says, and no leg
    claims kernel TLS, since the engines run over memory BIOs; TLS works all the same (the
    round trip above ran on this instance)."""
    kt = env["tls"]
    listed = kernel_lists_tls_ulp()
    kt.wait_log("kernel TLS offered by the kernel" if listed else "kernel TLS unavailable")
    line = next(x for x in kt.text().splitlines() if "kernel TLS" in x)
    assert "auto" in line, line
    if not listed:
        assert "no tls module" in line, line
    assert kt.metric("kadmit_tls_ktls_available") == int(listed)
    assert kt.metric("kadmit_tls_handshakes_total") >= 4
    assert kt.metric('kadmit_tls_ktls_sessions_total{direction="send"}') == 0
    assert kt.metric('kadmit_tls_ktls_sessions_total{direction="recv"}') == 0


def test_ktls_off_and_a_bad_value(env, tmp_path):
    c = env["cluster"]
    b = c.port_base
    live = env["live"]
    p = clients.run([str(kadmit_bin()), "--upstream", f"{HOST}:{c.tls_port}", "--tls-ktls",
                     "on"], check=False, timeout=30)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0
    assert "--tls-ktls" in out and "expected auto or off" in out, out
    k = Kadmit(env["dir"], "ktlsoff", 9491 + b, c.tls_port, 15491 + b,
               ["--tls-cert", str(live / "server.pem"), "--tls-key", str(live / "server.key"),
                "--upstream-tls", "true", "--upstream-ca", str(c.ca.cert), "--tls-ktls", "off"])
    try:
        k.wait_log("kernel TLS")
        line = next(x for x in k.text().splitlines() if "kernel TLS" in x)
        assert "off" in line, line
        p = kcat("-L", "-b", f"{HOST}:{k.listen}", *c.kcat_args(), "-m", "10", timeout=30)
        assert "1 brokers" in clients.text(p), clients.text(p)
        assert k.metric("kadmit_tls_handshakes_total") >= 2
    finally:
        k.proc.stop()
    assert not k.problems(alive=False)


def test_plaintext_client_on_tls_port_is_refused(env):
    c, kt = env["cluster"], env["tls"]
    before = kt.metric("kadmit_tls_plaintext_refused_total")
    t0 = time.monotonic()
    with kafka_wire.Connection(HOST, c.tls_sidecar_port, timeout=5) as conn:
        conn.send(kafka_wire.api_versions_request(1))
        with pytest.raises(ConnectionError):
            conn.recv()
    assert time.monotonic() - t0 < 3, "the plaintext client was not closed promptly"
    kt.wait_log("plaintext Kafka request on the TLS listener, closing")
    p = kcat("-L", "-b", tls_bootstrap(c), "-m", "3", check=False, timeout=30)
    assert p.returncode != 0
    assert kt.metric("kadmit_tls_plaintext_refused_total") >= before + 2


def test_certificate_rotation_keeps_open_connections(env, tmp_path):
    c, kt, live = env["cluster"], env["tls"], env["live"]
    subject, serial = tls_certs.served_certificate(HOST, c.tls_sidecar_port, c.ca.cert)
    assert (subject, serial) == ("CN=kadmit", 100)
    # A long-lived connection, opened before the rotation and used after it.
    conn = tls_connection(c.tls_sidecar_port, c.ca.cert)
    assert conn.call(kafka_wire.api_versions_request(1))[0] == 1
    new = tls_certs.make_cert(tmp_path, "rotated", c.ca, serial=200, cn="kadmit-rotated")
    staged_key, staged_cert = live / ".server.key.new", live / ".server.pem.new"
    shutil.copy(new.key, staged_key)
    shutil.copy(new.cert, staged_cert)
    os.replace(staged_key, live / "server.key")
    os.replace(staged_cert, live / "server.pem")
    kt.wait_log("TLS files reloaded")
    assert tls_certs.served_certificate(HOST, c.tls_sidecar_port, c.ca.cert) == \
        ("CN=kadmit-rotated", 200)
    for cid in range(2, 5):
        assert conn.call(kafka_wire.api_versions_request(cid))[0] == cid
    md = conn.call(kafka_wire.metadata_request(9))
    assert md[0] == 9 and kafka_wire.parse_metadata_v4(md[1])["brokers"]
    peer = ssl.DER_cert_to_PEM_cert(conn.sock.getpeercert(binary_form=True))
    conn.close()
    assert "BEGIN CERTIFICATE" in peer
    assert kt.metric('kadmit_tls_reloads_total{result="ok"}') >= 1
    # New clients work with the new certificate end to end.
    src = tmp_path / "after.txt"
    src.write_text("after-rotation\n")
    clients.kcat_produce_file(tls_bootstrap(c), "tls-rotated", src, *c.kcat_args()[1::2])


def test_mtls_requires_a_client_certificate(env, tmp_path):
    c, km = env["cluster"], env["mtls"]
    client = tls_certs.make_cert(tmp_path, "client", c.ca, serial=300, cn="client",
                                 client=True)
    bootstrap = f"{HOST}:{km.listen}"
    p = kcat("-L", "-b", bootstrap, *c.kcat_args(), "-X", f"ssl.certificate.location={client.cert}",
             "-X", f"ssl.key.location={client.key}")
    assert "1 brokers:" in clients.text(p)
    # The verified certificate's subject, in RFC 2253 form, is the connection's principal.
    km.wait_log("User:CN=client")
    before = km.metric("kadmit_tls_handshake_failures_total")
    p = kcat("-L", "-b", bootstrap, *c.kcat_args(), "-m", "3", check=False, timeout=30)
    assert p.returncode != 0
    km.wait_log("TLS handshake with client failed")
    assert km.metric("kadmit_tls_handshake_failures_total") > before


# --- SASL --------------------------------------------------------------------------------

def test_scram_and_plain_clients_authenticate_through_kadmit(env, tmp_path):
    c = env["cluster"]
    scram = c.java_props(tmp_path / "scram.properties", "SCRAM-SHA-512")
    plain = c.java_props(tmp_path / "plain.properties", "PLAIN")
    lines = [f"scram-{i:04d}" for i in range(100)]
    console_produce(sasl_bootstrap(c), scram, "sasl-topic", lines)
    assert console_consume(sasl_bootstrap(c), plain, "sasl-topic", 100) == lines

    # librdkafka: PLAIN with kcat, SCRAM-SHA-256 with confluent-kafka.
    src = tmp_path / "kcat.txt"
    src.write_text("kcat-plain-1\nkcat-plain-2\n")
    clients.kcat_produce_file(sasl_bootstrap(c), "sasl-topic", src, *c.kcat_args("PLAIN")[1::2])
    from confluent_kafka import Consumer
    cons = Consumer({"bootstrap.servers": sasl_bootstrap(c), "security.protocol": "sasl_ssl",
                     "ssl.ca.location": str(c.ca.cert), "sasl.mechanisms": "SCRAM-SHA-256",
                     "sasl.username": "alice", "sasl.password": "alice-secret",
                     "group.id": "tls-sasl-it", "auto.offset.reset": "earliest"})
    got: list[str] = []
    try:
        cons.subscribe(["sasl-topic"])
        deadline = time.monotonic() + 60
        while len(got) < 102 and time.monotonic() < deadline:
            m = cons.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
    finally:
        cons.close()
    assert got == lines + ["kcat-plain-1", "kcat-plain-2"]


def test_wrong_password_fails_with_the_brokers_error(env, tmp_path):
    c = env["cluster"]
    t0 = time.monotonic()
    p = kcat("-L", "-b", sasl_bootstrap(c), *c.kcat_args("PLAIN", password="wrong"),
             check=False, timeout=30)
    assert p.returncode != 0
    assert "Authentication failed" in (p.stderr or b"").decode(errors="replace")
    assert time.monotonic() - t0 < 20
    bad = c.java_props(tmp_path / "bad.properties", "SCRAM-SHA-512", password="wrong")
    p = clients.topics(sasl_bootstrap(c), "--command-config", str(bad), "--list",
                       check=False, timeout=60)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and "Authentication failed" in out, out[-2000:]


def test_sasl_handshake_v0_raw_tokens_pass_through_and_requests_are_judged(env):
    c, ks = env["cluster"], env["sasl"]
    before = ks.metric("kadmit_sasl_raw_tokens_total")
    with tls_connection(c.sasl_sidecar_port, c.ca.cert) as conn:
        cid, body = conn.call(kafka_wire.request(17, 0, 1, kafka_wire._str("PLAIN")))
        assert cid == 1 and struct.unpack_from(">h", body)[0] == 0
        token = b"\0alice\0alice-secret"
        conn.send(struct.pack(">i", len(token)) + token)
        conn._fill(4)
        assert struct.unpack_from(">i", conn.buf)[0] == 0  # PLAIN: an empty server token
        del conn.buf[:4]
        # Authenticated: kadmit still decodes and judges the requests that follow.
        cid, body = conn.call(create_topics_v4(2, "too-big-v0", 100))
        code, message = create_topics_error(body)
        assert cid == 2 and code == 88 and REJECT in (message or ""), (code, message)
    assert ks.metric("kadmit_sasl_raw_tokens_total") == before + 1


def test_create_before_the_sasl_login_reserves_nothing(env):
    """A CreateTopics sent on a SASL listener before any login: the broker refuses it and closes
    the connection, whatever the cluster's state, so kadmit leaves it to the broker unjudged.
    Judging it reserved headroom that the disconnect then kept (a timeout or a closed connection
    never releases a reservation), so a client with no credentials could pin the headroom."""
    c, ks = env["cluster"], env["sasl"]
    before = ks.metric("kadmit_admission_unauthenticated_total")
    with tls_connection(c.sasl_sidecar_port, c.ca.cert) as conn:
        conn.send(create_topics_v4(1, "before-login", 5))
        with pytest.raises((ConnectionError, OSError, AssertionError, struct.error)):
            conn.recv()  # the broker closes the connection
    assert ks.metric("kadmit_admission_unauthenticated_total") == before + 1
    with urllib.request.urlopen(f"http://{HOST}:{ks.admin}/v1/brokers", timeout=5) as r:
        brokers = json.loads(r.read())["brokers"]
    assert all(b["reserved"] == 0 for b in brokers), brokers


def test_admission_rejects_over_tls_and_sasl(env, tmp_path):
    c, ks = env["cluster"], env["sasl"]
    assert "metadata client connected" in ks.text()
    line = next(x for x in ks.text().splitlines() if "metadata client connected" in x)
    assert "tls=on" in line and "sasl=SCRAM-SHA-512" in line, line
    scram = c.java_props(tmp_path / "scram.properties", "SCRAM-SHA-256")
    p = clients.topics(sasl_bootstrap(c), "--command-config", str(scram), "--create", "--topic",
                       "too-big", "--partitions", "60", "--replication-factor", "1",
                       check=False)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and REJECT in out, out[-2000:]
    clients.topics(sasl_bootstrap(c), "--command-config", str(scram), "--create", "--topic",
                   "fits", "--partitions", "2", "--replication-factor", "1")
    assert ks.metric("kadmit_tls_handshakes_total") >= 2


def metadata_only_kadmit(env, name: str, port: int, mechanism: str, password: str) -> Kadmit:
    """A kadmit in front of the SASL_SSL listener whose metadata connection logs in as kadmit."""
    c = env["cluster"]
    b = c.port_base
    return Kadmit(env["dir"], name, port + b, c.sasl_port, port + 6000 + b,
                  ["--upstream-tls", "true", "--upstream-ca", str(c.ca.cert), "--policy",
                   str(env["dir"] / "policy.json"), "--metadata-sasl-mechanism", mechanism,
                   "--metadata-sasl-username", "kadmit"],
                  env={"KADMIT_METADATA_SASL_PASSWORD": password})


def metadata_line(k: Kadmit, needle: str) -> str:
    k.wait_log(needle)
    return next(x for x in k.text().splitlines() if needle in x)


def test_metadata_connection_with_a_wrong_password_reports_the_brokers_error(env):
    k = metadata_only_kadmit(env, "badpw", 9791, "SCRAM-SHA-256", "not-the-password")
    try:
        line = metadata_line(k, "authentication as kadmit failed")
        assert "step=SaslAuthenticate" in line and "retry_in_ms" in line, line
        assert "metadata client connected" not in k.text()
    finally:
        k.proc.stop()
    assert not k.problems(alive=False)


def test_metadata_connection_authenticates_with_plain(env):
    k = metadata_only_kadmit(env, "plainmd", 9991, "PLAIN", "kadmit-secret")
    try:
        k.wait_log("cluster view refreshed")
        line = metadata_line(k, "metadata client connected")
        assert "tls=on" in line and "sasl=PLAIN" in line, line
    finally:
        k.proc.stop()
    assert not k.problems(alive=False)


def test_broker_certificate_is_checked_against_the_server_name(env):
    c = env["cluster"]
    b = c.port_base
    live = env["live"]
    k = Kadmit(env["dir"], "badname", 9891 + b, c.tls_port, 15891 + b,
               ["--tls-cert", str(live / "server.pem"), "--tls-key", str(live / "server.key"),
                "--upstream-tls", "true", "--upstream-ca", str(c.ca.cert),
                "--upstream-server-name", "not-the-broker.example"])
    try:
        p = kcat("-L", "-b", f"{HOST}:{k.listen}", *c.kcat_args(), "-m", "3", check=False,
                 timeout=30)
        assert p.returncode != 0
        k.wait_log("TLS handshake with upstream failed")
        line = next(x for x in k.text().splitlines() if "TLS handshake with upstream failed" in x)
        assert "hostname mismatch" in line, line
        assert k.metric("kadmit_tls_handshake_failures_total") >= 1
    finally:
        k.proc.stop()
    assert not k.problems(alive=False)
