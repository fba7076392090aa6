/*
 * test_admission_seams.c: the steps of ka_adm_request that a cluster-wide
 * ledger runs apart (decode, judge, rejudge, reject_all, finish), the
 * reason every outcome carries as an enum, and the freshness rule: an item
 * about a topic or broker the view does not know waits for a fresher view
 * when it may, and is otherwise rejected saying so, never forwarded
 * unjudged. Frames in, frames out, against adm_fixture.h's cluster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adm_fixture.h"
#include "ka_metrics.h"

/* One CreateTopics topic with an explicit assignment of one partition. */
static struct ka_createtopics_request_creatable_topic
explicit_topic(const char *name, struct ka_createtopics_request_creatable_replica_assignment *row,
               int32_t *brokers, int32_t n)
{
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic(name, -1, -1);

    ka_createtopics_request_creatable_replica_assignment_init(row);
    row->partition_index = 0;
    row->broker_ids = (ka_i32_array_t){n, brokers};
    t.assignments.count = 1;
    t.assignments.items = row;
    return t;
}

/* A NUL-terminated copy of a slice from a decoded frame. */
static char *ka_adm_test_text(ka_slice_t s)
{
    char *text = calloc(1, (size_t)(s.len > 0 ? s.len : 0) + 1);

    assert_non_null(text);
    if (s.len > 0)
        memcpy(text, s.ptr, (size_t)s.len);
    return text;
}

/* An earlier intent, as the ledger would replay it: `replicas` on broker_id. */
static void add_intent(ka_reservations_t *ledger, const char *topic, int32_t broker_id,
                       int32_t replicas)
{
    ka_broker_delta_t delta = {broker_id, replicas};
    ka_reservation_spec_t spec = {.kind = KA_RESERVATION_PARTITIONS,
                                  .topic = S(topic),
                                  .partition_count = 1,
                                  .new_partitions = 1,
                                  .deltas = &delta,
                                  .delta_count = 1,
                                  .expires_at_ms = 60000};
    uint64_t id;

    assert_int_equal(ka_reservations_add(ledger, &spec, &id), 0);
}

/* No view yet: rejected and counted as no-view, never as a limit. */
static void test_no_view_is_counted_as_no_view(void **state)
{
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("early", 1, 1);
    ka_adm_outcome_t o;
    size_t len;
    uint8_t *frame = fx_ct_request(5, &t, 1, false, &len);

    (void)state;
    f->ctx.view = NULL;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.decision, KA_ADM_D_REJECT);
    assert_int_equal(o.reason, KA_REASON_NO_VIEW);
    assert_string_equal(ka_adm_reason_name(o.reason), "no_view");
    assert_non_null(strstr(o.message, "no view of the cluster yet"));
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

static void test_limit_and_stale_rejections_carry_their_reasons(void **state)
{
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("big", 20, 3);
    ka_adm_outcome_t o;
    size_t len;
    uint8_t *frame = fx_ct_request(5, &t, 1, false, &len);

    (void)state;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.reason, KA_REASON_BROKER_LIMIT);
    assert_string_equal(ka_adm_reason_name(o.reason), "limit");
    ka_adm_outcome_release(&o);
    f->ctx.now_ms = 1000000; /* far past metadata.max.staleness.ms */
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.reason, KA_REASON_STALE_VIEW);
    assert_string_equal(ka_adm_reason_name(o.reason), "stale");
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/*
 * A create of a name the view lists that would not fit as a new topic: the topic may have been
 * deleted a moment ago (Kafka 4.4: delete, then create at once). Before a view taken after the
 * request the refusal is not final, so the request waits for one; on such a view that still
 * lists the name it is refused, counted in full. A caller that cannot wait refuses at once.
 */
