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
from pathlib import Path

from kafka_cluster import HOST, KafkaCluster, port_base, tail, with_cluster_secret

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

    def delete(self) -> None:
        _ip("link", "del", self.host_if, check=False)
        _ip("netns", "del", self.name, check=False)

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


class Gateway:
    """kadmit --mode gateway on listen_ip, in front of cluster's brokers."""

    def __init__(self, binary: Path, cluster: GatewayCluster, directory: Path, listen_ip: str,
                 instance: int = 0, extra: tuple = (), port_base_: int | None = None):
        b = (port_base() if port_base_ is None else port_base_) + 100 * instance
        self.cluster = cluster
        self.listen_ip = listen_ip
        self.bootstrap_port = GW_BOOTSTRAP + b
        self.port_base = GW_PORT_BASE + b
        self.admin_port = GW_ADMIN + b
        self.name = f"gateway-{instance}"
        self.log = directory / f"{self.name}.log"
        self.argv = [str(binary), "--mode", "gateway",
                     "--listen", f"{listen_ip}:{self.bootstrap_port}",
                     "--upstream", cluster.broker_bootstrap,
                     "--gateway-port-base", str(self.port_base),
                     "--admin", f"{HOST}:{self.admin_port}", "--log-level", "info",
                     "--sidecar-id", f"{self.name}", *extra]
        self.p: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.listen_ip}:{self.bootstrap_port}"

    def broker_port(self, node_id: int) -> int:
        return self.port_base + node_id

    def start(self, timeout: float = 20.0) -> "Gateway":
        env = with_cluster_secret(self.argv, None)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"),
                                  stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        # Ready once it serves every broker (its own metadata view came in).
        while self.log_text().count("gateway: serving a broker") < len(self.cluster.nodes):
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} does not serve the brokers:\n{tail(self.log)}")
            time.sleep(0.1)
        return self

    def alive(self) -> bool:
        return self.p is not None and self.p.poll() is None

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.p is None:
            return None
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def metrics(self) -> dict[str, float]:
        import urllib.request
        from kadmit_proc import parse_metrics
        with urllib.request.urlopen(f"http://{HOST}:{self.admin_port}/metrics", timeout=5) as r:
            return parse_metrics(r.read().decode())


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
