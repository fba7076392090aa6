/*
 * test_reservations.c: the ledger: totals per broker and partitions, and
 * the three ways a reservation ends (broker failure, a view that shows it,
 * expiry), and the ledger order: copies of what was announced before an
 * offset. The churn tests hold the totals against a recount from the
 * outstanding reservations after many adds and ends in random order, with
 * deltas in any order and broker ids anywhere in int32.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Broker ids the churn tests draw from: small, around the dense growth steps, and extremes. */
static const int32_t churn_ids[] = {0,    1,    2,    3,    7,      63,        64,       100,
                                    1001, 4095, 4096, 9999, 100000, INT32_MAX, -1,       -4096,
                                    -2,   5000, 127,  128,  2048,   40,        INT32_MIN};
#define CHURN_IDS (sizeof(churn_ids) / sizeof(churn_ids[0]))

/* A fixed-seed generator, so a failure replays. */
static uint32_t churn_next(uint32_t *seed)
{
    *seed ^= *seed << 13;
    *seed ^= *seed >> 17;
    *seed ^= *seed << 5;
    return *seed;
}

/* Adds a reservation of up to 12 deltas in random order (ids may repeat). */
static uint64_t reserve_random(ka_reservations_t *l, uint32_t *seed)
{
    ka_broker_delta_t deltas[12];
    size_t n = churn_next(seed) % 13;
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS,
                                  .topic = S("churn"),
                                  .partition_count = 1,
                                  .new_partitions = (int32_t)(churn_next(seed) % 4),
                                  .deltas = deltas,
                                  .delta_count = n,
                                  .expires_at_ms = (int64_t)(churn_next(seed) % 1000)};
    uint64_t id = 0;

    for (size_t i = 0; i < n; i++)
        deltas[i] = (ka_broker_delta_t){churn_ids[churn_next(seed) % CHURN_IDS],
                                        (int32_t)(1 + churn_next(seed) % 5)};
    OK(ka_reservations_add(l, &spec, &id));
    return id;
}

/* Each broker's total and the partitions equal a recount over the outstanding reservations. */
static void assert_totals_match_recount(const ka_reservations_t *l)
{
    int64_t replicas[CHURN_IDS] = {0}, partitions = 0;

    for (size_t i = 0; i < ka_reservations_count(l); i++) {
        ka_reservation_spec_t s;

        ka_reservations_spec_at(l, i, &s);
        partitions += s.new_partitions;
        for (size_t d = 0; d < s.delta_count; d++)
            for (size_t k = 0; k < CHURN_IDS; k++)
                replicas[k] += churn_ids[k] == s.deltas[d].broker_id ? s.deltas[d].replicas : 0;
    }
    for (size_t k = 0; k < CHURN_IDS; k++)
        assert_int_equal(ka_reservations_broker_replicas(l, churn_ids[k]), replicas[k]);
    assert_int_equal(ka_reservations_partitions(l), partitions);
    assert_int_equal(ka_reservations_broker_replicas(l, 5), 0); /* never reserved */
}

static void test_totals_match_a_recount_through_releases_in_random_order(void **state)
{
    ka_reservations_t *l = NULL;
    uint64_t ids[400];
    size_t n = 0;
    uint32_t seed = 12345;

    (void)state;
    OK(ka_reservations_new(&l));
    while (n < 300)
        ids[n++] = reserve_random(l, &seed);
    assert_totals_match_recount(l);
    for (size_t round = 0; n > 0; round++) {
        size_t at = churn_next(&seed) % n;

        OK(ka_reservations_release(l, ids[at]));
        assert_int_equal(ka_reservations_release(l, ids[at]), KA_EINVALID);
        ids[at] = ids[--n];
        if (round % 3 == 0 && round < 300)
            ids[n++] = reserve_random(l, &seed); /* adds between the releases */
        if (round % 16 == 0)
            assert_totals_match_recount(l);
    }
    assert_int_equal(ka_reservations_count(l), 0);
    assert_totals_match_recount(l);
    ka_reservations_free(l);
}

