/*
 * test_admission_configs.c: KIP-578's config APIs through kadmit
 * (admission/ka_admission_configs.c): what an alter keeps from the broker,
 * what it refuses itself, how the answers merge, which changes follow, and
 * what DescribeConfigs then shows. Real clients' frames come from
 * tests/data/frames/kip578/ (tests/tools/capture_kip578_frames.sh: kafka-configs,
 * the Java AdminClient and confluent-kafka against a real broker); the
 * edge cases are built with the generated codecs.
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

#define IA  KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY
#define AC  KA_ALTERCONFIGS_REQUEST_API_KEY
#define DC  KA_DESCRIBECONFIGS_REQUEST_API_KEY
#define MBP "max.broker.partitions"

static const int32_t brokers[] = {1, 2, 3};
static const ka_cfg_ctx_t ctx = {brokers, 3, NULL, 1 << 20};

/* A KIP-578 config frame captured from a real client, size prefix put back. */
static uint8_t *captured(const char *name, size_t *len)
{
    char path[512];

    snprintf(path, sizeof(path), "kip578/%s", name);
    return fx_captured(path, len);
}

/* --- building requests and responses --------------------------------------- */

typedef struct spec_config {
    const char *key;
    int8_t op;
    const char *value; /* NULL: null */
} spec_config_t;

typedef struct spec_resource {
    int8_t type;
    const char *name;
    int n;
    spec_config_t c[4];
} spec_resource_t;

/* slice_is, also for the empty name of the default entity (which decodes without a pointer). */
static bool name_is(ka_slice_t s, const char *lit)
{
    return lit[0] == '\0' ? s.len == 0 : slice_is(s, lit);
}

static ka_slice_t nullable(const char *s)
{
    return s ? S(s) : KA_SLICE_NULL;
}

static uint8_t *ia_frame(bool validate_only, const spec_resource_t *rs, int n, size_t *len)
{
    struct ka_incrementalalterconfigs_request m;
    struct ka_incrementalalterconfigs_request_alter_configs_resource res[4];
    struct ka_incrementalalterconfigs_request_alterable_config cfg[4][4];

    ka_incrementalalterconfigs_request_init(&m);
    for (int i = 0; i < n; i++) {
        ka_incrementalalterconfigs_request_alter_configs_resource_init(&res[i]);
        res[i].resource_type = rs[i].type;
        res[i].resource_name = S(rs[i].name);
        for (int j = 0; j < rs[i].n; j++) {
            ka_incrementalalterconfigs_request_alterable_config_init(&cfg[i][j]);
            cfg[i][j].name = S(rs[i].c[j].key);
            cfg[i][j].config_operation = rs[i].c[j].op;
            cfg[i][j].value = nullable(rs[i].c[j].value);
        }
        res[i].configs.count = rs[i].n;
        res[i].configs.items = cfg[i];
    }
    m.resources.count = n;
    m.resources.items = res;
    m.validate_only = validate_only;
    return fx_request_frame(IA, 1, 5, &m, len);
}

static uint8_t *ac_frame(const spec_resource_t *rs, int n, size_t *len)
{
    struct ka_alterconfigs_request m;
    struct ka_alterconfigs_request_alter_configs_resource res[4];
    struct ka_alterconfigs_request_alterable_config cfg[4][4];

    ka_alterconfigs_request_init(&m);
    for (int i = 0; i < n; i++) {
        ka_alterconfigs_request_alter_configs_resource_init(&res[i]);
        res[i].resource_type = rs[i].type;
        res[i].resource_name = S(rs[i].name);
        for (int j = 0; j < rs[i].n; j++) {
            ka_alterconfigs_request_alterable_config_init(&cfg[i][j]);
            cfg[i][j].name = S(rs[i].c[j].key);
            cfg[i][j].value = nullable(rs[i].c[j].value);
        }
        res[i].configs.count = rs[i].n;
        res[i].configs.items = cfg[i];
    }
    m.resources.count = n;
    m.resources.items = res;
    return fx_request_frame(AC, 2, 5, &m, len);
}

typedef struct spec_result {
    int8_t type;
    const char *name;
    int16_t error;
} spec_result_t;

