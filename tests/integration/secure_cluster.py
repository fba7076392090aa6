"""A 1-broker KRaft cluster with TLS and SASL listeners, for tests/integration/test_tls_sasl.py.

Built on kafka_cluster.KafkaCluster (same layout and readiness checks: DIRECT stays plaintext);
this module only adds listeners and security settings. With b = the cluster's port base:

    CLIENT     SASL_SSL  127.0.0.1:19091+b, advertised at kadmit 127.0.0.1:9091+b
               mechanisms SCRAM-SHA-512, SCRAM-SHA-256 (users from kafka-storage --add-scram)
               and PLAIN (users from the listener's JAAS config)
    TLS        SSL       127.0.0.1:19591+b, advertised at kadmit 127.0.0.1:9591+b
    DIRECTTLS  SSL       127.0.0.1:29591+b (bypasses kadmit: the TLS baseline)
    DIRECT     PLAINTEXT 127.0.0.1:29091+b (readiness checks, as in the base class)

Certificates come from tls_certs.py (one CA for the broker and kadmit).
"""

from __future__ import annotations

import os
import time
import urllib.request
from pathlib import Path

import tls_certs
from kafka_cluster import HOST, KafkaCluster, Proc, kadmit_bin, port_open, tail

USERS = {"alice": "alice-secret", "kadmit": "kadmit-secret"}


class SecureKafkaCluster(KafkaCluster):
    def __init__(self, directory: Path | str, port_base_: int, certs: Path):
        super().__init__(directory, brokers=1, port_base_=port_base_,
                         heap="-Xms256m -Xmx512m")
        self.certs = certs
        self.ca = tls_certs.make_ca(certs)
        self.broker_cert = tls_certs.make_cert(certs, "broker", self.ca)
        self.keystore = certs / "broker-keystore.pem"
        self.keystore.write_text(self.broker_cert.key.read_text()
                                 + self.broker_cert.cert.read_text())
        n = self.nodes[0]
        b = self.port_base
        self.tls_port = 19591 + b          # broker SSL listener (kadmit's upstream)
        self.tls_sidecar_port = 9591 + b   # kadmit in front of it
        self.direct_tls_port = 29591 + b
        self.sasl_port = n.client_port       # broker SASL_SSL listener
        self.sasl_sidecar_port = n.sidecar_port
        for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            for user, pw in USERS.items():
                self.format_args += ["--add-scram", f"{mech}=[name={user},password={pw}]"]

    def write_configs(self) -> None:
        super().write_configs()
        n = self.nodes[0]
        props = {}
        for line in n.config.read_text().splitlines():
            k, _, v = line.partition("=")
            props[k] = v
        props["listeners"] = (f"CLIENT://{HOST}:{n.client_port},TLS://{HOST}:{self.tls_port},"
                              f"DIRECTTLS://{HOST}:{self.direct_tls_port},"
                              f"DIRECT://{HOST}:{n.direct_port},"
                              f"INTERNAL://{HOST}:{n.internal_port},"
                              f"CONTROLLER://{HOST}:{n.controller_port}")
        props["advertised.listeners"] = (f"CLIENT://{HOST}:{n.sidecar_port},"
                                         f"TLS://{HOST}:{self.tls_sidecar_port},"
                                         f"DIRECTTLS://{HOST}:{self.direct_tls_port},"
                                         f"DIRECT://{HOST}:{n.direct_port},"
                                         f"INTERNAL://{HOST}:{n.internal_port}")
        props["listener.security.protocol.map"] = (
            "CLIENT:SASL_SSL,TLS:SSL,DIRECTTLS:SSL,DIRECT:PLAINTEXT,INTERNAL:PLAINTEXT,"
            "CONTROLLER:PLAINTEXT")
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        props.update({
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca.cert),
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
            "listener.name.client.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.client.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.client.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        })
        n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    # -- client settings
    def java_props(self, path: Path, sasl: str | None = None, user: str = "alice",
                   password: str | None = None) -> Path:
        """A client.properties for the Kafka CLI tools: SSL, or SASL_SSL with a mechanism."""
        lines = ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca.cert}"]
        if sasl is None:
            lines.append("security.protocol=SSL")
        else:
            pw = USERS.get(user, "") if password is None else password
            module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if sasl == "PLAIN"
                      else "org.apache.kafka.common.security.scram.ScramLoginModule")
            lines += ["security.protocol=SASL_SSL", f"sasl.mechanism={sasl}",
                      f'sasl.jaas.config={module} required username="{user}" password="{pw}";']
        path.write_text("\n".join(lines) + "\n")
        return path

    def kcat_args(self, sasl: str | None = None, user: str = "alice",
                  password: str | None = None) -> list[str]:
        args = ["-X", f"ssl.ca.location={self.ca.cert}"]
        if sasl is None:
            return args + ["-X", "security.protocol=ssl"]
        pw = USERS.get(user, "") if password is None else password
        return args + ["-X", "security.protocol=sasl_ssl", "-X", f"sasl.mechanisms={sasl}",
                       "-X", f"sasl.username={user}", "-X", f"sasl.password={pw}"]


class Kadmit:
    """One kadmit process with its own arguments (a sidecar in front of one listener)."""

    def __init__(self, directory: Path, name: str, listen: int, upstream: int, admin: int,
                 args: list[str], env: dict | None = None):
        self.listen, self.admin = listen, admin
        self.log = directory / f"kadmit-{name}.log"
        self.proc = Proc(f"kadmit {name}", directory / f"kadmit-{name}.pid", self.log,
                         f"--listen\0{HOST}:{listen}")
        e = dict(os.environ, **(env or {}))
        e.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        self.proc.spawn([str(kadmit_bin()), "--listen", f"{HOST}:{listen}", "--upstream",
                         f"{HOST}:{upstream}", "--admin", f"{HOST}:{admin}", *args], env=e)
        deadline = time.monotonic() + 15
        while not port_open(listen):
            assert self.proc.alive(), f"kadmit {name} exited:\n{tail(self.log)}"
            assert time.monotonic() < deadline, f"kadmit {name} not listening:\n{tail(self.log)}"
            time.sleep(0.05)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_log(self, needle: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            assert time.monotonic() < deadline, f"no '{needle}' in kadmit log:\n{tail(self.log)}"
            time.sleep(0.1)

    def metric(self, name: str) -> int:
        with urllib.request.urlopen(f"http://{HOST}:{self.admin}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return int(float(line.split()[1]))
        raise AssertionError(f"metric {name} not found")

    def problems(self, alive: bool = True) -> list[str]:
        out = [] if self.proc.alive() or not alive else [f"{self.proc.name} is not running"]
        return out + [line for line in self.text().splitlines()
                      if "AddressSanitizer" in line or "runtime error:" in line
                      or "LeakSanitizer" in line]
