"""Many confluent-kafka consumers in one process, for the memory-bound test and by hand.

  python3 mb_consumers.py BOOTSTRAP TOPIC PARTITIONS CONSUMERS SECONDS

Each consumer assigns every partition from the beginning (no group) with fetch.max.bytes
50 MiB, and reads until SECONDS have passed. Once a second it prints one JSON line:
{"t": seconds, "records": total so far, "bytes": ..., "errors": [first few errors]}.
Exit 0 when no consumer saw an error.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

FETCH_MAX = 50 * 1024 * 1024


def main() -> int:
    bootstrap, topic, partitions, consumers, seconds = sys.argv[1:6]
    partitions, consumers, seconds = int(partitions), int(consumers), float(seconds)
    lock = threading.Lock()
    totals = {"records": 0, "bytes": 0}
    errors: list[str] = []
    stop = threading.Event()

    def on_error(e: KafkaError) -> None:
        with lock:
            errors.append(f"error_cb: {e}")

    def run(i: int) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"mb-{i}",
                      "enable.auto.commit": False, "fetch.max.bytes": FETCH_MAX,
                      "receive.message.max.bytes": FETCH_MAX + 1024 * 1024,
                      "max.partition.fetch.bytes": 1024 * 1024,
                      "queued.max.messages.kbytes": 2048,
                      "socket.receive.buffer.bytes": 65536,
                      "error_cb": on_error})
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        try:
            while not stop.is_set():
                msgs = c.consume(num_messages=200, timeout=0.5)
                n = b = 0
                for m in msgs:
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        with lock:
                            errors.append(f"consumer {i}: {m.error()}")
                        continue
                    n += 1
                    b += len(m.value() or b"")
                with lock:
                    totals["records"] += n
                    totals["bytes"] += b
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(consumers)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(1)
        with lock:
            print(json.dumps({"t": round(time.monotonic() - t0, 1), **totals,
                              "errors": errors[:5]}), flush=True)
    stop.set()
    for t in threads:
        t.join(30)
    with lock:
        print(json.dumps({"t": round(time.monotonic() - t0, 1), **totals, "errors": errors[:5],
                          "final": True}), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
