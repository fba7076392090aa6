/*
 * test_admission.c: the pure glue between request frames and the engine
 * (admission/ka_admission.c): engine inputs from decoded requests, subset
 * re-encoding, placed assignments, response merging in request order, and
 * local answers for every supported version, each checked by decoding the
 * produced bytes back with the generated codecs.
 *
 * The synthetic cluster is adm_fixture.h's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adm_fixture.h"

/* --- CreateTopics --------------------------------------------------------- */

/* Every CreateTopics version: all rejected, answered locally with code and message. */
/* Frees what one case made: its arena (or NULL), outcome, request frame and fixture. */
static void end_case(fx_t *f, ka_adm_outcome_t *o, uint8_t *frame, ka_arena_t *arena)
{
    if (arena != NULL)
        ka_arena_destroy(arena);
    ka_adm_outcome_release(o);
    free(frame);
    fx_free(f);
}

static void test_createtopics_local_answer_every_version(void **state)
{
    (void)state;
    for (int16_t ver = ka_decoded_min_version(19); ver <= ka_decoded_max_version(19); ver++) {
        fx_t *f = fx_new(POLICY);
        struct ka_createtopics_request_creatable_topic t[2] = {fx_ct_topic("big-a", 20, 3),
                                                               fx_ct_topic("big-b", 30, 1)};
        size_t len;
        uint8_t *frame = fx_ct_request(ver, t, 2, false, &len);
        ka_adm_outcome_t o;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        assert_int_equal(o.decision, KA_ADM_D_REJECT);
        assert_int_equal(o.rejected, 2);
        assert_null(o.pending);
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 20);
        struct ka_createtopics_response resp;
        fx_decode_response(o.bytes, o.len, 19, ver, 77, &arena, &resp);
        assert_int_equal(resp.topics.count, 2);
        assert_true(slice_is(resp.topics.items[0].name, "big-a"));
        assert_true(slice_is(resp.topics.items[1].name, "big-b"));
        for (int i = 0; i < 2; i++) {
            assert_int_equal(resp.topics.items[i].error_code, 88);
            if (ver >= 1)
                assert_true(resp.topics.items[i].error_message.len > 50 &&
                            memcmp(resp.topics.items[i].error_message.ptr, "Cannot satisfy", 14) ==
                                0);
        }
        assert_int_equal(ka_reservations_count(f->ledger), 0);
        end_case(f, &o, frame, &arena);
    }
}

/* Explicit assignments that fit: the original bytes go on untouched. */
static void test_createtopics_admit_forwards_untouched(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    int32_t b2[] = {2}, b3[] = {3};
    struct ka_createtopics_request_creatable_replica_assignment a[2];
    for (int i = 0; i < 2; i++) {
        ka_createtopics_request_creatable_replica_assignment_init(&a[i]);
        a[i].partition_index = i;
        a[i].broker_ids = (ka_i32_array_t){1, i == 0 ? b2 : b3};
    }
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("ok", -1, -1);
    t.assignments.count = 2;
    t.assignments.items = a;
    size_t len;
    uint8_t *frame = fx_ct_request(7, &t, 1, false, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.decision, KA_ADM_D_ADMIT);
    assert_null(o.bytes);
    /* It reserved: the response is wanted so that a failure releases it. */
    assert_non_null(o.pending);
    assert_int_equal(o.pending->count, 1);
    assert_int_not_equal(o.pending->items[0].reservation_id, 0);
    assert_int_equal(ka_reservations_broker_replicas(f->ledger, 2), 1);
    end_case(f, &o, frame, NULL);
}

