/*
 * test_cluster.c: the cluster view: building incrementally, per-broker
 * counts (unlisted brokers included), topic lookup at scale, immutability
 * by reference count, and the builder's refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "policy_fixtures.h"

static void test_view_counts_replicas_per_broker_and_partitions_once(void **state)
{
    ka_cluster_builder_t *b = fx_builder(1000);
    const int32_t brokers[] = {1, 2, 3};
    ka_cluster_t *c;
    const int32_t *replicas;
    int32_t count;

    (void)state;
    fx_broker(b, 3, "rack-b", false);
    fx_broker(b, 1, "rack-a", false);
    fx_broker(b, 2, NULL, true);
    fx_topic(b, "orders", 6, 3, brokers, 3);
    fx_topic(b, "__consumer_offsets", 3, 1, brokers, 3);
    c = fx_finish(b);
    assert_int_equal(ka_cluster_taken_at_ms(c), 1000);
    assert_int_equal(ka_cluster_total_partitions(c), 9);
    assert_int_equal(ka_cluster_topic_count(c), 2);
    assert_int_equal(ka_cluster_broker_count(c), 3);
    assert_int_equal(ka_cluster_broker_at(c, 0)->id, 1); /* sorted by id */
    assert_string_equal(ka_cluster_broker(c, 1)->rack, "rack-a");
    assert_null(ka_cluster_broker(c, 2)->rack);
    assert_true(ka_cluster_broker(c, 2)->fenced);
    /* 6 partitions x RF 3 over 3 brokers = 6 each, plus 1 internal each. */
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_cluster_broker(c, id)->replicas, 7);
    replicas = ka_cluster_topic_replicas(ka_cluster_find_topic(c, S("orders")), 4, &count);
    assert_int_equal(count, 3);
    assert_int_equal(replicas[0], 2);
    assert_null(ka_cluster_find_topic(c, S("order")));
    assert_null(ka_cluster_topic_replicas(ka_cluster_find_topic(c, S("orders")), 6, &count));
    assert_int_equal(count, 0);
    ka_cluster_unref(c);
}

static void test_replicas_on_unlisted_brokers_are_counted_but_marked(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t replicas[] = {1, 9};
    ka_cluster_t *c;

    (void)state;
    fx_broker(b, 1, NULL, false);
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, replicas, 2));
    c = fx_finish(b);
    assert_int_equal(ka_cluster_broker_count(c), 2);
    assert_false(ka_cluster_broker(c, 9)->listed);
    assert_int_equal(ka_cluster_broker(c, 9)->replicas, 1);
    assert_true(ka_cluster_broker(c, 1)->listed);
    assert_null(ka_cluster_broker(c, 5));
    ka_cluster_unref(c);
}

static void test_partitions_may_arrive_in_any_order_with_holes(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t one = 1;
    ka_cluster_t *c;
    const ka_cluster_topic_t *t;
    int32_t count;

    (void)state;
    fx_broker(b, 1, NULL, false);
    OK(ka_cluster_builder_add_partition(b, S("t"), 3, &one, 1));
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, &one, 1));
    OK(ka_cluster_builder_add_topic(b, S("empty")));
    c = fx_finish(b);
    t = ka_cluster_find_topic(c, S("t"));
    assert_int_equal(ka_cluster_topic_partition_count(t), 4);
    assert_int_equal(ka_cluster_total_partitions(c), 2);
    assert_null(ka_cluster_topic_replicas(t, 1, &count));
    assert_non_null(ka_cluster_topic_replicas(t, 3, &count));
    assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(c, S("empty"))), 0);
    ka_cluster_unref(c);
}

static void test_builder_refuses_duplicates_and_bad_values(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t one = 1;
    ka_cluster_t *c = (ka_cluster_t *)1;

    (void)state;
    fx_broker(b, 1, NULL, false);
    assert_int_equal(ka_cluster_builder_add_broker(b, 1, (ka_slice_t){NULL, -1}, false),
                     KA_EINVALID);
    assert_int_equal(ka_cluster_builder_add_partition(b, S("t"), -1, &one, 1), KA_EINVALID);
    assert_int_equal(ka_cluster_builder_add_partition(b, S(""), 0, &one, 1), KA_EINVALID);
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, &one, 1));
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, &one, 1));
    /* The duplicate partition is found when finishing, which frees the builder. */
    assert_int_equal(ka_cluster_builder_finish(b, &c), KA_EINVALID);
    assert_null(c);
    ka_cluster_builder_free(fx_builder(0));
}