static void test_deltas_in_any_order_count_the_same(void **state)
{
    const ka_broker_delta_t sorted[] = {{-7, 1}, {2, 2}, {90, 3}, {4096, 4}, {70000, 5}};
    const ka_broker_delta_t shuffled[] = {{70000, 5}, {2, 1}, {4096, 4}, {-7, 1}, {90, 3}, {2, 1}};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS, .topic = S("t")};
    ka_reservations_t *a = NULL, *b = NULL;
    uint64_t ida, idb;

    (void)state;
    OK(ka_reservations_new(&a));
    OK(ka_reservations_new(&b));
    spec.deltas = sorted;
    spec.delta_count = 5;
    OK(ka_reservations_add(a, &spec, &ida));
    spec.deltas = shuffled; /* broker 2 twice, 1 + 1 */
    spec.delta_count = 6;
    OK(ka_reservations_add(b, &spec, &idb));
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(ka_reservations_broker_replicas(a, sorted[i].broker_id),
                         sorted[i].replicas);
        assert_int_equal(ka_reservations_broker_replicas(b, sorted[i].broker_id),
                         sorted[i].replicas);
    }
    OK(ka_reservations_release(b, idb));
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(ka_reservations_broker_replicas(b, sorted[i].broker_id), 0);
    ka_reservations_free(a);
    ka_reservations_free(b);
}

static void test_extreme_broker_ids_keep_their_totals_as_the_ledger_grows(void **state)
{
    const ka_broker_delta_t first[] = {{INT32_MIN, 1}, {-1, 2}, {0, 3}, {5, 4}, {INT32_MAX, 5}};
    const ka_broker_delta_t wider[] = {{4095, 6}, {3000, 7}, {5, 1}, {4096, 8}};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS, .topic = S("t")};
    ka_reservations_t *l = NULL;
    uint64_t a, b;

    (void)state;
    OK(ka_reservations_new(&l));
    spec.deltas = first;
    spec.delta_count = 5;
    OK(ka_reservations_add(l, &spec, &a));
    spec.deltas = wider; /* ids well above the first ones: the totals' room grows */
    spec.delta_count = 4;
    OK(ka_reservations_add(l, &spec, &b));
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(ka_reservations_broker_replicas(l, first[i].broker_id),
                         first[i].replicas + (first[i].broker_id == 5 ? 1 : 0));
    assert_int_equal(ka_reservations_broker_replicas(l, 4095), 6);
    assert_int_equal(ka_reservations_broker_replicas(l, 3000), 7);
    assert_int_equal(ka_reservations_broker_replicas(l, 4096), 8);
    assert_int_equal(ka_reservations_broker_replicas(l, 4094), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, -2), 0);
    OK(ka_reservations_release(l, a));
    assert_int_equal(ka_reservations_broker_replicas(l, INT32_MIN), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, INT32_MAX), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, 5), 1);
    OK(ka_reservations_release(l, b));
    assert_int_equal(ka_reservations_broker_replicas(l, 4095), 0);
    ka_reservations_free(l);
}

/* Adds one reservation of the given deltas. */
static uint64_t reserve_deltas(ka_reservations_t *l, const ka_broker_delta_t *deltas, size_t n)
{
    ka_reservation_spec_t spec = {
        .kind = KA_RESERVATION_PARTITIONS, .topic = S("t"), .deltas = deltas, .delta_count = n};
    uint64_t id = 0;

    OK(ka_reservations_add(l, &spec, &id));
    return id;
}

static void assert_replicas(const ka_reservations_t *l, const int32_t *ids, const int64_t *want,
                            size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ka_reservations_broker_replicas(l, ids[i]), want[i]);
}

