"""kadmit's own records are authentic, and limits changes are never lost: three sidecars with
`--policy`, `--ledger on` and one cluster secret (the harness gives every sidecar one) in front of a
real 3-broker KRaft cluster.

- A plain confluent-kafka producer, with nothing but Produce rights, copies the record that
  `PUT /v1/limits/default` wrote into __kadmit_limits, raises the limit to 100000 (and even names
  the offset it will land at), and produces it with the copied MAC, without one, and as an exact
  copy of the authentic record: through a sidecar and directly to the broker. Every sidecar keeps
  the real limit, counts each refusal in /metrics, and a create above the real limit is still
  refused with 88; one sidecar writes the layer in force again so the newest record is valid.
- The same for __kadmit_ledger: a forged intent reserving 100000 replicas on every broker, a forged
  outcome releasing another sidecar's intent, and an exact copy of an authentic intent change
  nothing: the reservations stay, every sidecar counts the refusals, and creates that fit pass.
- Two `PUT /v1/limits/brokers/{id}` for different brokers, sent at once through two different
  sidecars: each answer is 200 and its limit is in force on all three afterwards, or 409 and it is
  in force nowhere.
- A sidecar that cannot read its limits topic to the end decides nothing on its file's limits.

Uses its own cluster on ports $KADMIT_TEST_PORT_BASE + 520.
"""

from __future__ import annotations

import json
import struct
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from admin_client import curl_status_body, get_json, spawn_sidecar, wait_ready  # noqa: E402
from kadmit_proc import parse_metrics  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, Sidecars, kadmit_bin, own_cluster  # noqa: E402
from kafka_cluster import port_base, port_open  # noqa: E402

TOKEN = "it-" + uuid.uuid4().hex
LIMITS = "__kadmit_limits"
LEDGER = "__kadmit_ledger"
MAC = "kadmit-mac"
REJECT = "Cannot satisfy request without exceeding the max.broker.partitions limit"
FILE_LIMIT = 1000


class Env:
    def __init__(self, d: Path, c: KafkaCluster, sc: Sidecars):
        self.d, self.c, self.sc = d, c, sc
        self.token_file = d / "admin.token"
        self.limit: int | None = None  # the default limit PUT through sidecar 1

    def policy_file(self, node_id: int) -> Path:
        return self.d / f"policy-{node_id}.json"

    def url(self, node_id: int, path: str) -> str:
        return f"http://{HOST}:{self.c.node(node_id).admin_port}{path}"

    def policy(self, node_id: int) -> dict:
        status, doc = get_json(self.c.node(node_id).admin_port, "/v1/policy")
        assert status == 200, doc
        return doc

    def brokers(self, node_id: int) -> dict[int, dict]:
        status, doc = get_json(self.c.node(node_id).admin_port, "/v1/brokers")
        assert status == 200, doc
        return {b["id"]: b for b in doc["brokers"]}

    def metrics(self, node_id: int) -> dict[str, float]:
        with urllib.request.urlopen(self.url(node_id, "/metrics"), timeout=5) as r:
            return parse_metrics(r.read().decode())

    def refused(self, node_id: int, topic: str, reason: str) -> float:
        key = f'kadmit_own_records_refused_total{{topic="{topic}",reason="{reason}"}}'
        return self.metrics(node_id).get(key, 0.0)

    @property
    def sidecars(self) -> str:
        return ",".join(f"{HOST}:{n.sidecar_port}" for n in self.c.nodes)


