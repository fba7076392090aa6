#!/usr/bin/env python3
"""capture_gateway_frames.py: records real broker responses that carry broker endpoints, and
the same responses with those endpoints rewritten, for the gateway rewrite's tests.

    KADMIT_TEST_PORT_BASE=27000 python3 tests/tools/capture_gateway_frames.py [--out DIR]

Starts a real 3-broker KRaft cluster of the pinned Kafka (scripts/harness/kafka_cluster.py,
racks r1..r3), creates topics, and asks the brokers on their direct listener, with requests
encoded from Kafka's own JSON specs (tests/tools/kafka_spec_codec.py):

  * Metadata v0..v13 (one topic of 6 partitions), DescribeCluster v0..v2;
  * FindCoordinator v0..v3 (a group), v4..v6 with batched keys (two groups; a transactional id);
  * Produce v10..v13 and Fetch v16..v18 sent to a broker that does not host the partition: the broker answers
    NOT_LEADER_OR_FOLLOWER with the leader's NodeEndpoints (KIP-951, a top-level tagged field);
    a Fetch v18 to the leader, with records and no endpoints;
  * ShareFetch and ShareAcknowledge v1..v2 sent to a broker that does not host the partition
    (KIP-932). ShareFetch carries NodeEndpoints; Kafka's ShareAcknowledge answer does not (see
    below), so a ShareAcknowledge with NodeEndpoints is built from the captured one ("built").

Each response is written as <api>-v<version>-response-kafka-<kafka>-<what>.bin (the frame after
its size prefix: header, then body) into DIR (default tests/data/frames/gateway). Beside it,
when the response carries an endpoint the rewrite changes, <...>.rewritten.bin: the same frame
decoded with the codec, its endpoints mapped as tests/unit/protocol/test_endpoints.c maps them
(every node id >= 0 -> broker-<id>.gw.example:<29000 + id>, negative ids left alone), and
encoded again; and, when it differs, <...>.partial.bin: the same with node 2 left alone. Every frame is checked first to re-encode to its own bytes, so the expected
frame differs from the captured one in the endpoints only.
"""

from __future__ import annotations

import argparse
import copy
import os
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "scripts" / "harness"))
sys.path.insert(0, str(HERE))
import kafka_cluster  # noqa: E402
import kafka_wire  # noqa: E402
from kafka_spec_codec import Specs, request_frame, response_header_len, rewrite_endpoints  # noqa

HOST = "127.0.0.1"
NOT_LEADER_OR_FOLLOWER = 6


def map_all(node_id, host, port):
    """The test's map: what tests/unit/protocol/test_endpoints.c's map_all returns."""
    if node_id >= 0:
        return ("broker-%d.gw.example" % node_id, 29000 + node_id)
    return None


def map_partial(node_id, host, port):
    """map_all, but node 2 is left alone (the map declines it): map_partial in the C test."""
    return None if node_id == 2 else map_all(node_id, host, port)


class Capture:
    def __init__(self, specs: Specs, out: Path, kafka: str):
        self.specs, self.out, self.kafka = specs, out, kafka
        self.cid = 0
        self.written = []

    def call(self, port: int, api: str, v: int, values: dict) -> tuple[bytes, dict]:
        """Sends one request; returns the response frame (after its size) and its decoded body."""
        self.cid += 1
        frame = request_frame(self.specs, api, v, self.cid, values)
        with kafka_wire.Connection(HOST, port, timeout=30) as c:
            c.send(frame)
            c._fill(4)
            size = struct.unpack_from(">i", c.buf, 0)[0]
            c._fill(4 + size)
            resp = bytes(c.buf[4:4 + size])
        if struct.unpack_from(">i", resp, 0)[0] != self.cid:
            raise RuntimeError("%s v%d: correlation id mismatch" % (api, v))
        spec = self.specs.get(api + "Response")
        hl = response_header_len(self.specs, api, v, resp)
        tree, end = spec.decode(resp, v, hl)
        if end != len(resp):
            raise RuntimeError("%s v%d: %d trailing bytes" % (api, v, len(resp) - end))
        if spec.encode(tree, v) != resp[hl:]:
            raise RuntimeError("%s v%d: the codec does not re-encode the response" % (api, v))
        return resp, tree

    def keep(self, api: str, v: int, what: str, resp: bytes, tree: dict) -> None:
        spec = self.specs.get(api + "Response")
        hl = response_header_len(self.specs, api, v, resp)
        name = "%s-v%d-response-kafka-%s-%s" % (api.lower(), v, self.kafka, what)
        (self.out / (name + ".bin")).write_bytes(resp)
        partial = copy.deepcopy(tree)
        changed = rewrite_endpoints(tree, map_all)
        if changed:
            (self.out / (name + ".rewritten.bin")).write_bytes(resp[:hl] + spec.encode(tree, v))
        if 0 < rewrite_endpoints(partial, map_partial) < changed:
            (self.out / (name + ".partial.bin")).write_bytes(resp[:hl] + spec.encode(partial, v))
        self.written.append((name, len(resp), changed))
        print("wrote %s.bin (%d bytes, %d endpoints rewritten)" % (name, len(resp), changed))


