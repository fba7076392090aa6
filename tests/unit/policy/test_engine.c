/*
 * test_engine.c: the engine's verdicts on synthetic views: within and
 * beyond limits, heterogeneous limits, ordered multi-topic requests with
 * reservations, validate_only, reassignment projections, auto-creation,
 * max.partitions, stale views, audit mode, deferrals and the messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "policy_fixtures.h"

#define PREFIX "Cannot satisfy request without exceeding the max.broker.partitions limit on brokers"
#define ADVICE                                                                                     \
    "Raise max.broker.partitions for these brokers, add brokers, or create fewer partitions."

struct env {
    ka_policy_t *policy;
    ka_cluster_t *view;
    ka_reservations_t *ledger;
    ka_decision_context_t ctx;
};

static void env_init(struct env *e, const char *policy, ka_cluster_t *view)
{
    e->policy = fx_policy(policy);
    e->view = view;
    OK(ka_reservations_new(&e->ledger));
    e->ctx = (ka_decision_context_t){e->policy, e->view, e->ledger, 1000, 42};
}

static void env_free(struct env *e)
{
    ka_policy_unref(e->policy);
    ka_cluster_unref(e->view);
    ka_reservations_free(e->ledger);
}

static void test_create_within_limits_gets_a_placed_assignment(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("orders", 6, 2);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 100}", fx_view(0, 3, NULL));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(v.assignment_partitions, 6);
    assert_int_equal(v.assignment_replication, 2);
    assert_true(v.reservation_id != 0);
    for (int32_t id = 1; id <= 3; id++) {
        assert_int_equal(fx_count(&v, id), 4);
        assert_int_equal(ka_reservations_broker_replicas(e.ledger, id), 4);
    }
    assert_int_equal(ka_reservations_partitions(e.ledger), 6);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_create_beyond_limits_is_rejected_with_each_broker_named(void **state)
{
    const int32_t load[] = {8, 9, 10};
    struct env e;
    ka_create_topic_t t = fx_create("orders", 3, 3);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10}", fx_view(0, 3, load));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.error_code, 88);
    assert_int_equal(v.reservation_id, 0);
    assert_int_equal(v.reason, KA_REASON_BROKER_LIMIT);
    assert_string_equal(v.message, PREFIX " 1 (limit 10, current 8, projected 11), 2 (limit 10, "
                                          "current 9, projected 12), 3 (limit 10, current 10, "
                                          "projected 13). " ADVICE);
    assert_int_equal(ka_reservations_count(e.ledger), 0);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_place_avoids_a_full_broker_where_bound_rejects(void **state)
{
    const int32_t load[] = {10, 0, 0};
#define LIMITS                                                                                     \
    "{\"max.broker.partitions\": 100, \"brokers\": {\"1\": {\"max.broker.partitions\": 10}}%s}"
    char doc[256];
    struct env e;
    ka_create_topic_t t = fx_create("orders", 4, 2);
    ka_verdict_t v;

    (void)state;
    snprintf(doc, sizeof(doc), LIMITS, "");
    env_init(&e, doc, fx_view(0, 3, load));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(fx_count(&v, 1), 0);
    assert_int_equal(fx_count(&v, 2), 4);
    assert_int_equal(fx_count(&v, 3), 4);
    fx_release(&v, 1);
    env_free(&e);

    snprintf(doc, sizeof(doc), LIMITS, ", \"auto.assignment\": \"bound\"");
    env_init(&e, doc, fx_view(0, 3, load));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    /* P = 4 = 1*3 + 1, R = 2: worst case 1*2 + min(1, 2) = 3 on broker 1. */
    assert_string_equal(v.message, PREFIX " 1 (limit 10, current 10, projected 13). " ADVICE);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_bound_admits_unchanged_and_reserves_the_worst_case(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("orders", 4, 2);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 13, \"auto.assignment\": \"bound\"}",
             fx_view(0, 3, (const int32_t[]){10, 0, 0}));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_null(v.assignment);
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_reservations_broker_replicas(e.ledger, id), 3);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_bound_counts_a_small_rack_as_taking_every_partition(void **state)
{
    ka_cluster_builder_t *b = fx_builder(0);
    struct env e;
    ka_create_topic_t t = fx_create("orders", 5, 3);
    ka_verdict_t v;

    (void)state;
    /* Racks a = {1}, b = {2, 3}, c = {4, 5}: with RF 3 Kafka puts one replica
     * of every partition in each rack, so broker 1 hosts all five. */
    fx_broker(b, 1, "a", false);
    fx_broker(b, 2, "b", false);
    fx_broker(b, 3, "b", false);
    fx_broker(b, 4, "c", false);
    fx_broker(b, 5, "c", false);
    env_init(&e,
             "{\"max.broker.partitions\": 4, \"auto.assignment\": \"bound\", \"brokers\": "
             "{\"2\": {\"max.broker.partitions\": 2}}}",
             fx_finish(b));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    /* Broker 1: 5; brokers of two-broker racks: 5 partitions over 2 brokers, up to 3. */
    assert_string_equal(v.message, PREFIX " 1 (limit 4, current 0, projected 5), 2 (limit 2, "
                                          "current 0, projected 3). " ADVICE);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_explicit_assignment_is_judged_as_given(void **state)
{
    const int32_t on_1_2[] = {1, 2}, on_2_3[] = {2, 3};
    const ka_replica_assignment_t full[] = {{0, on_1_2, 2}}, free_rows[] = {{0, on_2_3, 2}};
    ka_create_topic_t t[] = {
        {.name = S("a"),
         .num_partitions = -1,
         .replication_factor = -1,
         .assignments = full,
         .assignment_count = 1},
        {.name = S("b"),
         .num_partitions = -1,
         .replication_factor = -1,
         .assignments = free_rows,
         .assignment_count = 1},
    };
    struct env e;
    ka_verdict_t v[2];

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 5}", fx_view(0, 3, (const int32_t[]){5, 0, 0}));
    OK(ka_engine_create_topics(&e.ctx, t, 2, v));
    assert_int_equal(v[0].kind, KA_VERDICT_REJECT);
    assert_string_equal(v[0].message, PREFIX " 1 (limit 5, current 5, projected 6). " ADVICE);
    assert_int_equal(v[1].kind, KA_VERDICT_ADMIT);
    assert_null(v[1].assignment);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 2), 1);
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 1), 0);
    fx_release(v, 2);
    env_free(&e);
}

