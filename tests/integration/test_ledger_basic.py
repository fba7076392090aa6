"""The cluster-wide ledger, basic: three brokers, three sidecars with `--ledger on`, and creates
rotating over the sidecars, sent all at once, against a headroom that fits exactly ten of them.
Sidecars that decide alone admit more (each judges on a view that lacks the others' creates);
with the ledger, exactly ten are admitted and no broker goes over its limit.

Uses its own cluster, on ports offset by $KADMIT_TEST_PORT_BASE (+200); $KADMIT_BIN selects the
binary. The full multi-sidecar suite lives in its own module; this one proves the mechanism.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kafka_wire  # noqa: E402
from kadmit_proc import Kadmit, parse_metrics  # noqa: E402
from kafka_cluster import (HOST, KafkaCluster, Sidecars, kadmit_bin,  # noqa: E402
                           own_cluster, port_base, port_open, tail)

LEDGER_TOPIC = "__kadmit_ledger"
CREATE_TOPICS = 19
POLICY_VIOLATION_CODES = (88, 44)


def create_topics_v2(cid: int, topic: str, partitions: int, rf: int) -> bytes:
    body = (struct.pack(">i", 1) + kafka_wire._str(topic) + struct.pack(">ihii", partitions, rf, 0, 0)
            + struct.pack(">i?", 30000, False))
    return kafka_wire.request(CREATE_TOPICS, 2, cid, body)


def parse_create_topics_v2(body: bytes) -> tuple[str, int, str | None]:
    off = 4  # throttle_time_ms
    (count,) = struct.unpack_from(">i", body, off)
    assert count == 1
    off += 4
    (n,) = struct.unpack_from(">h", body, off)
    name = body[off + 2:off + 2 + n].decode()
    off += 2 + n
    (code, mlen) = struct.unpack_from(">hh", body, off)
    msg = body[off + 4:off + 4 + mlen].decode() if mlen >= 0 else None
    return name, code, msg


class Ledgered:
    def __init__(self, c: KafkaCluster, sc: Sidecars):
        self.c = c
        self.sc = sc
        self.policy = c.dir / "policy.json"

    def counts(self) -> dict[int, int]:
        md = kafka_wire.metadata(HOST, self.c.node(1).direct_port)
        counts = {b[0]: 0 for b in md["brokers"]}
        for t in md["topics"]:
            for p in t["partitions"]:
                for r in p["replicas"]:
                    counts[r] = counts.get(r, 0) + 1
        return counts

    def log(self, node_id: int) -> str:
        try:
            return self.sc[node_id].log.read_text(errors="replace")
        except OSError:
            return ""

    def start_sidecars(self) -> None:
        for s in self.sc.items:
            env = dict(os.environ)
            env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
            env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream,
                          "--admin", s.admin, "--policy", str(self.policy), "--ledger", "on",
                          "--sidecar-id", f"sidecar-{s.node.id}", "--log-level", "info"], env=env)
        deadline = time.monotonic() + 60
        for s in self.sc.items:
            while not port_open(s.node.sidecar_port) or "ledger reading" not in self.log(s.node.id):
                assert s.proc.alive(), f"kadmit {s.node.id} exited:\n{tail(s.log)}"
                assert time.monotonic() < deadline, "ledger not read:\n" + self.sc.diagnostics()
                time.sleep(0.1)

    def metrics(self, node_id: int) -> dict[str, float]:
        url = f"http://{self.sc[node_id].admin}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            return parse_metrics(r.read().decode())


@pytest.fixture(scope="module")
def led(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-ledger-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 200)
    sc = Sidecars(c, binary)
    with own_cluster(d, c, sc, "ledger integration", request):
        c.start()
        lg = Ledgered(c, sc)
        lg.policy.write_text(json.dumps({"max.broker.partitions": 100000}))
        lg.start_sidecars()
        yield lg


def test_sidecars_create_the_ledger_topic_once(led):
    # Ready once each sidecar has read the ledger and the limits topic to their ends.
    deadline = time.monotonic() + 30
    for s in led.sc.items:
        while True:
            try:
                with urllib.request.urlopen(f"http://{s.admin}/v1/admission", timeout=5) as r:
                    assert r.status == 200
                    break
            except urllib.error.HTTPError as e:
                assert time.monotonic() < deadline, f"kadmit {s.node.id} not ready: {e.read()!r}"
                time.sleep(0.2)
    md = kafka_wire.metadata(HOST, led.c.node(1).direct_port, topics=[LEDGER_TOPIC])
    t = md["topics"][0]
    assert t["error"] == 0, md
    assert len(t["partitions"]) == 1
    assert len(t["partitions"][0]["replicas"]) == 3


def test_rotating_creates_never_exceed_the_headroom(led):
    cur = led.counts()
    limits = {b: n + 30 for b, n in cur.items()}
    led.policy.write_text(json.dumps({
        "max.broker.partitions": max(limits.values()),
        "brokers": {str(b): {"max.broker.partitions": n} for b, n in limits.items()},
        "metadata.refresh.before.decision.ms": 1000}))
    deadline = time.monotonic() + 20
    while not all(led.log(s.node.id).count("policy reloaded") >= 1 for s in led.sc.items):
        assert time.monotonic() < deadline, "policy not reloaded:\n" + led.sc.diagnostics()
        time.sleep(0.1)

    ports = [s.node.sidecar_port for s in led.sc.items]
    prefix = f"led-{uuid.uuid4().hex[:6]}"

    def create(i: int) -> tuple[str, int, str | None]:
        with kafka_wire.Connection(HOST, ports[i % 3], 40.0) as conn:
            _, body = conn.call(create_topics_v2(i + 1, f"{prefix}-{i}", 3, 3))
            return parse_create_topics_v2(body)

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(create, range(34)))
    admitted = [r for r in results if r[1] == 0]
    rejected = [r for r in results if r[1] in POLICY_VIOLATION_CODES]
    assert len(admitted) + len(rejected) == 34, results
    assert len(admitted) == 10, results
    after = led.counts()
    over = {b: (after[b], limits[b]) for b in limits if after[b] > limits[b]}
    assert not over, f"brokers over their limit (count, limit): {over}"
    total = {k: sum(led.metrics(s.node.id).get(k, 0) for s in led.sc.items)
             for k in ("kadmit_ledger_round_trip_seconds_count", "kadmit_ledger_appends_total",
                       "kadmit_ledger_records_malformed_total")}
    assert total["kadmit_ledger_round_trip_seconds_count"] >= 10, total
    assert total["kadmit_ledger_records_malformed_total"] == 0, total
    assert all(led.metrics(s.node.id).get("kadmit_ledger_connected") == 1 for s in led.sc.items)


def test_unreachable_ledger_rejects_admissions_but_forwards_the_rest(led):
    """Fail closed: with no ledger to order it, a create is rejected with a message that says
    why; other traffic (Metadata) keeps flowing through the same sidecar."""
    b = led.c.port_base
    roomy = led.c.dir / "roomy-policy.json"
    roomy.write_text(json.dumps({"max.broker.partitions": 100000}))
    k = Kadmit(kadmit_bin(), led.c.dir, "kadmit-no-ledger", 9099 + b, led.c.node(1).client_port,
               15099 + b, "--policy", str(roomy), "--ledger", "on",
               "--ledger-bootstrap", f"{HOST}:{9098 + b}", "--ledger-timeout-ms", "500")
    k.start()
    try:
        k.wait_log("cluster view refreshed", timeout=15)
        with kafka_wire.Connection(HOST, 9099 + b, 20.0) as conn:
            _, body = conn.call(create_topics_v2(1, f"noledger-{uuid.uuid4().hex[:6]}", 1, 1))
            name, code, msg = parse_create_topics_v2(body)
            assert code in POLICY_VIOLATION_CODES, (code, msg)
            assert "admission ledger" in (msg or ""), msg
            _, md = conn.call(kafka_wire.metadata_request(2))
            assert len(kafka_wire.parse_metadata_v4(md)["brokers"]) == 3
        assert k.http("/readyz")[0] == 200  # it forwards, so it stays in the Service
        code, ready = k.http("/v1/admission")
        # Both of kadmit's topics are out of reach; admission names whichever it checks first.
        assert code == 503 and ("admission ledger" in ready or "__kadmit_limits" in ready), \
            (code, ready)
        m = k.metrics()
        assert m.get("kadmit_ledger_connected") == 0, m
        assert any("ledger_unavailable" in key and v >= 1 for key, v in m.items()), m
    finally:
        rc = k.stop(timeout=10)
    assert rc == 0, f"kadmit did not drain and exit on SIGTERM (rc {rc})"


def test_restarted_sidecar_reads_the_ledger_from_the_intents_that_still_count(led):
    """A sidecar that restarts starts reading at the first record younger than the intent TTL
    (here: the first record of all, written a minute ago), not at the end."""
    s = led.sc[1]
    s.stop()
    start = s.log.stat().st_size if s.log.exists() else 0
    env = dict(os.environ)
    s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream, "--admin",
                  s.admin, "--policy", str(led.policy), "--ledger", "on", "--sidecar-id",
                  "sidecar-1", "--log-level", "info"], env=env)
    deadline = time.monotonic() + 60
    line = ""
    while not line:
        assert s.proc.alive(), tail(s.log)
        assert time.monotonic() < deadline, tail(s.log)
        text = s.log.read_text(errors="replace")[start:]
        line = next((x for x in text.splitlines() if "ledger reading" in x), "")
        time.sleep(0.1)
    assert "from_offset=0" in line, line


def test_an_intent_ttl_within_staleness_plus_ledger_timeout_refuses_to_start(tmp_path):
    """An intent must outlive the ledger timeout (how late its item may reach the broker) plus
    the view's staleness bound (how old a view a decision may use); kadmit refuses to start
    with a TTL inside both, before it connects to anything, and says why."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": 10,
                                  "metadata.refresh.interval.ms": 1000,
                                  "metadata.max.staleness.ms": 4000,
                                  "metadata.refresh.before.decision.ms": 500,
                                  "reservation.expiry.ms": 6000}))
    base = [str(kadmit_bin()), "--listen", f"{HOST}:0", "--upstream", f"{HOST}:1", "--admin",
            "off", "--policy", str(policy), "--ledger", "on", "--ledger-timeout-ms", "2000"]
    p = subprocess.run(base + ["--ledger-intent-ttl-ms", "5000"], capture_output=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, (p.returncode, err)
    assert ("metadata.max.staleness.ms 4000 in the policy plus --ledger-timeout-ms 2000 must be "
            "below --ledger-intent-ttl-ms 5000") in err, err
    # 4000 + 2000 < 6500: the same flags start (and are stopped at once).
    ok = subprocess.Popen(base + ["--ledger-intent-ttl-ms", "6500"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        assert ok.poll() is None, ok.stderr.read().decode(errors="replace")
    finally:
        ok.terminate()
        ok.wait(30)