/* Place mode: -1/-1 becomes an explicit assignment avoiding the full broker. */
static void test_createtopics_place_rewrites_assignment(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("placed", 6, 2);
    size_t len;
    uint8_t *frame = fx_ct_request(5, &t, 1, false, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.decision, KA_ADM_D_REWRITE);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_createtopics_request req;
    int16_t ver;
    fx_decode_request(o.bytes, o.len, &arena, &ver, &req);
    assert_int_equal(ver, 5);
    assert_int_equal(req.topics.count, 1);
    const struct ka_createtopics_request_creatable_topic *rt = &req.topics.items[0];
    assert_true(slice_is(rt->name, "placed"));
    assert_int_equal(rt->num_partitions, -1);
    assert_int_equal(rt->replication_factor, -1);
    assert_int_equal(rt->assignments.count, 6);
    int on1 = 0;
    for (int p = 0; p < 6; p++) {
        assert_int_equal(rt->assignments.items[p].partition_index, p);
        assert_int_equal(rt->assignments.items[p].broker_ids.count, 2);
        for (int k = 0; k < 2; k++)
            on1 += rt->assignments.items[p].broker_ids.items[k] == 1;
    }
    assert_true(on1 <= 2); /* broker 1 has room for 2 only */
    end_case(f, &o, frame, &arena);
}

/* Three topics, the middle one rejected: subset forwarded, answer merged in order. */
static void test_createtopics_partial_subset_and_merge(void **state)
{
    (void)state;
    for (int16_t ver = ka_decoded_min_version(19); ver <= 7; ver++) {
        fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"auto.assignment\": \"bound\"}");
        struct ka_createtopics_request_creatable_topic t[3] = {
            fx_ct_topic("a", 1, 1), fx_ct_topic("too-big", 40, 3), fx_ct_topic("c", 1, 1)};
        size_t len;
        uint8_t *frame = fx_ct_request(ver, t, 3, false, &len);
        ka_adm_outcome_t o;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_int_equal(o.decision, KA_ADM_D_PARTIAL);
        assert_int_equal(o.rejected, 1);
        assert_int_equal(o.admitted, 2);
        assert_non_null(o.pending);
        assert_int_equal(o.pending->count, 3);
        assert_int_equal(o.pending->local_count, 1);
        /* The forwarded subset: a and c, unchanged. */
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 20);
        struct ka_createtopics_request req;
        int16_t rv;
        fx_decode_request(o.bytes, o.len, &arena, &rv, &req);
        assert_int_equal(req.topics.count, 2);
        assert_true(slice_is(req.topics.items[0].name, "a"));
        assert_true(slice_is(req.topics.items[1].name, "c"));
        assert_int_equal(req.topics.items[1].num_partitions, 1);
        /* The broker answers c before a, and fails c. */
        struct ka_createtopics_response br;
        struct ka_createtopics_response_creatable_topic_result res[2];
        ka_createtopics_response_init(&br);
        for (int i = 0; i < 2; i++) {
            ka_createtopics_response_creatable_topic_result_init(&res[i]);
            res[i].configs.count = -1;
        }
        res[0].name = S("c");
        res[0].error_code = 36; /* TOPIC_ALREADY_EXISTS */
        res[0].error_message = S("Topic 'c' already exists.");
        res[1].name = S("a");
        br.throttle_time_ms = 5;
        br.topics.count = 2;
        br.topics.items = res;
        size_t blen;
        uint8_t *bframe = fx_response_frame(19, ver, 77, &br, &blen);
        uint8_t *merged = NULL;
        size_t mlen = 0;
        assert_int_equal(ka_adm_response(o.pending, bframe, blen, 1 << 20, &merged, &mlen), 0);
        assert_non_null(merged);
        assert_int_equal(o.pending->items[0].broker_error, 0);
        assert_int_equal(o.pending->items[2].broker_error, 36);
        struct ka_createtopics_response mr;
        fx_decode_response(merged, mlen, 19, ver, 77, &arena, &mr);
        assert_int_equal(mr.topics.count, 3);
        assert_true(slice_is(mr.topics.items[0].name, "a"));
        assert_int_equal(mr.topics.items[0].error_code, 0);
        assert_true(slice_is(mr.topics.items[1].name, "too-big"));
        assert_int_equal(mr.topics.items[1].error_code, 88);
        if (ver >= 1)
            assert_true(mr.topics.items[1].error_message.len > 0);
        assert_true(slice_is(mr.topics.items[2].name, "c"));
        assert_int_equal(mr.topics.items[2].error_code, 36);
        if (ver >= 2)
            assert_int_equal(mr.throttle_time_ms, 5);
        free(merged);
        free(bframe);
        end_case(f, &o, frame, &arena);
    }
}

