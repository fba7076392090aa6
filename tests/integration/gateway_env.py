"""Gateway mode's test environment: a cluster whose brokers advertise their own addresses, a
network namespace whose clients can reach only kadmit, and kadmit gateways in front.

    brokers   listen and advertise on 127.0.0.1 (root namespace): the CLIENT listener is the one
              the gateway forwards to; nothing about kadmit is in their configuration.
    kadmit    --mode gateway, listening on the host end of a veth pair (10.251.N.1), its admin API
              on 127.0.0.1.
    clients   run inside the namespace kgw-<tag> (`ip netns exec`), whose only interface besides
              its own loopback is the other end of the veth (10.251.N.2): 127.0.0.1 there is the
              namespace's loopback, so a broker address that leaks to a client cannot be reached.

Used by test_gateway*.py and `scripts/run.sh gateway`. Needs root (network namespaces).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import sys
from pathlib import Path

# The cluster harness, also when this file runs as a script (scripts/run.sh gateway).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "harness"))
from kafka_cluster import HOST, KafkaCluster, port_base, tail, with_cluster_secret  # noqa: E402
from kadmit_proc import ChildProcess  # noqa: E402

# Ports of the gateway, offset by $KADMIT_TEST_PORT_BASE like every other port: the bootstrap,
# the base of the broker ports (broker i at GW_PORT_BASE + i) and the admin API. Instance k of
# several gateways adds 100 * k.
GW_BOOTSTRAP = 9400
GW_PORT_BASE = 9410
GW_ADMIN = 9450


class GatewayCluster(KafkaCluster):
    """A KafkaCluster whose CLIENT listener advertises the broker's own address (no sidecars)."""

    def write_configs(self) -> None:
        super().write_configs()
        for n in self.nodes:
            text = n.config.read_text()
            text = text.replace(f"CLIENT://{HOST}:{n.sidecar_port},",
                                f"CLIENT://{HOST}:{n.client_port},")
            n.config.write_text(text)

    @property
    def broker_bootstrap(self) -> str:
        """The brokers' own client listeners: what the gateway is given as --upstream."""
        return ",".join(f"{HOST}:{n.client_port}" for n in self.nodes)

    def broker_ports(self) -> set[int]:
        """Every port a client could reach a broker on."""
        return {p for n in self.nodes for p in (n.client_port, n.direct_port, n.internal_port)}


def start_cluster(c: KafkaCluster, attempts: int = 4) -> None:
    """c.start(), again when a broker could not bind a port: with a port base that puts the
    brokers' ports in the ephemeral range, another process's outgoing connection may hold one
    (in TIME_WAIT up to a minute after it closed)."""
    for attempt in range(attempts):
        try:
            c.start()
            # A broker can answer on DIRECT and CLIENT and still die on its INTERNAL port.
            time.sleep(3)
            dead = [n.id for n in c.nodes if not n.proc.alive()]
            if not dead:
                return
            raise RuntimeError(f"brokers {dead} exited after starting")
        except RuntimeError:
            logs = "".join(tail(n.log, 400) for n in c.nodes)
            c.stop()
            if "Address already in use" not in logs or attempt == attempts - 1:
                raise
            time.sleep(20)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class ClientNetns:
    """The network namespace kgw-<tag>: clients inside reach only the host end of its veth."""

    def __init__(self, tag: str, subnet: int):
        self.name = f"kgw-{tag}"
        self.host_if, self.ns_if = f"kgw-{tag}0", f"kgw-{tag}1"
        self.host_ip = f"10.251.{subnet}.1"  # where kadmit listens
        self.ns_ip = f"10.251.{subnet}.2"    # the clients' address

    def create(self) -> "ClientNetns":
        self.delete()
        _ip("netns", "add", self.name)
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        _ip("link", "set", self.ns_if, "netns", self.name)
        _ip("addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        for cmd in (("addr", "add", f"{self.ns_ip}/30", "dev", self.ns_if),
                    ("link", "set", self.ns_if, "up"), ("link", "set", "lo", "up")):
            _ip("netns", "exec", self.name, "ip", *cmd)
        return self

    def add_host_ip(self, ip: str) -> None:
        """Another address on the host end (another gateway instance), in the same /24."""
        _ip("addr", "add", f"{ip}/32", "dev", self.host_if)
        _ip("netns", "exec", self.name, "ip", "route", "add", f"{ip}/32", "dev", self.ns_if)

    def set_hosts(self, names: dict[str, str]) -> None:
        """/etc/hosts inside the namespace (ip netns exec bind-mounts /etc/netns/NAME/hosts)."""
        d = Path("/etc/netns") / self.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts").write_text("127.0.0.1 localhost\n"
                                 + "".join(f"{ip} {n}\n" for n, ip in names.items()))

    def delete(self) -> None:
        _ip("link", "del", self.host_if, check=False)
        _ip("netns", "del", self.name, check=False)
        d = Path("/etc/netns") / self.name
        if d.exists():
            for f in d.iterdir():
                f.unlink()
            d.rmdir()

    def argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, argv: list[str], timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=timeout,
                              **kw)

    def popen(self, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), **kw)

    def can_connect(self, host: str, port: int) -> bool:
        """A TCP connect from inside the namespace."""
        code = ("import socket,sys\ns=socket.socket();s.settimeout(2)\n"
                f"sys.exit(0 if s.connect_ex(('{host}',{port}))==0 else 1)")
        return self.run(["python3", "-c", code], timeout=10).returncode == 0


