/*
 * test_engine_seams.c: the rule for leaving an item to the broker
 * (ARCHITECTURE invariant 10) where a view lags the broker: a topic deleted
 * and created again while the view still lists it, a broker fenced during a
 * rolling restart, CreatePartitions on a view that predates the request,
 * and a partition named twice in one reassignment. Each case was a way past
 * the limit when the view was trusted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_fixtures.h"

static const uint8_t OLD_ID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t NEW_ID[16] = {16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1};

/* One broker (id 1) holding topic "t" of `partitions` partitions under `id`, in a view taken at
 * `taken_at_ms` (the decisions here are made at 1000). */
static ka_cluster_t *view_with_t(int64_t taken_at_ms, int32_t partitions, const uint8_t id[16])
{
    ka_cluster_builder_t *b = fx_builder(taken_at_ms);

    ka_cluster_builder_set_answered_at(b, taken_at_ms + 50);
    const int32_t brokers[] = {1};

    ka_cluster_builder_set_lists_fenced(b, true);
    fx_broker(b, 1, NULL, false);
    fx_topic(b, "t", partitions, 1, brokers, 1);
    OK(ka_cluster_builder_set_topic_id(b, S("t"), id));
    return fx_finish(b);
}

/* Three brokers, broker 3 fenced (a rolling restart), each hosting `load` replicas. */
static ka_cluster_t *one_fenced(int32_t load, bool lists_fenced)
{
    ka_cluster_builder_t *b = fx_builder(0);

    ka_cluster_builder_set_lists_fenced(b, lists_fenced);
    for (int32_t id = 1; id <= 3; id++) {
        fx_broker(b, id, NULL, id == 3);
        fx_load(b, id, load);
    }
    return fx_finish(b);
}

/* Creates t on e and expects a rejection for `reason` whose message holds `needle`; the
 * verdict stays in *v for more checks (release it). */
static void create_refused(fx_env_t *e, const ka_create_topic_t *t, enum ka_reason reason,
                           const char *needle, ka_verdict_t *v)
{
    OK(ka_engine_create_topics(&e->ctx, t, 1, v));
    assert_int_equal(v->kind, KA_VERDICT_REJECT);
    assert_int_equal(v->reason, reason);
    if (strstr(v->message, needle) == NULL)
        fail_msg("\"%s\" lacks \"%s\"", v->message, needle);
}

/* Measured against Kafka 4.4 before the fix: delete T (10 partitions), then at once create T
 * with 200 partitions, limit 50: the create was left to the broker because the view still
 * listed T, and the broker ended with 203 replicas. */
static void test_creating_a_topic_the_view_still_lists_is_judged_in_full(void **state)
{
    ka_create_topic_t big = fx_create("t", 200, 1), small = fx_create("t", 30, 1);
    ka_reservation_spec_t spec;
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 50}", view_with_t(0, 10, OLD_ID));
    create_refused(&e, &big, KA_REASON_BROKER_LIMIT, "projected 210", &v);
    assert_non_null(strstr(v.message, "may have been deleted a moment ago"));
    fx_release(&v, 1);

    /* 10 + 30 fits: admitted, reserved, and the reservation names the id it replaces. */
    OK(ka_engine_create_topics(&e.ctx, &small, 1, &v));
    assert_int_not_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_not_equal(v.kind, KA_VERDICT_DEFER_TO_BROKER);
    assert_true(v.reservation_id != 0);
    OK(ka_reservations_describe(e.ledger, v.reservation_id, &spec, NULL));
    assert_memory_equal(spec.replaces_topic_id, OLD_ID, 16);
    fx_release(&v, 1);
    fx_env_free(&e);
}

/* The reservation of a topic created again ends only when a view shows the new topic: the
 * old one, even with enough partitions, does not count it. */
static void test_a_topic_created_again_is_shown_only_under_a_new_id(void **state)
{
    ka_create_topic_t t = fx_create("t", 5, 1);
    ka_cluster_t *same = view_with_t(2000, 10, OLD_ID), *renewed = view_with_t(2000, 5, NEW_ID);
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 50}", view_with_t(0, 10, OLD_ID));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_true(v.reservation_id != 0);
    assert_int_equal(ka_reservations_reconcile(e.ledger, same), 0);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 1), 5);
    assert_int_equal(ka_reservations_reconcile(e.ledger, renewed), 1);
    assert_int_equal(ka_reservations_count(e.ledger), 0);
    fx_release(&v, 1);
    ka_cluster_unref(same);
    ka_cluster_unref(renewed);
    fx_env_free(&e);
}