static void test_totals_hold_while_the_counted_id_range_moves_and_grows(void **state)
{
    /* Far apart first (no compact range holds them), then ids from 10001 up,
     * then lower, then too far for one range, then just close enough. */
    const ka_broker_delta_t a[] = {{INT32_MIN, 1}, {10050, 2}, {10051, 3}};
    const ka_broker_delta_t b[] = {{10001, 1}, {10100, 1}};
    const ka_broker_delta_t c[] = {{9000, 4}, {10050, 1}};
    const ka_broker_delta_t d[] = {{20000, 5}, {9000, 1}};
    const ka_broker_delta_t e[] = {{13000, 6}, {20000, 1}};
    const int32_t ids[] = {INT32_MIN, 10050, 10051, 10001, 10100, 9000, 20000, 13000, 10002};
    ka_reservations_t *l = NULL;
    uint64_t ia, ib, ic, id, ie;

    (void)state;
    OK(ka_reservations_new(&l));
    ia = reserve_deltas(l, a, 3);
    ib = reserve_deltas(l, b, 2);
    assert_replicas(l, ids, (const int64_t[]){1, 2, 3, 1, 1, 0, 0, 0, 0}, 9);
    ic = reserve_deltas(l, c, 2);
    assert_replicas(l, ids, (const int64_t[]){1, 3, 3, 1, 1, 4, 0, 0, 0}, 9);
    id = reserve_deltas(l, d, 2);
    assert_replicas(l, ids, (const int64_t[]){1, 3, 3, 1, 1, 5, 5, 0, 0}, 9);
    ie = reserve_deltas(l, e, 2);
    assert_replicas(l, ids, (const int64_t[]){1, 3, 3, 1, 1, 5, 6, 6, 0}, 9);
    OK(ka_reservations_release(l, ia));
    assert_replicas(l, ids, (const int64_t[]){0, 1, 0, 1, 1, 5, 6, 6, 0}, 9);
    OK(ka_reservations_release(l, ic));
    OK(ka_reservations_release(l, ib));
    assert_replicas(l, ids, (const int64_t[]){0, 0, 0, 0, 0, 1, 6, 6, 0}, 9);
    OK(ka_reservations_release(l, ie));
    OK(ka_reservations_release(l, id));
    assert_replicas(l, ids, (const int64_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0}, 9);
    ka_reservations_free(l);
}

static void test_ids_at_the_edges_of_a_counted_range_are_counted(void **state)
{
    /* Negative ids a range must round down to cover, and spans of exactly 64 and 4096. */
    const ka_broker_delta_t a[] = {{-70, 1}, {-1, 2}, {5, 3}};
    const ka_broker_delta_t b[] = {{-64, 1}, {0, 4}};
    const ka_broker_delta_t c[] = {{-128, 1}, {3967, 2}, {3968, 3}};
    const int32_t ids[] = {-70, -1, 5, -64, 0, -128, 3967, 3968};
    ka_reservations_t *one = NULL, *two = NULL;

    (void)state;
    OK(ka_reservations_new(&one));
    reserve_deltas(one, a, 3);
    reserve_deltas(one, c, 3);
    assert_replicas(one, ids, (const int64_t[]){1, 2, 3, 0, 0, 1, 2, 3}, 8);
    OK(ka_reservations_new(&two));
    reserve_deltas(two, b, 2);
    reserve_deltas(two, a, 3);
    assert_replicas(two, ids, (const int64_t[]){1, 2, 3, 1, 4, 0, 0, 0}, 8);
    ka_reservations_free(one);
    ka_reservations_free(two);
}

static void test_an_invalid_spec_changes_nothing(void **state)
{
    const ka_broker_delta_t deltas[] = {{1, 3}, {9000, 2}};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_REPLICAS,
                                  .topic = S("t"),
                                  .replica_count = -1,
                                  .new_partitions = 2,
                                  .deltas = deltas,
                                  .delta_count = 2};
    ka_reservations_t *l = NULL;
    uint64_t id = 0;

    (void)state;
    OK(ka_reservations_new(&l));
    assert_int_equal(ka_reservations_add(l, &spec, &id), KA_EINVALID);
    assert_int_equal(ka_reservations_count(l), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, 1), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, 9000), 0);
    assert_int_equal(ka_reservations_partitions(l), 0);
    ka_reservations_free(l);
}

/* Each of `ids` that `src` holds with an order below `before` (or any, `all`) is in `copy`, alike.
 */
static void assert_copy_holds(const ka_reservations_t *src, const ka_reservations_t *copy,
                              uint64_t before, bool all, const uint64_t *ids, size_t n)
{
    size_t expected = 0;

    for (size_t i = 0; i < n; i++) {
        ka_reservation_spec_t s, c;
        uint64_t order, copied_order;

        if (ka_reservations_describe(src, ids[i], &s, &order) < 0 || (!all && order >= before)) {
            assert_int_equal(ka_reservations_describe(copy, ids[i], &c, NULL), KA_EINVALID);
            continue;
        }
        expected++;
        OK(ka_reservations_describe(copy, ids[i], &c, &copied_order));
        assert_int_equal(copied_order, order);
        assert_int_equal(c.delta_count, s.delta_count);
        assert_int_equal(c.new_partitions, s.new_partitions);
        assert_int_equal(c.expires_at_ms, s.expires_at_ms);
        assert_true(c.topic.ptr != s.topic.ptr); /* a copy, not a share */
        if (s.delta_count > 0)
            assert_memory_equal(c.deltas, s.deltas, s.delta_count * sizeof(*s.deltas));
    }
    assert_int_equal(ka_reservations_count(copy), expected);
}

