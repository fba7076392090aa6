"""Records produced through kadmit come back unchanged: count and content checksums equal."""

import hashlib
import os
import time
import urllib.request

from clients import (create_topic, end_offsets_total, kcat_consume_to_file, kcat_produce_file,
                     run, sorted_sha256, write_records)
from kadmit_proc import parse_metrics
from kafka_cluster import tool

MILLION = 1_000_000


def test_million_idempotent_acks_all_records_roundtrip_through_kadmit(cluster, tmp_path,
                                                                      topic_name):
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    src = tmp_path / "records.txt"
    write_records(src, MILLION, "kcat")
    kcat_produce_file(cluster.bootstrap, topic_name, src,
                      "enable.idempotence=true", "acks=all", "linger.ms=20",
                      "batch.num.messages=10000")
    assert end_offsets_total(cluster.bootstrap, topic_name) == MILLION

    out = tmp_path / "consumed.txt"
    kcat_consume_to_file(cluster.bootstrap, topic_name, out)
    assert sorted_sha256(out) == sorted_sha256(src)


def test_java_producer_and_group_consumer_roundtrip_through_kadmit(cluster, tmp_path,
                                                                   topic_name):
    n = 200_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    src = tmp_path / "records.txt"
    write_records(src, n, "java")
    with open(src, "rb") as f:
        data = f.read()
    run([tool("kafka-console-producer"), "--bootstrap-server", cluster.bootstrap,
         "--topic", topic_name,
         "--producer-property", "acks=all", "--producer-property", "enable.idempotence=true",
         "--producer-property", "linger.ms=10", "--producer-property", "batch.size=65536"],
        input_=data, timeout=180)
    assert end_offsets_total(cluster.bootstrap, topic_name) == n

    out = tmp_path / "consumed.txt"
    run([tool("kafka-console-consumer"), "--bootstrap-server", cluster.bootstrap,
         "--topic", topic_name, "--group", f"g-{topic_name}", "--from-beginning",
         "--max-messages", str(n), "--timeout-ms", "60000"],
        timeout=180, stdout_file=out)
    assert sorted_sha256(out) == sorted_sha256(src)


def _spliced(c) -> dict[str, float]:
    """kadmit_spliced_bytes_total summed over the sidecars, by direction."""
    out = {"client_to_broker": 0.0, "broker_to_client": 0.0}
    for s in c.sidecars.items:
        with urllib.request.urlopen(f"http://{s.admin}/metrics", timeout=5) as r:
            values = parse_metrics(r.read().decode())
        assert "kadmit_splice_fallbacks_total" in values
        for d in out:
            out[d] += values.get(f'kadmit_spliced_bytes_total{{direction="{d}"}}', 0.0)
    return out


def test_large_records_roundtrip_byte_exact_with_splice(cluster, topic_name):
    """~1 MiB records (Produce and Fetch bodies far above the splice threshold) come back byte
    for byte, and the spliced-bytes metric moved both ways: the test fails if splice never ran."""
    from confluent_kafka import Consumer, Producer

    n, size = 24, 900 * 1024
    create_topic(cluster.bootstrap, topic_name, 2, 3)
    before = _spliced(cluster)
    records = [os.urandom(size) for _ in range(n)]
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 5, "message.max.bytes": 1_000_000})
    failed = []
    for i, r in enumerate(records):
        p.produce(topic_name, value=r, key=str(i).encode(),
                  on_delivery=lambda err, _m: failed.append(err) if err else None)
        p.poll(0)
    assert p.flush(120) == 0
    assert failed == []
    assert end_offsets_total(cluster.bootstrap, topic_name) == n

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{topic_name}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic_name])
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 120
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got[int(m.key())] = m.value()
    c.close()
    assert sorted(got) == list(range(n))
    for i in range(n):
        assert hashlib.sha256(got[i]).digest() == hashlib.sha256(records[i]).digest(), i

    after = _spliced(cluster)
    # Most of the bytes went socket to socket: at least half of each direction's payload.
    assert after["client_to_broker"] - before["client_to_broker"] >= n * size / 2, after
    assert after["broker_to_client"] - before["broker_to_client"] >= n * size / 2, after