static void decide_five(bool validate_only, ka_verdict_t *v, struct env *e)
{
    ka_create_topic_t t[] = {fx_create("a", 3, 3), fx_create("b", 3, 3), fx_create("c", 3, 3),
                             fx_create("d", 2, 3), fx_create("e", 1, 3)};

    for (size_t i = 0; i < 5; i++)
        t[i].validate_only = validate_only;
    env_init(e, "{\"max.broker.partitions\": 10}", fx_view(0, 3, NULL));
    OK(ka_engine_create_topics(&e->ctx, t, 5, v));
}

static void test_multi_topic_request_is_decided_in_order_with_reservations(void **state)
{
    const enum ka_verdict_kind want[] = {
        KA_VERDICT_ADMIT_WITH_ASSIGNMENT, KA_VERDICT_ADMIT_WITH_ASSIGNMENT,
        KA_VERDICT_ADMIT_WITH_ASSIGNMENT, KA_VERDICT_REJECT, KA_VERDICT_ADMIT_WITH_ASSIGNMENT};
    struct env e;
    ka_verdict_t v[5];

    (void)state;
    decide_five(false, v, &e);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(v[i].kind, want[i]);
    assert_string_equal(v[3].message, PREFIX " 1 (limit 10, current 9, projected 11), 2 (limit "
                                             "10, current 9, projected 11), 3 (limit 10, "
                                             "current 9, projected 11). " ADVICE);
    assert_int_equal(ka_reservations_count(e.ledger), 4);
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_reservations_broker_replicas(e.ledger, id), 10);
    /* The broker failed topic "a": its replicas return to the headroom. */
    OK(ka_reservations_release(e.ledger, v[0].reservation_id));
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 1), 7);
    fx_release(v, 5);
    env_free(&e);
}

static void test_validate_only_gets_the_same_verdicts_and_reserves_nothing(void **state)
{
    struct env real, check;
    ka_verdict_t a[5], b[5];

    (void)state;
    decide_five(false, a, &real);
    decide_five(true, b, &check);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(a[i].kind, b[i].kind);
        assert_int_equal(b[i].reservation_id, 0);
    }
    assert_string_equal(a[3].message, b[3].message);
    assert_int_equal(ka_reservations_count(check.ledger), 0);
    fx_release(a, 5);
    fx_release(b, 5);
    env_free(&real);
    env_free(&check);
}

