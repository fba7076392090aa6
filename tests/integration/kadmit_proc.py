"""One kadmit process run by a test with its own flags, and small tools around it: its /metrics
and /readyz and /v1/admission, its memory (/proc), a plain TCP relay (to cut one path to a real broker), and a
well-behaved bystander client that keeps using a connection while a test misbehaves on another.

Used by test_robustness.py and test_memory_bound.py; the soak script uses the /proc helpers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import selectors
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import kafka_wire
from kafka_cluster import HOST, SANITIZER_PATTERNS, port_open

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text to {name or name{labels}: value}."""
    out = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM ... of /proc/<pid>/status, in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                out[k] = int(v.split()[0]) * 1024
    return out


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def is_asan(binary: Path) -> bool:
    """True for a sanitizer build (its RSS says nothing about kadmit's own bound)."""
    try:
        return b"__asan_init" in binary.read_bytes()
    except OSError:
        return False


class ChildProcess:
    """A kadmit child process (`p`, its Popen, and `log`, its log file): alive, stopped with
    SIGTERM (killed after `timeout`), and its log. Kadmit and the gateway tests' Gateway share it."""

    p: subprocess.Popen | None
    log: Path

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


class Kadmit(ChildProcess):
    """kadmit --listen HOST:listen_port --upstream HOST:upstream_port --admin HOST:admin_port ..."""

    def __init__(self, binary: Path, directory: Path, name: str, listen_port: int,
                 upstream_port: int, admin_port: int, *extra: str):
        self.binary = binary
        self.name = name
        self.listen_port = listen_port
        self.admin_port = admin_port
        self.log = directory / f"{name}.log"
        self.argv = [str(binary), "--listen", f"{HOST}:{listen_port}",
                     "--upstream", f"{HOST}:{upstream_port}", "--admin", f"{HOST}:{admin_port}",
                     "--log-level", "info", *extra]
        self.p: subprocess.Popen | None = None

    def start(self, timeout: float = 15.0) -> "Kadmit":
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"),
                                  stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while not (port_open(self.listen_port) and port_open(self.admin_port)):
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self.log_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} not listening on {self.listen_port}")
            time.sleep(0.05)
        return self

    @property
    def pid(self) -> int:
        assert self.p is not None
        return self.p.pid

    def wait_log(self, needle: str, timeout: float = 10.0, start: int = 0) -> str:
        """Waits until a log line (after byte `start` of the log) contains needle; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_text()[start:].splitlines():
                if needle in line:
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no log line with {needle!r}:\n"
                                     + self.log_text()[-3000:])
            time.sleep(0.05)

    def log_size(self) -> int:
        return len(self.log_text())

    def http(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.admin_port}{path}",
                                        timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self) -> dict[str, float]:
        code, body = self.http("/metrics")
        assert code == 200, body
        return parse_metrics(body)

    def metric(self, name: str) -> float:
        """One sample's value. A labelled sample that is absent reads as 0 (kadmit leaves out
        labelled series with no events); an unlabelled name must be rendered, so a renamed
        metric fails the test instead of reading as a silent 0."""
        values = self.metrics()
        if "{" not in name:
            assert name in values, f"{name} is not in /metrics"
        return values.get(name, 0.0)

    def sanitizer_reports(self) -> list[str]:
        return [line for line in self.log_text().splitlines()
                if any(p in line for p in SANITIZER_PATTERNS)]


@contextlib.contextmanager
def one_sidecar_module(d: Path, label: str, cluster, k: Kadmit):
    """Around a module fixture's yield: starts `cluster`, stops `k` and `cluster` afterwards, and
    removes `d` unless the fixture failed or kadmit reported a sanitizer finding (then says where
    `d` is)."""
    ok = False
    try:
        cluster.start()
        yield
        ok = True
    finally:
        k.stop()
        cluster.stop()
        if ok and not k.sanitizer_reports():
            shutil.rmtree(d, ignore_errors=True)
        else:
            sys.stderr.write(f"\n{label}: cluster dir kept: {d}\n")


class TcpRelay:
    """Forwards every connection on listen_port to target_port, byte for byte, until stop().
    Not a broker: whatever answers is the real Kafka broker behind target_port."""

    def __init__(self, listen_port: int, target_port: int):
        self.listen_port = listen_port
        self.target_port = target_port
        self.lsock: socket.socket | None = None
        self.socks: list[socket.socket] = []
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> "TcpRelay":
        self.stopping.clear()
        self.lsock = socket.create_server((HOST, self.listen_port), reuse_port=False)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.lsock, selectors.EVENT_READ, None)
        while not self.stopping.is_set():
            for key, _ in sel.select(0.1):
                if key.data is None:
                    c, _ = self.lsock.accept()
                    try:
                        u = socket.create_connection((HOST, self.target_port), timeout=2)
                    except OSError:
                        c.close()
                        continue
                    self.socks += [c, u]
                    sel.register(c, selectors.EVENT_READ, u)
                    sel.register(u, selectors.EVENT_READ, c)
                    continue
                src, dst = key.fileobj, key.data
                try:
                    data = src.recv(65536)
                    if data:
                        dst.sendall(data)
                        continue
                except OSError:
                    pass
                for s in (src, dst):
                    try:
                        sel.unregister(s)
                    except (KeyError, ValueError):
                        pass
                    s.close()
        for s in self.socks:
            s.close()
        self.socks = []
        self.lsock.close()
        sel.close()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread:
            self.thread.join(5)


class Bystander:
    """A well-behaved client: one connection through kadmit, ApiVersions and Metadata requests
    back to back while the test misbehaves elsewhere. Use as a context manager; on exit it
    asserts that every call was answered on the same connection."""

    def __init__(self, port: int):
        self.port = port
        self.calls = 0
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with kafka_wire.Connection(HOST, self.port, timeout=10) as c:
                cid = 0
                while not self.stopping.is_set():
                    cid += 1
                    frame = (kafka_wire.api_versions_request(cid) if cid % 2
                             else kafka_wire.metadata_request(cid))
                    got, body = c.call(frame)
                    if got != cid:
                        self.errors.append(f"correlation id {got}, expected {cid}")
                        return
                    if cid % 2 == 0:
                        kafka_wire.parse_metadata_v4(body)
                    self.calls += 1
                    time.sleep(0.02)
        except Exception as e:  # noqa: BLE001 - any failure is the bystander's finding
            self.errors.append(f"{type(e).__name__}: {e}")

    def __enter__(self) -> "Bystander":
        self.thread.start()
        deadline = time.monotonic() + 10
        while self.calls == 0 and not self.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        before = self.calls
        time.sleep(0.1)
        self.stopping.set()
        self.thread.join(15)
        if exc[0] is None:
            assert not self.errors, f"the well-behaved client failed: {self.errors}"
            assert self.calls > before, "the well-behaved client made no progress"