static uint8_t *ia_response(const spec_result_t *rs, int n, size_t *len)
{
    struct ka_incrementalalterconfigs_response m;
    struct ka_incrementalalterconfigs_response_alter_configs_resource_response r[4];

    ka_incrementalalterconfigs_response_init(&m);
    for (int i = 0; i < n; i++) {
        ka_incrementalalterconfigs_response_alter_configs_resource_response_init(&r[i]);
        r[i].resource_type = rs[i].type;
        r[i].resource_name = S(rs[i].name);
        r[i].error_code = rs[i].error;
    }
    m.responses.count = n;
    m.responses.items = r;
    return fx_response_frame(IA, 1, 5, &m, len);
}

/* The request a REWRITE sends, decoded. */
static void decode_rewrite(const ka_cfg_outcome_t *o, ka_arena_t *arena,
                           struct ka_incrementalalterconfigs_request *m)
{
    int16_t version;

    assert_int_equal(o->action, KA_ADM_REWRITE);
    fx_decode_request(o->bytes, o->len, arena, &version, m);
    assert_int_equal(version, 1);
}

/* One resource through request and an all-OK broker answer: its changes. */
static size_t alter_ok(const uint8_t *frame, size_t len, const spec_result_t *ok, int nok,
                       ka_cfg_change_t **changes)
{
    ka_cfg_outcome_t o;
    uint8_t *resp, *merged = NULL;
    size_t rlen, mlen = 0, n = 0;

    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_non_null(o.pending);
    resp = ia_response(ok, nok, &rlen);
    assert_int_equal(
        ka_cfg_alter_response(o.pending, resp, rlen, 1 << 20, &merged, &mlen, changes, &n), 0);
    assert_null(merged); /* nothing of kadmit's to merge */
    free(resp);
    ka_cfg_outcome_release(&o);
    return n;
}

/* --- alter ------------------------------------------------------------------ */

static void test_kafka_configs_set_on_a_broker_is_taken_out_and_follows_the_brokers_ok(void **s)
{
    size_t len, rlen, mlen = 0, n = 0;
    uint8_t *frame = captured("incrementalalterconfigs-v1-request-cli-set-broker.bin", &len);
    uint8_t *resp = captured("incrementalalterconfigs-v1-response-cli-set-broker.bin", &rlen);
    uint8_t *merged = NULL;
    struct ka_incrementalalterconfigs_request m;
    ka_cfg_change_t *changes = NULL;
    ka_cfg_outcome_t o;
    ka_arena_t arena;

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    ka_arena_init(&arena, 1 << 20);
    decode_rewrite(&o, &arena, &m);
    /* The resource still goes, so the broker's authorizer decides, but without the key. */
    assert_int_equal(m.resources.count, 1);
    assert_true(name_is(m.resources.items[0].resource_name, "1"));
    assert_int_equal(m.resources.items[0].configs.count, 0);
    assert_int_equal(o.resources, 1);
    assert_int_equal(o.refused, 0);
    assert_int_equal(
        ka_cfg_alter_response(o.pending, resp, rlen, 1 << 20, &merged, &mlen, &changes, &n), 0);
    assert_null(merged);
    assert_int_equal(n, 1);
    assert_int_equal(changes[0].broker_id, 1);
    assert_int_equal(changes[0].key, KA_CFG_KEY_MAX_BROKER_PARTITIONS);
    assert_false(changes[0].remove);
    assert_int_equal(changes[0].value, 10);
    free(changes);
    ka_arena_destroy(&arena);
    ka_cfg_outcome_release(&o);
    free(frame);
    free(resp);
}

/* The broker said OK but kadmit could not store the limit: the client is not
 * told OK for a limit nobody enforces. */
