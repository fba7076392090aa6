/*
 * test_admission_delete.c: DeleteTopics and DeleteRecords of protected
 * topics, from frames real clients sent (tests/data/frames/protect/,
 * tests/tools/capture_delete_frames.sh): kafka-topics --delete,
 * kafka-delete-records, the Java AdminClient by name and by topic id, and
 * confluent-kafka's delete_topics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adm_fixture.h"

#define KEEP "{\"max.broker.partitions\": 10, \"protected.topics\": [\"keep\\\\..*\"]}"

/* The ids the broker gave keep.x and free.c when the Java frames were captured. */
static const uint8_t keep_x_id[16] = {0xeb, 0x82, 0xb0, 0xd9, 0x37, 0x60, 0x41, 0xfb,
                                      0x97, 0x02, 0xfb, 0x29, 0xc6, 0x9d, 0xaa, 0x50};
static const uint8_t free_c_id[16] = {0xad, 0x7f, 0x02, 0xc0, 0x7e, 0x00, 0x48, 0x14,
                                      0xb1, 0xc1, 0x5d, 0xe3, 0xe9, 0x98, 0x0e, 0x81};

/* The fixture's view, plus keep.x and free.c with their ids when `with_ids`. */
static void view_with_topics(fx_t *f, bool with_ids)
{
    ka_cluster_builder_t *b;
    int32_t one = 1;

    assert_int_equal(ka_cluster_builder_new(1000, &b), 0);
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_cluster_builder_add_broker(b, id, KA_SLICE_NULL, false), 0);
    assert_int_equal(ka_cluster_builder_add_partition(b, S("keep.x"), 0, &one, 1), 0);
    assert_int_equal(ka_cluster_builder_add_partition(b, S("free.c"), 0, &one, 1), 0);
    if (with_ids) {
        assert_int_equal(ka_cluster_builder_set_topic_id(b, S("keep.x"), keep_x_id), 0);
        assert_int_equal(ka_cluster_builder_set_topic_id(b, S("free.c"), free_c_id), 0);
    }
    ka_cluster_unref(f->view);
    assert_int_equal(ka_cluster_builder_finish(b, &f->view), 0);
    f->ctx.view = f->view;
}

static int16_t version_of(const uint8_t *frame)
{
    return (int16_t)(frame[6] << 8 | frame[7]);
}

static int32_t cid_of(const uint8_t *frame)
{
    return (int32_t)((uint32_t)frame[8] << 24 | frame[9] << 16 | frame[10] << 8 | frame[11]);
}

/* One case: a policy, a captured request judged once, and an arena for what is decoded. */
typedef struct tc {
    fx_t *f;
    uint8_t *frame;
    size_t len;
    ka_adm_outcome_t o;
    ka_arena_t arena;
} tc_t;

static void tc_start(tc_t *t, const char *policy, const char *capture)
{
    memset(t, 0, sizeof(*t));
    t->f = fx_new(policy);
    t->frame = fx_captured(capture, &t->len);
    ka_arena_init(&t->arena, 1 << 20);
}

static void tc_judge(tc_t *t)
{
    ka_adm_outcome_release(&t->o);
    assert_int_equal(ka_adm_request(&t->f->ctx, t->frame, t->len, &t->o), 0);
}

static void tc_end(tc_t *t)
{
    ka_arena_destroy(&t->arena);
    ka_adm_outcome_release(&t->o);
    free(t->frame);
    fx_free(t->f);
}

/* The broker's answer for the one topic forwarded (by name, or by id alone: name null),
 * merged with kadmit's refusals into *mr (decoded from a copy in the case's arena). */
static void tc_merge_dt(tc_t *t, ka_slice_t name, const uint8_t *id,
                        struct ka_deletetopics_response *mr)
{
    struct ka_deletetopics_response br;
    struct ka_deletetopics_response_deletable_topic_result res;
    uint8_t *bframe, *merged = NULL, *copy;
    size_t blen, mlen = 0;

    ka_deletetopics_response_init(&br);
    ka_deletetopics_response_deletable_topic_result_init(&res);
    res.name = name;
    if (id != NULL)
        memcpy(res.topic_id, id, 16);
    br.responses.count = 1;
    br.responses.items = &res;
    bframe = fx_response_frame(KA_DELETETOPICS_REQUEST_API_KEY, 6, cid_of(t->frame), &br, &blen);
    assert_int_equal(ka_adm_response(t->o.pending, bframe, blen, 1 << 20, &merged, &mlen), 0);
    assert_non_null(merged);
    copy = ka_arena_alloc(&t->arena, mlen);
    memcpy(copy, merged, mlen);
    fx_decode_response(copy, mlen, KA_DELETETOPICS_REQUEST_API_KEY, 6, cid_of(t->frame), &t->arena,
                       mr);
    free(merged);
    free(bframe);
}

