"""kadmit soak: produce and consume through kadmit for a long time while the policy changes.

Environment (all optional):
  SOAK_SECONDS        run time (default 1800)
  SOAK_RATE           records per second produced (default 2000)
  SOAK_POLICY_EVERY   seconds between policy changes (default 5)
  SOAK_SAMPLE_EVERY   seconds between RSS / fd samples (default 60)
  SOAK_OUT            JSON-lines file of samples and the summary (default soak-<time>.jsonl)
  SOAK_POLICY_MODE    file, api or auto (default auto: edit the policy file; if the admin API
                      does not show the edit within 3 s, use PUT /v1/policy from then on)
  KADMIT_BIN          the binary (default build/kadmit)
  KADMIT_TEST_PORT_BASE  ports are this + 230 (a 1-broker cluster, as in the tests)

Every record carries a unique sequence number; at the end the consumer must have seen every
produced sequence number (duplicates are reported, not failures: the group consumer may
re-read after a rebalance). Exit 0 when nothing was lost and kadmit is still running.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
sys.path.insert(0, str(HERE.parent.parent / "scripts" / "harness"))

from kadmit_proc import Kadmit, open_fds, proc_status  # noqa: E402
from kafka_cluster import HOST, KafkaCluster, kadmit_bin, port_base  # noqa: E402

SECONDS = float(os.environ.get("SOAK_SECONDS", "1800"))
RATE = int(os.environ.get("SOAK_RATE", "2000"))
POLICY_EVERY = float(os.environ.get("SOAK_POLICY_EVERY", "5"))
SAMPLE_EVERY = float(os.environ.get("SOAK_SAMPLE_EVERY", "60"))
MODE = os.environ.get("SOAK_POLICY_MODE", "auto")
TOKEN = "soak-token"
TOPIC = "soak"


def log(out, rec: dict) -> None:
    rec = {"at": time.strftime("%H:%M:%S"), **rec}
    out.write(json.dumps(rec) + "\n")
    out.flush()
    print(json.dumps(rec), flush=True)


def sample(k: Kadmit, what: str, produced: int, consumed: int) -> dict:
    st = proc_status(k.pid)
    return {"sample": what, "rss_kib": st["VmRSS"] // 1024, "hwm_kib": st["VmHWM"] // 1024,
            "fds": open_fds(k.pid), "produced": produced, "consumed": consumed}


class PolicyChanger:
    def __init__(self, k: Kadmit, path: Path):
        self.k, self.path, self.mode = k, path, MODE
        self.n = 0
        self.failures = 0

    def policy(self, limit: int) -> dict:
        return {"max.broker.partitions": limit, "metadata.refresh.interval.ms": 1000,
                "metadata.refresh.before.decision.ms": 1000}

    def in_force(self) -> dict:
        code, body = self.k.http("/v1/policy")
        return json.loads(body)["policy"] if code == 200 else {}

    def put(self, pol: dict) -> bool:
        req = urllib.request.Request(f"http://{HOST}:{self.k.admin_port}/v1/policy", method="PUT",
                                     data=json.dumps(pol).encode(),
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def change(self) -> None:
        self.n += 1
        limit = 100000 + self.n
        pol = self.policy(limit)
        if self.mode in ("file", "auto"):
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(pol))
            tmp.replace(self.path)
            if self.mode == "auto":
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline:
                    if self.in_force().get("max.broker.partitions") == limit:
                        self.mode = "file"
                        return
                    time.sleep(0.1)
                self.mode = "api"  # no file reload in this build: the admin API from now on
            else:
                return
        if not self.put(pol):
            self.failures += 1


def main() -> int:
    from confluent_kafka import Consumer, Producer

    binary = kadmit_bin()
    d = Path(tempfile.mkdtemp(prefix="kadmit-soak-"))
    out_path = Path(os.environ.get("SOAK_OUT", f"soak-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"))
    out = open(out_path, "w")
    c = KafkaCluster(d, brokers=1, port_base_=port_base() + 230)
    n = c.node(1)
    policy_path = d / "policy.json"
    os.environ["KADMIT_ADMIN_TOKEN"] = TOKEN
    k = Kadmit(binary, d, "kadmit", n.sidecar_port, n.client_port, n.admin_port,
               "--policy", str(policy_path), "--buffer-memory", "64MiB")
    changer = PolicyChanger(k, policy_path)
    policy_path.write_text(json.dumps(changer.policy(100000)))
    produced = set()
    acked = [0]
    consumed: set[int] = set()
    dupes = [0]
    errors: list[str] = []
    stop = threading.Event()
    ok = False
    try:
        c.start()
        k.start()
        bootstrap = f"{HOST}:{n.sidecar_port}"
        deadline = time.monotonic() + 60
        while k.http("/v1/admission")[0] != 200:  # it creates topics through kadmit
            assert time.monotonic() < deadline, "kadmit not ready"
            time.sleep(0.2)
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(30)
        c.wait_topic_healthy(TOPIC)
        log(out, {"start": True, "seconds": SECONDS, "rate": RATE, "dir": str(d)})
        log(out, sample(k, "start", 0, 0))

        def on_delivery(err, msg):
            if err is not None:
                errors.append(f"delivery: {err}")
            else:
                produced.add(int(msg.key()))
                acked[0] += 1

        def produce() -> None:
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                          "enable.idempotence": True, "linger.ms": 5})
            seq, t0 = 0, time.monotonic()
            while not stop.is_set():
                target = int((time.monotonic() - t0) * RATE)
                while seq < target:
                    try:
                        p.produce(TOPIC, b"x" * 200, key=str(seq).encode(),
                                  on_delivery=on_delivery)
                        seq += 1
                    except BufferError:
                        p.poll(0.05)
                p.poll(0.01)
            if p.flush(60) != 0:
                errors.append("producer: records still queued after 60 s")

        def consume() -> None:
            cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak",
                             "auto.offset.reset": "earliest", "error_cb":
                                 lambda e: errors.append(f"consumer error_cb: {e}")})
            cons.subscribe([TOPIC])
            idle_since = None
            while True:
                m = cons.poll(0.5)
                if m is None:
                    if stop.is_set() and len(consumed) >= len(produced):
                        break
                    if stop.is_set():
                        idle_since = idle_since or time.monotonic()
                        if time.monotonic() - idle_since > 60:
                            break
                    continue
                if m.error() is not None:
                    errors.append(f"consumer: {m.error()}")
                    continue
                idle_since = None
                seq = int(m.key())
                if seq in consumed:
                    dupes[0] += 1
                consumed.add(seq)
            cons.close()

        tp = threading.Thread(target=produce, daemon=True)
        tc = threading.Thread(target=consume, daemon=True)
        tp.start()
        tc.start()
        t0 = time.monotonic()
        next_policy, next_sample, topics = t0 + POLICY_EVERY, t0 + SAMPLE_EVERY, 0
        while time.monotonic() - t0 < SECONDS:
            time.sleep(0.2)
            now = time.monotonic()
            if now >= next_policy:
                changer.change()
                next_policy += POLICY_EVERY
                if changer.n % 6 == 0:  # an admission decision now and then
                    topics += 1
                    admin.create_topics([NewTopic(f"soak-extra-{topics}", 1, 1)])
            if now >= next_sample:
                log(out, sample(k, "minute", acked[0], len(consumed)))
                next_sample += SAMPLE_EVERY
            assert k.alive(), "kadmit died"
        stop.set()
        tp.join(120)
        tc.join(180)
        end = sample(k, "end", acked[0], len(consumed))
        log(out, end)
        missing = len(produced - consumed)
        summary = {"summary": True, "produced": len(produced), "consumed": len(consumed),
                   "missing": missing, "duplicates": dupes[0],
                   "policy_changes": changer.n, "policy_mode": changer.mode,
                   "policy_put_failures": changer.failures, "errors": errors[:10],
                   "kadmit_alive": k.alive(), "sanitizer_reports": k.sanitizer_reports()[:5]}
        log(out, summary)
        ok = (missing == 0 and len(produced) > 0 and k.alive() and not k.sanitizer_reports()
              and changer.failures == 0)
    finally:
        stop.set()
        k.stop()
        c.stop()
        out.close()
        if ok:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"soak: cluster dir kept: {d}", file=sys.stderr)
    print(f"soak: {'PASS' if ok else 'FAIL'}; samples in {out_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
