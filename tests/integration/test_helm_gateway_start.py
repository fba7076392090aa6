"""kadmit starts with the environment that the Helm chart's gateway Deployment gives it.

For each gateway rendering of test_helm_drift.py (each example's values, an SNI and a port-map
variant), the container is run as kubelet would run it: the image's ENV (deploy/docker/Dockerfile)
overlaid with the Deployment's env, no arguments, and every file the env names laid out where the
chart mounts it (under a temporary root instead of /etc/kadmit). Every variable name and value form
must be one kadmit accepts, in combination: kadmit refuses, at start, two routings, an advertised
port without SNI, a wildcard listener without an advertised host, a bootstrap port at or above the
port base. The test wants the process up, its /healthz answering, its start line naming the
rendered advertised host and SNI domain, and a clean exit on SIGTERM.

Only addresses change, so that nothing leaves this machine: the listeners move to 127.0.0.1 at
KADMIT_TEST_PORT_BASE + 9870.., the brokers to a closed local port (the gateway retries, as it
would while the brokers are away). Real brokers behind the gateway are test_gateway.py's job.

Needs the pinned helm of scripts/lint-deploy.sh; no Kafka.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from kafka_cluster import kadmit_bin, port_base
from test_helm_drift import GATEWAY_VARIANTS, ROOT, gateway_container, render

MOUNT_ROOT = "/etc/kadmit/"
LISTEN, ADMIN, BROKERS, CLOSED = 9870, 9871, 9875, 9869  # + KADMIT_TEST_PORT_BASE


def binary() -> Path:
    b = kadmit_bin()
    if not b.exists():
        pytest.fail(f"kadmit binary not found at {b}: build it or set KADMIT_BIN", pytrace=False)
    return b


def image_env() -> dict[str, str]:
    """The KADMIT_* defaults that the image's ENV instruction sets."""
    text = (ROOT / "deploy" / "docker" / "Dockerfile").read_text()
    block = re.search(r"^ENV (.*?)(?<!\\)\n", text, re.M | re.S)
    assert block, "the Dockerfile has no ENV instruction"
    return dict(re.findall(r"(KADMIT_[A-Z0-9_]+)=(\S+)", block.group(1)))


def self_signed(d: Path) -> tuple[Path, Path]:
    key, cert = d / "key.pem", d / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=kadmit-gateway-test", "-keyout", str(key), "-out", str(cert),
                    "-addext", "subjectAltName=DNS:kadmit.kafka.svc,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def file_content(var: str, objs: dict, tls: tuple[Path, Path]) -> bytes:
    """What kubelet would put at the path that variable names, from the rendered objects or,
    for the Secrets the chart expects to exist, a stand-in of the right form."""
    cert, key = tls
    if var == "KADMIT_POLICY":  # test_helm_drift.objects() parsed the ConfigMap's JSON
        return json.dumps(objs["ConfigMap/kadmit-policy"]["data"]["policy.json"]).encode()
    return {
        "KADMIT_ADMIN_TOKEN_FILE": b"helm-gateway-test-token\n",
        "KADMIT_CLUSTER_SECRET_FILE": b"0123456789abcdef" * 4,
        "KADMIT_METADATA_SASL_PASSWORD_FILE": b"kadmit-password",
        "KADMIT_LEDGER_PROPERTIES": b"client.id=kadmit-helm-gateway-test\n",
        "KADMIT_TLS_CERT": cert.read_bytes(),
        "KADMIT_TLS_KEY": key.read_bytes(),
        "KADMIT_TLS_CLIENT_CA": cert.read_bytes(),
        "KADMIT_LEDGER_CA": cert.read_bytes(),
        "KADMIT_UPSTREAM_CA": cert.read_bytes(),
    }[var]