static bool message_is(ka_slice_t s, const char *lit)
{
    return slice_is(s, lit);
}

static void test_kafka_topics_delete_of_a_protected_topic_is_refused_naming_the_pattern(void **s)
{
    tc_t t;
    struct ka_deletetopics_response r;

    (void)s;
    tc_start(&t, "{\"protected.topics\": [\"free\\\\..*\"]}",
             "protect/deletetopics-v6-request-cli-topic.bin");
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_ANSWER);
    assert_int_equal(t.o.api, KA_ADM_DELETE_TOPICS);
    assert_int_equal(t.o.reason, KA_REASON_PROTECTED_TOPIC);
    assert_int_equal(t.o.protected_refused, 1);
    fx_decode_response(t.o.bytes, t.o.len, KA_DELETETOPICS_REQUEST_API_KEY, 6, cid_of(t.frame),
                       &t.arena, &r);
    assert_int_equal(r.responses.count, 1);
    assert_true(slice_is(r.responses.items[0].name, "free.a"));
    assert_int_equal(r.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_true(message_is(r.responses.items[0].error_message,
                           "topic 'free.a' is protected by protected.topics pattern 'free\\..*'; "
                           "remove it from protected.topics to delete it"));
    tc_end(&t);
}

static void test_delete_of_a_topic_no_pattern_protects_goes_on_untouched(void **s)
{
    tc_t t;

    (void)s;
    tc_start(&t, KEEP, "protect/deletetopics-v6-request-cli-topic.bin");
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_FORWARD);
    assert_null(t.o.pending);
    assert_int_equal(t.o.rejected, 0);
    tc_end(&t);
}

/* The Java AdminClient deletes keep.y and free.b in one request: free.b goes on alone, and the
 * broker's answer for it is merged with kadmit's refusal, in request order. */
static void test_java_delete_by_names_forwards_the_free_topic_and_merges_in_order(void **s)
{
    tc_t t;
    struct ka_deletetopics_request fwd;
    struct ka_deletetopics_response mr;
    int16_t v;

    (void)s;
    tc_start(&t, KEEP, "protect/deletetopics-v6-request-java-names.bin");
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_REWRITE);
    assert_int_equal(t.o.decision, KA_ADM_D_PARTIAL);
    fx_decode_request(t.o.bytes, t.o.len, &t.arena, &v, &fwd);
    assert_int_equal(v, 6);
    assert_int_equal(fwd.topics.count, 1);
    assert_true(slice_is(fwd.topics.items[0].name, "free.b"));
    tc_merge_dt(&t, S("free.b"), NULL, &mr);
    assert_int_equal(mr.responses.count, 2);
    assert_true(slice_is(mr.responses.items[0].name, "keep.y"));
    assert_int_equal(mr.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_true(slice_is(mr.responses.items[1].name, "free.b"));
    assert_int_equal(mr.responses.items[1].error_code, 0);
    assert_int_equal(t.o.pending->items[1].broker_error, 0);
    tc_end(&t);
}

/* By id, keep.x is known by its name in the view: refused, and the answer carries the id the
 * client looks its result up by; free.c's id goes on, and the broker's answer by id alone
 * still merges. */
static void test_java_delete_by_id_is_judged_on_the_name_the_view_gives_the_id(void **s)
{
    tc_t t;
    struct ka_deletetopics_request fwd;
    struct ka_deletetopics_response mr;
    int16_t v;

    (void)s;
    tc_start(&t, KEEP, "protect/deletetopics-v6-request-java-ids.bin");
    view_with_topics(t.f, true);
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_REWRITE);
    fx_decode_request(t.o.bytes, t.o.len, &t.arena, &v, &fwd);
    assert_int_equal(fwd.topics.count, 1);
    assert_memory_equal(fwd.topics.items[0].topic_id, free_c_id, 16);
    assert_true(fwd.topics.items[0].name.len < 0);
    tc_merge_dt(&t, KA_SLICE_NULL, free_c_id, &mr);
    assert_int_equal(mr.responses.count, 2);
    assert_true(slice_is(mr.responses.items[0].name, "keep.x"));
    assert_memory_equal(mr.responses.items[0].topic_id, keep_x_id, 16);
    assert_int_equal(mr.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_memory_equal(mr.responses.items[1].topic_id, free_c_id, 16);
    assert_int_equal(mr.responses.items[1].error_code, 0);
    tc_end(&t);
}