class Gateway(ChildProcess):
    """kadmit --mode gateway on listen_ip, in front of cluster's brokers."""

    def __init__(self, binary: Path, cluster: GatewayCluster, directory: Path, listen_ip: str,
                 instance: int = 0, extra: tuple = (), port_base_: int | None = None,
                 sni_domain: str | None = None):
        b = (port_base() if port_base_ is None else port_base_) + 100 * instance
        self.cluster = cluster
        self.listen_ip = listen_ip
        self.bootstrap_port = GW_BOOTSTRAP + b
        self.port_base = GW_PORT_BASE + b
        self.admin_port = GW_ADMIN + b
        self.name = f"gateway-{instance}"
        self.log = directory / f"{self.name}.log"
        self.sni_domain = sni_domain
        routing = (["--gateway-sni-domain", sni_domain] if sni_domain
                   else ["--gateway-port-base", str(self.port_base)])
        self.argv = [str(binary), "--mode", "gateway",
                     "--listen", f"{listen_ip}:{self.bootstrap_port}",
                     "--upstream", cluster.broker_bootstrap, *routing,
                     "--admin", f"{HOST}:{self.admin_port}", "--log-level", "info",
                     "--sidecar-id", f"{self.name}", *extra]
        self.p: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        if self.sni_domain:
            return f"bootstrap.{self.sni_domain}:{self.bootstrap_port}"
        return f"{self.listen_ip}:{self.bootstrap_port}"

    def broker_port(self, node_id: int) -> int:
        return self.port_base + node_id

    def start(self, timeout: float = 20.0, attempts: int = 3) -> "Gateway":
        """Starts it; again when a port was taken (another process's outgoing connection may
        hold a port of the ephemeral range for a while)."""
        for attempt in range(attempts):
            try:
                return self._start(timeout)
            except RuntimeError as e:
                if "address already in use" not in str(e) or attempt == attempts - 1:
                    raise
                time.sleep(3)
        return self

    def _start(self, timeout: float) -> "Gateway":
        env = with_cluster_secret(self.argv, None)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"),
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        # Ready once it serves every broker (its own metadata view came in).
        while self.log_text().count("gateway: serving a broker") < len(self.cluster.nodes):
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} does not serve the brokers:\n{tail(self.log)}")
            time.sleep(0.1)
        return self

    def metrics(self) -> dict[str, float]:
        import urllib.request
        from kadmit_proc import parse_metrics
        with urllib.request.urlopen(f"http://{HOST}:{self.admin_port}/metrics", timeout=5) as r:
            return parse_metrics(r.read().decode())


