"""The concurrent workload: threads that create, delete, re-create at once, grow, reassign and
auto-create topics, each request through a sidecar picked at random, with raw Kafka requests
(tests/integration/clients.py's CreateTopics v5, DeleteTopics v4, CreatePartitions v2,
AlterPartitionReassignments v0; kafka_wire's Metadata v4 with allow_auto_topic_creation).

Three modes: "mixed" (every kind, weighted), "push" (creates only, whatever the room) and
"fill" (creates only, where the checker's last sample shows room, until every broker is
refused): a fault-free phase ends in fill mode so the suite can show the workload reaches the
limit, not just stays under it. Every operation is
counted by kind and result: admitted (0), refused (88, kadmit's limit; for auto-creation, the
topic left uncreated), or the error code or exception met. Errors during faults are expected.

Each admission is also logged (time, kind, sidecar, topic, shape) to admissions.jsonl, so a
violation can be traced to the sidecar that admitted what.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import clients
import kafka_wire
from suite import HOST, WILL_EXCEED, Suite

BROKERS = (1, 2, 3)
MAX_PARTITIONS = 4
OP_TIMEOUT = 20.0
WEIGHTS = {"create": 34, "delete": 12, "recreate": 12, "grow": 12, "reassign": 10,
           "autocreate": 10}


def _result(code: int) -> str:
    if code == 0:
        return "admitted"
    if code == WILL_EXCEED:
        return "refused_88"
    return f"error_{code}"


class Workload:
    def __init__(self, suite: Suite, seed: int, out: Path, threads: int = 4):
        self.suite = suite
        self.rng = random.Random(seed)
        self.rng_lock = threading.Lock()
        self.nthreads = threads
        self.known: dict[str, int] = {}  # topics it believes exist -> their partition count
        self.known_lock = threading.Lock()
        self.stats: Counter = Counter()
        self.phase_stats: Counter = Counter()
        self.mode = "idle"
        self.stop_ev = threading.Event()
        self.threads: list[threading.Thread] = []
        self.out = open(out, "w")
        self.out_lock = threading.Lock()
        self.full: dict[int, float] = {}  # broker -> when the fill mode was last refused on it
        self.recent: list[dict] = []  # admissions, for tracing a violation
        # Set at a violation, cleared at the next phase: one overshoot is a finding; pushing
        # on through it would only grow the cluster and slow every later phase.
        self.halted = False

    # -- shared state
    def r(self):
        with self.rng_lock:
            return random.Random(self.rng.random())

    def count(self, kind: str, result: str) -> None:
        self.stats[(kind, result)] += 1
        self.phase_stats[(kind, result)] += 1

    def admitted(self, kind: str, sidecar: int, topic: str, **shape) -> None:
        rec = {"wall": round(time.time(), 3), "t": round(time.monotonic(), 3), "kind": kind,
               "sidecar": sidecar, "topic": topic, **shape}
        with self.out_lock:
            self.out.write(json.dumps(rec) + "\n")
            self.recent.append(rec)
            if len(self.recent) > 5000:
                del self.recent[:1000]

    def pick_known(self, rng) -> tuple[str, int] | None:
        with self.known_lock:
            if not self.known:
                return None
            name = rng.choice(list(self.known))
            return name, self.known[name]

    def forget(self, name: str) -> None:
        with self.known_lock:
            self.known.pop(name, None)

    def learn(self, name: str, partitions: int) -> None:
        with self.known_lock:
            self.known[name] = partitions

    # -- one request through a sidecar
    def call(self, sidecar: int, frame: bytes) -> bytes:
        return clients.raw_call(self.suite.port(sidecar), frame, timeout=OP_TIMEOUT)

    def create(self, rng, sidecar: int, name: str, kind: str = "create",
               assignment: list[list[int]] | None = None, partitions: int = 1,
               rf: int = 1) -> int:
        spec = (name, assignment) if assignment else (name, partitions, rf)
        body = self.call(sidecar, clients.create_topics_v5(1, [spec]))
        (_, code, _msg), = clients.parse_create_topics_v5(body)
        if code == 0:
            n = len(assignment) if assignment else partitions
            self.learn(name, n)
            self.admitted(kind, sidecar, name, partitions=n,
                          rf=len(assignment[0]) if assignment else rf, assignment=assignment)
        return code

    def shape(self, rng) -> dict:
        rf = rng.randint(1, 3)
        parts = rng.randint(1, MAX_PARTITIONS)
        if rng.random() < 0.3:
            return {"assignment": [rng.sample(BROKERS, rf) for _ in range(parts)]}
        return {"partitions": parts, "rf": rf}

    def op_create(self, rng, sidecar: int) -> str:
        return _result(self.create(rng, sidecar, f"wl-{uuid.uuid4().hex[:10]}", **self.shape(rng)))

    def op_delete(self, rng, sidecar: int) -> str:
        got = self.pick_known(rng)
        if got is None:
            return "skipped"
        name, _ = got
        body = self.call(sidecar, clients.delete_topics_v4(1, [name]))
        (_, code), = clients.parse_delete_topics_v4(body)
        if code in (0, 3):
            self.forget(name)
        return _result(code)

    def op_recreate(self, rng, sidecar: int) -> str:
        """Delete a topic and create it again at once, bigger: on one connection (pipelined),
        or the delete through one sidecar and the create through another."""
        got = self.pick_known(rng)
        if got is None:
            return "skipped"
        name, _ = got
        shape = self.shape(rng)
        spec = (name, shape["assignment"]) if "assignment" in shape else (
            name, shape["partitions"], shape["rf"])
        if rng.random() < 0.5:
            d, c = clients.raw_pipeline(self.suite.port(sidecar),
                                        [clients.delete_topics_v4(1, [name]),
                                         clients.create_topics_v5(2, [spec])], timeout=OP_TIMEOUT)
            (_, dcode), = clients.parse_delete_topics_v4(d)
            (_, code, _), = clients.parse_create_topics_v5(c)
            via = sidecar
        else:
            body = self.call(sidecar, clients.delete_topics_v4(1, [name]))
            (_, dcode), = clients.parse_delete_topics_v4(body)
            via = rng.choice([i for i in BROKERS if i != sidecar])
            body = self.call(via, clients.create_topics_v5(1, [spec]))
            (_, code, _), = clients.parse_create_topics_v5(body)
        if dcode in (0, 3):
            self.forget(name)
        if code == 0:
            n = len(shape["assignment"]) if "assignment" in shape else shape["partitions"]
            self.learn(name, n)
            self.admitted("recreate", via, name, **shape)
        return _result(code)

    def op_grow(self, rng, sidecar: int) -> str:
        got = self.pick_known(rng)
        if got is None:
            return "skipped"
        name, n = got
        total = n + rng.randint(1, 3)
        body = self.call(sidecar, clients.create_partitions_v2(1, {name: total}))
        (_, code, _), = clients.parse_create_partitions_v2(body)
        if code == 0:
            self.learn(name, total)
            self.admitted("grow", sidecar, name, partitions=total)
        return _result(code)

    def op_reassign(self, rng, sidecar: int) -> str:
        """A partition moved to a random replica set of 1..3 brokers (often more replicas)."""
        got = self.pick_known(rng)
        if got is None:
            return "skipped"
        name, n = got
        part = rng.randrange(n)
        replicas = rng.sample(BROKERS, rng.randint(1, 3))
        body = self.call(sidecar, clients.alter_reassignments_v0(1, {(name, part): replicas}))
        top, results = clients.parse_alter_reassignments_v0(body)
        code = top or (results[0][1] if results else -1)
        if code == 0:
            self.admitted("reassign", sidecar, name, partition=part, replicas=replicas)
        return _result(code)

    def op_autocreate(self, rng, sidecar: int) -> str:
        """Metadata with allow_auto_topic_creation for a new name (the broker's defaults: 1
        partition, 3 replicas). Kafka 4.4 answers UNKNOWN_TOPIC_OR_PARTITION (3) both when it
        has just sent the topic for creation and when kadmit cleared the flag (its refusal),
        so the brokers' DIRECT listener says which: the topic exists within a second or not."""
        name = f"wl-auto-{uuid.uuid4().hex[:10]}"
        frame = kafka_wire.metadata_request(1, [name], allow_auto_create=True)
        with kafka_wire.Connection(HOST, self.suite.port(sidecar), OP_TIMEOUT) as c:
            _, body = c.call(frame)
        (t,) = kafka_wire.parse_metadata_v4(body)["topics"]
        if t["error"] not in (0, 3, 5):
            return f"error_{t['error']}"
        for wait in (0.3, 0.7):
            time.sleep(wait)
            try:
                (d,) = self.suite.direct_metadata([name], timeout=5.0)["topics"]
            except (OSError, ConnectionError, ValueError):
                return "unknown"
            if d["error"] == 0 and d["partitions"]:
                self.learn(name, 1)
                self.admitted("autocreate", sidecar, name, partitions=1, rf=3)
                return "admitted"
        return "refused"

    def op_fill(self, rng, sidecar: int) -> str:
        """One replica on a broker the checker shows room on (explicit assignment, or the
        placer's choice for an RF-1 topic)."""
        limits = self.suite.limits.current()
        last = self.suite_checker_last()
        now = time.monotonic()
        # A refusal while the checker shows room is usually a view that still counts a topic
        # deleted a moment ago (or a reservation about to land): try that broker again later.
        room = [b for b in BROKERS if now - self.full.get(b, -1e9) > 1.0
                and last.get(b, 0) < limits.get(b, 0)]
        if not room:
            time.sleep(0.2)
            return "skipped"
        b = rng.choice(room)
        name = f"wl-fill-{uuid.uuid4().hex[:10]}"
        # Large steps while there is much room (the threads run at once, so a quarter each).
        n = max(1, min(MAX_PARTITIONS, (limits.get(b, 0) - last.get(b, 0)) // (2 * self.nthreads)))
        if rng.random() < 0.7:
            code = self.create(rng, sidecar, name, "fill", assignment=[[b]] * n)
            if code == WILL_EXCEED:
                self.full[b] = time.monotonic()
        else:
            code = self.create(rng, sidecar, name, "fill", partitions=1, rf=1)
        return _result(code)

    suite_checker_last = staticmethod(lambda: {})  # set by run.py to the checker's last sample

    # -- threads
    def _loop(self, idx: int) -> None:
        rng = self.r()
        kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
        while not self.stop_ev.is_set():
            mode = self.mode
            if mode == "idle" or self.halted:
                time.sleep(0.1)
                continue
            kind = ("fill" if mode == "fill" else "create" if mode == "push"
                    else rng.choices(kinds, weights)[0])
            sidecar = rng.choice(BROKERS)
            try:
                res = getattr(self, f"op_{kind}")(rng, sidecar)
            except (ConnectionError, socket.timeout, TimeoutError) as e:
                res = f"error_{type(e).__name__}"
            except OSError as e:
                res = f"error_{type(e).__name__}"
            except (ValueError, IndexError) as e:  # a short or odd answer (a cut connection)
                res = f"error_{type(e).__name__}"
            if res != "skipped":
                self.count(kind, res)
            if res.startswith("error"):
                time.sleep(0.2)  # do not spin on a dead sidecar
            time.sleep(0.02)

    def start(self) -> None:
        for i in range(self.nthreads):
            t = threading.Thread(target=self._loop, args=(i,), name=f"wl-{i}", daemon=True)
            t.start()
            self.threads.append(t)

    def halt(self) -> None:
        self.halted = True

    def set_mode(self, mode: str) -> None:
        if mode == "fill":
            self.full.clear()
        self.mode = mode

    def quiesce(self, timeout: float = OP_TIMEOUT * 2 + 5) -> None:
        """Idle, and wait for the operations under way to end (each ends within its timeout)."""
        self.mode = "idle"
        deadline = time.monotonic() + timeout
        busy = True
        while busy and time.monotonic() < deadline:
            n0 = sum(self.stats.values())
            time.sleep(0.5)
            busy = sum(self.stats.values()) != n0
        time.sleep(0.3)

    def stop(self) -> None:
        self.stop_ev.set()
        for t in self.threads:
            t.join(OP_TIMEOUT * 2 + 5)
        self.out.close()

    def totals(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (kind, res), n in sorted(self.stats.items()):
            out.setdefault(kind, {})[res] = n
        return out

    def cleanup(self, suite: Suite, keep_per_broker: int) -> int:
        """Deletes the workload's oldest topics on the DIRECT listener (a delete only frees
        room) until each broker hosts at most keep_per_broker replicas; returns how many."""
        md = suite.direct_metadata()
        counts = {b[0]: 0 for b in md["brokers"]}
        topics = []
        for t in md["topics"]:
            for p in t["partitions"]:
                for r in p["replicas"]:
                    counts[r] = counts.get(r, 0) + 1
            if t["name"].startswith("wl-"):
                topics.append(t)
        self.rng.shuffle(topics)
        doomed = []
        for t in topics:
            if all(n <= keep_per_broker for n in counts.values()):
                break
            doomed.append(t["name"])
            for p in t["partitions"]:
                for r in p["replicas"]:
                    counts[r] -= 1
        for k in range(0, len(doomed), 50):
            chunk = doomed[k:k + 50]
            for n in suite.c.nodes:
                if not n.proc.alive():
                    continue
                try:
                    with kafka_wire.Connection(HOST, n.direct_port, 60) as c:
                        c.call(clients.delete_topics_v4(1, chunk, timeout_ms=60000))
                    break
                except (OSError, ConnectionError):
                    continue
        for name in doomed:
            self.forget(name)
        return len(doomed)
