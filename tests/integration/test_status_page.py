"""The status page at GET / of the admin server, in a real headless Chromium (Debian's `chromium`),
driven over the DevTools protocol: the page loads with no token, its per-broker numbers and the
cluster total match /v1/brokers, it shows the policy with where each value comes from and the
latest decisions with their messages, and it follows a limit changed over the API without being
reloaded. A screenshot is kept in $KADMIT_TEST_OUTPUT (default build/test-output/).

Uses its own 1-broker cluster on ports $KADMIT_TEST_PORT_BASE + 430; Chromium's DevTools port is
the sidecar's admin port + 8.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from admin_client import get_json, http  # noqa: E402
from kafka_cluster import HOST, kadmit_bin, port_open  # noqa: E402
from operator_fixtures import TOKEN, enforcing_cluster  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:  # never a skip: CI installs it (scripts/deps.sh)
    raise RuntimeError("chromium missing: run scripts/deps.sh")
DEVTOOLS_OFFSET = 8
OUTPUT = Path(os.environ.get("KADMIT_TEST_OUTPUT", HERE.parents[1] / "build" / "test-output"))


class DevTools:
    """Just enough of a WebSocket client (RFC 6455, text frames) for the DevTools protocol."""

    def __init__(self, ws_url: str):
        rest = ws_url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.next_id = 0

    def _recv_exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "devtools connection closed"
            out += chunk
        return out

    def _recv_message(self) -> dict:
        payload = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload += self._recv_exact(n)
            if b0 & 0x80:
                return json.loads(payload)

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        data = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while True:
            msg = self._recv_message()
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]

    def js(self, expr: str):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def wait_js(self, expr: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expr)
            if value:
                return value
            assert time.monotonic() < deadline, f"never true in the page: {expr}"
            time.sleep(0.25)


@pytest.fixture(scope="module")
def page(request):
    with enforcing_cluster(request, "status", 430, {"max.broker.partitions": 40,
                                                    "max.partitions": 500},
                           extra_ports=(DEVTOOLS_OFFSET,)) as (d, c, sc):
        admin = c.node(1).admin_port
        # One admitted and one rejected decision for the page to list.
        clients.create_topic(c.bootstrap, "status-ok", 4, 1)
        p = clients.topics(c.bootstrap, "--create", "--topic", "status-too-big", "--partitions",
                           "80", "--replication-factor", "1", check=False)
        assert p.returncode != 0, clients.text(p)
        devtools = admin + DEVTOOLS_OFFSET
        with open(d / "chromium.log", "wb") as log:
            browser = subprocess.Popen(
                [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                 "--disable-dev-shm-usage", "--no-first-run", "--window-size=1280,1400",
                 f"--user-data-dir={d / 'chromium-profile'}", f"--remote-debugging-port={devtools}",
                 "about:blank"], stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 60
                while not port_open(devtools):
                    assert browser.poll() is None, (d / "chromium.log").read_text()
                    assert time.monotonic() < deadline, "chromium did not open its devtools port"
                    time.sleep(0.2)
                with urllib.request.urlopen(f"http://{HOST}:{devtools}/json/list", timeout=10) as r:
                    target = next(t for t in json.load(r) if t["type"] == "page")
                dt = DevTools(target["webSocketDebuggerUrl"])
                dt.call("Page.enable")
                dt.call("Page.navigate", url=f"http://{HOST}:{admin}/")
                dt.wait_js("document.body && document.body.dataset.ready === '1'")
                yield dt, admin
            finally:
                browser.terminate()
                browser.wait(timeout=30)


BROKER_ROW = """(() => {
  const out = {};
  for (const tr of document.querySelectorAll('#brokers tbody tr')) {
    const row = {};
    for (const td of tr.querySelectorAll('td[data-field]')) row[td.dataset.field] = td.textContent;
    out[tr.dataset.broker] = row;
  }
  return out;
})()"""


def test_status_page_numbers_match_v1_brokers(page):
    dt, admin = page
    status, doc = get_json(admin, "/v1/brokers")
    assert status == 200, doc
    shown = dt.js(BROKER_ROW)
    assert set(shown) == {str(b["id"]) for b in doc["brokers"]}, shown
    for b in doc["brokers"]:
        row = shown[str(b["id"])]
        assert int(row["partitions"]) == b["partitions"], (row, b)
        assert int(row["reserved"]) == b["reserved"], (row, b)
        assert int(row["limit"]) == b["limit"] == 40, (row, b)
        assert int(row["headroom"]) == b["headroom"], (row, b)
    # The topic of 4 partitions is among the broker's replicas, or still reserved until the
    # next view shows it.
    assert int(shown["1"]["partitions"]) + int(shown["1"]["reserved"]) >= 4, shown
    cluster = dt.js("document.querySelector('[data-field=cluster-partitions]').textContent")
    assert int(cluster) == doc["cluster"]["partitions"], (cluster, doc)
    assert dt.js("document.querySelector('[data-field=cluster-max]').textContent") == "500"
    # The bars are drawn, one per broker plus the cluster's.
    assert dt.js("document.querySelectorAll('.bar').length") == len(doc["brokers"]) + 1


def test_status_page_shows_the_policy_sources_and_the_latest_decisions(page):
    dt, _ = page
    policy = dt.js("""Object.fromEntries([...document.querySelectorAll('#policy tbody tr')]
        .map(tr => [tr.dataset.key, [...tr.children].map(td => td.textContent)]))""")
    assert policy["max.broker.partitions"][1:] == ["40", "file"], policy
    assert policy["enforcement"][1] == "enforce", policy
    assert dt.js("document.getElementById('reload').textContent"), "no reload line"
    rejected = dt.wait_js("""[...document.querySelectorAll('#decisions tr[data-decision=reject]')]
        .map(tr => tr.lastElementChild.textContent).join('\\n')""")
    assert "Cannot satisfy request without exceeding the max.broker.partitions limit" in rejected
    assert dt.js("document.querySelectorAll('#decisions tr[data-decision=admit], "
                 "#decisions tr[data-decision=rewrite]').length") >= 1


def test_status_page_follows_a_limit_change_without_a_reload(page):
    dt, admin = page
    dt.js("window.kadmitMarker = 'same page'")
    status, _, body = http(admin, "PUT", "/v1/limits/default",
                           json.dumps({"max.broker.partitions": 45}).encode(), token=TOKEN)
    assert status == 200, body
    dt.wait_js("document.querySelector('#brokers tr[data-broker=\"1\"] td[data-field=limit]')"
               ".textContent === '45'")
    assert dt.js("window.kadmitMarker") == "same page"  # updated in place, not reloaded
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = dt.call("Page.captureScreenshot", format="png")
    path = OUTPUT / "status-page.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 10000, path
    # No request left the admin server: every resource the page loaded is its own.
    origins = dt.js("[...new Set(performance.getEntriesByType('resource')"
                    ".map(e => new URL(e.name).origin))]")
    assert origins == [f"http://{HOST}:{admin}"], origins


def test_kadmit_status_prints_the_capacity_table_of_v1_brokers(page):
    _, admin = page
    p = subprocess.run([str(kadmit_bin()), "status", "--admin", f"{HOST}:{admin}"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    status, doc = get_json(admin, "/v1/brokers")
    assert status == 200, doc
    lines = p.stdout.splitlines()
    assert lines[0].split()[:6] == ["BROKER", "RACK", "PARTITIONS", "RESERVED", "LIMIT",
                                    "HEADROOM"], p.stdout
    rows = {int(ln.split()[0]): ln.split() for ln in lines[1:] if ln[:1].isdigit()}
    for b in doc["brokers"]:
        row = rows[b["id"]]
        assert [int(x) for x in (row[2], row[3], row[4], row[5])] == [
            b["partitions"], b["reserved"], b["limit"], b["headroom"]], (row, b)
    assert f"{doc['cluster']['partitions']} partitions" in p.stdout, p.stdout
    # A sidecar that cannot be reached is an error with a sentence, not a table.
    p = subprocess.run([str(kadmit_bin()), "status", "--admin", f"{HOST}:1"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "cannot connect" in p.stderr, p.stderr


def test_status_page_shows_admission_and_the_ledger(page):
    """The Admission box says what GET /v1/admission says, the ledger's health included."""
    dt, admin = page
    status, doc = get_json(admin, "/v1/admission")
    assert status == 200, doc
    shown = dt.wait_js("document.getElementById('admission').textContent")
    assert shown == f"admission {doc['status']}", (shown, doc)
    rows = dt.js("""Object.fromEntries([...document.querySelectorAll('#ledger tbody tr')]
        .map(tr => [tr.children[0].textContent, tr.children[1].textContent]))""")
    if "ledger" not in doc:
        assert dt.js("document.getElementById('ledger').hidden") is True
        return
    assert list(rows) == ["ledger", "ledger consumer", "ledger producer", "ledger topic",
                          "limits topic"], rows
    assert rows["ledger"] == ("usable" if doc["ledger"]["usable"] else
                              f"unusable: {doc['ledger']['why']}"), rows
    assert rows["ledger producer"].startswith("delivering"), rows
