"""A sidecar useful from its first second: creates that arrive before its ledger is read (a fresh
cluster, sidecars just started) wait for it and are judged, not refused.

- On a fresh 3-broker cluster whose sidecars start at once with `--ledger on` and
  `--ledger-timeout-ms 2000`, a create sent 0.5 s after the start is admitted, and one too big
  for the limit is refused with 88 and the limit's message (not with "the ledger did not
  answer"). The ledger often takes longer than that to be ready there (the topic's creation,
  then its first acks=all append, whose followers start fetching late), and a create held past
  --ledger-timeout-ms is still admitted: the wait is the request's own timeout_ms (30 s here).
- A ledger that cannot be reached at all is not a sidecar starting: a create that asks for 60 s
  is refused after about --ledger-timeout-ms, with the message that the ledger did not answer
  (fail closed, as before).

The cap (--held-request-timeout-ms) and the floor of the wait are unit-tested
(test_admission_seams: test_wait_for_the_ledger_is_the_request_timeout_capped).

Uses its own clusters, on ports offset by $KADMIT_TEST_PORT_BASE (+580 and +620); $KADMIT_BIN
selects the binary.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from kafka_cluster import (KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open, tail)

LIMIT = 1000
LEDGER_TIMEOUT_MS = 2000
LIMIT_MESSAGE = "without exceeding the max.broker.partitions limit"


def admission_status(admin: str) -> int:
    try:
        with urllib.request.urlopen(f"http://{admin}/v1/admission", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def spawn(s, policy: Path, *extra: str) -> None:
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "abort_on_error=0:halt_on_error=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    s.proc.spawn([str(s.binary), "--listen", s.listen, "--upstream", s.upstream, "--admin",
                  s.admin, "--policy", str(policy), "--ledger", "on", "--sidecar-id",
                  f"cold-{s.node.id}", "--log-level", "info", *extra], env=env)


def create(port: int, topic: str, partitions: int, rf: int, timeout_ms: int,
           cid: int) -> tuple[int, str | None, float]:
    """(error code, message, seconds from send to answer) of one CreateTopics v5."""
    t = time.monotonic()
    body = clients.raw_call(port, clients.create_topics_v5(cid, [(topic, partitions, rf)],
                                                           timeout_ms=timeout_ms))
    (_, code, msg), = clients.parse_create_topics_v5(body)
    return code, msg, time.monotonic() - t


def fresh(request, offset: int, brokers: int):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-cold-"))
    c = KafkaCluster(d, brokers=brokers, port_base_=port_base() + offset)
    sc = Sidecars(c, binary)
    policy = d / "policy.json"
    policy.write_text(json.dumps({"max.broker.partitions": LIMIT}))
    return d, c, sc, policy


def test_creates_at_half_a_second_are_judged_not_refused(request):
    d, c, sc, policy = fresh(request, 580, 3)
    with own_cluster(d, c, sc, "cold start", request):
        c.start()
        t0 = time.monotonic()
        for s in sc.items:
            spawn(s, policy, "--ledger-timeout-ms", str(LEDGER_TIMEOUT_MS))
        first = sc.items[0]
        while not port_open(first.node.sidecar_port):
            assert first.proc.alive(), tail(first.log)
            assert time.monotonic() - t0 < 15, "sidecar not listening"
            time.sleep(0.02)
        time.sleep(max(0.0, t0 + 0.5 - time.monotonic()))
        ready_before = admission_status(first.admin) == 200
        results: dict[str, tuple] = {}

        def send(name: str, partitions: int, cid: int) -> None:
            results[name] = create(first.node.sidecar_port, name, partitions, 1, 30000, cid)

        # The too-big one asks for more than the whole cluster's headroom.
        threads = [threading.Thread(target=send, args=("cold-fits", 1, 1)),
                   threading.Thread(target=send, args=("cold-too-big", 3 * LIMIT + 1, 2))]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert set(results) == {"cold-fits", "cold-too-big"}, results
        code, msg, took = results["cold-fits"]
        assert code == 0, (msg, sc.diagnostics())
        code, msg, took_big = results["cold-too-big"]
        assert code == 88, (code, msg)
        assert msg is not None and LIMIT_MESSAGE in msg, msg
        assert "did not answer" not in msg
        sidecar_log = first.log.read_text(errors="replace")
        assert "ledger reading" in sidecar_log
        # Held longer than --ledger-timeout-ms and still admitted: the wait was its own.
        held_long = not ready_before and took > LEDGER_TIMEOUT_MS / 1000
        sys.stderr.write(f"\ncold start: sent at +0.5 s, ready before: {ready_before}, "
                         f"admitted after {took:.2f} s (held past --ledger-timeout-ms: "
                         f"{held_long}), too big refused after {took_big:.2f} s\n")


def test_an_unreachable_ledger_still_fails_closed_at_the_ledger_timeout(request):
    d, c, sc, policy = fresh(request, 620, 1)
    with own_cluster(d, c, sc, "cold start, ledger unreachable", request):
        c.start()
        s = sc.items[0]
        # Nothing listens there, so the ledger is never reached: not a sidecar starting.
        dead = f"127.0.0.1:{port_base() + 620 + 3}"
        assert not port_open(int(dead.rsplit(":", 1)[1]))
        spawn(s, policy, "--ledger-bootstrap", dead, "--ledger-timeout-ms", "500")
        deadline = time.monotonic() + 15
        while not port_open(s.node.sidecar_port):
            assert s.proc.alive(), tail(s.log)
            assert time.monotonic() < deadline, "sidecar not listening"
            time.sleep(0.05)
        time.sleep(1.0)  # librdkafka has found no broker up by now
        code, msg, took = create(s.node.sidecar_port, "cold-unreachable", 1, 1, 60000, 1)
        # Refused with the ledger's state: unreachable, or it did not answer in time.
        assert code != 0 and msg is not None and "admission ledger" in msg and (
            "did not answer" in msg or "unreachable" in msg), (code, msg)
        assert took < 0.5 + 4, (took, msg)  # --ledger-timeout-ms, not the request's 60 s