static void test_an_accepted_change_kadmit_could_not_store_is_answered_as_an_error(void **s)
{
    size_t len, rlen, mlen = 0;
    uint8_t *frame = captured("incrementalalterconfigs-v1-request-cli-set-broker.bin", &len);
    uint8_t *resp = captured("incrementalalterconfigs-v1-response-cli-set-broker.bin", &rlen);
    uint8_t *merged = NULL;
    struct ka_incrementalalterconfigs_response m;
    ka_cfg_outcome_t o;
    ka_arena_t arena;

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(ka_cfg_alter_response_unstored(o.pending, resp, rlen, 1 << 20,
                                                    "the limits topic is unreachable", &merged,
                                                    &mlen),
                     0);
    assert_non_null(merged);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(merged, mlen, IA, 1,
                       (int32_t)((uint32_t)resp[4] << 24 | resp[5] << 16 | resp[6] << 8 | resp[7]),
                       &arena, &m);
    assert_int_equal(m.responses.count, 1);
    assert_int_equal(m.responses.items[0].error_code, KA_KAFKA_ERR_UNKNOWN_SERVER_ERROR);
    assert_true(name_is(m.responses.items[0].resource_name, "1"));
    assert_true(name_is(m.responses.items[0].error_message, "the limits topic is unreachable"));
    ka_arena_destroy(&arena);
    free(merged);
    ka_cfg_outcome_release(&o);
    free(frame);
    free(resp);
}

static void test_kafka_configs_default_entity_sets_both_keys_and_delete_removes(void **s)
{
    static const spec_result_t dflt = {KA_CFG_RESOURCE_BROKER, "", 0};
    static const spec_result_t one = {KA_CFG_RESOURCE_BROKER, "1", 0};
    size_t len;
    uint8_t *frame = captured("incrementalalterconfigs-v1-request-cli-set-default.bin", &len);
    ka_cfg_change_t *c = NULL;

    (void)s;
    assert_int_equal(alter_ok(frame, len, &dflt, 1, &c), 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(c[i].broker_id, KA_CFG_DEFAULT_ENTITY);
        assert_int_equal(c[i].value, c[i].key == KA_CFG_KEY_MAX_PARTITIONS ? 30 : 20);
    }
    free(c);
    free(frame);
    frame = captured("incrementalalterconfigs-v1-request-cli-delete-broker.bin", &len);
    assert_int_equal(alter_ok(frame, len, &one, 1, &c), 1);
    assert_true(c[0].remove);
    assert_int_equal(c[0].broker_id, 1);
    free(c);
    free(frame);
}

/* A resource kadmit refuses is answered locally with `code` and a message holding `needle`. */
static void expect_refused(const spec_resource_t *r, int16_t code, const char *needle)
{
    struct ka_incrementalalterconfigs_response resp;
    ka_cfg_outcome_t o;
    ka_arena_t arena;
    size_t len;
    uint8_t *frame = ia_frame(false, r, 1, &len);

    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_null(o.pending);
    assert_int_equal(o.refused, 1);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, IA, 1, 5, &arena, &resp);
    assert_int_equal(resp.responses.count, 1);
    assert_int_equal(resp.responses.items[0].error_code, code);
    assert_true(name_is(resp.responses.items[0].resource_name, r->name));
    if (strstr((const char *)o.message, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", o.message, needle);
    ka_arena_destroy(&arena);
    ka_cfg_outcome_release(&o);
    free(frame);
}

static void test_bad_values_are_answered_invalid_config(void **s)
{
    static const char *const bad[] = {"-1", "abc", "2147483648", "99999999999999999999",
                                      "",   "1.5", NULL};

    (void)s;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        spec_resource_t r = {
            KA_CFG_RESOURCE_BROKER, "2", 2, {{MBP, 0, bad[i]}, {"log.cleaner.threads", 0, "2"}}};

        expect_refused(&r, KA_KAFKA_ERR_INVALID_CONFIG, "must be an integer between 0 and");
    }
}

static void test_unknown_broker_is_refused_naming_the_known_ones(void **s)
{
    spec_resource_t r = {KA_CFG_RESOURCE_BROKER, "99", 1, {{MBP, 0, "5"}}};

    (void)s;
    expect_refused(&r, KA_KAFKA_ERR_INVALID_CONFIG, "broker 99 is not in the cluster");
    expect_refused(&r, KA_KAFKA_ERR_INVALID_CONFIG, "the brokers are 1, 2, 3");
}