/* A topic created, deleted and created again within a view's round trip: a view requested
 * before the second create was reserved (answered after) lists the first incarnation. It must
 * not end the reservation, nor may a later view from a broker that still lists the first
 * incarnation: only the new id shows it. */
static void test_a_view_requested_before_a_create_cannot_show_it(void **state)
{
    ka_create_topic_t t = fx_create("t", 5, 1);
    ka_cluster_t *before = view_with_t(900, 10, OLD_ID), *lagging = view_with_t(2000, 10, OLD_ID),
                 *renewed = view_with_t(3000, 5, NEW_ID), *across = view_with_t(990, 5, NEW_ID);
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 50}", fx_view(0, 1, NULL));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v)); /* the view knows no "t": replaces none */
    assert_true(v.reservation_id != 0);
    assert_int_equal(ka_reservations_reconcile(e.ledger, before), 0);
    /* Requested before the create was reserved and answered after, a view may list its own
     * result already: it neither shows the create nor marks that id as an older one. */
    assert_int_equal(ka_reservations_reconcile(e.ledger, across), 0);
    assert_int_equal(ka_reservations_reconcile(e.ledger, lagging), 0);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 1), 5);
    assert_int_equal(ka_reservations_reconcile(e.ledger, renewed), 1);
    fx_release(&v, 1);
    ka_cluster_unref(before);
    ka_cluster_unref(lagging);
    ka_cluster_unref(renewed);
    ka_cluster_unref(across);
    fx_env_free(&e);
}

/* Two creates of one name in the ledger (the first created and deleted, the second on its way)
 * and a broker whose view lags: the view that shows the first incarnation ends the first
 * reservation only; the second waits for another id, settled in ledger order whatever the
 * order the reservations were added in. */
static void test_an_incarnation_shows_one_create_of_its_name(void **state)
{
    const ka_broker_delta_t five = {1, 5};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS,
                                  .topic = S("t"),
                                  .partition_count = 5,
                                  .new_partitions = 5,
                                  .creates_topic = true,
                                  .deltas = &five,
                                  .delta_count = 1,
                                  .expires_at_ms = 100000,
                                  .added_at_ms = 1000};
    ka_cluster_t *first = view_with_t(2000, 5, OLD_ID), *second = view_with_t(3000, 5, NEW_ID);
    ka_reservations_t *l;
    uint64_t later, earlier;

    (void)state;
    OK(ka_reservations_new(&l));
    OK(ka_reservations_add(l, &spec, &later)); /* this sidecar's own, announced after */
    OK(ka_reservations_add(l, &spec, &earlier));
    OK(ka_reservations_set_order(l, earlier, 10));
    OK(ka_reservations_set_order(l, later, 20));
    assert_int_equal(ka_reservations_reconcile(l, first), 1);
    assert_int_equal(ka_reservations_describe(l, earlier, &spec, NULL), KA_EINVALID);
    OK(ka_reservations_describe(l, later, &spec, NULL));
    assert_memory_equal(spec.replaces_topic_id, OLD_ID, 16);
    assert_int_equal(ka_reservations_reconcile(l, first), 0);
    assert_int_equal(ka_reservations_broker_replicas(l, 1), 5);
    assert_int_equal(ka_reservations_reconcile(l, second), 1);
    assert_int_equal(ka_reservations_count(l), 0);
    ka_reservations_free(l);
    ka_cluster_unref(first);
    ka_cluster_unref(second);
}

/* Measured before the fix: 3 brokers, limit 20, broker 3 fenced; an RF-3 create of 40
 * partitions was left to the broker (3 > 2 unfenced), whose placer used the fenced broker too,
 * and a broker ended with 43 replicas. */
static void test_a_factor_above_the_unfenced_brokers_is_judged(void **state)
{
    ka_create_topic_t t = fx_create("rf3", 40, 3), fits = fx_create("rf3-small", 5, 3);
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 20}", one_fenced(3, true));
    create_refused(&e, &t, KA_REASON_BROKER_LIMIT, "projected 43", &v);
    fx_release(&v, 1);
    OK(ka_engine_create_topics(&e.ctx, &fits, 1, &v));
    assert_true(v.kind == KA_VERDICT_ADMIT || v.kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_true(v.reservation_id != 0);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 3), 5); /* the fenced one too */
    fx_release(&v, 1);
    fx_env_free(&e);
}

/* Above every registered broker: left to the broker only on a view taken after the request
 * that lists fenced brokers; before it, the item waits (unknown); without fenced brokers in
 * the view, it is refused with a message. */
