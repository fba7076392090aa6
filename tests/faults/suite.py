"""The fault-injection suite's cluster: three Apache Kafka brokers (KRaft, combined mode) with one
kadmit sidecar each, all sharing the ledger topic, one policy file, and a Toxiproxy between
sidecar 3 and its broker (so network faults can be put on that path without touching the
others). Everything here is what the workload, the faults and the checker share: the ports, the
sidecars' command lines, the limits the suite has set (with the time each took effect), and the
raw requests.

Ports: the harness's layout (scripts/harness/kafka_cluster.py) on $KADMIT_TEST_PORT_BASE + 900,
with Toxiproxy's API on 14090 and its proxy on 14093 of that base.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for p in (ROOT / "scripts" / "harness", ROOT / "tests" / "integration"):
    sys.path.insert(0, str(p))

import kafka_wire  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Proc, Sidecars, port_base,  # noqa: E402
                           port_open, tail)

OFFSET = 900
LEDGER = "__kadmit_ledger"
LIMITS_TOPIC = "__kadmit_limits"
WILL_EXCEED = 88
TOKEN = "faults-suite-token"
LEDGER_TIMEOUT_MS = 2000
INTENT_TTL_MS = 5000
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")  # Debian, amd64
TOXI_SIDECAR = 3  # the sidecar whose --upstream goes through Toxiproxy
# The view's staleness plus the ledger timeout must stay below the intent TTL, and the staleness
# below the reservations' expiry (kadmit refuses to start otherwise). The expiry is short because
# the workload deletes topics right after creating them: such a reservation never sees its topic
# and lasts until it expires.
POLICY_BASE = {"metadata.refresh.interval.ms": 1000, "metadata.max.staleness.ms": 2500,
               "metadata.refresh.before.decision.ms": 500, "reservation.expiry.ms": 6000}


def log(msg: str) -> None:
    sys.stdout.write(f"{time.strftime('%H:%M:%S')} {msg}\n")
    sys.stdout.flush()


class Limits:
    """The limits the suite has put in force, as a history: each entry (monotonic time, limits).
    While a change is being rolled out some sidecar may already use the new limits and another
    the old ones, so until every live sidecar shows the new ones the checker judges against the
    larger of the two per broker (`at`), and afterwards against the new ones."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.history: list[tuple[float, dict[int, int]]] = []

    def set(self, limits: dict[int, int], t: float | None = None) -> None:
        with self.lock:
            self.history.append((time.monotonic() if t is None else t, dict(limits)))

    def current(self) -> dict[int, int]:
        with self.lock:
            return dict(self.history[-1][1]) if self.history else {}

    def at(self, t: float) -> dict[int, int]:
        with self.lock:
            cur: dict[int, int] = {}
            for ts, lim in self.history:
                if ts <= t:
                    cur = lim
            return dict(cur)