@pytest.fixture(scope="module")
def env(request):
    d = Path(tempfile.mkdtemp(prefix="kadmit-own-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 520)
    busy = [p for n in c.nodes for p in (n.sidecar_port, n.admin_port, n.client_port)
            if port_open(p)]
    if busy or not kadmit_bin().exists():
        pytest.fail(f"ports in use {busy} (set KADMIT_TEST_PORT_BASE), or no kadmit binary at "
                    f"{kadmit_bin()} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    e = Env(d, c, Sidecars(c))
    e.token_file.write_text(TOKEN + "\n")
    for n in c.nodes:
        e.policy_file(n.id).write_text(json.dumps({
            "max.broker.partitions": FILE_LIMIT,
            "metadata.refresh.interval.ms": 2000,
            "metadata.refresh.before.decision.ms": 1000}))
    with own_cluster(d, c, e.sc, "own records integration", request):
        c.start()
        for n in c.nodes:
            spawn_sidecar(e.sc[n.id], e.policy_file(n.id), e.token_file, "--ledger", "on",
                          "--sidecar-id", f"sidecar-{n.id}")
        for n in c.nodes:
            wait_ready(n.admin_port, timeout=90)
        yield e


def read_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> list:
    """Every record of partition 0 of `topic`, read from the beginning to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "own-records-" + uuid.uuid4().hex,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"reading {topic}: {m.error()}")
            out.append(m)
        raise AssertionError(f"{topic} not read to its end in {timeout} s")
    finally:
        c.close()


def produce(bootstrap: str, topic: str, key: bytes, value: bytes, headers: list) -> str | None:
    """Produces one record as a client with Produce rights would; returns the delivery error,
    or None when the record was written."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000})
    result: list = []
    p.produce(topic, key=key, value=value, headers=headers, partition=0,
              on_delivery=lambda err, msg: result.append(err))
    p.flush(20)
    assert result, "no delivery report"
    return None if result[0] is None else str(result[0])


def has_mac(m) -> bool:
    return any(k == MAC for k, _ in (m.headers() or []))


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def default_limit(env: Env, node_id: int) -> int:
    return env.policy(node_id)["policy"]["max.broker.partitions"]


def test_forged_and_copied_limits_records_change_nothing(env: Env):
    counts = {b: v["partitions"] + v["reserved"] for b, v in env.brokers(1).items()}
    env.limit = max(counts.values()) + 2
    status, raw = curl_status_body("PUT", env.url(1, "/v1/limits/default"),
                                   json.dumps({"max.broker.partitions": env.limit}), TOKEN)
    assert status == 200, raw
    wait_for(lambda: all(default_limit(env, n) == env.limit for n in (1, 2, 3)), 5,
             "the limit is not in force on all three")

    records = read_topic(env.c.direct_bootstrap, LIMITS)
    real = records[-1]
    assert has_mac(real), [(m.offset(), m.headers()) for m in records]
    doc = json.loads(real.value())
    assert doc["overrides"]["max.broker.partitions"] == env.limit, doc
    mac = [v for k, v in real.headers() if k == MAC]

    # The attacker raises the limit and even names the offset the record will land at.
    end = real.offset() + 1
    forged = dict(doc, overrides=dict(doc["overrides"], **{"max.broker.partitions": 100000}))
    before = {n: {r: env.refused(n, "limits", r) for r in ("bad_mac", "unsigned", "out_of_place")}
              for n in (1, 2, 3)}
    written = {"bad_mac": 0, "unsigned": 0, "out_of_place": 0}
    # First exact copies of the authentic record (a replay), directly and through kadmit...
    for bootstrap in (env.c.direct_bootstrap, env.sidecars):
        err = produce(bootstrap, LIMITS, real.key(), real.value(), [(MAC, mac[0])])
        if err is None:
            written["out_of_place"] += 1
        else:  # kadmit may refuse produces to its topics outright: then nothing was written
            assert bootstrap == env.sidecars, err
    # ...then the raised limit, with the copied MAC and without one, so the newest is forged.
    attempts = [
        ("bad_mac", env.c.direct_bootstrap, dict(forged, at=end + 2), [(MAC, mac[0])]),
        ("unsigned", env.sidecars, dict(forged, at=end + 3), []),
        ("bad_mac", env.sidecars, dict(forged, at=end + 4), [(MAC, mac[0])]),
        ("unsigned", env.c.direct_bootstrap, dict(forged, at=end + 5), []),
    ]
    for reason, bootstrap, value, headers in attempts:
        err = produce(bootstrap, LIMITS, real.key(), json.dumps(value).encode(), headers)
        if err is None:
            written[reason] += 1
        else:
            assert bootstrap == env.sidecars, err
    assert written["bad_mac"] >= 1 and written["unsigned"] >= 1, written

    # Every sidecar counts every refusal, and keeps the real limit.
    def counted():
        return all(env.refused(n, "limits", r) - before[n][r] >= written[r]
                   for n in (1, 2, 3) for r in written)
    wait_for(counted, 10, {n: env.metrics(n) for n in (1, 2, 3)})
    for n in (1, 2, 3):
        assert default_limit(env, n) == env.limit, env.policy(n)
        assert env.metrics(n)["kadmit_cluster_secret_configured"] == 1
        log = env.sc[n].log.read_text(errors="replace")
        assert "limits record refused; it changes nothing" in log, n

    # A create above the real limit is still refused with 88 (its message), through any sidecar.
    for n in (1, 2, 3):
        p = clients.topics(f"{HOST}:{env.c.node(n).sidecar_port}", "--create", "--topic",
                           f"above-{n}-{uuid.uuid4().hex[:6]}", "--partitions", "9",
                           "--replication-factor", "3", check=False)
        out = (p.stdout + p.stderr).decode(errors="replace")
        assert p.returncode != 0 and REJECT in out, out

    # The newest record was refused: a sidecar writes the layer in force again, so compaction
    # keeps an authentic record at the place it was written for.
    def repaired():
        newest = read_topic(env.c.direct_bootstrap, LIMITS)[-1]
        value = json.loads(newest.value())
        return (has_mac(newest) and value.get("at") == newest.offset()
                and value["overrides"]["max.broker.partitions"] == env.limit)
    wait_for(repaired, 15, "no sidecar repaired the limits topic")
    assert sum(env.metrics(n).get("kadmit_limits_repairs_total", 0) for n in (1, 2, 3)) >= 1
    for n in (1, 2, 3):
        assert default_limit(env, n) == env.limit, env.policy(n)


def reserved(env: Env, node_id: int) -> int:
    return sum(b["reserved"] for b in env.brokers(node_id).values())


def test_forged_and_copied_ledger_records_change_nothing(env: Env):
    # An authentic intent: a create (its AdminClient picks the sidecar that decides).
    status, raw = curl_status_body("PUT", env.url(1, "/v1/limits/default"),
                                   json.dumps({"max.broker.partitions": FILE_LIMIT}), TOKEN)
    assert status == 200, raw
    wait_for(lambda: all(default_limit(env, n) == FILE_LIMIT for n in (1, 2, 3)), 5,
             "the file's limit is not back on all three")
    topic = f"real-{uuid.uuid4().hex[:8]}"
    clients.topics(f"{HOST}:{env.c.node(2).sidecar_port}", "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "3")
    records = read_topic(env.c.direct_bootstrap, LEDGER)
    intents = [m for m in records if json.loads(m.value()).get("type") == "intent"
               and topic in m.value().decode()]
    assert intents and all(has_mac(m) for m in records), [m.headers() for m in records]
    real = intents[-1]
    doc = json.loads(real.value())
    mac = [v for k, v in real.headers() if k == MAC][0]
    who = doc["sidecar"]
    assert who.startswith("sidecar-"), doc
    wait_for(lambda: all(reserved(env, n) == 0 for n in (1, 2, 3)), 10,
             "reservations did not settle")

    # A forged intent of that sidecar's, with a new seq, reserving 100000 replicas on every
    # broker (it would block every create for a TTL), and a forged outcome releasing the items
    # of its real intent.
    item = dict(doc["items"][0], topic="blocker", deltas=[[1, 100000], [2, 100000], [3, 100000]])
    blocker = dict(doc, seq=doc["seq"] + 1000, ts=int(time.time() * 1000), items=[item])
    outcome = {"type": "outcome", "sidecar": who, "seq": doc["seq"],
               "items": ["released"]}
    before = {n: {r: env.refused(n, "ledger", r) for r in ("bad_mac", "unsigned", "replayed")}
              for n in (1, 2, 3)}
    written = {"bad_mac": 0, "unsigned": 0, "replayed": 0}
    attempts = [
        ("bad_mac", env.c.direct_bootstrap, real.key(), blocker, [(MAC, mac)]),
        ("unsigned", env.sidecars, real.key(), blocker, []),
        ("unsigned", env.c.direct_bootstrap, real.key(), outcome, []),
        ("bad_mac", env.sidecars, real.key(), outcome, [(MAC, mac)]),
    ]
    for reason, bootstrap, key, value, headers in attempts:
        err = produce(bootstrap, LEDGER, key, json.dumps(value).encode(), headers)
        if err is None:
            written[reason] += 1
        else:
            assert bootstrap == env.sidecars, err
    # An exact copy of the authentic intent: its seq was used.
    err = produce(env.c.direct_bootstrap, LEDGER, real.key(), real.value(), [(MAC, mac)])
    assert err is None, err
    written["replayed"] += 1
    assert written["bad_mac"] >= 1 and written["unsigned"] >= 1, written

    def counted():
        return all(env.refused(n, "ledger", r) - before[n][r] >= written[r]
                   for n in (1, 2, 3) for r in written)
    wait_for(counted, 10, {n: env.metrics(n) for n in (1, 2, 3)})
    for n in (1, 2, 3):
        assert reserved(env, n) < 100, env.brokers(n)
        log = env.sc[n].log.read_text(errors="replace")
        assert "ledger record refused; it changes nothing" in log, n
    # Creates that fit still pass, through every sidecar.
    for n in (1, 2, 3):
        clients.topics(f"{HOST}:{env.c.node(n).sidecar_port}", "--create", "--topic",
                       f"fits-{n}-{uuid.uuid4().hex[:6]}", "--partitions", "1",
                       "--replication-factor", "3")


def broker_limit(doc: dict, broker_id: int) -> int:
    return doc["policy"]["brokers"].get(str(broker_id), {}).get(
        "max.broker.partitions", doc["policy"]["max.broker.partitions"])


def test_concurrent_changes_through_two_sidecars_are_both_in_force_or_409(env: Env):
    outcomes = []
    for rnd in range(6):
        want = {1: 2000 + rnd, 2: 3000 + rnd}
        before = {b: broker_limit(env.policy(1), b) for b in (1, 2)}
        answers: dict[int, tuple[int, str]] = {}
        gate = threading.Barrier(2)

        def put(broker_id: int, via: int):
            gate.wait()
            answers[broker_id] = curl_status_body(
                "PUT", env.url(via, f"/v1/limits/brokers/{broker_id}"),
                json.dumps({"max.broker.partitions": want[broker_id]}), TOKEN)

        threads = [threading.Thread(target=put, args=(1, 1)),
                   threading.Thread(target=put, args=(2, 2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert set(answers) == {1, 2}, answers
        expect = {}
        for b, (status, raw) in answers.items():
            assert status in (200, 409), (b, status, raw)
            if status == 409:
                assert "came first" in json.loads(raw)["error"], raw
            expect[b] = want[b] if status == 200 else before[b]
        outcomes.append(tuple(answers[b][0] for b in (1, 2)))

        def settled():
            return all(broker_limit(env.policy(n), b) == expect[b]
                       for n in (1, 2, 3) for b in (1, 2))
        # Every change answered 200 is in force on all three; one answered 409 nowhere.
        deadline = time.monotonic() + 5
        while not settled():
            assert time.monotonic() < deadline, (rnd, answers, expect, {
                n: {b: broker_limit(env.policy(n), b) for b in (1, 2)} for n in (1, 2, 3)})
            time.sleep(0.05)
        time.sleep(3)  # a repair of a refused record settles before the next round
        assert settled(), (rnd, answers)
    print("concurrent rounds (status via sidecar 1, via sidecar 2):", outcomes)
    assert any(200 in o for o in outcomes), outcomes


def create_topics_v2(cid: int, topic: str, partitions: int, rf: int) -> bytes:
    body = (struct.pack(">i", 1) + kafka_wire._str(topic) + struct.pack(">ihii", partitions, rf, 0, 0)
            + struct.pack(">i?", 8000, False))  # timeout_ms: how long a create may wait
    return kafka_wire.request(19, 2, cid, body)


def parse_create_topics_v2(body: bytes) -> tuple[int, str | None]:
    off = 8  # throttle_time_ms, the topic count (one)
    (n,) = struct.unpack_from(">h", body, off)
    off += 2 + n
    (code, mlen) = struct.unpack_from(">hh", body, off)
    return code, body[off + 4:off + 4 + mlen].decode() if mlen >= 0 else None


def test_no_decision_on_the_file_limits_while_the_limits_topic_is_unread(env: Env):
    """Last in the module (it stops broker 3). Sidecar 1 restarts on a limits topic whose only
    replica is on the stopped broker, so it never reads it to the end: /v1/admission says why,
    kadmit_limits_loaded stays 0, and a create that the file's limits would admit waits (for its
    own timeout_ms, at least --ledger-timeout-ms), then is refused with a message, and is never
    forwarded."""
    stalled = f"stalled-limits-{uuid.uuid4().hex[:8]}"
    clients.topics(env.c.direct_bootstrap, "--create", "--topic", stalled,
                   "--replica-assignment", "3")
    s1 = env.sc[1]
    s1.stop()
    env.c.stop_node(3)
    spawn_sidecar(s1, env.policy_file(1), env.token_file, "--ledger", "on",
                  "--sidecar-id", "sidecar-1", "--limits-topic", stalled)
    port = env.c.node(1).admin_port

    def held_back():
        # The ledger is read (so an intent could be ordered), the limits are not.
        status, doc = get_json(port, "/v1/admission")
        return (status == 503 and "limits are still being read" in doc.get("error", "")
                and env.metrics(1).get("kadmit_ledger_connected") == 1)
    wait_for(held_back, 60, get_json(port, "/v1/admission"))
    time.sleep(2)  # still unread
    assert env.metrics(1)["kadmit_limits_loaded"] == 0
    topic = f"while-unread-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    with kafka_wire.Connection(HOST, env.c.node(1).sidecar_port, 40.0) as conn:
        _, body = conn.call(create_topics_v2(7, topic, 1, 2))
    took = time.monotonic() - t0
    code, msg = parse_create_topics_v2(body)
    assert code != 0 and msg and "still reading the cluster's limits" in msg, (code, msg)
    assert 7.0 <= took < 20.0, took  # held for its own timeout_ms (8 s), not answered at once
    # A create that the file's limits refuse waits too (a limit in the topic may raise them),
    # for a bounded number of refreshes, then is refused.
    t0 = time.monotonic()
    with kafka_wire.Connection(HOST, env.c.node(1).sidecar_port, 60.0) as conn:
        _, body = conn.call(create_topics_v2(8, f"{topic}-big", 100000, 1))
    code, msg = parse_create_topics_v2(body)
    assert code == 88, (code, msg)
    assert env.metrics(1)["kadmit_admission_deferred_total"] >= 1
    md = kafka_wire.metadata(HOST, env.c.node(1).direct_port, topics=[topic])
    assert md["topics"][0]["error"] != 0, md  # never created
    # Back as it was: the broker, and sidecar 1 on the real limits topic.
    env.c.start_node(3)
    s1.stop()
    spawn_sidecar(s1, env.policy_file(1), env.token_file, "--ledger", "on",
                  "--sidecar-id", "sidecar-1")
    wait_ready(port, timeout=90)