static ka_cluster_t *reassign_view(void)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t rows[4][2] = {{1, 2}, {2, 3}, {1, 2}, {1, 2}};

    for (int32_t id = 1; id <= 4; id++)
        fx_broker(b, id, NULL, false);
    for (int32_t p = 0; p < 4; p++)
        OK(ka_cluster_builder_add_partition(b, S("t"), p, rows[p], 2));
    fx_load(b, 4, 10);
    return fx_finish(b);
}

static void test_reassignment_projects_current_minus_removed_plus_added(void **state)
{
    const int32_t to_1_3[] = {1, 3}, to_4_3[] = {4, 3}, to_3_1[] = {3, 1}, to_2_1[] = {2, 1};
    const ka_reassignment_t r[] = {
        {S("t"), 0, to_1_3, 2}, {S("t"), 1, to_4_3, 2},       {S("t"), 2, to_3_1, 2},
        {S("t"), 3, to_2_1, 2}, {S("missing"), 0, to_2_1, 2}, {S("t"), 9, to_2_1, 2},
    };
    const ka_reassignment_t cancel = {S("t"), 1, NULL, 0};
    struct env e;
    ka_verdict_t v[6];

    (void)state;
    env_init(&e,
             "{\"max.broker.partitions\": 10, \"brokers\": {\"3\": "
             "{\"max.broker.partitions\": 2}}}",
             reassign_view());
    OK(ka_engine_alter_reassignments(&e.ctx, r, 6, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT);
    assert_true(v[0].reservation_id != 0);
    assert_int_equal(v[1].kind, KA_VERDICT_REJECT);
    assert_string_equal(v[1].message,
                        PREFIX " 4 (limit 10, current 10, projected 11). Raise "
                               "max.broker.partitions for these brokers, or choose other target "
                               "brokers.");
    /* Broker 3 took a replica from partition 0 above: now it is full. */
    assert_int_equal(v[2].kind, KA_VERDICT_REJECT);
    assert_memory_equal(v[2].message, PREFIX " 3 (limit 2, current 2, projected 3).",
                        strlen(PREFIX " 3 (limit 2, current 2, projected 3)."));
    assert_int_equal(v[3].kind, KA_VERDICT_ADMIT);
    assert_int_equal(v[3].reservation_id, 0); /* a reorder adds nothing */
    /* A topic or partition the view lacks is judged unknown, never passed unjudged. */
    for (int i = 4; i < 6; i++) {
        assert_int_equal(v[i].kind, KA_VERDICT_REJECT);
        assert_int_equal(v[i].reason, KA_REASON_UNKNOWN_TOPIC);
        assert_int_equal(v[i].error_code, KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION);
    }
    assert_non_null(strstr(v[4].message, "does not know topic missing even after a refresh"));
    assert_non_null(strstr(v[5].message, "does not know partition 9 of topic t"));
    assert_int_equal(ka_reservations_broker_replicas(e.ledger, 3), 1);
    fx_release(v, 6);
    OK(ka_engine_alter_reassignments(&e.ctx, &cancel, 1, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT);
    fx_release(v, 1);
    env_free(&e);
}

static ka_cluster_t *auto_view(const int32_t *load, bool enabled)
{
    ka_cluster_builder_t *b = fx_builder(0);
    const int32_t brokers[] = {3, 1, 2}; /* "exists" lives on broker 3 */

    ka_cluster_builder_set_defaults(b, &(ka_broker_defaults_t){3, 2, enabled});
    ka_cluster_builder_set_lists_fenced(b, true);
    for (int32_t id = 1; id <= 3; id++) {
        fx_broker(b, id, NULL, false);
        fx_load(b, id, load[id - 1]);
    }
    fx_topic(b, "exists", 1, 1, brokers, 3);
    return fx_finish(b);
}

static void test_auto_creation_is_allowed_or_denied(void **state)
{
    const ka_slice_t names[] = {S("fresh"), S("exists"), S("bad/name")};
    struct env e;
    ka_verdict_t v[3];

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10}", auto_view((const int32_t[]){9, 0, 0}, true));
    OK(ka_engine_auto_create(&e.ctx, names, 3, true, v));
    /* 3 partitions x RF 2 on 3 brokers: up to 2 on broker 1, which has 9 of 10. */
    assert_int_equal(v[0].kind, KA_VERDICT_REJECT);
    assert_string_equal(v[0].message, PREFIX " 1 (limit 10, current 9, projected 11). " ADVICE);
    /* "exists" is created only if it was deleted a moment ago: counted, so refused as well
     * (which only clears the flag), but never reserved. */
    assert_int_equal(v[1].kind, KA_VERDICT_REJECT);
    assert_int_equal(v[1].reservation_id, 0);
    assert_int_equal(v[2].kind, KA_VERDICT_ADMIT);
    fx_release(v, 3);
    OK(ka_engine_auto_create(&e.ctx, names, 1, false, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT);
    fx_release(v, 1);
    env_free(&e);

    env_init(&e, "{\"max.broker.partitions\": 10}", auto_view((const int32_t[]){0, 0, 0}, true));
    OK(ka_engine_auto_create(&e.ctx, names + 1, 1, true, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT); /* fits: goes on, reserving nothing */
    assert_int_equal(v[0].reservation_id, 0);
    assert_int_equal(ka_reservations_count(e.ledger), 0);
    fx_release(v, 1);
    env_free(&e);

    env_init(&e, "{\"max.broker.partitions\": 10}", auto_view((const int32_t[]){9, 0, 0}, false));
    OK(ka_engine_auto_create(&e.ctx, names, 1, true, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT); /* the broker will not create it */
    fx_release(v, 1);
    env_free(&e);

    env_init(&e, "{\"max.broker.partitions\": 10}", auto_view((const int32_t[]){0, 0, 0}, true));
    OK(ka_engine_auto_create(&e.ctx, names, 1, true, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT);
    assert_true(v[0].reservation_id != 0);
    fx_release(v, 1);
    /* Clients repeat Metadata while they wait: one creation, one reservation. */
    OK(ka_engine_auto_create(&e.ctx, names, 1, true, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT);
    assert_int_equal(v[0].reservation_id, 0);
    assert_int_equal(ka_reservations_count(e.ledger), 1);
    fx_release(v, 1);
    env_free(&e);
}

static void test_max_partitions_counts_partitions_once(void **state)
{
    struct env e;
    ka_create_topic_t t[] = {fx_create("a", 3, 1), fx_create("b", 3, 1)};
    ka_verdict_t v[2];

    (void)state;
    env_init(&e, "{\"max.partitions\": 20}", fx_view(0, 3, (const int32_t[]){5, 5, 5}));
    OK(ka_engine_create_topics(&e.ctx, t, 2, v));
    assert_int_equal(v[0].kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(v[1].kind, KA_VERDICT_REJECT);
    assert_string_equal(v[1].message,
                        "Cannot satisfy request without exceeding the max.partitions limit of 20 "
                        "(current 18, projected 21). Raise max.partitions, delete unused topics, "
                        "or create fewer partitions.");
    fx_release(v, 2);
    env_free(&e);
}

static void test_stale_view_rejects_every_decision_and_says_how_old(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("a", 1, 1);
    const ka_reassignment_t cancel = {S("t"), 0, NULL, 0};
    const ka_slice_t name = S("auto");
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{}", fx_view(0, 3, NULL));
    e.ctx.now_ms = 125000;
    assert_true(ka_engine_view_is_stale(e.policy, e.view, 125000));
    assert_false(ka_engine_view_is_stale(e.policy, e.view, 120000));
    assert_true(ka_engine_view_needs_refresh(e.policy, e.view, 5001));
    assert_false(ka_engine_view_needs_refresh(e.policy, e.view, 5000));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.error_code, 88);
    assert_int_equal(v.reason, KA_REASON_STALE_VIEW);
    assert_string_equal(v.message,
                        "Cannot decide on this request: kadmit's cluster view is stale (taken "
                        "125000 ms ago; metadata.max.staleness.ms is 120000), so it rejects "
                        "requests that create or move partitions until a metadata refresh "
                        "succeeds. Retry shortly.");
    fx_release(&v, 1);
    OK(ka_engine_auto_create(&e.ctx, &name, 1, true, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    fx_release(&v, 1);
    OK(ka_engine_alter_reassignments(&e.ctx, &cancel, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT); /* a cancel cannot exceed anything */
    fx_release(&v, 1);
    e.ctx.view = NULL;
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_NO_VIEW);
    assert_non_null(strstr(v.message, "no view of the cluster yet"));
    fx_release(&v, 1);
    env_free(&e);

    env_init(&e, "{\"enforcement\": \"audit\"}", fx_view(0, 3, NULL));
    e.ctx.now_ms = 125000;
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_true(v.audit);
    assert_non_null(strstr(v.message, "stale"));
    fx_release(&v, 1);
    env_free(&e);
}

static void test_audit_forwards_unchanged_and_flags_what_enforce_rejects(void **state)
{
    struct env e;
    ka_create_topic_t over = fx_create("over", 1, 1), fits = fx_create("fits", 1, 1);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}",
             fx_view(0, 3, (const int32_t[]){10, 10, 10}));
    OK(ka_engine_create_topics(&e.ctx, &over, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_true(v.audit);
    assert_int_equal(v.error_code, 0);
    assert_memory_equal(v.message, PREFIX, strlen(PREFIX));
    assert_true(v.reservation_id != 0); /* it does go ahead, so it is counted */
    fx_release(&v, 1);
    env_free(&e);

    env_init(&e, "{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}",
             fx_view(0, 3, NULL));
    OK(ka_engine_create_topics(&e.ctx, &fits, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_false(v.audit);
    assert_null(v.message);
    assert_null(v.assignment);
    fx_release(&v, 1);
    env_free(&e);
}

static void assert_deferred(const ka_verdict_t *v, const char *reason)
{
    if (v->kind != KA_VERDICT_DEFER_TO_BROKER)
        fail_msg("expected a deferral for \"%s\", got verdict %d", reason, (int)v->kind);
    assert_int_equal(v->error_code, 0);
    assert_int_equal(v->reservation_id, 0);
    if (strstr(v->message, reason) == NULL)
        fail_msg("deferral reason \"%s\" lacks \"%s\"", v->message, reason);
}

static void test_what_is_not_a_limit_question_is_left_to_the_broker(void **state)
{
    const int32_t ok_row[] = {1, 2}, dup_row[] = {1, 1}, short_row[] = {1};
    const ka_replica_assignment_t gap[] = {{0, ok_row, 2}, {2, ok_row, 2}};
    const ka_replica_assignment_t dup[] = {{0, dup_row, 2}};
    const ka_replica_assignment_t mixed[] = {{0, ok_row, 2}, {1, short_row, 1}};
    const ka_replica_assignment_t one[] = {{0, ok_row, 2}};
    ka_create_topic_t t[] = {
        fx_create("too-wide", 1, 4),
        {.name = S("gap"),
         .num_partitions = -1,
         .replication_factor = -1,
         .assignments = gap,
         .assignment_count = 2},
        {.name = S("dup"),
         .num_partitions = -1,
         .replication_factor = -1,
         .assignments = dup,
         .assignment_count = 1},
        {.name = S("mixed"),
         .num_partitions = -1,
         .replication_factor = -1,
         .assignments = mixed,
         .assignment_count = 2},
        {.name = S("both"),
         .num_partitions = 1,
         .replication_factor = -1,
         .assignments = one,
         .assignment_count = 1},
        fx_create("twice", 50, 3),
        fx_create("twice", 50, 3),
        fx_create("bad name", 1, 1),
        fx_create("zero", 0, 1),
        fx_create("rf-zero", 1, 0),
    };
    const char *reasons[] = {"above the 3 registered brokers",
                             "indices",
                             "broker 1 twice",
                             "1 replicas, not 2",
                             "Kafka requires -1",
                             "more than once",
                             "more than once",
                             "name is not valid",
                             "num_partitions 0",
                             "replication_factor 0"};
    const size_t n = sizeof(t) / sizeof(t[0]);
    ka_create_partitions_t cp[] = {
        {.name = S("exists"), .count = 1},
    };
    const char *cp_reasons[] = {"already has 1 partitions"};
    struct env e;
    ka_verdict_t v[12];

    (void)state;
    /* Limits of 0: anything judged would be rejected, so a deferral is visible. */
    env_init(&e, "{\"max.broker.partitions\": 0}", auto_view((const int32_t[]){0, 0, 0}, true));
    e.ctx.view_follows_request = true; /* a view taken after the request */
    OK(ka_engine_create_topics(&e.ctx, t, n, v));
    for (size_t i = 0; i < n; i++)
        assert_deferred(&v[i], reasons[i]);
    fx_release(v, n);
    for (size_t i = 0; i < 1; i++) {
        OK(ka_engine_create_partitions(&e.ctx, &cp[i], 1, v));
        assert_deferred(&v[0], cp_reasons[i]);
        fx_release(v, 1);
    }
    env_free(&e);
}

/* Duplicates among many items: exactly the names given more than once are deferred, also
 * when their hashes collide in the table (2,000 items, 1,300 names, 700 of them twice). */
static void test_duplicates_among_many_items_are_exactly_the_repeated_names(void **state)
{
    enum { N = 2000, NAMES = 1300 };
    static char names[N][16];
    static ka_create_topic_t t[N];
    static ka_verdict_t v[N];
    struct env e;

    (void)state;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "t-%d", i % NAMES);
        t[i] = fx_create(names[i], 1, 1);
    }
    env_init(&e, "{\"max.broker.partitions\": 100000}", fx_view(0, 3, NULL));
    OK(ka_engine_create_topics(&e.ctx, t, N, v));
    for (int i = 0; i < N; i++) {
        if (i % NAMES < N - NAMES)
            assert_deferred(&v[i], "more than once");
        else if (v[i].kind == KA_VERDICT_DEFER_TO_BROKER)
            fail_msg("%s is given once, yet deferred: %s", names[i], v[i].message);
    }
    fx_release(v, N);
    env_free(&e);
}

/* Invariant 6: what the view does not know is judged unknown, never passed on unjudged. */
static void test_unknown_topic_or_broker_is_rejected_with_its_reason(void **state)
{
    const int32_t unknown_row[] = {1, 9};
    const ka_replica_assignment_t unknown[] = {{0, unknown_row, 2}};
    ka_create_topic_t t = {.name = S("new"),
                           .num_partitions = -1,
                           .replication_factor = -1,
                           .assignments = unknown,
                           .assignment_count = 1};
    ka_create_partitions_t grow = {.name = S("missing"), .count = 5};
    ka_create_topic_t made = fx_create("missing", 2, 1);
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10, \"reject.error.code\": 44}",
             auto_view((const int32_t[]){0, 0, 0}, true));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_BROKER);
    assert_int_equal(v.error_code, 44); /* the policy's code for a broker */
    assert_int_equal(v.reservation_id, 0);
    assert_non_null(strstr(v.message, "does not know broker 9 (named for partition 0) even after "
                                      "a refresh"));
    fx_release(&v, 1);
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_TOPIC);
    assert_int_equal(v.error_code, KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION);
    assert_non_null(strstr(v.message, "does not know topic missing even after a refresh"));
    fx_release(&v, 1);
    /* Created through kadmit a moment ago: known, but not yet visible. */
    OK(ka_engine_create_topics(&e.ctx, &made, 1, &v));
    assert_true(v.reservation_id != 0);
    fx_release(&v, 1);
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_TOPIC);
    assert_non_null(strstr(v.message, "Topic missing was admitted moments ago"));
    fx_release(&v, 1);
    env_free(&e);

    env_init(&e, "{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}",
             auto_view((const int32_t[]){0, 0, 0}, true));
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT); /* audit forwards it, flagged */
    assert_true(v.audit);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_TOPIC);
    assert_int_equal(v.error_code, 0);
    fx_release(&v, 1);
    env_free(&e);
}

/* Phase 2: the same placement against a ledger of earlier intents. */
static void test_recheck_keeps_the_placement_or_rejects_with_the_given_reason(void **state)
{
    ka_create_topic_t t = fx_create("orders", 3, 2);
    ka_reservations_t *earlier;
    struct env e;
    ka_verdict_t v;
    int32_t first[6];
    uint64_t judged_id;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10}", fx_view(0, 3, (const int32_t[]){6, 6, 6}));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_true(v.claimed);
    memcpy(first, v.assignment, sizeof(first));
    judged_id = v.reservation_id;
    /* Nothing earlier: it still fits, with the very same assignment. */
    OK(ka_reservations_new(&earlier));
    e.ctx.ledger = earlier;
    OK(ka_engine_recheck(&e.ctx, &v, 1, KA_REASON_CONCURRENT));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_memory_equal(v.assignment, first, sizeof(first));
    assert_true(v.reservation_id != 0);
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_reservations_broker_replicas(earlier, id), 2);
    ka_reservations_free(earlier);
    /* An earlier intent took broker 1's headroom: now it is a rejection. */
    OK(ka_reservations_new(&earlier));
    e.ctx.ledger = earlier;
    OK(ka_reservations_add(earlier,
                           &(ka_reservation_spec_t){.topic = S("other"),
                                                    .partition_count = 3,
                                                    .new_partitions = 3,
                                                    .deltas = &(ka_broker_delta_t){1, 3},
                                                    .delta_count = 1,
                                                    .expires_at_ms = 60000},
                           &judged_id));
    OK(ka_engine_recheck(&e.ctx, &v, 1, KA_REASON_CONCURRENT));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_CONCURRENT);
    assert_int_equal(v.error_code, 88);
    assert_int_equal(v.reservation_id, 0);
    assert_string_equal(v.message, PREFIX " 1 (limit 10, current 9, projected 11). " ADVICE);
    assert_int_equal(ka_reservations_count(earlier), 1);
    ka_reservations_free(earlier);
    e.ctx.ledger = e.ledger;
    fx_release(&v, 1);
    env_free(&e);
}

