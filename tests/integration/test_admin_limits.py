"""The admin API cannot be starved or rebound: the kadmit binary in front of a real 1-broker
KRaft cluster, its admin API on 127.0.0.1, driven with raw sockets and curl.

- 64+ raw keep-alive connections, each served once and then idle, hold every connection slot
  (the default limit is 64): `curl /healthz` still gets 200, because a new connection takes the
  slot of the idlest keep-alive one, which is closed.
- 64 connections that stay mid-request hold every slot with nothing idle to close: `curl` gets
  200 from /healthz, /readyz and /metrics through the probe reserve, and 503 with a JSON error
  for /v1/policy.
- `curl -H 'Host: evil.example' /v1/policy` (what a DNS-rebinding page sends) gets 403 with a
  JSON error, while curl's own Host (127.0.0.1:port), a name given with --admin-allowed-hosts
  and an HTTP/1.0 request without Host are answered.
- A second sidecar whose admin API binds 0.0.0.0 answers a kubelet-style Host (the pod's IP).

Its own cluster at KADMIT_TEST_PORT_BASE + 730.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from admin_client import curl  # noqa: E402
from kadmit_proc import Kadmit, one_sidecar_module  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402

OFFSET = 730
SLOTS = 64  # kadmit's default admin connection limit (docs/admin-api.md)


@pytest.fixture(scope="module")
def env():
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-admin-limits-"))
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + OFFSET)
    n = c.node(1)
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--admin-allowed-hosts", "kadmit.test")
    # The same broker behind a sidecar whose admin API listens on every address, as in a pod.
    wild = Kadmit(binary, d, "kadmit-wild", n.sidecar_port + 5, n.client_port,
                  n.admin_port + 5, "--admin", f"0.0.0.0:{n.admin_port + 5}")
    with one_sidecar_module(d, "admin-limits", c, k):
        try:
            k.start()
            wild.start()
            deadline = time.monotonic() + 60
            while k.http("/readyz")[0] != 200:
                assert time.monotonic() < deadline, k.log_text()[-2000:]
                time.sleep(0.2)
            yield k, wild
        finally:
            wild.stop()


def curl_get(port: int, path: str, *args: str) -> tuple[int, str]:
    """Status and body of `curl` GET on the admin API (curl sends Host: 127.0.0.1:port)."""
    p = curl("-o", "-", "-w", "\n%{http_code}", *args, f"http://{HOST}:{port}{path}")
    assert p.returncode == 0, p.stderr
    body, _, code = p.stdout.rpartition("\n")
    return int(code), body


def connect(port: int) -> socket.socket:
    s = socket.create_connection((HOST, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s: socket.socket) -> bytes:
    """One whole response (head and Content-Length body) from a keep-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, "closed before a response"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = s.recv(65536)
        assert chunk, "closed mid-body"
        body += chunk
    return head


def closed(s: socket.socket, timeout: float = 2.0) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def metric(k: Kadmit, name: str) -> float:
    """0 when not rendered, so that without these counters the behaviour is what fails first;
    each test then checks its counter's increase."""
    return k.metrics().get(name, 0.0)


def test_idle_keep_alive_connections_holding_every_slot_leave_room_for_healthz(env):
    k, _ = env
    evicted_before = metric(k, "kadmit_admin_connections_evicted_total")
    held = []
    try:
        for _ in range(SLOTS + 6):
            s = connect(k.admin_port)
            s.sendall(b"GET /v1/policy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_response(s).startswith(b"HTTP/1.1 200 ")
            held.append(s)
        code, body = curl_get(k.admin_port, "/healthz")
        assert code == 200, body
        assert json.loads(body) == {"status": "ok"}
        # Each connection past the limit closed the idlest one: the first ones opened.
        assert all(closed(s) for s in held[:7])
        assert not any(closed(s, 0.05) for s in held[-SLOTS + 1:])
        # The survivors are still served, on the same connections.
        for s in held[-3:]:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert read_response(s).startswith(b"HTTP/1.1 200 ")
    finally:
        for s in held:
            s.close()
    assert metric(k, "kadmit_admin_connections_evicted_total") - evicted_before >= 7


def test_probes_answer_from_the_reserve_when_every_slot_is_mid_request(env):
    k, _ = env
    reserve_before = metric(k, "kadmit_admin_reserve_connections_total")
    busy = []
    try:
        # Request lines whose headers never end: nothing idle to close (each is cut by the
        # request timeout, 10 s, so the rest of this test runs well within it).
        for _ in range(SLOTS):
            s = connect(k.admin_port)
            s.sendall(b"GET /v1/policy HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            busy.append(s)
        time.sleep(0.3)
        t0 = time.monotonic()
        for path in ("/healthz", "/readyz", "/metrics"):
            code, body = curl_get(k.admin_port, path)
            assert code == 200, f"{path}: {code} {body}"
        code, body = curl_get(k.admin_port, "/v1/policy")
        assert code == 503, body
        assert "may only ask /healthz, /readyz or /metrics" in json.loads(body)["error"]
        assert time.monotonic() - t0 < 8, "the probes must not have waited for the timeout"
        assert not any(closed(s, 0.01) for s in busy), "a mid-request connection was cut"
    finally:
        for s in busy:
            s.close()
    assert metric(k, "kadmit_admin_reserve_connections_total") - reserve_before >= 4


def test_a_foreign_host_header_is_refused_on_a_loopback_bind_only(env):
    k, wild = env
    before = metric(k, "kadmit_admin_host_rejected_total")
    code, body = curl_get(k.admin_port, "/v1/policy", "-H", "Host: evil.example")
    assert code == 403, body
    assert "--admin-allowed-hosts" in json.loads(body)["error"]
    code, body = curl_get(k.admin_port, "/v1/policy", "-H", f"Host: evil.example:{k.admin_port}")
    assert code == 403, body
    # curl's own Host (127.0.0.1:port), localhost, the allowed name, and no Host at all.
    assert curl_get(k.admin_port, "/v1/policy")[0] == 200
    assert curl_get(k.admin_port, "/v1/policy", "-H", "Host: localhost:8080")[0] == 200
    assert curl_get(k.admin_port, "/v1/policy", "-H", "Host: kadmit.test:9644")[0] == 200
    assert curl_get(k.admin_port, "/v1/policy", "--http1.0", "-H", "Host:")[0] == 200
    assert metric(k, "kadmit_admin_host_rejected_total") - before == 2
    # On 0.0.0.0 there is no check: a kubelet's probe carries Host: <pod IP>:port.
    code, body = curl_get(wild.admin_port, "/healthz", "-H", "Host: 10.244.1.17:9644")
    assert code == 200, body
    code, body = curl_get(wild.admin_port, "/v1/policy", "-H", "Host: evil.example")
    assert code == 200, body