/* validate_only: the same verdict, nothing reserved. */
static void test_createtopics_validate_only_reserves_nothing(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t[2] = {fx_ct_topic("v1", 2, 3),
                                                           fx_ct_topic("v2", 40, 3)};
    size_t len;
    uint8_t *frame = fx_ct_request(7, t, 2, true, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.decision, KA_ADM_D_PARTIAL);
    assert_int_equal(ka_reservations_count(f->ledger), 0);
    end_case(f, &o, frame, NULL);
}

/* Audit mode: forwarded unchanged, flagged. */
static void test_createtopics_audit_forwards(void **state)
{
    (void)state;
    fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}");
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("huge", 40, 3);
    size_t len;
    uint8_t *frame = fx_ct_request(7, &t, 1, false, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.decision, KA_ADM_D_AUDIT);
    assert_int_equal(o.audited, 1);
    assert_true(strstr(o.message, "Cannot satisfy") != NULL);
    end_case(f, &o, frame, NULL);
}

/* Wanting a fresher view: WAIT, nothing decided or reserved. */
static void test_wait_for_fresh_view(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    f->ctx.want_fresh_view = true;
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("w", 1, 1);
    size_t len;
    uint8_t *frame = fx_ct_request(7, &t, 1, false, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_WAIT);
    assert_false(o.decided);
    assert_int_equal(ka_reservations_count(f->ledger), 0);
    end_case(f, &o, frame, NULL);
}

/* A version above what kadmit decodes, and a truncated body: CLOSE. */
static void test_version_refused_and_decode_error(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    struct ka_createtopics_request_creatable_topic t = fx_ct_topic("x", 1, 1);
    size_t len;
    uint8_t *frame = fx_ct_request(7, &t, 1, false, &len);
    frame[4 + 2] = 0;
    frame[4 + 3] = 8; /* api_version 8 */
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_CLOSE);
    assert_true(o.version_refused);
    frame[4 + 3] = 7;
    /* Cut the body short (and fix the size prefix). */
    len -= 6;
    frame[3] = (uint8_t)(len - 4);
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_CLOSE);
    assert_true(o.decode_error);
    assert_true(strstr(o.message, "CreateTopics") != NULL);
    assert_true(strstr(o.message, "byte") != NULL);
    free(frame);
    fx_free(f);
}

/* --- CreatePartitions ------------------------------------------------------ */

static void test_createpartitions_local_answer_every_version(void **state)
{
    (void)state;
    for (int16_t ver = 0; ver <= ka_decoded_max_version(37); ver++) {
        fx_t *f = fx_new(POLICY);
        size_t len;
        uint8_t *frame = fx_cp_request(ver, "three", 40, &len);
        ka_adm_outcome_t o;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 20);
        struct ka_createpartitions_response resp;
        fx_decode_response(o.bytes, o.len, 37, ver, 9, &arena, &resp);
        assert_int_equal(resp.results.count, 1);
        assert_true(slice_is(resp.results.items[0].name, "three"));
        assert_int_equal(resp.results.items[0].error_code, 88);
        assert_true(resp.results.items[0].error_message.len > 0);
        end_case(f, &o, frame, &arena);
    }
}

static void test_createpartitions_place_rewrites(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    size_t len;
    uint8_t *frame = fx_cp_request(3, "three", 3, &len); /* 2 new partitions, rf 2 */
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_createpartitions_request req;
    int16_t rv;
    fx_decode_request(o.bytes, o.len, &arena, &rv, &req);
    assert_int_equal(req.topics.items[0].count, 3);
    assert_int_equal(req.topics.items[0].assignments.count, 2);
    assert_int_equal(req.topics.items[0].assignments.items[1].broker_ids.count, 2);
    end_case(f, &o, frame, &arena);
}

/* --- AlterPartitionReassignments ------------------------------------------- */