static void test_create_of_a_listed_name_waits_for_a_later_view_before_refusing(void **state)
{
    fx_t *f = fx_new(POLICY); /* broker 1 hosts 8 of 10: 3 x 3 does not fit */
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("three", 3, 3);
    ka_adm_outcome_t o;
    size_t len;
    uint8_t *frame = fx_ct_request(5, &t, 1, false, &len);

    (void)state;
    f->ctx.may_wait_for_view = true;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_WAIT);
    assert_int_equal(ka_reservations_broker_replicas(f->ledger, 1), 0);
    ka_adm_outcome_release(&o);
    for (int round = 0; round < 2; round++) {
        /* round 0: a view after the request still lists it; round 1: no waiting allowed */
        f->ctx.view_follows_request = round == 0;
        f->ctx.may_wait_for_view = round == 0;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        assert_int_equal(o.reason, KA_REASON_BROKER_LIMIT);
        assert_non_null(strstr(o.message, "may have been deleted a moment ago"));
        ka_adm_outcome_release(&o);
    }
    free(frame);
    fx_free(f);
}

/*
 * Phase 2 against a ledger holding a competing intent on broker 1: the
 * topic judge admitted there becomes a CONCURRENT rejection naming broker
 * 1, the rest is forwarded, and the broker's answer is merged in order.
 */
static void test_rejudge_rejects_what_an_earlier_intent_took(void **state)
{
    fx_t *f = fx_new(POLICY);
    int32_t on1[] = {1, 2}, on3[] = {3};
    struct ka_createtopics_request_creatable_replica_assignment rows[2];
    struct ka_createtopics_request_creatable_topic t[2] = {explicit_topic("a", &rows[0], on1, 2),
                                                           explicit_topic("b", &rows[1], on3, 1)};
    ka_reservations_t *earlier;
    ka_adm_outcome_t o;
    ka_adm_req_t *req;
    uint64_t ids[4];
    size_t len;
    uint8_t *frame = fx_ct_request(5, t, 2, false, &len);

    (void)state;
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &req, &o), 0);
    assert_non_null(req);
    assert_int_equal(ka_adm_judge(req, &f->ctx), 0);
    assert_false(ka_adm_req_wants_view(req));
    assert_int_equal(ka_adm_req_reservations(req, ids, 4), 2);
    /* Broker 1 hosts 8 of 10; the earlier intent takes 2 more. */
    assert_int_equal(ka_reservations_new(&earlier), 0);
    add_intent(earlier, "rival", 1, 2);
    f->ctx.ledger = earlier;
    assert_int_equal(ka_adm_rejudge(req, &f->ctx, KA_REASON_CONCURRENT), 0);
    assert_int_equal(ka_adm_req_reservations(req, ids, 4), 1);
    assert_int_equal(ka_reservations_broker_replicas(earlier, 3), 1);
    assert_int_equal(ka_reservations_broker_replicas(earlier, 1), 2); /* only the rival */
    assert_int_equal(ka_adm_finish(req, &f->ctx, &o), 0);
    ka_adm_req_free(req);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.decision, KA_ADM_D_PARTIAL);
    assert_int_equal(o.reason, KA_REASON_CONCURRENT);
    assert_string_equal(ka_adm_reason_name(o.reason), "concurrent");
    assert_non_null(strstr(o.message, "max.broker.partitions limit on brokers 1 (limit 10, "
                                      "current 10, projected 11)"));
    /* The forwarded request holds "b" only. */
    ka_arena_t arena;
    struct ka_createtopics_request fwd;
    int16_t ver;
    ka_arena_init(&arena, 1 << 20);
    fx_decode_request(o.bytes, o.len, &arena, &ver, &fwd);
    assert_int_equal(fwd.topics.count, 1);
    assert_true(slice_is(fwd.topics.items[0].name, "b"));
    /* The broker answers for "b"; the merge puts "a" first, as requested. */
    struct ka_createtopics_response br, merged;
    struct ka_createtopics_response_creatable_topic_result res;
    ka_createtopics_response_init(&br);
    ka_createtopics_response_creatable_topic_result_init(&res);
    res.name = S("b");
    res.configs.count = -1;
    br.throttle_time_ms = 7;
    br.topics.count = 1;
    br.topics.items = &res;
    size_t blen, mlen;
    uint8_t *bframe = fx_response_frame(19, 5, 77, &br, &blen), *mframe;
    assert_int_equal(ka_adm_response(o.pending, bframe, blen, 1 << 20, &mframe, &mlen), 0);
    assert_non_null(mframe);
    fx_decode_response(mframe, mlen, 19, 5, 77, &arena, &merged);
    assert_int_equal(merged.throttle_time_ms, 7);
    assert_int_equal(merged.topics.count, 2);
    assert_true(slice_is(merged.topics.items[0].name, "a"));
    assert_int_equal(merged.topics.items[0].error_code, 88);
    assert_true(slice_is(merged.topics.items[1].name, "b"));
    assert_int_equal(merged.topics.items[1].error_code, 0);
    free(mframe);
    free(bframe);
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    ka_reservations_free(earlier);
    free(frame);
    fx_free(f);
}