class SecureGatewayCluster(GatewayCluster):
    """Brokers whose CLIENT listener speaks SASL_SSL (PLAIN and SCRAM-SHA-512) on 127.0.0.<id>,
    each with a certificate for its own address only: a gateway that verified every broker
    against one name would fail on two of them. DIRECT and INTERNAL stay plaintext on 127.0.0.1."""

    USERS = {"alice": "alice-secret", "kadmit": "kadmit-secret"}

    def __init__(self, directory: Path, port_base_: int, certs: Path):
        super().__init__(directory, brokers=3, port_base_=port_base_)
        import tls_certs
        self.ca = tls_certs.make_ca(certs)
        self.keystores = {}
        for n in self.nodes:
            cert = tls_certs.make_cert(certs, f"broker{n.id}", self.ca, serial=n.id,
                                       san=f"IP:127.0.0.{n.id}")
            ks = certs / f"broker{n.id}-keystore.pem"
            ks.write_text(cert.key.read_text() + cert.cert.read_text())
            self.keystores[n.id] = ks
        for user, pw in self.USERS.items():
            self.format_args += ["--add-scram", f"SCRAM-SHA-512=[name={user},password={pw}]"]

    def host_of(self, node_id: int) -> str:
        return f"127.0.0.{node_id}"

    @property
    def broker_bootstrap(self) -> str:
        return ",".join(f"{self.host_of(n.id)}:{n.client_port}" for n in self.nodes)

    def write_configs(self) -> None:
        super().write_configs()
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in self.USERS.items())
        for n in self.nodes:
            props = dict(line.split("=", 1) for line in n.config.read_text().splitlines() if line)
            h = self.host_of(n.id)
            props["listeners"] = props["listeners"].replace(f"CLIENT://{HOST}:", f"CLIENT://{h}:")
            props["advertised.listeners"] = props["advertised.listeners"].replace(
                f"CLIENT://{HOST}:", f"CLIENT://{h}:")
            props["listener.security.protocol.map"] = props[
                "listener.security.protocol.map"].replace("CLIENT:PLAINTEXT", "CLIENT:SASL_SSL")
            props.update({
                "ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.keystores[n.id]),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca.cert),
                "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN,OAUTHBEARER",
                # Kafka's unsecured JWT validator (its default without a validator class): the
                # broker itself checks the token, which the gateway passes through.
                "listener.name.client.oauthbearer.sasl.jaas.config":
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
                "listener.name.client.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "listener.name.client.plain.sasl.jaas.config":
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            })
            n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def broker_ready(self, node_id: int) -> bool:
        """The harness's check, with CLIENT on the broker's own address."""
        import kafka_wire
        from kafka_cluster import port_open
        n = self.node(node_id)
        try:
            md = kafka_wire.metadata(HOST, n.direct_port, timeout=2.0)
        except (OSError, ConnectionError, ValueError):
            return False
        return len(md["brokers"]) == self.n and port_open(n.client_port, self.host_of(node_id))


_PEER = re.compile(r"\s(\S+):(\d+)\s+(\S+):(\d+)\s*$")


def broker_peers(ports: set[int]) -> list[tuple[str, int, str, int]]:
    """Established TCP connections whose local end is a broker port: (local, lport, peer, pport)."""
    out = subprocess.run(["ss", "-Htn", "state", "established"], capture_output=True, text=True,
                         check=True).stdout
    peers = []
    for line in out.splitlines():
        m = _PEER.search(line)
        if m and int(m.group(2)) in ports:
            peers.append((m.group(1), int(m.group(2)), m.group(3), int(m.group(4))))
    return peers


# --- CLI: scripts/run.sh gateway ---------------------------------------------------------------

DEMO_NS, DEMO_SUBNET = "demo", 30


def _cli(argv: list[str] | None = None) -> int:
    import argparse
    import json
    from kafka_cluster import ensure_kafka, kadmit_bin
    ap = argparse.ArgumentParser(description="3 unmodified brokers, a kadmit gateway in front, "
                                 f"clients in the network namespace kgw-{DEMO_NS}")
    ap.add_argument("command", choices=["start", "stop"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--policy", help="the gateway's --policy file (start)")
    args = ap.parse_args(argv)
    d = Path(args.dir).resolve()
    meta = d / "gateway.json"
    ns = ClientNetns(DEMO_NS, DEMO_SUBNET)
    if args.command == "stop":
        saved = json.loads(meta.read_text()) if meta.exists() else {}
        pid = saved.get("pid")
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(200):
                    os.kill(pid, 0)
                    time.sleep(0.1)
            except ProcessLookupError:
                pass
        if saved:
            GatewayCluster(d, 3, saved["port_base"]).stop()
        ns.delete()
        meta.unlink(missing_ok=True)
        print("stopped")
        return 0
    if meta.exists():
        print(f"already running ({meta}); stop it first", file=sys.stderr)
        return 1
    d.mkdir(parents=True, exist_ok=True)
    ensure_kafka()
    c = GatewayCluster(d, 3)
    start_cluster(c)
    ns.create()
    extra = ("--policy", args.policy, "--ledger", "on") if args.policy else ()
    g = Gateway(kadmit_bin(), c, d, ns.host_ip, extra=extra)
    try:
        g.start()
    except BaseException:
        g.stop()
        c.stop()
        ns.delete()
        raise
    meta.write_text(json.dumps({"pid": g.p.pid, "port_base": c.port_base,
                                "bootstrap": g.bootstrap, "namespace": ns.name,
                                "admin": f"{HOST}:{g.admin_port}",
                                "brokers": c.broker_bootstrap}))
    print(f"gateway {g.bootstrap} (namespace {ns.name}), brokers {c.broker_bootstrap}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