static void test_lookup_holds_at_two_hundred_thousand_partitions(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    int32_t brokers[100];
    char name[32];
    ka_cluster_t *c;
    int64_t total = 0;

    (void)state;
    for (int32_t i = 0; i < 100; i++) {
        brokers[i] = i;
        fx_broker(b, i, NULL, false);
    }
    for (int32_t t = 0; t < 20000; t++) {
        snprintf(name, sizeof(name), "topic-%d", t);
        fx_topic(b, name, 10, 3, brokers + (t % 90), 10);
    }
    c = fx_finish(b);
    assert_int_equal(ka_cluster_total_partitions(c), 200000);
    for (int32_t t = 0; t < 20000; t += 997) {
        snprintf(name, sizeof(name), "topic-%d", t);
        assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(c, S(name))), 10);
    }
    for (size_t i = 0; i < ka_cluster_broker_count(c); i++)
        total += ka_cluster_broker_at(c, i)->replicas;
    assert_int_equal(total, 600000);
    ka_cluster_unref(ka_cluster_ref(c));
    ka_cluster_unref(c);
}

/* Finishing groups partitions by topic when they arrived mixed, and still
 * finds a partition added twice across the mix. */
static void test_topics_that_arrive_interleaved_keep_their_own_partitions(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t one = 1, two[] = {1, 2};
    ka_cluster_t *c;
    int32_t count;

    (void)state;
    fx_broker(b, 1, NULL, false);
    fx_broker(b, 2, NULL, false);
    OK(ka_cluster_builder_add_partition(b, S("a"), 1, &one, 1));
    OK(ka_cluster_builder_add_partition(b, S("b"), 0, two, 2));
    OK(ka_cluster_builder_add_partition(b, S("a"), 0, two, 2));
    OK(ka_cluster_builder_add_partition(b, S("b"), 2, &one, 1));
    c = fx_finish(b);
    assert_int_equal(ka_cluster_total_partitions(c), 4);
    assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(c, S("a"))), 2);
    assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(c, S("b"))), 3);
    ka_cluster_topic_replicas(ka_cluster_find_topic(c, S("a")), 0, &count);
    assert_int_equal(count, 2);
    ka_cluster_topic_replicas(ka_cluster_find_topic(c, S("b")), 2, &count);
    assert_int_equal(count, 1);
    assert_null(ka_cluster_topic_replicas(ka_cluster_find_topic(c, S("b")), 1, &count));
    assert_int_equal(ka_cluster_broker(c, 1)->replicas, 4);
    assert_int_equal(ka_cluster_broker(c, 2)->replicas, 2);
    ka_cluster_unref(c);

    b = fx_builder(0);
    OK(ka_cluster_builder_add_partition(b, S("a"), 0, &one, 1));
    OK(ka_cluster_builder_add_partition(b, S("b"), 0, &one, 1));
    OK(ka_cluster_builder_add_partition(b, S("a"), 0, &one, 1));
    assert_int_equal(ka_cluster_builder_finish(b, &c), KA_EINVALID);
}

/* Ids past the direct table and ids no broker lists are both counted. */
static void test_large_and_unlisted_broker_ids_are_counted(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t replicas[] = {7, 1000000, 1000001, 7};
    ka_cluster_t *c;

    (void)state;
    fx_broker(b, 1000000, NULL, false);
    fx_broker(b, 7, NULL, false);
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, replicas, 2));
    OK(ka_cluster_builder_add_partition(b, S("t"), 1, replicas + 2, 2));
    c = fx_finish(b);
    assert_int_equal(ka_cluster_broker_count(c), 3);
    assert_int_equal(ka_cluster_broker(c, 7)->replicas, 2);
    assert_int_equal(ka_cluster_broker(c, 1000000)->replicas, 1);
    assert_int_equal(ka_cluster_broker(c, 1000001)->replicas, 1);
    assert_false(ka_cluster_broker(c, 1000001)->listed);
    assert_int_equal(ka_cluster_broker_at(c, 2)->id, 1000001);
    assert_true(ka_cluster_memory(c) > 0);
    ka_cluster_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_counts_replicas_per_broker_and_partitions_once),
        cmocka_unit_test(test_replicas_on_unlisted_brokers_are_counted_but_marked),
        cmocka_unit_test(test_partitions_may_arrive_in_any_order_with_holes),
        cmocka_unit_test(test_builder_refuses_duplicates_and_bad_values),
        cmocka_unit_test(test_lookup_holds_at_two_hundred_thousand_partitions),
        cmocka_unit_test(test_topics_that_arrive_interleaved_keep_their_own_partitions),
        cmocka_unit_test(test_large_and_unlisted_broker_ids_are_counted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
