"""confluent-kafka inside a gateway test's client namespace (`ip netns exec kgw-... python3 THIS`):
the clients there reach only kadmit. Prints one JSON document on stdout.

    create    BOOTSTRAP NAME:PARTITIONS:RF ...       {name: [code, message]} (one CreateTopics)
    roundtrip BOOTSTRAP TOPIC COUNT GROUP PROTOCOL   {"produced": n, "consumed": n}
                                                     (PROTOCOL classic or consumer: KIP-848)
Extra librdkafka settings come from GW_RDK_PROPS="k=v;k=v" (TLS, SASL).
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def conf(bootstrap: str, **kw) -> dict:
    c = {"bootstrap.servers": bootstrap, **kw}
    for kv in filter(None, os.environ.get("GW_RDK_PROPS", "").split(";")):
        k, _, v = kv.partition("=")
        c[k] = v
    return c


def create(bootstrap: str, specs: list[str]) -> dict:
    admin = AdminClient(conf(bootstrap))
    topics = []
    for s in specs:
        name, p, rf = s.split(":")
        topics.append(NewTopic(name, int(p), int(rf)))
    out = {}
    for name, f in admin.create_topics(topics, operation_timeout=30, request_timeout=60).items():
        try:
            f.result(90)
            out[name] = [0, None]
        except KafkaException as e:
            err = e.args[0]
            out[name] = [err.code(), err.str()]
    return out


def roundtrip(bootstrap: str, topic: str, count: int, group: str, protocol: str) -> dict:
    p = Producer(conf(bootstrap, acks="all"))
    errors = []
    for i in range(count):
        p.produce(topic, key=f"k{i}", value=f"rdk-{i}",
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    p.flush(60)
    if errors:
        return {"produced": count - len(errors), "consumed": 0, "errors": [str(e) for e in errors]}
    extra = {"group.protocol": "consumer"} if protocol == "consumer" else {}
    c = Consumer(conf(bootstrap, **{"group.id": group, "auto.offset.reset": "earliest"}, **extra))
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 90
    while got < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.commit(asynchronous=False)
    c.close()
    return {"produced": count, "consumed": got}


def main() -> None:
    cmd, bootstrap = sys.argv[1], sys.argv[2]
    if cmd == "create":
        print(json.dumps(create(bootstrap, sys.argv[3:])))
    elif cmd == "roundtrip":
        t, n, g, proto = sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
        print(json.dumps(roundtrip(bootstrap, t, n, g, proto)))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