static void test_append_subtract_and_max_partitions_on_one_broker_are_refused(void **s)
{
    spec_resource_t append = {KA_CFG_RESOURCE_BROKER, "1", 1, {{MBP, 2, "5"}}};
    spec_resource_t subtract = {KA_CFG_RESOURCE_BROKER, "", 1, {{"max.partitions", 3, "5"}}};
    spec_resource_t one = {KA_CFG_RESOURCE_BROKER, "3", 1, {{"max.partitions", 0, "5"}}};
    spec_resource_t twice = {KA_CFG_RESOURCE_BROKER, "3", 2, {{MBP, 0, "5"}, {MBP, 1, NULL}}};
    spec_resource_t name = {KA_CFG_RESOURCE_BROKER, "b1", 1, {{MBP, 0, "5"}}};

    (void)s;
    expect_refused(&append, KA_KAFKA_ERR_INVALID_CONFIG, "APPEND is not allowed");
    expect_refused(&subtract, KA_KAFKA_ERR_INVALID_CONFIG, "SUBTRACT is not allowed");
    expect_refused(&one, KA_KAFKA_ERR_INVALID_CONFIG, "set it on the default broker entity");
    expect_refused(&twice, KA_KAFKA_ERR_INVALID_REQUEST, "appears more than once");
    expect_refused(&name, KA_KAFKA_ERR_INVALID_REQUEST, "named by a broker id");
}

static void test_refusal_merges_in_request_order_and_other_resources_reach_the_broker(void **s)
{
    static const spec_resource_t rs[] = {
        {2, "orders", 1, {{"retention.ms", 0, "1000"}}},
        {KA_CFG_RESOURCE_BROKER, "2", 1, {{MBP, 0, "-5"}}},
        {KA_CFG_RESOURCE_BROKER, "", 1, {{MBP, 0, "40"}}},
    };
    static const spec_result_t br[] = {{2, "orders", 0}, {KA_CFG_RESOURCE_BROKER, "", 0}};
    struct ka_incrementalalterconfigs_request m;
    struct ka_incrementalalterconfigs_response resp;
    ka_cfg_change_t *changes = NULL;
    size_t len, rlen, mlen = 0, n = 0;
    uint8_t *frame = ia_frame(false, rs, 3, &len), *bresp, *merged = NULL;
    ka_cfg_outcome_t o;
    ka_arena_t arena;

    (void)s;
    ka_arena_init(&arena, 1 << 20);
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    decode_rewrite(&o, &arena, &m);
    assert_int_equal(m.resources.count, 2);
    assert_true(name_is(m.resources.items[0].resource_name, "orders"));
    assert_int_equal(m.resources.items[0].configs.count, 1); /* not kadmit's: untouched */
    assert_true(name_is(m.resources.items[1].resource_name, ""));
    assert_int_equal(m.resources.items[1].configs.count, 0);
    bresp = ia_response(br, 2, &rlen);
    assert_int_equal(
        ka_cfg_alter_response(o.pending, bresp, rlen, 1 << 20, &merged, &mlen, &changes, &n), 0);
    assert_non_null(merged);
    fx_decode_response(merged, mlen, IA, 1, 5, &arena, &resp);
    assert_int_equal(resp.responses.count, 3);
    assert_true(name_is(resp.responses.items[0].resource_name, "orders"));
    assert_true(name_is(resp.responses.items[1].resource_name, "2"));
    assert_int_equal(resp.responses.items[1].error_code, KA_KAFKA_ERR_INVALID_CONFIG);
    assert_true(name_is(resp.responses.items[2].resource_name, ""));
    assert_int_equal(resp.responses.items[2].error_code, 0);
    assert_int_equal(n, 1);
    assert_int_equal(changes[0].value, 40);
    free(changes);
    free(merged);
    free(bresp);
    free(frame);
    ka_cfg_outcome_release(&o);
    ka_arena_destroy(&arena);
}

