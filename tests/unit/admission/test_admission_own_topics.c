/*
 * test_admission_own_topics.c: kadmit's own topics under configured,
 * non-default names (--ledger-topic ops.kadmit-ledger, --limits-topic
 * ops.kadmit-limits) cannot be deleted, trimmed, widened or reconfigured
 * through kadmit (admission/ka_admission_own.c): DeleteTopics by name and
 * by id, DeleteRecords, CreatePartitions, IncrementalAlterConfigs with any
 * key and operation, and AlterConfigs are refused per item with
 * POLICY_VIOLATION and a sentence, whatever the policy, audit mode or the
 * principal's exemptions, while the other items of the same request go on.
 * Requests are built with the generated codecs.
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
#include "ka_admission_configs.h"

#define LEDGER "ops.kadmit-ledger"
#define LIMITS "ops.kadmit-limits"
#define IA     KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY
#define AC     KA_ALTERCONFIGS_REQUEST_API_KEY

/* Policies under which nothing may unprotect kadmit's own topics. */
static const char *const policies[] = {
    POLICY,
    "{\"enforcement\": \"audit\"}",
    "{\"protected.topics\": [\"keep\\\\..*\"], "
    "\"principals\": {\"User:ops\": {\"exempt\": [\"protected.topics\", \"topic.rules\", "
    "\"max.broker.partitions\"]}}}",
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static const char ledger_says[] =
    "topic '" LEDGER "' is kadmit's own ledger topic; changing it through kadmit is refused (";

static int setup(void **s)
{
    (void)s;
    return ka_adm_own_topics_setup(LEDGER, LIMITS);
}

static int teardown(void **s)
{
    (void)s;
    return ka_adm_own_topics_setup(NULL, NULL);
}

/* text holds needle; len -1: text is NUL-terminated. */
static void expect_has(const char *text, int len, const char *needle)
{
    char copy[2048];

    if (text == NULL)
        fail_msg("no message, expected one with \"%s\"", needle);
    snprintf(copy, sizeof(copy), "%.*s", len >= 0 ? len : (int)strlen(text), text);
    if (strstr(copy, needle) == NULL)
        fail_msg("\"%s\" lacks \"%s\"", copy, needle);
}

/* --- DeleteTopics, DeleteRecords, CreatePartitions ---------------------------------------------
 */

/* A DeleteTopics request of `version` for n topics (correlation id 31). */
static uint8_t *dt_request(int16_t version, const char *const *topics, int n, size_t *len)
{
    struct ka_deletetopics_request m;
    struct ka_deletetopics_request_delete_topic_state st[4];
    ka_slice_t names[4];

    ka_deletetopics_request_init(&m);
    for (int i = 0; i < n; i++) {
        ka_deletetopics_request_delete_topic_state_init(&st[i]);
        st[i].name = names[i] = S(topics[i]);
    }
    if (version >= 6) {
        m.topics.count = n;
        m.topics.items = st;
    } else {
        m.topic_names.count = n;
        m.topic_names.items = names;
    }
    return fx_request_frame(KA_DELETETOPICS_REQUEST_API_KEY, version, 31, &m, len);
}

static void test_delete_topics_of_the_configured_ledger_is_refused_and_the_rest_goes_on(void **s)
{
    static const char *const topics[] = {LEDGER, "free.a"};

    (void)s;
    for (size_t p = 0; p < NPOLICIES; p++) {
        for (int16_t v = 1; v <= 6; v += 5) {
            fx_t *f = fx_new(policies[p]);
            size_t len;
            uint8_t *frame = dt_request(v, topics, 2, &len);
            struct ka_deletetopics_request fwd;
            ka_adm_outcome_t o;
            ka_arena_t arena;
            int16_t fv;

            f->ctx.principal = "User:ops";
            assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
            assert_int_equal(o.action, KA_ADM_REWRITE);
            assert_int_equal(o.rejected, 1);
            assert_int_equal(o.protected_refused, 1);
            assert_int_equal(o.reason, KA_REASON_PROTECTED_TOPIC);
            ka_arena_init(&arena, 1 << 20);
            fx_decode_request(o.bytes, o.len, &arena, &fv, &fwd);
            if (v >= 6) {
                assert_int_equal(fwd.topics.count, 1);
                assert_true(slice_is(fwd.topics.items[0].name, "free.a"));
            } else {
                assert_int_equal(fwd.topic_names.count, 1);
                assert_true(slice_is(fwd.topic_names.items[0], "free.a"));
            }
            assert_true(o.pending->items[0].local);
            assert_int_equal(o.pending->items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
            expect_has(o.pending->items[0].message, -1, ledger_says);
            expect_has(o.pending->items[0].message, -1, "(DeleteTopics), whatever the policy");
            assert_false(o.pending->items[1].local);
            ka_arena_destroy(&arena);
            ka_adm_outcome_release(&o);
            free(frame);
            fx_free(f);
        }
    }
}

/* The default names stay protected beside the configured ones. */
static void test_the_default_names_stay_protected_beside_the_configured_ones(void **s)
{
    static const char *const topics[] = {"__kadmit_ledger", "__kadmit_limits", LIMITS};
    static const char *const says[] = {"kadmit's own ledger topic", "kadmit's own limits topic",
                                       "topic '" LIMITS "' is kadmit's own limits topic"};
    fx_t *f = fx_new(POLICY);
    size_t len;
    uint8_t *frame = dt_request(6, topics, 3, &len);
    struct ka_deletetopics_response r;
    ka_adm_outcome_t o;
    ka_arena_t arena;

    (void)s;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.protected_refused, 3);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, KA_DELETETOPICS_REQUEST_API_KEY, 6, 31, &arena, &r);
    assert_int_equal(r.responses.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.responses.items[i].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
        expect_has((const char *)r.responses.items[i].error_message.ptr,
                   r.responses.items[i].error_message.len, says[i]);
    }
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    /* Another name is anyone's: it goes on untouched. */
    free(frame);
    frame = dt_request(6, (const char *const[]){"ops.kadmit-other"}, 1, &len);
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

static const uint8_t limits_id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* By id alone, the view names the topic: the configured limits topic is refused, answered by id. */
static void test_delete_topics_by_id_of_the_configured_limits_topic_is_refused(void **s)
{
    fx_t *f = fx_new(policies[2]);
    ka_cluster_builder_t *b;
    struct ka_deletetopics_request m;
    struct ka_deletetopics_request_delete_topic_state st;
    struct ka_deletetopics_response r;
    int32_t one = 1;
    ka_adm_outcome_t o;
    ka_arena_t arena;
    uint8_t *frame;
    size_t len;

    (void)s;
    assert_int_equal(ka_cluster_builder_new(1000, &b), 0);
    assert_int_equal(ka_cluster_builder_add_broker(b, 1, KA_SLICE_NULL, false), 0);
    assert_int_equal(ka_cluster_builder_add_partition(b, S(LIMITS), 0, &one, 1), 0);
    assert_int_equal(ka_cluster_builder_set_topic_id(b, S(LIMITS), limits_id), 0);
    ka_cluster_unref(f->view);
    assert_int_equal(ka_cluster_builder_finish(b, &f->view), 0);
    f->ctx.view = f->view;
    f->ctx.principal = "User:ops";
    ka_deletetopics_request_init(&m);
    ka_deletetopics_request_delete_topic_state_init(&st);
    memcpy(st.topic_id, limits_id, 16);
    m.topics.count = 1;
    m.topics.items = &st;
    frame = fx_request_frame(KA_DELETETOPICS_REQUEST_API_KEY, 6, 31, &m, &len);
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.reason, KA_REASON_PROTECTED_TOPIC);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, KA_DELETETOPICS_REQUEST_API_KEY, 6, 31, &arena, &r);
    assert_int_equal(r.responses.count, 1);
    assert_int_equal(r.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_memory_equal(r.responses.items[0].topic_id, limits_id, 16);
    expect_has((const char *)r.responses.items[0].error_message.ptr,
               r.responses.items[0].error_message.len,
               "topic '" LIMITS "' is kadmit's own limits topic; changing it through kadmit is "
               "refused (DeleteTopics)");
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

static void test_delete_records_of_the_configured_ledger_is_refused(void **s)
{
    struct ka_deleterecords_request m;
    struct ka_deleterecords_request_delete_records_topic t[2];
    struct ka_deleterecords_request_delete_records_partition part[2];
    struct ka_deleterecords_request fwd;
    ka_adm_outcome_t o;
    ka_arena_t arena;
    uint8_t *frame;
    size_t len;
    int16_t v;

    (void)s;
    ka_deleterecords_request_init(&m);
    for (int i = 0; i < 2; i++) {
        ka_deleterecords_request_delete_records_topic_init(&t[i]);
        ka_deleterecords_request_delete_records_partition_init(&part[i]);
        part[i].partition_index = 0;
        part[i].offset = -1;
        t[i].name = S(i == 0 ? LEDGER : "free.b");
        t[i].partitions.count = 1;
        t[i].partitions.items = &part[i];
    }
    m.topics.count = 2;
    m.topics.items = t;
    frame = fx_request_frame(KA_DELETERECORDS_REQUEST_API_KEY, 2, 8, &m, &len);
    for (size_t p = 0; p < NPOLICIES; p++) {
        fx_t *f = fx_new(policies[p]);

        f->ctx.principal = "User:ops";
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_int_equal(o.protected_refused, 1);
        ka_arena_init(&arena, 1 << 20);
        fx_decode_request(o.bytes, o.len, &arena, &v, &fwd);
        assert_int_equal(fwd.topics.count, 1);
        assert_true(slice_is(fwd.topics.items[0].name, "free.b"));
        expect_has(o.message, -1, "(DeleteRecords)");
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        fx_free(f);
    }
    free(frame);
}

/* CreatePartitions of the ledger and of "three" in one request: the ledger is refused before
 * the engine sees it, and the engine judges "three" as if it had come alone. */
static void test_create_partitions_of_the_configured_ledger_is_refused_before_the_engine(void **s)
{
    struct ka_createpartitions_request m;
    struct ka_createpartitions_request_create_partitions_topic t[2];
    struct ka_createpartitions_request fwd;
    ka_adm_outcome_t o;
    ka_arena_t arena;
    uint8_t *frame;
    size_t len;
    int16_t v;

    (void)s;
    ka_createpartitions_request_init(&m);
    for (int i = 0; i < 2; i++) {
        ka_createpartitions_request_create_partitions_topic_init(&t[i]);
        t[i].name = S(i == 0 ? LEDGER : "three");
        t[i].count = 2;
        t[i].assignments.count = -1;
    }
    m.topics.count = 2;
    m.topics.items = t;
    frame = fx_request_frame(KA_CREATEPARTITIONS_REQUEST_API_KEY, 3, 9, &m, &len);
    for (size_t p = 0; p < NPOLICIES; p++) {
        fx_t *f = fx_new(policies[p]);

        f->ctx.principal = "User:ops";
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_int_equal(o.rejected, 1);
        assert_int_equal(o.reason, KA_REASON_PROTECTED_TOPIC);
        ka_arena_init(&arena, 1 << 20);
        fx_decode_request(o.bytes, o.len, &arena, &v, &fwd);
        assert_int_equal(fwd.topics.count, 1);
        assert_true(slice_is(fwd.topics.items[0].name, "three"));
        assert_true(o.pending->items[0].local);
        assert_int_equal(o.pending->items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
        assert_int_equal(o.pending->items[0].reservation_id, 0);
        expect_has(o.pending->items[0].message, -1, ledger_says);
        expect_has(o.pending->items[0].message, -1, "(CreatePartitions)");
        assert_false(o.pending->items[1].local);
        if (p == 0) /* under a limit, "three" holds a reservation; the ledger none */
            assert_int_not_equal(o.pending->items[1].reservation_id, 0);
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        fx_free(f);
    }
    free(frame);
    /* Alone, the ledger is answered locally. */
    fx_t *f = fx_new(POLICY);
    frame = fx_cp_request(3, LEDGER, 2, &len);
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* --- IncrementalAlterConfigs and AlterConfigs --------------------------------------------------
 */

typedef struct cfg_case {
    ka_policy_t *policy;
    ka_cfg_ctx_t ctx;
} cfg_case_t;

static void cfg_case_start(cfg_case_t *c, const char *policy)
{
    char err[256];

    memset(c, 0, sizeof(*c));
    assert_int_equal(ka_policy_parse(policy, strlen(policy), 1, &c->policy, err, sizeof(err)), 0);
    c->ctx = (ka_cfg_ctx_t){.max_frame = 1 << 20, .policy = c->policy, .principal = "User:ops"};
}

/* An IncrementalAlterConfigs v1 request (correlation id 5): the own topic with one config, and
 * a free topic with a harmless one. */
static uint8_t *ia_frame(const char *topic, const char *key, int8_t op, const char *value,
                         size_t *len)
{
    struct ka_incrementalalterconfigs_request m;
    struct ka_incrementalalterconfigs_request_alter_configs_resource res[2];
    struct ka_incrementalalterconfigs_request_alterable_config cfg[2];

    ka_incrementalalterconfigs_request_init(&m);
    for (int i = 0; i < 2; i++) {
        ka_incrementalalterconfigs_request_alter_configs_resource_init(&res[i]);
        ka_incrementalalterconfigs_request_alterable_config_init(&cfg[i]);
        res[i].resource_type = KA_CFG_RESOURCE_TOPIC;
        res[i].configs.count = 1;
        res[i].configs.items = &cfg[i];
    }
    res[0].resource_name = S(topic);
    cfg[0].name = S(key);
    cfg[0].config_operation = op;
    cfg[0].value = value != NULL ? S(value) : KA_SLICE_NULL;
    res[1].resource_name = S("free.a");
    cfg[1].name = S("min.insync.replicas");
    cfg[1].value = S("2");
    m.resources.count = 2;
    m.resources.items = res;
    return fx_request_frame(IA, 1, 5, &m, len);
}

/* Any key, any operation, harmless or not: the own topic is refused, free.a goes on, and the
 * broker's answer for free.a merges after kadmit's refusal. */
static void test_incremental_alter_configs_of_an_own_topic_is_refused_for_any_key_and_op(void **s)
{
    static const struct {
        const char *topic, *key, *value;
        int8_t op;
    } cases[] = {
        {LEDGER, "max.message.bytes", "64", 0},   {LEDGER, "retention.ms", NULL, 1},
        {LEDGER, "cleanup.policy", "compact", 2}, {LIMITS, "cleanup.policy", "compact", 3},
        {LIMITS, "min.insync.replicas", "1", 0},  {LIMITS, "compression.type", NULL, 1},
    };

    (void)s;
    for (size_t p = 0; p < NPOLICIES; p++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            cfg_case_t c;
            ka_cfg_outcome_t o;
            ka_arena_t arena;
            size_t len, blen, mlen = 0, nch = 0;
            uint8_t *frame =
                ia_frame(cases[i].topic, cases[i].key, cases[i].op, cases[i].value, &len);
            uint8_t *bframe, *merged = NULL;
            ka_cfg_change_t *changes = NULL;
            struct ka_incrementalalterconfigs_request fwd;
            struct ka_incrementalalterconfigs_response br, mr;
            struct ka_incrementalalterconfigs_response_alter_configs_resource_response ok;
            int16_t v;

            cfg_case_start(&c, policies[p]);
            assert_int_equal(ka_cfg_alter_request(&c.ctx, frame, len, &o), 0);
            assert_int_equal(o.action, KA_ADM_REWRITE);
            assert_int_equal(o.protected_refused, 1);
            expect_has(o.protect_message, -1, "is kadmit's own ");
            expect_has(o.protect_message, -1,
                       "; changing it through kadmit is refused (IncrementalAlterConfigs)");
            ka_arena_init(&arena, 1 << 20);
            fx_decode_request(o.bytes, o.len, &arena, &v, &fwd);
            assert_int_equal(fwd.resources.count, 1);
            assert_true(slice_is(fwd.resources.items[0].resource_name, "free.a"));
            ka_incrementalalterconfigs_response_init(&br);
            ka_incrementalalterconfigs_response_alter_configs_resource_response_init(&ok);
            ok.resource_type = KA_CFG_RESOURCE_TOPIC;
            ok.resource_name = S("free.a");
            br.responses.count = 1;
            br.responses.items = &ok;
            bframe = fx_response_frame(IA, 1, 5, &br, &blen);
            assert_int_equal(ka_cfg_alter_response(o.pending, bframe, blen, 1 << 20, &merged, &mlen,
                                                   &changes, &nch),
                             0);
            assert_non_null(merged);
            fx_decode_response(merged, mlen, IA, 1, 5, &arena, &mr);
            assert_int_equal(mr.responses.count, 2);
            assert_true(slice_is(mr.responses.items[0].resource_name, cases[i].topic));
            assert_int_equal(mr.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
            assert_true(slice_is(mr.responses.items[1].resource_name, "free.a"));
            assert_int_equal(mr.responses.items[1].error_code, 0);
            free(changes);
            free(merged);
            free(bframe);
            ka_arena_destroy(&arena);
            ka_cfg_outcome_release(&o);
            ka_policy_unref(c.policy);
            free(frame);
        }
    }
}

/* AlterConfigs with no entry would reset every config of the limits topic (its compaction
 * too): refused, answered locally. */
static void test_alter_configs_of_the_limits_topic_is_refused_even_with_no_entry(void **s)
{
    struct ka_alterconfigs_request m;
    struct ka_alterconfigs_request_alter_configs_resource res;
    struct ka_alterconfigs_response r;
    cfg_case_t c;
    ka_cfg_outcome_t o;
    ka_arena_t arena;
    uint8_t *frame;
    size_t len;

    (void)s;
    ka_alterconfigs_request_init(&m);
    ka_alterconfigs_request_alter_configs_resource_init(&res);
    res.resource_type = KA_CFG_RESOURCE_TOPIC;
    res.resource_name = S(LIMITS);
    res.configs.count = 0;
    m.resources.count = 1;
    m.resources.items = &res;
    frame = fx_request_frame(AC, 2, 6, &m, &len);
    for (size_t p = 0; p < NPOLICIES; p++) {
        cfg_case_start(&c, policies[p]);
        assert_int_equal(ka_cfg_alter_request(&c.ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_ANSWER);
        assert_int_equal(o.protected_refused, 1);
        ka_arena_init(&arena, 1 << 20);
        fx_decode_response(o.bytes, o.len, AC, 2, 6, &arena, &r);
        assert_int_equal(r.responses.count, 1);
        assert_int_equal(r.responses.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
        expect_has((const char *)r.responses.items[0].error_message.ptr,
                   r.responses.items[0].error_message.len,
                   "topic '" LIMITS "' is kadmit's own limits topic; changing it through kadmit "
                   "is refused (AlterConfigs)");
        ka_arena_destroy(&arena);
        ka_cfg_outcome_release(&o);
        ka_policy_unref(c.policy);
    }
    free(frame);
}

/* Without a policy to read (no topic rules, no protected.topics), own topics are still judged. */
static void test_own_topics_are_judged_without_a_policy(void **s)
{
    ka_cfg_ctx_t ctx = {.max_frame = 1 << 20};
    ka_cfg_outcome_t o;
    size_t len;
    uint8_t *frame = ia_frame(LEDGER, "max.message.bytes", 0, "64", &len);

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.protected_refused, 1);
    ka_cfg_outcome_release(&o);
    free(frame);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_delete_topics_of_the_configured_ledger_is_refused_and_the_rest_goes_on),
        cmocka_unit_test(test_the_default_names_stay_protected_beside_the_configured_ones),
        cmocka_unit_test(test_delete_topics_by_id_of_the_configured_limits_topic_is_refused),
        cmocka_unit_test(test_delete_records_of_the_configured_ledger_is_refused),
        cmocka_unit_test(
            test_create_partitions_of_the_configured_ledger_is_refused_before_the_engine),
        cmocka_unit_test(
            test_incremental_alter_configs_of_an_own_topic_is_refused_for_any_key_and_op),
        cmocka_unit_test(test_alter_configs_of_the_limits_topic_is_refused_even_with_no_entry),
        cmocka_unit_test(test_own_topics_are_judged_without_a_policy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