static void test_reassign_partial_and_merge(void **state)
{
    (void)state;
    /* Broker 2 may host 3 replicas and hosts 1 (three-0): moving four
     * "full" partitions onto it admits the first two and rejects the rest. */
    fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"brokers\": {\"2\": "
                     "{\"max.broker.partitions\": 3}}}");
    int32_t to2[] = {2};
    struct ka_alterpartitionreassignments_request_reassignable_partition parts[4];
    for (int i = 0; i < 4; i++) {
        ka_alterpartitionreassignments_request_reassignable_partition_init(&parts[i]);
        parts[i].partition_index = i;
        parts[i].replicas = (ka_i32_array_t){1, to2};
    }
    struct ka_alterpartitionreassignments_request_reassignable_topic topic;
    ka_alterpartitionreassignments_request_reassignable_topic_init(&topic);
    topic.name = S("full");
    topic.partitions.count = 4;
    topic.partitions.items = parts;
    struct ka_alterpartitionreassignments_request req;
    ka_alterpartitionreassignments_request_init(&req);
    req.topics.count = 1;
    req.topics.items = &topic;
    size_t len;
    uint8_t *frame = fx_request_frame(45, 0, 5, &req, &len);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    /* broker 2 hosts 1 replica, limit 3: partitions 0 and 1 fit, 2 and 3 not. */
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.admitted, 2);
    assert_int_equal(o.rejected, 2);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_alterpartitionreassignments_request fwd;
    int16_t rv;
    fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
    assert_int_equal(fwd.topics.count, 1);
    assert_int_equal(fwd.topics.items[0].partitions.count, 2);
    assert_int_equal(fwd.topics.items[0].partitions.items[1].partition_index, 1);
    /* The broker answers the two it got. */
    struct ka_alterpartitionreassignments_response br;
    struct ka_alterpartitionreassignments_response_reassignable_topic_response bt;
    struct ka_alterpartitionreassignments_response_reassignable_partition_response bp[2];
    ka_alterpartitionreassignments_response_init(&br);
    ka_alterpartitionreassignments_response_reassignable_topic_response_init(&bt);
    for (int i = 0; i < 2; i++) {
        ka_alterpartitionreassignments_response_reassignable_partition_response_init(&bp[i]);
        bp[i].partition_index = 1 - i;
    }
    bt.name = S("full");
    bt.partitions.count = 2;
    bt.partitions.items = bp;
    br.responses.count = 1;
    br.responses.items = &bt;
    br.throttle_time_ms = 3;
    size_t blen;
    uint8_t *bframe = fx_response_frame(45, 0, 5, &br, &blen);
    uint8_t *merged = NULL;
    size_t mlen;
    assert_int_equal(ka_adm_response(o.pending, bframe, blen, 1 << 20, &merged, &mlen), 0);
    assert_non_null(merged);
    struct ka_alterpartitionreassignments_response mr;
    fx_decode_response(merged, mlen, 45, 0, 5, &arena, &mr);
    assert_int_equal(mr.throttle_time_ms, 3);
    assert_int_equal(mr.error_code, 0);
    assert_int_equal(mr.responses.count, 1);
    assert_int_equal(mr.responses.items[0].partitions.count, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(mr.responses.items[0].partitions.items[i].partition_index, i);
        assert_int_equal(mr.responses.items[0].partitions.items[i].error_code, i < 2 ? 0 : 88);
    }
    assert_true(mr.responses.items[0].partitions.items[3].error_message.len > 0);
    free(merged);
    free(bframe);
    end_case(f, &o, frame, &arena);
}

static void test_reassign_undecodable_gets_error_answer(void **state)
{
    (void)state;
    fx_t *f = fx_new(POLICY);
    /* Header of v0 (flexible: header v2) and a body cut short. */
    uint8_t frame[] = {0, 0, 0, 14, 0, 45, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0x75, 0x30};
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, frame, sizeof(frame), &o), 0);
    assert_true(o.decode_error);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_alterpartitionreassignments_response mr;
    fx_decode_response(o.bytes, o.len, 45, 0, 3, &arena, &mr);
    assert_int_equal(mr.error_code, 42);
    assert_true(mr.error_message.len > 0);
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    fx_free(f);
}

/* --- Metadata auto-creation -------------------------------------------------- */