static void test_a_broker_refusal_makes_no_change(void **s)
{
    static const spec_resource_t r = {KA_CFG_RESOURCE_BROKER, "2", 1, {{MBP, 0, "7"}}};
    static const spec_result_t denied = {KA_CFG_RESOURCE_BROKER, "2",
                                         KA_KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED};
    size_t len;
    uint8_t *frame = ia_frame(false, &r, 1, &len);
    ka_cfg_change_t *c = NULL;

    (void)s;
    assert_int_equal(alter_ok(frame, len, &denied, 1, &c), 0);
    assert_null(c);
    free(frame);
}

static void test_validate_only_gives_the_verdict_and_no_change(void **s)
{
    static const spec_result_t ok = {KA_CFG_RESOURCE_BROKER, "", 0};
    spec_resource_t bad = {KA_CFG_RESOURCE_BROKER, "", 1, {{MBP, 0, "x"}}};
    size_t len;
    uint8_t *frame = captured("incrementalalterconfigs-v1-request-java-validate.bin", &len);
    ka_cfg_change_t *c = NULL;

    (void)s;
    assert_int_equal(alter_ok(frame, len, &ok, 1, &c), 0);
    assert_null(c);
    free(frame);
    frame = ia_frame(true, &bad, 1, &len);
    ka_cfg_outcome_t o;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER); /* the same verdict as without validate_only */
    assert_true(o.validate_only);
    ka_cfg_outcome_release(&o);
    free(frame);
}

static void test_java_append_refuses_the_whole_resource(void **s)
{
    size_t len;
    uint8_t *frame = captured("incrementalalterconfigs-v1-request-java-append.bin", &len);
    ka_cfg_outcome_t o;

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_non_null(strstr(o.message, "APPEND is not allowed"));
    ka_cfg_outcome_release(&o);
    free(frame);
}

