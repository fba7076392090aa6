/*
 * test_reservations.c: the ledger: totals per broker and partitions, and
 * the three ways a reservation ends (broker failure, a view that shows it,
 * expiry), and the ledger order: copies of what was announced before an
 * offset.
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

static void test_copy_before_keeps_only_earlier_announcements(void **state)
{
    ka_reservations_t *l = NULL, *before = NULL;
    uint64_t early, at, late, pending, order = 0, added;
    ka_reservation_spec_t spec;

    (void)state;
    OK(ka_reservations_new(&l));
    early = reserve_topic(l, "early", 1, 100);
    at = reserve_topic(l, "at", 2, 100);
    late = reserve_topic(l, "late", 4, 100);
    pending = reserve_topic(l, "pending", 8, 100);
    OK(ka_reservations_set_order(l, early, 3));
    OK(ka_reservations_set_order(l, at, 7));
    OK(ka_reservations_set_order(l, late, 9));
    OK(ka_reservations_describe(l, pending, &spec, &order));
    assert_true(order == KA_RESERVATION_UNORDERED);
    OK(ka_reservations_copy_before(l, 7, &before));
    assert_int_equal(ka_reservations_count(before), 1);
    assert_true(ka_reservations_has_topic(before, S("early")));
    assert_false(ka_reservations_has_topic(before, S("at")));
    assert_int_equal(ka_reservations_partitions(before), 1);
    assert_int_equal(ka_reservations_broker_replicas(before, 1), 2);
    /* The copy keeps ids and orders, and its own ids are new to l. */
    OK(ka_reservations_describe(before, early, &spec, &order));
    assert_int_equal(order, 3);
    assert_int_equal(spec.partition_count, 1);
    added = reserve_topic(before, "other", 1, 100);
    assert_true(added != early && added != at && added != late && added != pending);
    assert_int_equal(ka_reservations_release(l, added), KA_EINVALID);
    /* The source is untouched. */
    assert_int_equal(ka_reservations_count(l), 4);
    assert_int_equal(ka_reservations_partitions(l), 15);
    ka_reservations_free(before);
    OK(ka_reservations_copy_before(l, KA_RESERVATION_UNORDERED, &before));
    assert_int_equal(ka_reservations_count(before), 3);
    assert_false(ka_reservations_has_topic(before, S("pending")));
    ka_reservations_free(before);
    assert_int_equal(ka_reservations_set_order(l, 999, 1), KA_EINVALID);
    assert_int_equal(ka_reservations_describe(l, 999, &spec, NULL), KA_EINVALID);
    ka_reservations_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals_follow_adds_and_releases),
        cmocka_unit_test(test_a_view_that_shows_the_topic_ends_its_reservation),
        cmocka_unit_test(test_a_reassignment_ends_when_the_targets_are_listed),
        cmocka_unit_test(test_expiry_is_a_safety_net),
        cmocka_unit_test(test_copy_before_keeps_only_earlier_announcements),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