class Suite:
    def __init__(self, d: Path, binary: Path, toxiproxy: Path | None):
        self.d = d
        self.c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET)
        self.sc = Sidecars(self.c, binary)
        self.policy_file = d / "policy.json"
        self.token_file = d / "admin-token"
        self.token_file.write_text(TOKEN + "\n")
        self.token_file.chmod(0o600)
        self.limits = Limits()
        self.toxiproxy = toxiproxy
        b = self.c.port_base
        self.toxi_api = 14090 + b
        self.toxi_listen = 14090 + TOXI_SIDECAR + b
        self.toxi_proc = Proc("toxiproxy", d / "toxiproxy.pid", d / "toxiproxy.log",
                              f"-port\0{self.toxi_api}")
        # Which sidecars the faults took down on purpose (not a finding when they are down),
        # and which run under faketime.
        self.expected_down: set[int] = set()
        self.faketime: dict[int, str] = {}
        self.sidecar_starts = Counter()

    # -- ports
    def ports(self) -> list[int]:
        out = [self.toxi_api, self.toxi_listen]
        for n in self.c.nodes:
            out += [n.sidecar_port, n.admin_port, n.client_port, n.direct_port, n.internal_port,
                    n.controller_port]
        return out

    def port(self, sidecar: int) -> int:
        return self.c.node(sidecar).sidecar_port

    def admin_port(self, sidecar: int) -> int:
        return self.c.node(sidecar).admin_port

    # -- toxiproxy
    def toxi(self, method: str, path: str, body: dict | None = None) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{HOST}:{self.toxi_api}{path}", data=data,
                                     method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def start_toxiproxy(self) -> None:
        assert self.toxiproxy is not None
        self.toxi_proc.spawn([str(self.toxiproxy), "-host", HOST, "-port", str(self.toxi_api)])
        deadline = time.monotonic() + 20
        while not port_open(self.toxi_api):
            assert self.toxi_proc.alive(), f"toxiproxy exited:\n{tail(self.toxi_proc.logfile)}"
            assert time.monotonic() < deadline, "toxiproxy not listening"
            time.sleep(0.1)
        up = self.c.node(TOXI_SIDECAR).client_port
        status, body = self.toxi("POST", "/proxies", {
            "name": "sidecar3", "listen": f"{HOST}:{self.toxi_listen}",
            "upstream": f"{HOST}:{up}", "enabled": True})
        assert status in (200, 201), (status, body)

    # -- sidecars
    def sidecar_argv(self, i: int) -> list[str]:
        s = self.sc[i]
        upstream = (f"{HOST}:{self.toxi_listen}" if i == TOXI_SIDECAR and self.toxiproxy
                    else s.upstream)
        argv = [str(s.binary), "--listen", s.listen, "--upstream", upstream, "--admin", s.admin,
                "--admin-token-file", str(self.token_file), "--policy", str(self.policy_file),
                "--log-level", os.environ.get("KADMIT_FAULTS_LOG_LEVEL", "info"), "--ledger", "on", "--sidecar-id", f"faults-{i}",
                "--ledger-timeout-ms", str(LEDGER_TIMEOUT_MS),
                "--ledger-intent-ttl-ms", str(INTENT_TTL_MS)]
        return argv

    def spawn(self, i: int, ready: bool = True, timeout: float = 60.0) -> None:
        s = self.sc[i]
        env = dict(os.environ)
        env.pop("KADMIT_ADMIN_TOKEN", None)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        if i in self.faketime:
            # What `faketime -f OFFSET kadmit ...` does, without its wrapper process: the
            # wrapper forks kadmit and does not pass SIGTERM on, so a stopped "sidecar" left
            # kadmit running. The wall clock is off (what NTP trouble gives), the monotonic
            # clock is left real.
            env.update(LD_PRELOAD=str(faketime_lib()), FAKETIME=self.faketime[i],
                       FAKETIME_DONT_FAKE_MONOTONIC="1", FAKETIME_NO_CACHE="1")
        s.proc.spawn(self.sidecar_argv(i), env=env)
        self.sidecar_starts[i] += 1
        deadline = time.monotonic() + timeout
        while not (port_open(s.node.sidecar_port) and port_open(s.node.admin_port)):
            if not s.proc.alive():
                raise RuntimeError(f"kadmit {i} exited at start:\n{tail(s.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"kadmit {i} not listening")
            time.sleep(0.05)
        if ready:
            self.wait_admission(i, timeout)

    def wait_admission(self, i: int, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get(i, "/v1/admission")[0] == 200:
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        return False

    def get(self, i: int, path: str, timeout: float = 5.0) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://{HOST}:{self.admin_port(i)}{path}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def admin(self, i: int, method: str, path: str, body: dict | None = None) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{HOST}:{self.admin_port(i)}{path}", data=data,
                                     method=method)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def live_sidecars(self) -> list[int]:
        return [s.node.id for s in self.sc.items if s.proc.alive()]

    def died_unasked(self) -> list[str]:
        """Sidecars that are down although no fault took them down, and sanitizer reports."""
        out = []
        for s in self.sc.items:
            if not s.proc.alive() and s.node.id not in self.expected_down:
                out.append(f"kadmit {s.node.id} is not running (exit {s.proc.returncode()})")
            out += [p for p in s.problems(expect_alive=False)]
        return out

    # -- the brokers' truth (DIRECT listener)
    def direct_metadata(self, topics: list[str] | None = None, timeout: float = 5.0) -> dict:
        last: Exception | None = None
        for n in self.c.nodes:
            if n.proc.alive():
                try:
                    return kafka_wire.metadata(HOST, n.direct_port, timeout=timeout,
                                               topics=topics)
                except (OSError, ConnectionError, ValueError) as e:
                    last = e
        raise ConnectionError(f"no broker answers Metadata: {last}")

    def counts(self) -> dict[int, int]:
        return replica_counts(self.direct_metadata())

    # -- limits
    def write_policy(self, limits: dict[int, int]) -> None:
        policy = dict(POLICY_BASE, **{"max.broker.partitions": max(limits.values()),
                                      "brokers": {str(b): {"max.broker.partitions": n}
                                                  for b, n in limits.items()}})
        tmp = self.policy_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(policy))
        tmp.replace(self.policy_file)

    def sidecar_limits(self, i: int) -> dict[int, int]:
        status, doc = self.get(i, "/v1/brokers")
        if status != 200:
            return {}
        return {b["id"]: b["limit"] for b in doc["brokers"]}

    def set_limits(self, limits: dict[int, int], timeout: float = 20.0) -> bool:
        """Writes the policy and waits until every live sidecar shows it. The checker judges
        against max(old, new) per broker until then, and against `limits` after."""
        old = self.limits.current()
        both = {b: max(n, old.get(b, 0)) for b, n in limits.items()}
        self.limits.set(both)
        self.write_policy(limits)
        deadline = time.monotonic() + timeout
        ok = False
        while time.monotonic() < deadline:
            if all(all(self.sidecar_limits(i).get(b) == n for b, n in limits.items())
                   for i in self.live_sidecars()):
                ok = True
                break
            time.sleep(0.2)
        self.limits.set(limits)
        return ok

    def settle(self, timeout: float = 30.0) -> tuple[dict[int, int], bool]:
        """Waits until every live sidecar's view shows the brokers' counts and holds no
        reservation; (the counts, whether they settled)."""
        deadline = time.monotonic() + timeout
        counts: dict[int, int] = {}
        while True:
            try:
                counts = self.counts()
                views = []
                for i in self.live_sidecars():
                    st, doc = self.get(i, "/v1/brokers")
                    views.append({b["id"]: (b["partitions"], b["reserved"])
                                  for b in doc.get("brokers", [])} if st == 200 else None)
                if views and all(v is not None and all(v.get(b) == (n, 0)
                                                      for b, n in counts.items())
                                 for v in views):
                    return counts, True
            except (OSError, ConnectionError, ValueError):
                pass
            if time.monotonic() > deadline:
                return counts, False
            time.sleep(0.3)

    # -- lifecycle
    def start_broker(self, b: int, timeout: float = 180.0, tries: int = 6) -> int:
        """Starts broker b and waits until it serves; returns how many starts it took. The
        harness's DIRECT ports (29090 + base + id) lie in Linux's ephemeral range for this
        suite's base, so while a broker is down an outgoing connection of this machine can
        hold its port as a source port ("Unable to start acceptor for DIRECT"): such a start
        is retried after a pause; any other failure is raised."""
        for n in range(1, tries + 1):
            self.c.start_node(b)
            try:
                self.c.wait_ready(timeout, nodes=[b])
                return n
            except RuntimeError:
                if "Unable to start acceptor" not in tail(self.c.node(b).log, 400) or n == tries:
                    raise
                log(f"broker {b}: a listener port was in use; starting it again")
                self.c.node(b).proc.wait(30)
                time.sleep(3)
        return tries

    def start(self) -> None:
        busy = [p for p in self.ports() if port_open(p)]
        if busy:
            raise RuntimeError(f"ports {busy} are already in use (set KADMIT_TEST_PORT_BASE)")
        self.c.start()
        if self.toxiproxy:
            self.start_toxiproxy()
        self.write_policy({1: 100000, 2: 100000, 3: 100000})
        for i in (1, 2, 3):  # all first: their ledger clients reach the brokers via the sidecars
            self.spawn(i, ready=False)
        for i in (1, 2, 3):
            if not self.wait_admission(i, 90):
                raise RuntimeError(f"kadmit {i} never ready:\n{tail(self.sc[i].log)}")
        deadline = time.monotonic() + 60
        while True:
            t = self.direct_metadata([LEDGER])["topics"][0]
            if t["error"] == 0 and t["partitions"]:
                break
            assert time.monotonic() < deadline, "no ledger topic"
            time.sleep(0.2)
        self.c.wait_topic_healthy(LEDGER)

    def stop(self) -> None:
        for s in self.sc.items:
            s.proc.signal(signal.SIGCONT)  #: a paused sidecar must be able to stop
        for s in self.sc.items:
            s.stop()
        self.c.stop()
        self.toxi_proc.stop(5)


def replica_counts(md: dict) -> dict[int, int]:
    """Replicas per broker over every topic (internal ones included), every registered broker
    listed even at 0, and any broker a replica set names even if it is not registered now."""
    hosted = Counter({b[0]: 0 for b in md["brokers"]})
    hosted.update(r for t in md["topics"] for p in t["partitions"] for r in p["replicas"])
    return dict(hosted)


def find_toxiproxy() -> Path | None:
    """The toxiproxy-server that setup.sh built (it prints the path last)."""
    try:
        out = subprocess.run(["bash", str(HERE / "setup.sh")], check=True, text=True,
                             stdout=subprocess.PIPE, timeout=900).stdout.strip().splitlines()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        log(f"setup.sh failed ({e}); network and clock faults are skipped")
        return None
    p = Path(out[-1]) if out else None
    return p if p and p.exists() and shutil.which("faketime") and faketime_lib() else None


def faketime_lib() -> Path | None:
    """libfaketime, where the faketime package puts it (its wrapper sets LD_PRELOAD to it)."""
    import glob
    for c in [str(FAKETIME_LIB), *glob.glob("/usr/lib/*/faketime/libfaketime.so.1")]:
        if Path(c).exists():
            return Path(c)
    return None