/* Everything rejected in phase 2: a local answer. */
static void test_rejudge_rejecting_every_item_answers_locally(void **state)
{
    fx_t *f = fx_new(POLICY);
    int32_t on1[] = {1};
    struct ka_createtopics_request_creatable_replica_assignment row;
    struct ka_createtopics_request_creatable_topic t = explicit_topic("a", &row, on1, 1);
    ka_reservations_t *earlier;
    ka_adm_outcome_t o;
    ka_adm_req_t *req;
    size_t len;
    uint8_t *frame = fx_ct_request(4, &t, 1, false, &len);

    (void)state;
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &req, &o), 0);
    assert_int_equal(ka_adm_judge(req, &f->ctx), 0);
    assert_int_equal(ka_reservations_new(&earlier), 0);
    add_intent(earlier, "rival", 1, 2);
    f->ctx.ledger = earlier;
    assert_int_equal(ka_adm_rejudge(req, &f->ctx, KA_REASON_CONCURRENT), 0);
    assert_int_equal(ka_adm_finish(req, &f->ctx, &o), 0);
    ka_adm_req_free(req);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_null(o.pending);
    assert_int_equal(ka_reservations_count(earlier), 1);
    ka_arena_t arena;
    struct ka_createtopics_response resp;
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, 19, 4, 77, &arena, &resp);
    assert_int_equal(resp.topics.count, 1);
    assert_int_equal(resp.topics.items[0].error_code, 88);
    assert_memory_equal(resp.topics.items[0].error_message.ptr, "Cannot satisfy", 14);
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    ka_reservations_free(earlier);
    free(frame);
    fx_free(f);
}

/* Decodes, judges and (with `rejudge_ledger`) rejudges, then finishes. */
static void run_steps(fx_t *f, const uint8_t *frame, size_t len, ka_reservations_t *rejudge_ledger,
                      ka_adm_outcome_t *o)
{
    ka_adm_req_t *req;

    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &req, o), 0);
    assert_non_null(req);
    assert_int_equal(ka_adm_judge(req, &f->ctx), 0);
    if (rejudge_ledger != NULL) {
        ka_adm_ctx_t again = f->ctx;
        again.ledger = rejudge_ledger;
        assert_int_equal(ka_adm_rejudge(req, &again, KA_REASON_CONCURRENT), 0);
    }
    assert_int_equal(ka_adm_finish(req, &f->ctx, o), 0);
    ka_adm_req_free(req);
}

/* Nothing competing: phase 2 keeps the placement judge chose, byte for byte. */
static void test_rejudge_with_nothing_competing_keeps_the_exact_assignment(void **state)
{
    fx_t *one = fx_new(POLICY), *two = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("placed", 6, 2);
    ka_reservations_t *earlier;
    ka_adm_outcome_t a, b;
    size_t len;
    uint8_t *frame = fx_ct_request(5, &t, 1, false, &len);

    (void)state;
    assert_int_equal(ka_reservations_new(&earlier), 0);
    run_steps(one, frame, len, NULL, &a);
    run_steps(two, frame, len, earlier, &b);
    assert_int_equal(a.action, KA_ADM_REWRITE);
    assert_int_equal(b.action, KA_ADM_REWRITE);
    assert_int_equal(b.decision, KA_ADM_D_REWRITE);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.bytes, b.bytes, a.len);
    /* Reserved in the phase-2 ledger, under the id the pending state keeps. */
    assert_non_null(b.pending);
    assert_int_equal(ka_reservations_count(earlier), 1);
    assert_int_equal(ka_reservations_release(earlier, b.pending->items[0].reservation_id), 0);
    ka_adm_outcome_release(&a);
    ka_adm_outcome_release(&b);
    ka_reservations_free(earlier);
    free(frame);
    fx_free(one);
    fx_free(two);
}

