"""A broker restarts under load: clients connected through kadmit recover and lose nothing."""

import time

from clients import (background_group_consumer, background_producer_perf, create_topic,
                     end_offsets_total, finish_consumer, finish_producer)


def test_producer_and_consumer_survive_broker_restart_through_kadmit(cluster, tmp_path,
                                                                    topic_name):
    n, rate = 300_000, 15_000  # about 20 s of traffic
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    cluster.wait_topic_healthy(topic_name)
    consumer = background_group_consumer(cluster.bootstrap, topic_name, n, tmp_path,
                                         timeout_ms=90000)
    producer = background_producer_perf(cluster.bootstrap, topic_name, n, rate, tmp_path)
    try:
        time.sleep(5)
        cluster.restart_node(2)  # SIGTERM (controlled shutdown), start, wait until registered
        res = finish_producer(producer, n, timeout=180)
        assert res["sent"] == n
        assert end_offsets_total(cluster.bootstrap, topic_name) == n  # idempotent: exactly n
        finish_consumer(consumer, n, timeout=120)
    finally:
        producer.kill()
        consumer.kill()
    cluster.wait_all_isr()


def test_producer_and_consumer_survive_broker_kill_through_kadmit(cluster, tmp_path,
                                                                 topic_name):
    """SIGKILL (no controlled shutdown) under load, idempotent acks=all producer
    (background_producer_perf's defaults): the topic holds exactly N records and a group
    consumer through kadmit reads exactly N."""
    n, rate = 200_000, 15_000
    create_topic(cluster.bootstrap, topic_name, 3, 3)
    cluster.wait_topic_healthy(topic_name)
    consumer = background_group_consumer(cluster.bootstrap, topic_name, n, tmp_path,
                                         timeout_ms=90000)
    producer = background_producer_perf(cluster.bootstrap, topic_name, n, rate, tmp_path)
    try:
        time.sleep(4)
        cluster.kill_node(3)  # kill -9: no controlled shutdown
        time.sleep(2)
        cluster.start_node(3)
        cluster.wait_ready(nodes=[3])
        res = finish_producer(producer, n, timeout=180)
        assert res["sent"] == n
        assert end_offsets_total(cluster.bootstrap, topic_name) == n  # no duplicate, no loss
        assert finish_consumer(consumer, n, timeout=120) == n
    finally:
        producer.kill()
        consumer.kill()
    cluster.wait_all_isr()