def container_env(variant: str, tmp: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(the env to run kadmit with, the rendered env) for one gateway rendering."""
    objs = render(*GATEWAY_VARIANTS[variant])
    container = gateway_container(objs)
    rendered = {e["name"]: e["value"] for e in container["env"]}
    mounts = [m["mountPath"].rstrip("/") + "/" for m in container["volumeMounts"]]
    tls = self_signed(tmp)
    base = port_base()
    env = {**image_env(), **rendered}
    for var, value in rendered.items():
        if not value.startswith(MOUNT_ROOT):
            continue
        # The chart must mount what it names: a path outside every mount is a missing file.
        assert any(value.startswith(m) for m in mounts), f"{var}={value} is under no volumeMount"
        path = tmp / value[len(MOUNT_ROOT):]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file_content(var, objs, tls))
        env[var] = str(path)
    env["KADMIT_LISTEN"] = f"127.0.0.1:{base + LISTEN}"
    env["KADMIT_ADMIN"] = f"127.0.0.1:{base + ADMIN}"
    n = len(env["KADMIT_UPSTREAM"].split(","))
    env["KADMIT_UPSTREAM"] = ",".join([f"127.0.0.1:{base + CLOSED}"] * n)
    if "KADMIT_GATEWAY_PORT_BASE" in env:
        env["KADMIT_GATEWAY_PORT_BASE"] = str(base + BROKERS)
    if "KADMIT_GATEWAY_PORT_MAP" in env:
        pairs = [kv.split("=") for kv in env["KADMIT_GATEWAY_PORT_MAP"].split(",")]
        env["KADMIT_GATEWAY_PORT_MAP"] = ",".join(
            f"{i}={base + BROKERS + k}" for k, (i, _) in enumerate(pairs))
    return env, rendered


def start(env: dict[str, str], log: Path) -> subprocess.Popen:
    # The sanitizers' settings, as the harness gives every kadmit (halt on the first report;
    # a leak at exit makes the exit status non-zero, which the SIGTERM check then catches).
    env = {**env, "ASAN_OPTIONS": "abort_on_error=0:halt_on_error=1:detect_leaks=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    return subprocess.Popen([str(binary())], env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, cwd="/")


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
            return r.status
    except OSError:
        return 0


def start_line(log: Path) -> dict:
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "sni_domain" in rec and "advertise_host" in rec:
            return rec
    return {}


@pytest.mark.parametrize("variant", sorted(GATEWAY_VARIANTS))
def test_gateway_starts_with_the_charts_environment(variant, tmp_path):
    binary()
    env, rendered = container_env(variant, tmp_path)
    log = tmp_path / "kadmit.log"
    proc = start(env, log)
    try:
        deadline = time.monotonic() + 15
        while healthz(port_base() + ADMIN) != 200:
            assert proc.poll() is None, f"kadmit exited {proc.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"no /healthz in 15 s:\n{log.read_text()}"
            time.sleep(0.2)
        rec = start_line(log)
        assert rec, f"no gateway start line in the JSON log:\n{log.read_text()}"
        assert rec["advertise_host"] == rendered["KADMIT_ADVERTISE_HOST"], rec
        assert rec["sni_domain"] == rendered.get("KADMIT_GATEWAY_SNI_DOMAIN", ""), rec
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
    assert rc == 0, f"kadmit exited {rc} on SIGTERM:\n{log.read_text()}"


def test_a_refused_combination_is_seen(tmp_path):
    """The harness tells a refused environment from an accepted one: the port-base rendering
    plus an advertised port, which kadmit allows only with SNI, must stop kadmit at start."""
    binary()
    variant = next(v for v in sorted(GATEWAY_VARIANTS) if v.startswith("example"))
    env, _ = container_env(variant, tmp_path)
    assert "KADMIT_GATEWAY_PORT_BASE" in env
    env["KADMIT_ADVERTISE_PORT"] = "443"
    log = tmp_path / "kadmit.log"
    proc = start(env, log)
    try:
        rc = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"kadmit ran with --advertise-port in port mode:\n{log.read_text()}")
    assert rc != 0 and healthz(port_base() + ADMIN) == 0, log.read_text()