/* The ledger is unreachable: every admitted item is refused with that reason. */
static void test_reject_all_refuses_admitted_items_and_releases_them(void **state)
{
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t[2] = {fx_ct_topic("x", 1, 1),
                                                           fx_ct_topic("y", 1, 1)};
    ka_adm_outcome_t o;
    ka_adm_req_t *req;
    size_t len;
    uint8_t *frame = fx_ct_request(5, t, 2, false, &len);

    (void)state;
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &req, &o), 0);
    assert_int_equal(ka_adm_judge(req, &f->ctx), 0);
    assert_int_equal(ka_reservations_count(f->ledger), 2);
    ka_adm_reject_all(req, &f->ctx, KA_REASON_LEDGER_UNAVAILABLE,
                      "kadmit cannot reach its admission ledger. Retry shortly.");
    assert_int_equal(ka_reservations_count(f->ledger), 0);
    assert_int_equal(ka_adm_req_reservations(req, NULL, 0), 0);
    assert_int_equal(ka_adm_finish(req, &f->ctx, &o), 0);
    ka_adm_req_free(req);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.rejected, 2);
    assert_int_equal(o.reason, KA_REASON_LEDGER_UNAVAILABLE);
    assert_string_equal(o.message, "kadmit cannot reach its admission ledger. Retry shortly.");
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* CreatePartitions of a topic the view lacks: wait when allowed, else reject with code 3. */
static void test_unknown_topic_waits_for_a_view_then_is_rejected(void **state)
{
    fx_t *f = fx_new(POLICY);
    ka_adm_outcome_t o;
    size_t len;
    uint8_t *frame = fx_cp_request(3, "ghost", 4, &len);

    (void)state;
    f->ctx.may_wait_for_view = true;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_WAIT);
    assert_null(o.pending);
    f->ctx.may_wait_for_view = false; /* the resumed decision, after a refresh */
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.reason, KA_REASON_UNKNOWN_TOPIC);
    assert_int_equal(o.deferred_to_broker, 0);
    ka_arena_t arena;
    struct ka_createpartitions_response resp;
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, 37, 3, 9, &arena, &resp);
    assert_int_equal(resp.results.count, 1);
    assert_int_equal(resp.results.items[0].error_code, 3); /* UNKNOWN_TOPIC_OR_PARTITION */
    char *text = ka_adm_test_text(resp.results.items[0].error_message);
    assert_non_null(strstr(text, "does not know topic ghost even after a refresh"));
    free(text);
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* A request that waits gives back what its other items reserved. */
static void test_unknown_broker_waits_and_releases_the_other_items(void **state)
{
    fx_t *f = fx_new(POLICY);
    int32_t on9[] = {9};
    struct ka_createtopics_request_creatable_replica_assignment row;
    struct ka_createtopics_request_creatable_topic t[2] = {fx_ct_topic("fits", 1, 1),
                                                           explicit_topic("far", &row, on9, 1)};
    ka_adm_outcome_t o;
    ka_adm_req_t *req;
    size_t len;
    uint8_t *frame = fx_ct_request(5, t, 2, false, &len);

    (void)state;
    f->ctx.may_wait_for_view = true;
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &req, &o), 0);
    assert_int_equal(ka_adm_judge(req, &f->ctx), 0);
    assert_true(ka_adm_req_wants_view(req));
    assert_int_equal(ka_reservations_count(f->ledger), 0);
    assert_int_equal(ka_adm_finish(req, &f->ctx, &o), 0);
    assert_int_equal(o.action, KA_ADM_WAIT);
    ka_adm_req_free(req);
    f->ctx.may_wait_for_view = false;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.decision, KA_ADM_D_PARTIAL);
    assert_int_equal(o.reason, KA_REASON_UNKNOWN_BROKER);
    assert_non_null(strstr(o.message, "does not know broker 9"));
    assert_int_equal(o.pending->items[1].error_code, 88);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* Audit mode forwards the unknown item and counts it. */
