"""Helpers for talking to kadmit's admin API in integration tests: urllib for most calls, and
the real curl binary where a test must show what an operator's shell session sees."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request

from kafka_cluster import HOST


def http(port: int, method: str, path: str, body: bytes | None = None,
         token: str | None = None, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request; error statuses are returned, not raised."""
    req = urllib.request.Request(f"http://{HOST}:{port}{path}", data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(port: int, path: str) -> tuple[int, dict]:
    status, _, body = http(port, "GET", path)
    return status, json.loads(body)


def policy_version(port: int) -> int:
    status, doc = get_json(port, "/v1/policy")
    assert status == 200, doc
    return doc["version"]


def wait_policy_version_above(port: int, version: int, timeout: float = 10.0,
                              interval: float = 0.005) -> tuple[dict, float]:
    """Polls GET /v1/policy until its version exceeds `version`; (document, seconds waited)."""
    t0 = time.monotonic()
    while True:
        status, doc = get_json(port, "/v1/policy")
        assert status == 200, doc
        if doc["version"] > version:
            return doc, time.monotonic() - t0
        assert time.monotonic() - t0 < timeout, f"policy still at version {doc['version']}: {doc}"
        time.sleep(interval)


def curl(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """The curl binary, silent but showing errors; output is text."""
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def curl_status_body(method: str, url: str, body: str | None = None, token: str | None = None,
                     *extra: str) -> tuple[int, str]:
    """One request with curl: (HTTP status, body)."""
    args = ["-X", method, "-w", "\n%{http_code}", url]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "--data-binary", body]
    if token is not None:
        args += ["-H", f"Authorization: Bearer {token}"]
    p = curl(*args, *extra)
    assert p.returncode == 0, p.stderr
    text, _, code = p.stdout.rpartition("\n")
    return int(code), text


def spawn_sidecar(s, policy, token_file, *extra: str, timeout: float = 15.0) -> None:
    """Starts Sidecar `s` (kafka_cluster.Sidecar) with a policy file, the admin API and its
    token file, and waits for the admin port. The brokers need not be up."""
    import os
    from kafka_cluster import port_open, tail
    e = dict(os.environ)
    e.pop("KADMIT_ADMIN_TOKEN", None)
    e.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
    e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream,
                  "--policy", str(policy), "--admin", s.admin,
                  "--admin-token-file", str(token_file), "--log-level", "info", *extra], env=e)
    deadline = time.monotonic() + timeout
    while not port_open(s.node.admin_port):
        assert s.proc.alive(), f"kadmit {s.node.id} exited:\n{tail(s.log)}"
        assert time.monotonic() < deadline, f"kadmit {s.node.id}: no admin port"
        time.sleep(0.05)


def wait_ready(port: int, timeout: float = 60.0) -> None:
    """Waits until admission can decide (GET /v1/admission answers 200): a fresh cluster view,
    the limits topic and the ledger read. /readyz says only that the sidecar can forward."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, doc = get_json(port, "/v1/admission")
        except OSError as e:
            status, doc = 0, {"error": repr(e)}
        if status == 200:
            return
        assert time.monotonic() < deadline, f"admin port {port} never ready: {doc}"
        time.sleep(0.1)