static void test_metadata_auto_create_denied_clears_flag(void **state)
{
    (void)state;
    for (int16_t ver = 4; ver <= ka_decoded_max_version(3); ver++) {
        /* Defaults 2 x 3 = 6 replicas, 2 per broker; broker 1 has room for 2, so
         * a limit of 9 on broker 1 (8 hosted) denies it. */
        fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"brokers\": {\"1\": "
                         "{\"max.broker.partitions\": 9}}}");
        struct ka_metadata_request_metadata_request_topic t[2];
        for (int i = 0; i < 2; i++)
            ka_metadata_request_metadata_request_topic_init(&t[i]);
        t[0].name = S("three");
        t[1].name = S("new-topic");
        struct ka_metadata_request req;
        ka_metadata_request_init(&req);
        req.topics.count = 2;
        req.topics.items = t;
        req.allow_auto_topic_creation = 1;
        size_t len;
        uint8_t *frame = fx_request_frame(3, ver, 11, &req, &len);
        ka_adm_outcome_t o;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_true(o.auto_create_denied);
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 20);
        struct ka_metadata_request fwd;
        int16_t rv;
        fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
        assert_int_equal(rv, ver);
        assert_int_equal(fwd.allow_auto_topic_creation, 0);
        assert_int_equal(fwd.topics.count, 2);
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        free(frame);

        /* Existing topics only: nothing decided, but the flag is cleared, since a listed
         * topic deleted a moment ago would otherwise be created again unjudged. */
        req.topics.count = 1;
        frame = fx_request_frame(3, ver, 12, &req, &len);
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_false(o.decided);
        assert_false(o.auto_create_denied);
        ka_arena_init(&arena, 1 << 20);
        fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
        assert_int_equal(rv, ver);
        assert_int_equal(fwd.allow_auto_topic_creation, 0);
        assert_int_equal(fwd.topics.count, 1);
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        free(frame);
        fx_free(f);
    }
}

/* Bytes after a Metadata message (librdkafka 2.x at v12) are ignored, as the broker does. */
static void test_metadata_trailing_bytes_are_ignored(void **state)
{
    (void)state;
    fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"brokers\": {\"1\": "
                     "{\"max.broker.partitions\": 8}}}");
    struct ka_metadata_request_metadata_request_topic t;
    ka_metadata_request_metadata_request_topic_init(&t);
    t.name = S("brand-new");
    struct ka_metadata_request req;
    ka_metadata_request_init(&req);
    req.topics.count = 1;
    req.topics.items = &t;
    req.allow_auto_topic_creation = 1;
    size_t len;
    uint8_t *frame = fx_request_frame(3, 12, 13, &req, &len);
    uint8_t *longer = malloc(len + 3);
    memcpy(longer, frame, len);
    memcpy(longer + len, "\x01\x00\x00", 3);
    len += 3;
    longer[3] = (uint8_t)(len - 4);
    ka_adm_outcome_t o;
    assert_int_equal(ka_adm_request(&f->ctx, longer, len, &o), 0);
    assert_int_equal(o.trailing_bytes, 3);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_true(o.auto_create_denied);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_metadata_request fwd;
    int16_t rv;
    fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
    assert_int_equal(fwd.allow_auto_topic_creation, 0);
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    free(longer);
    free(frame);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_createtopics_local_answer_every_version),
        cmocka_unit_test(test_createtopics_admit_forwards_untouched),
        cmocka_unit_test(test_createtopics_place_rewrites_assignment),
        cmocka_unit_test(test_createtopics_partial_subset_and_merge),
        cmocka_unit_test(test_createtopics_validate_only_reserves_nothing),
        cmocka_unit_test(test_createtopics_audit_forwards),
        cmocka_unit_test(test_wait_for_fresh_view),
        cmocka_unit_test(test_version_refused_and_decode_error),
        cmocka_unit_test(test_createpartitions_local_answer_every_version),
        cmocka_unit_test(test_createpartitions_place_rewrites),
        cmocka_unit_test(test_reassign_partial_and_merge),
        cmocka_unit_test(test_reassign_undecodable_gets_error_answer),
        cmocka_unit_test(test_metadata_auto_create_denied_clears_flag),
        cmocka_unit_test(test_metadata_trailing_bytes_are_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