def topic_id(cap: Capture, port: int, topic: str) -> bytes:
    _, md = cap.call(port, "Metadata", 12, {"Topics": [{"Name": topic, "TopicId": bytes(16)}],
                                            "AllowAutoTopicCreation": False})
    return md["Topics"][0]["TopicId"]


def leaders(cap: Capture, port: int, topic: str) -> dict[int, int]:
    _, md = cap.call(port, "Metadata", 12, {"Topics": [{"Name": topic, "TopicId": bytes(16)}],
                                            "AllowAutoTopicCreation": False})
    return {p["PartitionIndex"]: p["LeaderId"] for p in md["Topics"][0]["Partitions"]}


def until_ok(fn, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.5)


def capture_all(cap: Capture, cluster) -> None:
    port = {n.id: n.direct_port for n in cluster.nodes}
    p1 = port[1]
    # "gw" has one replica, on broker 2: brokers 1 and 3 do not host it and answer
    # NOT_LEADER_OR_FOLLOWER (with broker 2's endpoint) to Produce, Fetch and ShareFetch.
    cap.call(p1, "CreateTopics", 7, {"Topics": [
        {"Name": "orders", "NumPartitions": 6, "ReplicationFactor": 3},
        {"Name": "gw", "NumPartitions": -1, "ReplicationFactor": -1,
         "Assignments": [{"PartitionIndex": 0, "BrokerIds": [2]}]}], "TimeoutMs": 30000})
    for t in ("orders", "gw"):
        cluster.wait_topic_healthy(t)

    for v in range(0, 14):
        topics = [{"Name": "orders", "TopicId": bytes(16)}]
        resp, tree = cap.call(p1, "Metadata", v, {"Topics": topics,
                                                  "AllowAutoTopicCreation": False})
        cap.keep("Metadata", v, "three", resp, tree)
    for v in range(0, 3):
        resp, tree = cap.call(p1, "DescribeCluster", v, {"EndpointType": 1,
                                                         "IncludeFencedBrokers": True})
        cap.keep("DescribeCluster", v, "three", resp, tree)

    def coordinator(v, values, ok):
        resp, tree = cap.call(p1, "FindCoordinator", v, values)
        return (resp, tree) if ok(tree) else None

    for v in range(0, 4):
        got = until_ok(lambda: coordinator(v, {"Key": "gw-group-a", "KeyType": 0},
                                           lambda t: t["ErrorCode"] == 0),
                       "FindCoordinator v%d: no group coordinator" % v)
        cap.keep("FindCoordinator", v, "group", *got)
    for v in range(4, 7):
        ok = lambda t: all(c["ErrorCode"] == 0 for c in t["Coordinators"])  # noqa: E731
        got = until_ok(lambda: coordinator(v, {"KeyType": 0, "CoordinatorKeys": [
            "gw-group-a", "gw-group-b", "gw-group-c"]}, ok), "FindCoordinator v%d groups" % v)
        cap.keep("FindCoordinator", v, "groups", *got)
        got = until_ok(lambda: coordinator(v, {"KeyType": 1, "CoordinatorKeys": ["gw-txn-1"]},
                                           ok), "FindCoordinator v%d transaction" % v, 90)
        cap.keep("FindCoordinator", v, "txn", *got)

    # Produce and Fetch to a broker without the partition: NOT_LEADER_OR_FOLLOWER and the leader's endpoint.
    lead = leaders(cap, p1, "gw")[0]
    follower = 1 if lead != 1 else 3
    tid = topic_id(cap, p1, "gw")
    batch = kafka_wire.record_batch([b"gateway-%d" % i for i in range(3)])
    for v in range(10, 14):
        topic = {"Name": "gw", "TopicId": tid,
                 "PartitionData": [{"Index": 0, "Records": batch}]}
        resp, tree = cap.call(port[follower], "Produce", v, {"Acks": 1, "TimeoutMs": 30000,
                                                             "TopicData": [topic]})
        err = tree["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
        if err != NOT_LEADER_OR_FOLLOWER or not tree.get("NodeEndpoints"):
            raise RuntimeError("Produce v%d to a follower: error %d, no NodeEndpoints" % (v, err))
        cap.keep("Produce", v, "follower", resp, tree)
    # Records to fetch, produced to the leader.
    cap.call(port[lead], "Produce", 12, {"Acks": -1, "TimeoutMs": 30000, "TopicData": [
        {"Name": "gw", "PartitionData": [{"Index": 0, "Records": batch}]}]})
    fetch = {"ReplicaId": -1, "MaxWaitMs": 100, "MinBytes": 1, "MaxBytes": 1 << 20,
             "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
             "Topics": [{"Topic": "gw", "TopicId": tid, "Partitions": [
                 {"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                  "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": 1 << 20}]}],
             "ForgottenTopicsData": [], "RackId": ""}
    for v in range(16, 19):
        resp, tree = cap.call(port[follower], "Fetch", v, fetch)
        err = tree["Responses"][0]["Partitions"][0]["ErrorCode"]
        if err != NOT_LEADER_OR_FOLLOWER or not tree.get("NodeEndpoints"):
            raise RuntimeError("Fetch v%d to a follower: error %d, no NodeEndpoints" % (v, err))
        cap.keep("Fetch", v, "follower", resp, tree)
    resp, tree = cap.call(port[lead], "Fetch", 18, fetch)
    if not tree["Responses"][0]["Partitions"][0]["Records"]:
        raise RuntimeError("Fetch v18 from the leader: no records")
    cap.keep("Fetch", 18, "leader-records", resp, tree)

    # Share groups (KIP-932): ShareFetch and ShareAcknowledge to a follower.
    for v in range(1, 3):
        member = str(uuid.uuid4())
        share = {"GroupId": "gw-share", "MemberId": member, "ShareSessionEpoch": 0,
                 "MaxWaitMs": 100, "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": 10,
                 "BatchSize": 10, "ShareAcquireMode": 0, "IsRenewAck": False,
                 "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": 0}]}],
                 "ForgottenTopicsData": []}
        resp, tree = cap.call(port[follower], "ShareFetch", v, share)
        if not tree.get("NodeEndpoints"):
            raise RuntimeError("ShareFetch v%d to a follower: error %d, no NodeEndpoints: %r"
                               % (v, tree["ErrorCode"], tree))
        share_endpoints = copy.deepcopy(tree["NodeEndpoints"])
        cap.keep("ShareFetch", v, "follower", resp, tree)
        ack = {"GroupId": "gw-share", "MemberId": member, "ShareSessionEpoch": 1,
               "IsRenewAck": False,
               "Topics": [{"TopicId": tid, "Partitions": [
                   {"PartitionIndex": 0, "AcknowledgementBatches": [
                       {"FirstOffset": 0, "LastOffset": 0, "AcknowledgeTypes": [1]}]}]}]}
        resp, tree = cap.call(port[follower], "ShareAcknowledge", v, ack)
        cap.keep("ShareAcknowledge", v, "follower", resp, tree)
        if not tree["NodeEndpoints"]:
            # Kafka 4.4.0 answers UNKNOWN_TOPIC_OR_PARTITION here, with no NodeEndpoints (it
            # fills them only for NOT_LEADER_OR_FOLLOWER, which it did not send): the frame
            # with endpoints is built from this captured one, with the leader's endpoint from
            # the captured ShareFetch response, and named "built".
            built = copy.deepcopy(tree)
            built["NodeEndpoints"] = copy.deepcopy(share_endpoints)
            spec = cap.specs.get("ShareAcknowledgeResponse")
            hl = response_header_len(cap.specs, "ShareAcknowledge", v, resp)
            cap.keep("ShareAcknowledge", v, "built", resp[:hl] + spec.encode(built, v), built)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "frames" / "gateway"))
    ap.add_argument("--jar", default=None, help="the kafka-clients jar whose specs to use "
                    "(default: the one pinned in protocol/gen/specs.lock, from the cache)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kafka_cluster.ensure_kafka()
    sys.path.insert(0, str(REPO / "protocol" / "gen"))
    from ka_input import cached_jar, read_lock  # noqa: E402
    specs = Specs(args.jar or cached_jar(read_lock()))
    with tempfile.TemporaryDirectory(prefix="kadmit-gw-capture-") as d:
        cluster = kafka_cluster.KafkaCluster(Path(d) / "three", brokers=3,
                                             racks=["r1", "r2", "r3"])
        try:
            cluster.start()
            cap = Capture(specs, out, cluster.version)
            capture_all(cap, cluster)
        finally:
            cluster.stop()


if __name__ == "__main__":
    os.environ.setdefault("KADMIT_TEST_PORT_BASE", "27000")
    main()