static void test_delete_by_an_id_the_view_does_not_know_waits_then_is_refused(void **s)
{
    tc_t t;
    struct ka_deletetopics_response r;

    (void)s;
    tc_start(&t, KEEP, "protect/deletetopics-v6-request-java-ids.bin");
    view_with_topics(t.f, false);
    t.f->ctx.may_wait_for_view = true;
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_WAIT);
    t.f->ctx.may_wait_for_view = false;
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_ANSWER);
    assert_int_equal(t.o.reason, KA_REASON_UNKNOWN_TOPIC);
    fx_decode_response(t.o.bytes, t.o.len, KA_DELETETOPICS_REQUEST_API_KEY, 6, cid_of(t.frame),
                       &t.arena, &r);
    assert_int_equal(r.responses.count, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.responses.items[i].error_code, KA_KAFKA_ERR_UNKNOWN_TOPIC_ID);
        assert_true(r.responses.items[i].name.len < 0);
        assert_non_null(strstr((const char *)r.responses.items[i].error_message.ptr,
                               "is not in kadmit's view of the cluster"));
    }
    assert_memory_equal(r.responses.items[0].topic_id, keep_x_id, 16);
    /* Kafka prints ids in URL-safe base64 without padding. */
    assert_non_null(strstr((const char *)r.responses.items[0].error_message.ptr,
                           "topic id 64Kw2TdgQfuXAvspxp2qUA "));
    tc_end(&t);
}

/* A DeleteTopics request of `version` for one topic. */
static uint8_t *dt_request(int16_t version, const char *topic, size_t *len)
{
    struct ka_deletetopics_request m;
    struct ka_deletetopics_request_delete_topic_state st;
    ka_slice_t name = S(topic);

    ka_deletetopics_request_init(&m);
    ka_deletetopics_request_delete_topic_state_init(&st);
    st.name = name;
    if (version >= 6) {
        m.topics.count = 1;
        m.topics.items = &st;
    } else {
        m.topic_names.count = 1;
        m.topic_names.items = &name;
    }
    return fx_request_frame(KA_DELETETOPICS_REQUEST_API_KEY, version, 31, &m, len);
}

/* No policy key protects Kafka's internal topics: every version kadmit decodes is answered,
 * with the message from v5 on. */
static void test_internal_topic_delete_is_refused_at_every_version_without_a_policy_key(void **s)
{
    (void)s;
    for (int16_t v = KA_DELETETOPICS_REQUEST_MIN_VERSION; v <= KA_DELETETOPICS_REQUEST_MAX_VERSION;
         v++) {
        fx_t *f = fx_new(POLICY);
        size_t len;
        uint8_t *frame = dt_request(v, "__consumer_offsets", &len);
        struct ka_deletetopics_response r;
        ka_adm_outcome_t o;
        ka_arena_t arena;

        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        ka_arena_init(&arena, 1 << 20);
        fx_decode_response(o.bytes, o.len, KA_DELETETOPICS_REQUEST_API_KEY, v, 31, &arena, &r);
        assert_int_equal(r.responses.count, 1);
        assert_true(slice_is(r.responses.items[0].name, "__consumer_offsets"));
        assert_int_equal(r.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
        if (v >= 5)
            assert_non_null(strstr((const char *)r.responses.items[0].error_message.ptr,
                                   "one of Kafka's internal topics"));
        else
            assert_true(r.responses.items[0].error_message.len < 0);
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        free(frame);
        fx_free(f);
    }
}

/* An exempt principal deletes a protected topic, but never one of kadmit's own. */
static void test_exempt_principal_passes_protected_topics_but_not_kadmits_own(void **s)
{
    static const char *policy =
        "{\"protected.topics\": [\"keep\\\\..*\"], "
        "\"principals\": {\"User:ops\": {\"exempt\": [\"protected.topics\"]}}}";
    const char *topics[] = {"keep.y", "__kadmit_ledger"};
    const int16_t want[] = {KA_ADM_FORWARD, KA_ADM_ANSWER};

    (void)s;
    for (int i = 0; i < 2; i++) {
        fx_t *f = fx_new(policy);
        size_t len;
        uint8_t *frame = dt_request(6, topics[i], &len);
        ka_adm_outcome_t o;

        f->ctx.principal = "User:ops";
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, want[i]);
        ka_adm_outcome_release(&o);
        /* Anyone else is refused keep.y. */
        f->ctx.principal = "User:alice";
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        ka_adm_outcome_release(&o);
        free(frame);
        fx_free(f);
    }
}

static void test_confluent_kafka_delete_topics_v4_is_cut_to_the_free_topic(void **s)
{
    tc_t t;
    struct ka_deletetopics_request fwd;
    int16_t v;

    (void)s;
    tc_start(&t, KEEP, "protect/deletetopics-v4-request-pyrdkafka-names.bin");
    assert_int_equal(version_of(t.frame), 4);
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_REWRITE);
    fx_decode_request(t.o.bytes, t.o.len, &t.arena, &v, &fwd);
    assert_int_equal(fwd.topic_names.count, 1);
    assert_true(slice_is(fwd.topic_names.items[0], "free.d"));
    assert_int_equal(t.o.pending->items[1].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    tc_end(&t);
}