static void test_store_problem_refuses_changes_but_not_validation(void **s)
{
    spec_resource_t r = {KA_CFG_RESOURCE_BROKER, "1", 1, {{MBP, 0, "5"}}};
    ka_cfg_ctx_t down = ctx;
    ka_cfg_outcome_t o;
    size_t len;
    uint8_t *frame = ia_frame(false, &r, 1, &len);

    (void)s;
    down.store_problem = "the limits topic is still being read";
    assert_int_equal(ka_cfg_alter_request(&down, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_non_null(strstr(o.message, "still being read"));
    ka_cfg_outcome_release(&o);
    free(frame);
    frame = ia_frame(true, &r, 1, &len);
    assert_int_equal(ka_cfg_alter_request(&down, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    ka_cfg_outcome_release(&o);
    free(frame);
}

static void test_requests_without_kadmit_keys_go_untouched(void **s)
{
    spec_resource_t r[] = {{KA_CFG_RESOURCE_BROKER, "1", 1, {{"log.cleaner.threads", 0, "2"}}},
                           {2, "t", 1, {{MBP, 0, "-1"}}}}; /* a topic's key is the broker's */
    ka_cfg_outcome_t o;
    size_t len;
    uint8_t *frame = ia_frame(false, r, 2, &len);

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_null(o.pending);
    assert_null(o.bytes);
    free(frame);
}

static void test_legacy_alter_configs_deletes_what_it_does_not_list(void **s)
{
    static const spec_resource_t r = {
        KA_CFG_RESOURCE_BROKER, "", 1, {{"log.cleaner.threads", 0, "2"}}};
    struct ka_alterconfigs_response ok;
    struct ka_alterconfigs_response_alter_configs_resource_response okr;
    size_t len, rlen, mlen = 0, n = 0;
    uint8_t *frame = ac_frame(&r, 1, &len), *resp, *merged = NULL;
    ka_cfg_change_t *c = NULL;
    ka_cfg_outcome_t o;

    (void)s;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    ka_alterconfigs_response_init(&ok);
    ka_alterconfigs_response_alter_configs_resource_response_init(&okr);
    okr.resource_type = KA_CFG_RESOURCE_BROKER;
    okr.resource_name = S("");
    ok.responses.count = 1;
    ok.responses.items = &okr;
    resp = fx_response_frame(AC, 2, 5, &ok, &rlen);
    assert_int_equal(ka_cfg_alter_response(o.pending, resp, rlen, 1 << 20, &merged, &mlen, &c, &n),
                     0);
    assert_int_equal(n, 2);
    assert_true(c[0].remove && c[1].remove);
    free(c);
    free(resp);
    free(frame);
    ka_cfg_outcome_release(&o);
}

static void test_confluent_legacy_alter_configs_sets(void **s)
{
    static const spec_result_t one = {KA_CFG_RESOURCE_BROKER, "1", 0};
    size_t len, rlen, mlen = 0, n = 0;
    uint8_t *frame = captured("alterconfigs-v2-request-pyrdkafka-set-broker.bin", &len);
    uint8_t *resp = captured("alterconfigs-v2-response-pyrdkafka-set-broker.bin", &rlen);
    uint8_t *merged = NULL;
    ka_cfg_change_t *c = NULL;
    ka_cfg_outcome_t o;

    (void)s;
    (void)one;
    assert_int_equal(ka_cfg_alter_request(&ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(ka_cfg_alter_response(o.pending, resp, rlen, 1 << 20, &merged, &mlen, &c, &n),
                     0);
    assert_int_equal(n, 1);
    assert_int_equal(c[0].value, 12);
    free(c);
    free(resp);
    free(frame);
    ka_cfg_outcome_release(&o);
}

/* --- describe ----------------------------------------------------------------- */

static const ka_cfg_override_t dyn[] = {{1, 10}};
static const ka_cfg_override_t file_o[] = {{1, 100}, {2, 200}};
static const ka_cfg_limits_t limits = {-1, 90, dyn, 1, 1000, -1, file_o, 2};

typedef struct ka_describeconfigs_response_describe_configs_resource_result entry_t;

static const entry_t *find_entry(const struct ka_describeconfigs_response *r, const char *name,
                                 int *count)
{
    const entry_t *found = NULL;

    *count = 0;
    for (int32_t i = 0; i < r->results.count; i++)
        for (int32_t j = 0; j < r->results.items[i].configs.count; j++)
            if (slice_is(r->results.items[i].configs.items[j].name, name)) {
                found = &r->results.items[i].configs.items[j];
                (*count)++;
            }
    return found;
}

static void describe(const char *req_name, const char *resp_name, ka_arena_t *arena,
                     struct ka_describeconfigs_response *out)
{
    size_t len, rlen, mlen = 0;
    uint8_t *frame = captured(req_name, &len), *resp = captured(resp_name, &rlen), *merged = NULL;
    uint8_t *kept;
    ka_cfg_outcome_t o;
    int16_t version = 0;

    assert_int_equal(ka_cfg_describe_request(frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_non_null(o.pending);
    assert_int_equal(
        ka_cfg_describe_response(o.pending, &limits, resp, rlen, 1 << 20, &merged, &mlen), 0);
    assert_non_null(merged);
    version = (int16_t)(frame[4 + 2] << 8 | frame[4 + 3]);
    /* The decoded response's slices point into the frame: it lives in the arena. */
    kept = ka_arena_alloc(arena, mlen);
    assert_non_null(kept);
    memcpy(kept, merged, mlen);
    fx_decode_response(kept, mlen, DC, version,
                       (int32_t)(frame[8] << 24 | frame[9] << 16 | frame[10] << 8 | frame[11]),
                       arena, out);
    free(merged);
    free(frame);
    free(resp);
    ka_cfg_outcome_release(&o);
}

/* The one entry named `name` (the broker's own is gone): its value, source, synonyms. */
static const entry_t *expect_entry(const struct ka_describeconfigs_response *r, const char *name,
                                   const char *value, int8_t source, int32_t synonyms)
{
    int n;
    const entry_t *e = find_entry(r, name, &n);

    assert_int_equal(n, 1);
    assert_true(slice_is(e->value, value));
    assert_false(e->is_sensitive);
    assert_int_equal(e->config_source, source);
    assert_int_equal(e->synonyms.count, synonyms);
    return e;
}

static void test_describe_broker_shows_the_dynamic_value_with_its_synonyms(void **s)
{
    struct ka_describeconfigs_response r;
    ka_arena_t arena;
    const entry_t *e;

    (void)s;
    ka_arena_init(&arena, 1 << 20);
    /* The broker answered with its own max.broker.partitions, sensitive and null. */
    describe("describeconfigs-v4-request-cli-broker.bin",
             "describeconfigs-v4-response-cli-broker.bin", &arena, &r);
    e = expect_entry(&r, MBP, "10", KA_CFG_SOURCE_DYNAMIC_BROKER, 4);
    assert_true(slice_is(e->synonyms.items[1].value, "100"));
    assert_int_equal(e->synonyms.items[1].source, KA_CFG_SOURCE_STATIC);
    assert_true(slice_is(e->synonyms.items[2].value, "1000"));
    assert_int_equal(e->synonyms.items[3].source, KA_CFG_SOURCE_DEFAULT);
    expect_entry(&r, "max.partitions", "90", KA_CFG_SOURCE_DYNAMIC_DEFAULT, 2);
    ka_arena_destroy(&arena);
}

static void test_describe_default_all_shows_the_file_value_as_static(void **s)
{
    struct ka_describeconfigs_response r;
    ka_arena_t arena;

    (void)s;
    ka_arena_init(&arena, 1 << 20);
    describe("describeconfigs-v4-request-cli-default-all.bin",
             "describeconfigs-v4-response-cli-default-all.bin", &arena, &r);
    expect_entry(&r, MBP, "1000", KA_CFG_SOURCE_STATIC, 2);
    ka_arena_destroy(&arena);
}

static void test_describe_without_broker_resources_is_not_touched(void **s)
{
    struct ka_describeconfigs_request m;
    struct ka_describeconfigs_request_describe_configs_resource res;
    ka_slice_t keys[1] = {S(MBP)};
    ka_cfg_outcome_t o;
    size_t len;
    uint8_t *frame;

    (void)s;
    ka_describeconfigs_request_init(&m);
    ka_describeconfigs_request_describe_configs_resource_init(&res);
    res.resource_type = 2;
    res.resource_name = S("orders");
    res.configuration_keys = (ka_slice_array_t){1, keys};
    m.resources.count = 1;
    m.resources.items = &res;
    frame = fx_request_frame(DC, 4, 5, &m, &len);
    assert_int_equal(ka_cfg_describe_request(frame, len, &o), 0);
    assert_null(o.pending);
    free(frame);
    /* A broker resource asking only for other keys needs nothing either. */
    res.resource_type = KA_CFG_RESOURCE_BROKER;
    res.resource_name = S("1");
    keys[0] = S("log.retention.ms");
    frame = fx_request_frame(DC, 4, 5, &m, &len);
    assert_int_equal(ka_cfg_describe_request(frame, len, &o), 0);
    assert_null(o.pending);
    free(frame);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_kafka_configs_set_on_a_broker_is_taken_out_and_follows_the_brokers_ok),
        cmocka_unit_test(test_an_accepted_change_kadmit_could_not_store_is_answered_as_an_error),
        cmocka_unit_test(test_kafka_configs_default_entity_sets_both_keys_and_delete_removes),
        cmocka_unit_test(test_bad_values_are_answered_invalid_config),
        cmocka_unit_test(test_unknown_broker_is_refused_naming_the_known_ones),
        cmocka_unit_test(test_append_subtract_and_max_partitions_on_one_broker_are_refused),
        cmocka_unit_test(test_refusal_merges_in_request_order_and_other_resources_reach_the_broker),
        cmocka_unit_test(test_a_broker_refusal_makes_no_change),
        cmocka_unit_test(test_validate_only_gives_the_verdict_and_no_change),
        cmocka_unit_test(test_java_append_refuses_the_whole_resource),
        cmocka_unit_test(test_store_problem_refuses_changes_but_not_validation),
        cmocka_unit_test(test_requests_without_kadmit_keys_go_untouched),
        cmocka_unit_test(test_legacy_alter_configs_deletes_what_it_does_not_list),
        cmocka_unit_test(test_confluent_legacy_alter_configs_sets),
        cmocka_unit_test(test_describe_broker_shows_the_dynamic_value_with_its_synonyms),
        cmocka_unit_test(test_describe_default_all_shows_the_file_value_as_static),
        cmocka_unit_test(test_describe_without_broker_resources_is_not_touched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
