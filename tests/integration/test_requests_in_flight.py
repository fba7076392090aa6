"""Many requests in flight on one connection: every response comes back, in request order."""

from clients import (create_topic, end_offsets_total, kcat_consume_to_file, wait_end_offsets_total,
                     kcat_produce_file, producer_perf, sorted_sha256, write_records)
import kafka_wire


def test_thousand_pipelined_requests_answered_in_order_through_kadmit(cluster):
    n = cluster.nodes[0]
    count = 1000
    with kafka_wire.Connection("127.0.0.1", n.sidecar_port, timeout=30) as c:
        # send everything before reading anything: all 1000 are in flight at once
        frames = bytearray()
        for cid in range(count):
            if cid % 2 == 0:
                frames += kafka_wire.api_versions_request(cid + 7)
            else:
                frames += kafka_wire.metadata_request(cid + 7)
        c.send(bytes(frames))
        for cid in range(count):
            got, body = c.recv()
            assert got == cid + 7, f"response {cid}: correlation id {got}, expected {cid + 7}"
            if cid % 2 == 0:
                err, apis = kafka_wire.parse_api_versions_v0(body)
                assert err == 0 and kafka_wire.API_PRODUCE in apis
            else:
                md = kafka_wire.parse_metadata_v4(body)
                assert sorted(b[0] for b in md["brokers"]) == [1, 2, 3]
                assert {b[2] for b in md["brokers"]} == {x.sidecar_port for x in cluster.nodes}
        # and the connection still serves a plain request afterwards
        got, _ = c.call(kafka_wire.api_versions_request(99999))
        assert got == 99999


def test_java_producer_five_in_flight_with_linger_through_kadmit(cluster, topic_name):
    n = 150_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    res = producer_perf(cluster.bootstrap, topic_name, n, record_size=200, props={
        "max.in.flight.requests.per.connection": 5, "linger.ms": 5, "batch.size": 16384})
    assert res["sent"] == n
    assert end_offsets_total(cluster.bootstrap, topic_name) == n


def test_kcat_deep_queue_many_in_flight_through_kadmit(cluster, tmp_path, topic_name):
    n = 300_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    src = tmp_path / "records.txt"
    write_records(src, n, "deep")
    # not idempotent: librdkafka then allows up to 1,000,000 requests in flight per connection
    kcat_produce_file(cluster.bootstrap, topic_name, src, "acks=1",
                      "enable.idempotence=false", "queue.buffering.max.messages=1000000",
                      "max.in.flight.requests.per.connection=1000", "linger.ms=1",
                      "batch.num.messages=100")
    # acks=1: the leader answered before its followers replicated, so wait for them.
    assert wait_end_offsets_total(cluster.bootstrap, topic_name, n) == n
    out = tmp_path / "consumed.txt"
    kcat_consume_to_file(cluster.bootstrap, topic_name, out, "queued.min.messages=1000000")
    assert sorted_sha256(out) == sorted_sha256(src)