static void test_a_factor_above_every_broker_waits_for_a_view_that_lists_them_all(void **state)
{
    ka_create_topic_t t = fx_create("rf4", 1, 4);
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 20}", one_fenced(0, true));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_BROKER);
    assert_int_equal(v.reservation_id, 0);
    fx_release(&v, 1);
    e.ctx.view_follows_request = true;
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_DEFER_TO_BROKER);
    assert_non_null(strstr(v.message, "above the 3 registered brokers"));
    fx_release(&v, 1);
    fx_env_free(&e);

    fx_env_init(&e, "{\"max.broker.partitions\": 20}", one_fenced(0, false));
    e.ctx.view_follows_request = true;
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_BROKER);
    assert_non_null(strstr(v.message, "does not list fenced brokers"));
    fx_release(&v, 1);
    fx_env_free(&e);
}

/* CreatePartitions to no more partitions than the view shows: the broker's refusal only on a
 * view taken after the request with no creation or growth of the topic in flight. */
static void test_create_partitions_at_or_below_the_view_waits_for_a_fresh_view(void **state)
{
    ka_create_partitions_t same = {.name = S("t"), .count = 10};
    ka_create_topic_t again = fx_create("t", 3, 1);
    fx_env_t e;
    ka_verdict_t v, created;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 50}", view_with_t(0, 10, OLD_ID));
    OK(ka_engine_create_partitions(&e.ctx, &same, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_TOPIC);
    fx_release(&v, 1);
    e.ctx.view_follows_request = true;
    OK(ka_engine_create_partitions(&e.ctx, &same, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_DEFER_TO_BROKER);
    fx_release(&v, 1);
    /* T created again moments ago (3 partitions, reserved): growing it to 10 may be real. */
    OK(ka_engine_create_topics(&e.ctx, &again, 1, &created));
    assert_true(created.reservation_id != 0);
    OK(ka_engine_create_partitions(&e.ctx, &same, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_TOPIC);
    fx_release(&v, 1);
    fx_release(&created, 1);
    fx_env_free(&e);
}

/* Assignments whose number differs from the view's gap are judged as given. */
static void test_create_partitions_with_another_number_of_rows_is_judged_as_given(void **state)
{
    const int32_t row[] = {1};
    const ka_replica_assignment_t rows[] = {{0, row, 1}, {0, row, 1}, {0, row, 1}};
    ka_create_partitions_t grow = {
        .name = S("t"), .count = 12, .assignments = rows, .assignment_count = 3};
    fx_env_t e;
    ka_verdict_t v;

    (void)state;
    fx_env_init(&e, "{\"max.broker.partitions\": 12}", view_with_t(0, 10, OLD_ID));
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT); /* 10 + 3 > 12 */
    assert_non_null(strstr(v.message, "projected 13"));
    fx_release(&v, 1);
    fx_env_free(&e);
}

/* Kafka's controller applies both entries of a partition named twice: both are counted. */
static void test_a_partition_named_twice_in_a_reassignment_is_counted_twice(void **state)
{
    const int32_t to_2[] = {1, 2}, to_3[] = {1, 3};
    ka_reassignment_t r[] = {{S("t"), 0, to_2, 2}, {S("t"), 0, to_3, 2}};
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t on_1[] = {1};
    fx_env_t e;
    ka_verdict_t v[2];

    (void)state;
    for (int32_t id = 1; id <= 3; id++)
        fx_broker(b, id, NULL, false);
    fx_topic(b, "t", 1, 1, on_1, 1);
    fx_env_init(&e, "{\"max.broker.partitions\": 5}", fx_finish(b));
    OK(ka_engine_alter_reassignments(&e.ctx, r, 2, v));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(v[i].kind, KA_VERDICT_ADMIT);
        assert_true(v[i].reservation_id != 0);
    }
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 2), 1);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 3), 1);
    fx_release(v, 2);
    fx_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_creating_a_topic_the_view_still_lists_is_judged_in_full),
        cmocka_unit_test(test_a_topic_created_again_is_shown_only_under_a_new_id),
        cmocka_unit_test(test_a_view_requested_before_a_create_cannot_show_it),
        cmocka_unit_test(test_an_incarnation_shows_one_create_of_its_name),
        cmocka_unit_test(test_a_factor_above_the_unfenced_brokers_is_judged),
        cmocka_unit_test(test_a_factor_above_every_broker_waits_for_a_view_that_lists_them_all),
        cmocka_unit_test(test_create_partitions_at_or_below_the_view_waits_for_a_fresh_view),
        cmocka_unit_test(test_create_partitions_with_another_number_of_rows_is_judged_as_given),
        cmocka_unit_test(test_a_partition_named_twice_in_a_reassignment_is_counted_twice),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