static void test_copies_after_churn_hold_what_the_source_holds(void **state)
{
    ka_reservations_t *l = NULL, *copy = NULL;
    uint64_t ids[200], last = 0, added;
    uint32_t seed = 777;

    (void)state;
    OK(ka_reservations_new(&l));
    for (size_t i = 0; i < 200; i++) {
        ids[i] = reserve_random(l, &seed);
        last = ids[i];
        OK(ka_reservations_set_order(l, ids[i],
                                     churn_next(&seed) % 2 ? 10 + i : KA_RESERVATION_UNORDERED));
    }
    for (size_t i = 0; i < 200; i += 1 + churn_next(&seed) % 3)
        OK(ka_reservations_release(l, ids[i]));
    assert_true(ka_reservations_expire(l, 100) > 0);
    assert_totals_match_recount(l);

    OK(ka_reservations_copy(l, &copy));
    assert_copy_holds(l, copy, 0, true, ids, 200);
    assert_int_equal(ka_reservations_count(copy), ka_reservations_count(l)); /* unordered too */
    assert_totals_match_recount(copy);
    added = reserve_random(copy, &seed);
    assert_true(added > last);
    for (size_t i = 0; i < 200; i++)
        (void)ka_reservations_release(copy, ids[i]);
    assert_int_equal(ka_reservations_count(copy), 1);
    assert_totals_match_recount(copy);
    assert_totals_match_recount(l); /* the source is untouched */
    ka_reservations_free(copy);

    OK(ka_reservations_copy_before(l, 110, &copy));
    assert_copy_holds(l, copy, 110, false, ids, 200);
    assert_totals_match_recount(copy);
    ka_reservations_free(copy);
    ka_reservations_free(l);
}

static void test_ends_keep_the_other_reservations_findable(void **state)
{
    ka_reservations_t *l = NULL;
    ka_reservation_spec_t kept, again;
    uint64_t ids[120], keep;
    uint32_t seed = 99;
    size_t alive = 0;

    (void)state;
    OK(ka_reservations_new(&l));
    for (size_t i = 0; i < 120; i++)
        ids[i] = i == 60 ? reserve_topic(l, "kept", 3, 2000) : reserve_random(l, &seed);
    keep = ids[60];
    OK(ka_reservations_describe(l, keep, &kept, NULL));
    (void)ka_reservations_expire(l, 500);
    for (size_t i = 0; i < 120; i++) {
        ka_reservation_spec_t s;

        if (ka_reservations_describe(l, ids[i], &s, NULL) == 0) {
            assert_true(s.expires_at_ms > 500);
            alive++;
        }
    }
    assert_int_equal(alive, ka_reservations_count(l));
    assert_totals_match_recount(l);
    for (size_t i = 0; i < 120; i++)
        if (ids[i] != keep)
            (void)ka_reservations_release(l, ids[i]);
    for (size_t i = 0; i < 100; i++)
        (void)reserve_random(l, &seed); /* the ledger's arrays grow and move */
    /* What describe handed out before still points at the reservation, unchanged. */
    OK(ka_reservations_describe(l, keep, &again, NULL));
    assert_ptr_equal(again.topic.ptr, kept.topic.ptr);
    assert_ptr_equal(again.deltas, kept.deltas);
    assert_int_equal(kept.topic.len, 4);
    assert_memory_equal(kept.topic.ptr, "kept", 4);
    assert_int_equal(kept.deltas[0].broker_id, 1);
    assert_int_equal(kept.deltas[1].replicas, 1);
    assert_totals_match_recount(l);
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
        cmocka_unit_test(test_totals_match_a_recount_through_releases_in_random_order),
        cmocka_unit_test(test_deltas_in_any_order_count_the_same),
        cmocka_unit_test(test_extreme_broker_ids_keep_their_totals_as_the_ledger_grows),
        cmocka_unit_test(test_totals_hold_while_the_counted_id_range_moves_and_grows),
        cmocka_unit_test(test_ids_at_the_edges_of_a_counted_range_are_counted),
        cmocka_unit_test(test_an_invalid_spec_changes_nothing),
        cmocka_unit_test(test_copies_after_churn_hold_what_the_source_holds),
        cmocka_unit_test(test_ends_keep_the_other_reservations_findable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