static void test_create_partitions_places_the_new_partitions(void **state)
{
    ka_create_partitions_t grow = {.name = S("exists"), .count = 4};
    ka_create_partitions_t more = {.name = S("exists"), .count = 40};
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 10}", auto_view((const int32_t[]){0, 0, 0}, true));
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(v.assignment_partitions, 3);
    assert_int_equal(v.assignment_replication, 1); /* the topic's own factor */
    fx_release(&v, 1);
    OK(ka_engine_create_partitions(&e.ctx, &more, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_memory_equal(v.message, PREFIX, strlen(PREFIX));
    fx_release(&v, 1);
    env_free(&e);
}

/* Growing a topic whose leaders crowd broker 1: the new partitions' leaders
 * go to the brokers that lead fewest of the topic, so leaders end spread. */
static void test_create_partitions_continues_the_topics_leader_spread(void **state)
{
    static const int32_t rows[4][2] = {{1, 2}, {1, 3}, {1, 2}, {1, 3}}; /* broker 1 leads all */
    ka_create_partitions_t grow = {.name = S("grown"), .count = 6};
    int32_t leads[4] = {0, 4, 0, 0};
    ka_cluster_builder_t *b = fx_builder(0);
    struct env e;
    ka_verdict_t v;

    (void)state;
    /* Broker 1 has the most headroom, so the placer alone would make it lead
     * a new partition. */
    for (int32_t id = 1; id <= 3; id++) {
        fx_broker(b, id, NULL, false);
        fx_load(b, id, id == 1 ? 0 : 20);
    }
    for (int32_t p = 0; p < 4; p++)
        OK(ka_cluster_builder_add_partition(b, S("grown"), p, rows[p], 2));
    env_init(&e, "{\"max.broker.partitions\": 100}", fx_finish(b));
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(v.assignment_partitions, 2);
    assert_int_equal(v.assignment_replication, 2);
    for (int32_t p = 0; p < 2; p++)
        leads[v.assignment[p * 2]]++;
    /* Broker 1 leads no new partition: brokers 2 and 3 lead one each. */
    assert_int_equal(leads[1], 4);
    assert_int_equal(leads[2], 1);
    assert_int_equal(leads[3], 1);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_long_broker_lists_are_cut_with_a_count(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("big", 200, 1);
    ka_verdict_t v;
    const char *tail = " more. " ADVICE;
    size_t len;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 0}", fx_view(0, 200, NULL));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    len = strlen(v.message);
    assert_true(len < KA_MESSAGE_MAX);
    assert_memory_equal(v.message, PREFIX " 1 (limit 0, current 0, projected 1), 2 (",
                        strlen(PREFIX " 1 (limit 0, current 0, projected 1), 2 ("));
    assert_string_equal(v.message + len - strlen(tail), tail);
    assert_non_null(strstr(v.message, ", and "));
    fx_release(&v, 1);
    env_free(&e);
}

static void test_place_prefers_brokers_with_more_headroom(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("t", 2, 1);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 100}", fx_view(0, 3, (const int32_t[]){90, 0, 50}));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(v.assignment[0], 2);
    assert_int_equal(v.assignment[1], 3);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_expired_reservations_are_dropped_before_deciding(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("t", 5, 1), later = fx_create("u", 5, 1);
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 5}", fx_view(0, 1, NULL));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    /* The broker never answered and no view showed "t": after reservation.expiry.ms
     * (300000 ms from now = 1000) the room comes back. */
    ka_cluster_unref(e.view);
    e.view = fx_view(301000, 1, NULL);
    e.ctx.view = e.view;
    e.ctx.now_ms = 301000;
    OK(ka_engine_create_topics(&e.ctx, &later, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(ka_reservations_count(e.ledger), 1);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_placement_is_deterministic_for_a_seed(void **state)
{
    struct env a, b;
    ka_create_topic_t t = fx_create("t", 30, 3);
    ka_verdict_t va, vb;

    (void)state;
    env_init(&a, "{}", fx_view(0, 7, NULL));
    env_init(&b, "{}", fx_view(0, 7, NULL));
    OK(ka_engine_create_topics(&a.ctx, &t, 1, &va));
    OK(ka_engine_create_topics(&b.ctx, &t, 1, &vb));
    assert_memory_equal(va.assignment, vb.assignment, 90 * sizeof(int32_t));
    fx_release(&va, 1);
    fx_release(&vb, 1);
    env_free(&a);
    env_free(&b);
}

static void test_a_view_showing_the_topic_replaces_its_reservation(void **state)
{
    struct env e;
    ka_create_topic_t t = fx_create("t", 5, 1), again = fx_create("u", 1, 1);
    ka_cluster_builder_t *b;
    ka_cluster_t *next;
    ka_verdict_t v;
    const int32_t one = 1;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 5}", fx_view(0, 1, NULL));
    OK(ka_engine_create_topics(&e.ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    b = fx_builder(1100);
    fx_broker(b, 1, NULL, false);
    for (int32_t p = 0; p < 5; p++)
        OK(ka_cluster_builder_add_partition(b, S("t"), p, &one, 1));
    next = fx_finish(b);
    assert_int_equal(ka_reservations_reconcile(e.ledger, next), 1);
    ka_cluster_unref(e.view);
    e.view = next;
    e.ctx.view = next;
    OK(ka_engine_create_topics(&e.ctx, &again, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_REJECT); /* counted once, by the view: 5 of 5 */
    assert_string_equal(v.message, PREFIX " 1 (limit 5, current 5, projected 6). " ADVICE);
    fx_release(&v, 1);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_within_limits_gets_a_placed_assignment),
        cmocka_unit_test(test_duplicates_among_many_items_are_exactly_the_repeated_names),
        cmocka_unit_test(test_create_beyond_limits_is_rejected_with_each_broker_named),
        cmocka_unit_test(test_place_avoids_a_full_broker_where_bound_rejects),
        cmocka_unit_test(test_bound_admits_unchanged_and_reserves_the_worst_case),
        cmocka_unit_test(test_bound_counts_a_small_rack_as_taking_every_partition),
        cmocka_unit_test(test_explicit_assignment_is_judged_as_given),
        cmocka_unit_test(test_multi_topic_request_is_decided_in_order_with_reservations),
        cmocka_unit_test(test_validate_only_gets_the_same_verdicts_and_reserves_nothing),
        cmocka_unit_test(test_reassignment_projects_current_minus_removed_plus_added),
        cmocka_unit_test(test_auto_creation_is_allowed_or_denied),
        cmocka_unit_test(test_max_partitions_counts_partitions_once),
        cmocka_unit_test(test_stale_view_rejects_every_decision_and_says_how_old),
        cmocka_unit_test(test_audit_forwards_unchanged_and_flags_what_enforce_rejects),
        cmocka_unit_test(test_what_is_not_a_limit_question_is_left_to_the_broker),
        cmocka_unit_test(test_unknown_topic_or_broker_is_rejected_with_its_reason),
        cmocka_unit_test(test_recheck_keeps_the_placement_or_rejects_with_the_given_reason),
        cmocka_unit_test(test_create_partitions_places_the_new_partitions),
        cmocka_unit_test(test_create_partitions_continues_the_topics_leader_spread),
        cmocka_unit_test(test_long_broker_lists_are_cut_with_a_count),
        cmocka_unit_test(test_place_prefers_brokers_with_more_headroom),
        cmocka_unit_test(test_expired_reservations_are_dropped_before_deciding),
        cmocka_unit_test(test_placement_is_deterministic_for_a_seed),
        cmocka_unit_test(test_a_view_showing_the_topic_replaces_its_reservation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