static void test_audit_forwards_an_unknown_topic_and_counts_it(void **state)
{
    fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}");
    ka_adm_outcome_t o;
    size_t len;
    uint8_t *frame = fx_cp_request(3, "ghost", 4, &len);

    (void)state;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.decision, KA_ADM_D_AUDIT);
    assert_int_equal(o.audited, 1);
    assert_int_equal(o.reason, KA_REASON_UNKNOWN_TOPIC);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* The relay and the path refuse with one function and one sentence. */
static void test_version_refusal_is_one_sentence(void **state)
{
    char why[160];

    (void)state;
    assert_false(ka_adm_version_refused(19, 5, why, sizeof(why)));
    assert_false(ka_adm_version_refused(0, 99, why, sizeof(why))); /* Produce: not ours */
    assert_true(ka_adm_version_refused(19, 99, why, sizeof(why)));
    assert_non_null(strstr(why, "CreateTopics v99 is not a version kadmit decodes"));
}

/* The wait of a CreateTopics asking for timeout_ms (floor 5000, cap 30000 unless given). */
static int64_t create_wait_ms(fx_t *f, int32_t timeout_ms, int64_t cap_ms)
{
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("early", 1, 1);
    struct ka_createtopics_request req;
    ka_adm_outcome_t o;
    ka_adm_req_t *decoded = NULL;
    size_t len;

    ka_createtopics_request_init(&req);
    req.topics.count = 1;
    req.topics.items = &t;
    req.timeout_ms = timeout_ms;
    uint8_t *frame = fx_request_frame(19, 5, 77, &req, &len);
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &decoded, &o), 0);
    assert_non_null(decoded);
    int64_t wait = ka_adm_req_wait_ms(decoded, 5000, cap_ms);
    ka_adm_req_free(decoded);
    free(frame);
    return wait;
}

/*
 * A create that arrives before the ledger is read waits as long as it asked
 * to: its own timeout_ms, but never less than --ledger-timeout-ms (clients
 * built on librdkafka send 0 by default) and never more than the cap
 * (--held-request-timeout-ms).
 */
static void test_wait_for_the_ledger_is_the_request_timeout_capped(void **state)
{
    fx_t *f = fx_new(POLICY);

    (void)state;
    assert_int_equal(create_wait_ms(f, 12000, 30000), 12000);
    assert_int_equal(create_wait_ms(f, 60000, 30000), 30000); /* capped */
    assert_int_equal(create_wait_ms(f, 0, 30000), 5000);      /* the floor */
    assert_int_equal(create_wait_ms(f, -1, 30000), 5000);
    assert_int_equal(create_wait_ms(f, 4999, 30000), 5000);
    assert_int_equal(create_wait_ms(f, INT32_MAX, 30000), 30000);
    assert_int_equal(create_wait_ms(f, 60000, 0), 60000); /* no cap */
    /* CreatePartitions carries a timeout too. */
    size_t len;
    ka_adm_outcome_t o;
    ka_adm_req_t *decoded = NULL;
    uint8_t *frame = fx_cp_request(3, "three", 4, &len);
    assert_int_equal(ka_adm_decode(&f->ctx, frame, len, &decoded, &o), 0);
    assert_non_null(decoded);
    int64_t cp = ka_adm_req_wait_ms(decoded, 5000, 30000);
    assert_true(cp >= 5000 && cp <= 30000);
    ka_adm_req_free(decoded);
    free(frame);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_view_is_counted_as_no_view),
        cmocka_unit_test(test_limit_and_stale_rejections_carry_their_reasons),
        cmocka_unit_test(test_create_of_a_listed_name_waits_for_a_later_view_before_refusing),
        cmocka_unit_test(test_rejudge_rejects_what_an_earlier_intent_took),
        cmocka_unit_test(test_rejudge_rejecting_every_item_answers_locally),
        cmocka_unit_test(test_rejudge_with_nothing_competing_keeps_the_exact_assignment),
        cmocka_unit_test(test_reject_all_refuses_admitted_items_and_releases_them),
        cmocka_unit_test(test_unknown_topic_waits_for_a_view_then_is_rejected),
        cmocka_unit_test(test_unknown_broker_waits_and_releases_the_other_items),
        cmocka_unit_test(test_audit_forwards_an_unknown_topic_and_counts_it),
        cmocka_unit_test(test_version_refusal_is_one_sentence),
        cmocka_unit_test(test_wait_for_the_ledger_is_the_request_timeout_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
