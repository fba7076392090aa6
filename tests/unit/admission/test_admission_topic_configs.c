/*
 * test_admission_topic_configs.c: topic configs against a topic rule's
 * config bounds on the wire (admission/ka_admission_topic_configs.c and
 * the CreateTopics items): what is refused with POLICY_VIOLATION and not
 * forwarded, what an audit rule forwards and flags, what an exempt
 * principal passes, and how the answers merge. Real clients' frames come
 * from tests/data/frames/topic-configs/ (tests/tools/capture_topic_config_frames.sh:
 * kafka-topics, kafka-configs, the Java AdminClient and confluent-kafka
 * against a real broker); mixed requests are built with the generated
 * codecs.
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
#include "ka_admission_int.h"
#include "ka_rules_configs.h"

#define IA KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY
#define AC KA_ALTERCONFIGS_REQUEST_API_KEY

/* The rule, an audit rule, and an exempt principal. */
static const char *const policy_json =
    "{\"max.broker.partitions\": 1000,"
    " \"topic.rules\": ["
    "  {\"match\": \"team-a\\\\..*\","
    "   \"configs\": {\"min.insync.replicas\": {\"min\": 2}, \"retention.ms\": {\"max\": "
    "604800000},"
    "                 \"cleanup.policy\": {\"allowed\": [\"delete\"]}}},"
    "  {\"match\": \"team-b\\\\..*\", \"enforcement\": \"audit\","
    "   \"configs\": {\"retention.ms\": {\"max\": 86400000}}}],"
    " \"principals\": {\"User:cruise-control\": {\"exempt\": [\"topic.rules\"]}}}";

typedef struct topic_fx {
    ka_policy_t *policy;
    ka_cluster_t *view;
    ka_cfg_ctx_t ctx;
} topic_fx_t;

/* The harness's brokers' defaults: min.insync.replicas 1, 7 days, delete. */
static topic_fx_t *topic_fx_new(int64_t min_insync_replicas)
{
    topic_fx_t *f = calloc(1, sizeof(*f));
    ka_broker_defaults_t d = {.num_partitions = 1,
                              .default_replication_factor = 1,
                              .auto_create_topics_enable = true,
                              .topic_known = 0x3f,
                              .min_insync_replicas = min_insync_replicas,
                              .retention_ms = 604800000,
                              .retention_bytes = -1,
                              .max_message_bytes = 1048588,
                              .segment_bytes = 1073741824,
                              .cleanup_policy = "delete"};
    ka_cluster_builder_t *b;
    char err[256];

    assert_non_null(f);
    assert_int_equal(
        ka_policy_parse(policy_json, strlen(policy_json), 1, &f->policy, err, sizeof(err)), 0);
    assert_int_equal(ka_cluster_builder_new(1000, &b), 0);
    assert_int_equal(ka_cluster_builder_add_broker(b, 1, KA_SLICE_NULL, false), 0);
    ka_cluster_builder_set_defaults(b, &d);
    assert_int_equal(ka_cluster_builder_finish(b, &f->view), 0);
    f->ctx = (ka_cfg_ctx_t){.max_frame = 1 << 20, .policy = f->policy, .view = f->view};
    return f;
}

static void topic_fx_free(topic_fx_t *f)
{
    ka_cluster_unref(f->view);
    ka_policy_unref(f->policy);
    free(f);
}

/* A captured frame (the file holds it after its size prefix) with the prefix put back. */
static uint8_t *frame_of(const char *name, size_t *len)
{
    const char *root = getenv("KADMIT_TEST_DATA");
    static uint8_t buf[1 << 16];
    char path[4096];
    uint8_t *frame;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/frames/topic-configs/%s", root ? root : "tests/data", name);
    if ((f = fopen(path, "rb")) == NULL)
        fail_msg("captured frame %s is missing", path);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_non_null(frame = malloc(n + 4));
    for (int i = 0; i < 4; i++)
        frame[i] = (uint8_t)(n >> (24 - 8 * i));
    memcpy(frame + 4, buf, n);
    *len = n + 4;
    return frame;
}

