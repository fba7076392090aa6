"""Records produced through kadmit come back unchanged: count and content checksums equal."""

from clients import (create_topic, end_offsets_total, kcat_consume_to_file, kcat_produce_file,
                     run, sorted_sha256, write_records)
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
