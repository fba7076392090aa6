/*
 * test_reservations.c: the ledger: totals per broker and partitions, and
 * the three ways a reservation ends (broker failure, a view that shows it,
 * expiry).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "policy_fixtures.h"

static uint64_t reserve_topic(ka_reservations_t *l, const char *topic, int32_t partitions,
                              int64_t expires)
{
    const ka_broker_delta_t deltas[] = {{1, 2}, {2, 1}};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS,
                                  .topic = S(topic),
                                  .partition_count = partitions,
                                  .new_partitions = partitions,
                                  .deltas = deltas,
                                  .delta_count = 2,
                                  .expires_at_ms = expires};
    uint64_t id = 0;

    OK(ka_reservations_add(l, &spec, &id));
    assert_true(id != 0);
    return id;
}

static void test_totals_follow_adds_and_releases(void **state)
{
    ka_reservations_t *l = NULL;
    uint64_t a, b;

    (void)state;
    OK(ka_reservations_new(&l));
    a = reserve_topic(l, "a", 3, 100);
    b = reserve_topic(l, "b", 2, 100);
    assert_int_equal(ka_reservations_broker_replicas(l, 1), 4);
    assert_int_equal(ka_reservations_broker_replicas(l, 2), 2);
    assert_int_equal(ka_reservations_broker_replicas(l, 3), 0);
    assert_int_equal(ka_reservations_partitions(l), 5);
    assert_true(ka_reservations_has_topic(l, S("a")));
    OK(ka_reservations_release(l, a));
    assert_int_equal(ka_reservations_release(l, a), KA_EINVALID);
    assert_false(ka_reservations_has_topic(l, S("a")));
    assert_int_equal(ka_reservations_broker_replicas(l, 1), 2);
    assert_int_equal(ka_reservations_partitions(l), 2);
    OK(ka_reservations_release(l, b));
    assert_int_equal(ka_reservations_count(l), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, 1), 0);
    ka_reservations_free(l);
}

static void test_a_view_that_shows_the_topic_ends_its_reservation(void **state)
{
    ka_reservations_t *l = NULL;
    const int32_t brokers[] = {1, 2};
    ka_cluster_builder_t *b;
    ka_cluster_t *partial, *full;

    (void)state;
    OK(ka_reservations_new(&l));
    reserve_topic(l, "new", 4, 100);
    reserve_topic(l, "other", 1, 100);
    b = fx_builder(0);
    fx_broker(b, 1, NULL, false);
    fx_broker(b, 2, NULL, false);
    fx_topic(b, "new", 2, 1, brokers, 2); /* not all partitions visible yet */
    partial = fx_finish(b);
    assert_int_equal(ka_reservations_reconcile(l, partial), 0);
    b = fx_builder(0);
    fx_broker(b, 1, NULL, false);
    fx_broker(b, 2, NULL, false);
    fx_topic(b, "new", 4, 1, brokers, 2);
    full = fx_finish(b);
    assert_int_equal(ka_reservations_reconcile(l, full), 1);
    assert_int_equal(ka_reservations_count(l), 1);
    assert_int_equal(ka_reservations_partitions(l), 1);
    ka_cluster_unref(partial);
    ka_cluster_unref(full);
    ka_reservations_free(l);
}

static void test_a_reassignment_ends_when_the_targets_are_listed(void **state)
{
    ka_reservations_t *l = NULL;
    const int32_t target[] = {3, 2};
    const int32_t during[] = {1, 2, 3}; /* Kafka lists old and new while moving */
    const ka_broker_delta_t delta = {3, 1};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_REPLICAS,
                                  .topic = S("t"),
                                  .partition = 0,
                                  .replicas = target,
                                  .replica_count = 2,
                                  .deltas = &delta,
                                  .delta_count = 1,
                                  .expires_at_ms = 100};
    ka_cluster_builder_t *b;
    ka_cluster_t *before, *moving;
    uint64_t id;

    (void)state;
    OK(ka_reservations_new(&l));
    OK(ka_reservations_add(l, &spec, &id));
    b = fx_builder(0);
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, during, 2));
    before = fx_finish(b);
    assert_int_equal(ka_reservations_reconcile(l, before), 0);
    b = fx_builder(0);
    OK(ka_cluster_builder_add_partition(b, S("t"), 0, during, 3));
    moving = fx_finish(b);
    assert_int_equal(ka_reservations_reconcile(l, moving), 1);
    ka_cluster_unref(before);
    ka_cluster_unref(moving);
    ka_reservations_free(l);
}

static void test_expiry_is_a_safety_net(void **state)
{
    ka_reservations_t *l = NULL;

    (void)state;
    OK(ka_reservations_new(&l));
    reserve_topic(l, "a", 1, 100);
    reserve_topic(l, "b", 1, 200);
    assert_int_equal(ka_reservations_expire(l, 99), 0);
    assert_int_equal(ka_reservations_expire(l, 100), 1);
    assert_int_equal(ka_reservations_count(l), 1);
    assert_true(ka_reservations_has_topic(l, S("b")));
    ka_reservations_free(l); /* frees outstanding entries */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals_follow_adds_and_releases),
        cmocka_unit_test(test_a_view_that_shows_the_topic_ends_its_reservation),
        cmocka_unit_test(test_a_reassignment_ends_when_the_targets_are_listed),
        cmocka_unit_test(test_expiry_is_a_safety_net),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
