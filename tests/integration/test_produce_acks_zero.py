"""Produce with acks=0 (no response) through kadmit: records arrive, the connection keeps working."""

from clients import (create_topic, kcat_consume_to_file, kcat_produce_file, producer_perf,
                     sorted_sha256, wait_end_offsets_total, write_records)
import kafka_wire as kw


def test_kcat_acks_zero_records_arrive_through_kadmit(cluster, tmp_path, topic_name):
    n = 200_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    src = tmp_path / "records.txt"
    write_records(src, n, "acks0")
    kcat_produce_file(cluster.bootstrap, topic_name, src, "acks=0", "enable.idempotence=false",
                      "linger.ms=5")
    assert wait_end_offsets_total(cluster.bootstrap, topic_name, n, timeout=30) == n
    out = tmp_path / "consumed.txt"
    kcat_consume_to_file(cluster.bootstrap, topic_name, out)
    assert sorted_sha256(out) == sorted_sha256(src)


def test_java_producer_acks_zero_through_kadmit(cluster, topic_name):
    n = 200_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    res = producer_perf(cluster.bootstrap, topic_name, n, record_size=100,
                        props={"acks": "0", "enable.idempotence": "false", "linger.ms": 5})
    assert res["sent"] == n
    assert wait_end_offsets_total(cluster.bootstrap, topic_name, n, timeout=30) == n


def test_raw_acks_zero_produce_interleaved_with_requests_keeps_order(cluster, tmp_path,
                                                                     topic_name):
    """acks=0 Produce gets no response; later requests on the same connection still get
    theirs, with the right correlation ids."""
    create_topic(cluster.bootstrap, topic_name, 1, 3)
    cluster.wait_topic_healthy(topic_name)
    md = kw.metadata("127.0.0.1", cluster.nodes[0].direct_port, topics=[topic_name])
    leader = md["topics"][0]["partitions"][0]["leader"]
    port = cluster.node(leader).sidecar_port
    batches, per_batch = 200, 10
    expected = []
    with kw.Connection("127.0.0.1", port, timeout=30) as c:
        cid = 1000
        sent_probes = []
        out = bytearray()
        for b in range(batches):
            values = [f"raw-{b:04d}-{i:02d}".encode() for i in range(per_batch)]
            expected += values
            out += kw.produce_request(cid, topic_name, 0, values, acks=0)
            cid += 1
            if b % 10 == 9:
                out += kw.api_versions_request(cid)
                sent_probes.append(cid)
                cid += 1
        c.send(bytes(out))
        for probe in sent_probes:
            got, body = c.recv()
            assert got == probe, f"expected the response to {probe}, got {got}"
            assert kw.parse_api_versions_v0(body)[0] == 0
        got, body = c.call(kw.metadata_request(cid, [topic_name]))
        assert got == cid
        assert kw.parse_metadata_v4(body)["topics"][0]["error"] == 0
    got = wait_end_offsets_total(cluster.bootstrap, topic_name, len(expected), timeout=30)
    assert got == len(expected)
    out_f = tmp_path / "consumed.txt"
    kcat_consume_to_file(cluster.bootstrap, topic_name, out_f)
    assert out_f.read_bytes().splitlines() == expected