/* The api key, version and correlation id of the last request run. */
static int16_t last_api, last_version;
static int32_t last_cid;

/* Runs a captured request through; the outcome is the caller's to release. */
static void run(topic_fx_t *f, const char *name, ka_cfg_outcome_t *o)
{
    size_t len;
    uint8_t *frame = frame_of(name, &len);

    last_api = (int16_t)(frame[4] << 8 | frame[5]);
    last_version = (int16_t)(frame[6] << 8 | frame[7]);
    last_cid = (int32_t)((uint32_t)frame[8] << 24 | (uint32_t)frame[9] << 16 |
                         (uint32_t)frame[10] << 8 | frame[11]);
    assert_int_equal(ka_cfg_alter_request(&f->ctx, frame, len, o), 0);
    free(frame);
}

/* The local answer to the last request run holds one resource: POLICY_VIOLATION, msg. */
static void expect_answer(const ka_cfg_outcome_t *o, const char *msg)
{
    ka_arena_t arena;
    ka_slice_t message;
    int16_t code;
    int32_t count;

    ka_arena_init(&arena, 1 << 20);
    if (last_api == IA) {
        struct ka_incrementalalterconfigs_response r;
        fx_decode_response(o->bytes, o->len, IA, last_version, last_cid, &arena, &r);
        count = r.responses.count;
        code = r.responses.items[0].error_code;
        message = r.responses.items[0].error_message;
    } else {
        struct ka_alterconfigs_response r;
        fx_decode_response(o->bytes, o->len, AC, last_version, last_cid, &arena, &r);
        count = r.responses.count;
        code = r.responses.items[0].error_code;
        message = r.responses.items[0].error_message;
    }
    assert_int_equal(count, 1);
    assert_int_equal(code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_true(slice_is(message, msg));
    ka_arena_destroy(&arena);
}

static void expect_refused(const ka_cfg_outcome_t *o, const char *needle)
{
    assert_int_equal(o->action, KA_ADM_ANSWER);
    expect_answer(o, o->topic_message);
    assert_int_equal(o->topics_judged, 1);
    assert_int_equal(o->topics_refused, 1);
    assert_string_equal(o->rule, "team-a\\..*");
    if (strstr(o->topic_message, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", o->topic_message, needle);
    assert_int_equal(o->resources, 0); /* not kadmit's own limits */
}

static void test_kafka_configs_add_config_past_the_bounds_is_refused_locally(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_cfg_outcome_t o;

    (void)s;
    /* --add-config retention.ms=700000000,cleanup.policy=compact: both broken, the first
     * bound (by name) is named. */
    run(f, "incrementalalterconfigs-v1-request-cli-set-topic.bin", &o);
    expect_refused(&o, "cleanup.policy \"compact\" is not allowed by rule 'team-a\\..*'; set "
                       "cleanup.policy to one of: delete");
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

static void test_kafka_configs_delete_config_is_judged_at_the_broker_default(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_cfg_outcome_t o;

    (void)s;
    run(f, "incrementalalterconfigs-v1-request-cli-delete-topic.bin", &o);
    expect_refused(&o, "min.insync.replicas 1 (the broker's default, which applies once the "
                       "request deletes it) is below the minimum 2");
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
    /* A broker whose default meets the bound: the delete goes on. */
    f = topic_fx_new(2);
    run(f, "incrementalalterconfigs-v1-request-cli-delete-topic.bin", &o);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.topics_judged, 1);
    assert_int_equal(o.topics_refused, 0);
    assert_null(o.pending);
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

static void test_java_set_below_the_minimum_and_append_are_refused(void **s)
{
    topic_fx_t *f = topic_fx_new(2);
    ka_cfg_outcome_t o;

    (void)s;
    /* SET min.insync.replicas=1, APPEND cleanup.policy=compact. */
    run(f, "incrementalalterconfigs-v1-request-java-set-append-topic.bin", &o);
    expect_refused(&o, "cleanup.policy \"compact\" is not allowed");
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

static void test_confluent_incremental_set_within_the_bounds_goes_on_untouched(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_cfg_outcome_t o;

    (void)s;
    /* SET retention.ms=3600000 only: the keys it does not name keep the topic's values. */
    run(f, "incrementalalterconfigs-v1-request-pyrdkafka-set-topic.bin", &o);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_null(o.bytes);
    assert_int_equal(o.topics_judged, 1);
    assert_int_equal(o.topics_refused + o.topics_audited, 0);
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

static void test_legacy_alter_configs_judges_what_it_leaves_out_at_the_default(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_cfg_outcome_t o;

    (void)s;
    /* AlterConfigs retention.ms=3600000 replaces every config: min.insync.replicas falls
     * back to the broker's 1. */
    run(f, "alterconfigs-v2-request-pyrdkafka-set-topic.bin", &o);
    expect_refused(&o, "min.insync.replicas 1 (the broker's default, which applies when the "
                       "request does not set it) is below the minimum 2");
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
    f = topic_fx_new(3);
    run(f, "alterconfigs-v2-request-pyrdkafka-set-topic.bin", &o);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.topics_refused, 0);
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

static void test_an_exempt_principal_is_not_judged(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_cfg_outcome_t o;

    (void)s;
    f->ctx.principal = "User:cruise-control";
    run(f, "incrementalalterconfigs-v1-request-cli-set-topic.bin", &o);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.topics_judged, 0);
    ka_cfg_outcome_release(&o);
    f->ctx.principal = "User:alice";
    run(f, "incrementalalterconfigs-v1-request-cli-set-topic.bin", &o);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    ka_cfg_outcome_release(&o);
    topic_fx_free(f);
}

/* --- mixed requests, built with the codecs --------------------------------- */

typedef struct alter_spec {
    int8_t type;
    const char *name;
    const char *key;
    int8_t op;
    const char *value;
} alter_spec_t;

/* An IncrementalAlterConfigs v1 request (correlation id 5), one config per resource. */
static uint8_t *alter_frame(const alter_spec_t *spec, int n, size_t *len)
{
    struct ka_incrementalalterconfigs_request m;
    struct ka_incrementalalterconfigs_request_alter_configs_resource res[4];
    struct ka_incrementalalterconfigs_request_alterable_config cfg[4];

    ka_incrementalalterconfigs_request_init(&m);
    for (int i = 0; i < n; i++) {
        ka_incrementalalterconfigs_request_alter_configs_resource_init(&res[i]);
        ka_incrementalalterconfigs_request_alterable_config_init(&cfg[i]);
        res[i] = (struct ka_incrementalalterconfigs_request_alter_configs_resource){
            .resource_type = spec[i].type, .resource_name = S(spec[i].name)};
        cfg[i].name = S(spec[i].key);
        cfg[i].config_operation = spec[i].op;
        cfg[i].value = spec[i].value ? S(spec[i].value) : KA_SLICE_NULL;
        res[i].configs.count = 1;
        res[i].configs.items = &cfg[i];
    }
    m.resources.count = n;
    m.resources.items = res;
    return fx_request_frame(IA, 1, 5, &m, len);
}

/* The broker's all-OK answer for the resources it was sent. */
static uint8_t *ok_answer(const struct ka_incrementalalterconfigs_request *sent, size_t *len)
{
    struct ka_incrementalalterconfigs_response m;
    struct ka_incrementalalterconfigs_response_alter_configs_resource_response r[4];

    ka_incrementalalterconfigs_response_init(&m);
    for (int32_t i = 0; i < sent->resources.count; i++) {
        ka_incrementalalterconfigs_response_alter_configs_resource_response_init(&r[i]);
        r[i].resource_type = sent->resources.items[i].resource_type;
        r[i].resource_name = sent->resources.items[i].resource_name;
    }
    m.responses.count = sent->resources.count;
    m.responses.items = r;
    return fx_response_frame(IA, 1, 5, &m, len);
}

static void test_a_refused_topic_is_not_forwarded_and_answers_merge_in_request_order(void **s)
{
    static const alter_spec_t spec[] = {
        {2, "team-c.free", "retention.ms", 0, "-1"},
        {2, "team-a.orders", "retention.ms", 0, "604800001"},
        {4, "1", "log.cleaner.threads", 0, "2"},
    };
    topic_fx_t *f = topic_fx_new(2);
    struct ka_incrementalalterconfigs_request sent;
    struct ka_incrementalalterconfigs_response merged;
    size_t len, rlen, mlen = 0, n = 0;
    uint8_t *frame = alter_frame(spec, 3, &len), *resp, *out = NULL;
    ka_cfg_change_t *changes = NULL;
    ka_cfg_outcome_t o;
    ka_arena_t arena;
    int16_t version;

    (void)s;
    ka_arena_init(&arena, 1 << 20);
    assert_int_equal(ka_cfg_alter_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.topics_refused, 1);
    fx_decode_request(o.bytes, o.len, &arena, &version, &sent);
    assert_int_equal(sent.resources.count, 2);
    assert_true(slice_is(sent.resources.items[0].resource_name, "team-c.free"));
    assert_true(slice_is(sent.resources.items[1].resource_name, "1"));
    resp = ok_answer(&sent, &rlen);
    assert_non_null(o.pending);
    assert_int_equal(
        ka_cfg_alter_response(o.pending, resp, rlen, 1 << 20, &out, &mlen, &changes, &n), 0);
    assert_non_null(out);
    assert_int_equal(n, 0);
    fx_decode_response(out, mlen, IA, 1, 5, &arena, &merged);
    assert_int_equal(merged.responses.count, 3);
    assert_true(slice_is(merged.responses.items[0].resource_name, "team-c.free"));
    assert_int_equal(merged.responses.items[0].error_code, 0);
    assert_true(slice_is(merged.responses.items[1].resource_name, "team-a.orders"));
    assert_int_equal(merged.responses.items[1].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_true(slice_is(merged.responses.items[1].error_message,
                         "retention.ms 604800001 is above the maximum 604800000 of rule "
                         "'team-a\\..*'; set retention.ms to at most 604800000"));
    assert_true(slice_is(merged.responses.items[2].resource_name, "1"));
    free(out);
    free(resp);
    free(frame);
    ka_cfg_outcome_release(&o);
    ka_arena_destroy(&arena);
    topic_fx_free(f);
}

static void test_an_audit_rule_forwards_and_flags(void **s)
{
    static const alter_spec_t spec[] = {{2, "team-b.logs", "retention.ms", 0, "-1"}};
    topic_fx_t *f = topic_fx_new(1);
    size_t len;
    uint8_t *frame = alter_frame(spec, 1, &len);
    ka_cfg_outcome_t o;

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_null(o.pending);
    assert_int_equal(o.topics_judged, 1);
    assert_int_equal(o.topics_refused, 0);
    assert_int_equal(o.topics_audited, 1);
    assert_string_equal(o.rule, "team-b\\..*");
    assert_non_null(strstr(o.topic_message, "retention.ms -1 (unlimited) is above the maximum"));
    ka_cfg_outcome_release(&o);
    free(frame);
    topic_fx_free(f);
}

static void test_without_a_view_a_deleted_key_is_refused_not_passed(void **s)
{
    static const alter_spec_t spec[] = {{2, "team-a.x", "min.insync.replicas", 1, NULL}};
    topic_fx_t *f = topic_fx_new(2);
    size_t len;
    uint8_t *frame = alter_frame(spec, 1, &len);
    ka_cfg_outcome_t o;

    (void)s;
    f->ctx.view = NULL;
    last_api = IA, last_version = 1, last_cid = 5;
    assert_int_equal(ka_cfg_alter_request(&f->ctx, frame, len, &o), 0);
    expect_refused(&o, "kadmit does not know the broker's default for min.insync.replicas");
    ka_cfg_outcome_release(&o);
    free(frame);
    topic_fx_free(f);
}

/* --- CreateTopics ----------------------------------------------------------- */

static void test_kafka_topics_create_hands_its_configs_to_the_engine(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_adm_ctx_t ctx = {.policy = f->policy, .view = f->view, .max_frame = 1 << 20};
    const ka_create_topic_t *in;
    ka_adm_req_t *req = NULL;
    ka_adm_outcome_t out;
    size_t len;
    uint8_t *frame = frame_of("createtopics-v7-request-cli-create.bin", &len);

    (void)s;
    memset(&out, 0, sizeof(out));
    assert_int_equal(ka_adm_decode(&ctx, frame, len, &req, &out), 0);
    assert_non_null(req);
    assert_int_equal(req->count, 1);
    in = req->inputs;
    assert_true(slice_is(in[0].name, "team-a.orders"));
    assert_int_equal(in[0].config_count, 2);
    assert_true(slice_is(in[0].configs[0].name, "min.insync.replicas"));
    assert_true(slice_is(in[0].configs[0].value, "1"));
    assert_true(slice_is(in[0].configs[1].name, "retention.ms"));
    assert_true(slice_is(in[0].configs[1].value, "86400000"));
    /* Slices into the request's frame, not copies. */
    assert_true(in[0].configs[0].name.ptr > req->frame &&
                in[0].configs[0].name.ptr < req->frame + len);
    ka_adm_req_free(req);
    ka_adm_outcome_release(&out);
    free(frame);
    topic_fx_free(f);
}

static void test_kafka_topics_create_below_the_minimum_is_answered_with_the_rule(void **s)
{
    topic_fx_t *f = topic_fx_new(1);
    ka_reservations_t *ledger;
    ka_adm_ctx_t ctx;
    ka_adm_outcome_t out;
    struct ka_createtopics_response r;
    ka_arena_t arena;
    size_t len;
    uint8_t *frame = frame_of("createtopics-v7-request-cli-create.bin", &len);
    int32_t cid = (int32_t)((uint32_t)frame[8] << 24 | (uint32_t)frame[9] << 16 |
                            (uint32_t)frame[10] << 8 | frame[11]);

    (void)s;
    assert_int_equal(ka_reservations_new(&ledger), 0);
    ctx = (ka_adm_ctx_t){.policy = f->policy,
                         .view = f->view,
                         .ledger = ledger,
                         .now_ms = 1500,
                         .seed = 42,
                         .max_frame = 1 << 20};
    assert_int_equal(ka_adm_request(&ctx, frame, len, &out), 0);
    assert_int_equal(out.action, KA_ADM_ANSWER);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(out.bytes, out.len, KA_CREATETOPICS_REQUEST_API_KEY, 7, cid, &arena, &r);
    assert_int_equal(r.topics.count, 1);
    assert_int_equal(r.topics.items[0].error_code, KA_KAFKA_ERR_POLICY_VIOLATION);
    assert_true(slice_is(r.topics.items[0].error_message,
                         "min.insync.replicas 1 is below the minimum 2 of rule 'team-a\\..*'; "
                         "set min.insync.replicas to at least 2"));
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&out);
    ka_reservations_free(ledger);
    free(frame);
    topic_fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kafka_configs_add_config_past_the_bounds_is_refused_locally),
        cmocka_unit_test(test_kafka_configs_delete_config_is_judged_at_the_broker_default),
        cmocka_unit_test(test_java_set_below_the_minimum_and_append_are_refused),
        cmocka_unit_test(test_confluent_incremental_set_within_the_bounds_goes_on_untouched),
        cmocka_unit_test(test_legacy_alter_configs_judges_what_it_leaves_out_at_the_default),
        cmocka_unit_test(test_an_exempt_principal_is_not_judged),
        cmocka_unit_test(test_a_refused_topic_is_not_forwarded_and_answers_merge_in_request_order),
        cmocka_unit_test(test_an_audit_rule_forwards_and_flags),
        cmocka_unit_test(test_without_a_view_a_deleted_key_is_refused_not_passed),
        cmocka_unit_test(test_kafka_topics_create_hands_its_configs_to_the_engine),
        cmocka_unit_test(test_kafka_topics_create_below_the_minimum_is_answered_with_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