static void test_audit_mode_forwards_a_protected_delete_flagged(void **s)
{
    tc_t t;

    (void)s;
    tc_start(&t, "{\"protected.topics\": [\"free\\\\..*\"], \"enforcement\": \"audit\"}",
             "protect/deletetopics-v6-request-cli-topic.bin");
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_FORWARD);
    assert_int_equal(t.o.decision, KA_ADM_D_AUDIT);
    assert_int_equal(t.o.audited, 1);
    assert_int_equal(t.o.protected_refused, 0);
    assert_non_null(strstr(t.o.message, "protected by protected.topics pattern"));
    tc_end(&t);
}

/* kafka-delete-records on free.b partition 0 and keep.x partitions 0 and 1: free.b goes on,
 * keep.x's partitions are refused, and the merged answer keeps the broker's low watermark. */
static void test_kafka_delete_records_of_a_protected_topic_is_refused_per_partition(void **s)
{
    tc_t t;
    size_t blen, mlen = 0;
    uint8_t *bframe, *merged = NULL;
    struct ka_deleterecords_request fwd;
    struct ka_deleterecords_response br, mr;
    struct ka_deleterecords_response_delete_records_topic_result bt;
    struct ka_deleterecords_response_delete_records_partition_result bp;
    int16_t v;

    (void)s;
    tc_start(&t, KEEP, "protect/deleterecords-v2-request-cli-records.bin");
    tc_judge(&t);
    assert_int_equal(t.o.action, KA_ADM_REWRITE);
    assert_int_equal(t.o.api, KA_ADM_DELETE_RECORDS);
    assert_int_equal(t.o.protected_refused, 2);
    fx_decode_request(t.o.bytes, t.o.len, &t.arena, &v, &fwd);
    assert_int_equal(fwd.topics.count, 1);
    assert_true(slice_is(fwd.topics.items[0].name, "free.b"));
    ka_deleterecords_response_init(&br);
    ka_deleterecords_response_delete_records_topic_result_init(&bt);
    ka_deleterecords_response_delete_records_partition_result_init(&bp);
    bp.low_watermark = 42;
    bt.name = S("free.b");
    bt.partitions.count = 1;
    bt.partitions.items = &bp;
    br.topics.count = 1;
    br.topics.items = &bt;
    bframe = fx_response_frame(KA_DELETERECORDS_REQUEST_API_KEY, 2, cid_of(t.frame), &br, &blen);
    assert_int_equal(ka_adm_response(t.o.pending, bframe, blen, 1 << 20, &merged, &mlen), 0);
    fx_decode_response(merged, mlen, KA_DELETERECORDS_REQUEST_API_KEY, 2, cid_of(t.frame), &t.arena,
                       &mr);
    assert_int_equal(mr.topics.count, 2);
    assert_true(slice_is(mr.topics.items[0].name, "free.b"));
    assert_int_equal(mr.topics.items[0].partitions.items[0].low_watermark, 42);
    assert_int_equal(mr.topics.items[0].partitions.items[0].error_code, 0);
    assert_true(slice_is(mr.topics.items[1].name, "keep.x"));
    assert_int_equal(mr.topics.items[1].partitions.count, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mr.topics.items[1].partitions.items[i].partition_index, i);
        assert_int_equal(mr.topics.items[1].partitions.items[i].error_code,
                         KA_KAFKA_ERR_POLICY_VIOLATION);
        assert_int_equal(mr.topics.items[1].partitions.items[i].low_watermark, -1);
    }
    free(merged);
    free(bframe);
    tc_end(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_kafka_topics_delete_of_a_protected_topic_is_refused_naming_the_pattern),
        cmocka_unit_test(test_delete_of_a_topic_no_pattern_protects_goes_on_untouched),
        cmocka_unit_test(test_java_delete_by_names_forwards_the_free_topic_and_merges_in_order),
        cmocka_unit_test(test_java_delete_by_id_is_judged_on_the_name_the_view_gives_the_id),
        cmocka_unit_test(test_delete_by_an_id_the_view_does_not_know_waits_then_is_refused),
        cmocka_unit_test(
            test_internal_topic_delete_is_refused_at_every_version_without_a_policy_key),
        cmocka_unit_test(test_exempt_principal_passes_protected_topics_but_not_kadmits_own),
        cmocka_unit_test(test_confluent_kafka_delete_topics_v4_is_cut_to_the_free_topic),
        cmocka_unit_test(test_audit_mode_forwards_a_protected_delete_flagged),
        cmocka_unit_test(test_kafka_delete_records_of_a_protected_topic_is_refused_per_partition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
