"""kadmit sidecars restart under load: clients reconnect through them and lose nothing."""

import time

from clients import (background_group_consumer, background_producer_perf, create_topic,
                     end_offsets_total, finish_consumer, finish_producer)


def test_clients_reconnect_across_sidecar_restarts(cluster, tmp_path, topic_name):
    n, rate = 300_000, 15_000  # about 20 s of traffic
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    cluster.wait_topic_healthy(topic_name)
    consumer = background_group_consumer(cluster.bootstrap, topic_name, n, tmp_path,
                                         timeout_ms=90000)
    producer = background_producer_perf(cluster.bootstrap, topic_name, n, rate, tmp_path)
    sidecars = cluster.sidecars
    try:
        time.sleep(4)
        sidecars[1].restart()  # one sidecar: SIGTERM, then start again on the same port
        assert not sidecars[1].problems()
        time.sleep(4)
        for s in sidecars.items:  # all of them at once: a short full outage
            s.stop()
        time.sleep(2)
        for s in sidecars.items:
            s.start()
        res = finish_producer(producer, n, timeout=180)
        assert res["sent"] == n
        assert end_offsets_total(cluster.bootstrap, topic_name) == n
        finish_consumer(consumer, n, timeout=120)
    finally:
        producer.kill()
        consumer.kill()
