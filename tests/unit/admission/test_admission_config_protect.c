/*
 * test_admission_config_protect.c: config changes that can destroy a
 * protected topic's data (admission/ka_admission_config_protect.c).
 *
 * Real clients' frames from tests/data/frames/topic-configs/ (kafka-configs,
 * the Java AdminClient and confluent-kafka altering team-a.orders) under a
 * policy that protects team-a.*: a destructive key is refused with
 * POLICY_VIOLATION whatever the operation, a harmless one goes on; then
 * every destructive key with SET and DELETE, the harmless keys, audit
 * mode, an exempt principal, Kafka's internal topics and the resources
 * that are not judged (BROKER, a TOPIC named ""), built with the codecs.
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

#define IA KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY
#define AC KA_ALTERCONFIGS_REQUEST_API_KEY

#define PROTECT_TEAM_A                                                                             \
    "{\"protected.topics\": [\"team-a\\\\..*\"], "                                                 \
    "\"principals\": {\"User:ops\": {\"exempt\": [\"protected.topics\"]}}}"
#define AUDIT_TEAM_A "{\"protected.topics\": [\"team-a\\\\..*\"], \"enforcement\": \"audit\"}"

static const char *const destructive[] = {
    "retention.ms",
    "retention.bytes",
    "cleanup.policy",
    "max.message.bytes",
    "segment.bytes",
    "segment.ms",
    "segment.index.bytes",
    "segment.jitter.ms",
    "delete.retention.ms",
    "remote.storage.enable",
    "remote.log.delete.on.disable",
};
static const char *const harmless[] = {"min.insync.replicas", "local.retention.ms",
                                       "local.retention.bytes", "compression.type",
                                       "message.timestamp.type"};

typedef struct cfg_case {
    ka_policy_t *policy;
    ka_cfg_ctx_t ctx;
    ka_cfg_outcome_t o;
    int16_t version; /* of the last request run */
    int32_t cid;
    /* What on_topic_judged reported last. */
    char verdict[16], reason[32], rule[64];
} cfg_case_t;

static void judged_cb(void *arg, const ka_cfg_judged_t *t)
{
    cfg_case_t *c = arg;

    snprintf(c->verdict, sizeof(c->verdict), "%s", t->verdict);
    snprintf(c->reason, sizeof(c->reason), "%s", t->reason ? t->reason : "");
    snprintf(c->rule, sizeof(c->rule), "%s", t->rule);
}

static void cfg_start(cfg_case_t *c, const char *policy)
{
    char err[256];

    memset(c, 0, sizeof(*c));
    assert_int_equal(ka_policy_parse(policy, strlen(policy), 1, &c->policy, err, sizeof(err)), 0);
    c->ctx = (ka_cfg_ctx_t){.max_frame = 1 << 20,
                            .policy = c->policy,
                            .principal = "User:alice",
                            .on_topic_judged = judged_cb,
                            .on_topic_judged_arg = c};
}

static void cfg_end(cfg_case_t *c)
{
    ka_cfg_outcome_release(&c->o);
    ka_policy_unref(c->policy);
}

static void cfg_run(cfg_case_t *c, const uint8_t *frame, size_t len)
{
    ka_cfg_outcome_release(&c->o);
    c->verdict[0] = c->reason[0] = c->rule[0] = '\0';
    c->version = (int16_t)(frame[6] << 8 | frame[7]);
    c->cid = (int32_t)((uint32_t)frame[8] << 24 | (uint32_t)frame[9] << 16 |
                       (uint32_t)frame[10] << 8 | frame[11]);
    assert_int_equal(ka_cfg_alter_request(&c->ctx, frame, len, &c->o), 0);
}

static void cfg_run_captured(cfg_case_t *c, const char *name)
{
    char path[256];
    size_t len;
    uint8_t *frame;

    snprintf(path, sizeof(path), "topic-configs/%s", name);
    frame = fx_captured(path, &len);
    cfg_run(c, frame, len);
    free(frame);
}

/* The local answer holds one resource: POLICY_VIOLATION with a message holding `needle`. */
static void expect_refused(const cfg_case_t *c, int16_t api, const char *needle)
{
    int16_t version = c->version;
    int32_t cid = c->cid;
    ka_arena_t arena;
    ka_slice_t msg;
    int16_t code;
    int32_t count;

    assert_int_equal(c->o.action, KA_ADM_ANSWER);
    assert_int_equal(c->o.protected_refused, 1);
    ka_arena_init(&arena, 1 << 20);
    if (api == IA) {
        struct ka_incrementalalterconfigs_response r;

        fx_decode_response(c->o.bytes, c->o.len, IA, version, cid, &arena, &r);
        count = r.responses.count;
        code = r.responses.items[0].error_code;
        msg = r.responses.items[0].error_message;
    } else {
        struct ka_alterconfigs_response r;

        fx_decode_response(c->o.bytes, c->o.len, AC, version, cid, &arena, &r);
        count = r.responses.count;
        code = r.responses.items[0].error_code;
        msg = r.responses.items[0].error_message;
    }
    assert_int_equal(count, 1);
    assert_int_equal(code, KA_KAFKA_ERR_POLICY_VIOLATION);
    if (msg.len < 0 || strstr((const char *)msg.ptr, needle) == NULL)
        fail_msg("message \"%.*s\" lacks \"%s\"", msg.len > 0 ? msg.len : 0,
                 msg.len > 0 ? (const char *)msg.ptr : "", needle);
    assert_string_equal(c->verdict, "reject");
    assert_string_equal(c->reason, "protected_topic");
    assert_string_equal(c->rule, "protected.topics");
    ka_arena_destroy(&arena);
}

/* kafka-configs --alter --add-config cleanup.policy=compact,retention.ms=700000000. */
static void test_kafka_configs_add_config_of_destructive_keys_is_refused(void **s)
{
    cfg_case_t c;

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    cfg_run_captured(&c, "incrementalalterconfigs-v1-request-cli-set-topic.bin");
    expect_refused(&c, IA,
                   "topic 'team-a.orders' is protected by protected.topics pattern 'team-a\\..*': "
                   "setting cleanup.policy through kadmit is refused, because it can turn on the "
                   "deletion or the compaction of the topic's records; remove it from "
                   "protected.topics to change it");
    cfg_end(&c);
}

static void test_confluent_kafka_incremental_retention_ms_is_refused(void **s)
{
    cfg_case_t c;

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    cfg_run_captured(&c, "incrementalalterconfigs-v1-request-pyrdkafka-set-topic.bin");
    assert_int_equal(c.o.action, KA_ADM_ANSWER);
    assert_int_equal(c.o.protected_refused, 1);
    assert_non_null(strstr(c.o.protect_message, "setting retention.ms through kadmit is refused, "
                                                "because it can delete the topic's records"));
    cfg_end(&c);
}

/* The Java AdminClient: SET min.insync.replicas (harmless), APPEND cleanup.policy=compact. */
static void test_java_append_to_cleanup_policy_is_refused(void **s)
{
    cfg_case_t c;

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    cfg_run_captured(&c, "incrementalalterconfigs-v1-request-java-set-append-topic.bin");
    assert_int_equal(c.o.action, KA_ADM_ANSWER);
    assert_non_null(strstr(c.o.protect_message, "appending to cleanup.policy through kadmit"));
    cfg_end(&c);
}

/* kafka-configs --alter --delete-config min.insync.replicas: harmless, forwarded untouched. */
static void test_kafka_configs_delete_of_a_harmless_key_goes_on(void **s)
{
    cfg_case_t c;

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    cfg_run_captured(&c, "incrementalalterconfigs-v1-request-cli-delete-topic.bin");
    assert_int_equal(c.o.action, KA_ADM_FORWARD);
    assert_null(c.o.bytes);
    assert_null(c.o.pending);
    assert_int_equal(c.o.protected_refused + c.o.protected_audited, 0);
    assert_string_equal(c.verdict, "");
    cfg_end(&c);
}

/* Legacy AlterConfigs replaces every config: on a protected topic it always sets or resets the
 * destructive keys, so it is refused; confluent-kafka's alter_configs sends it. */
static void test_legacy_alter_configs_of_a_protected_topic_is_refused(void **s)
{
    struct ka_alterconfigs_request m;
    struct ka_alterconfigs_request_alter_configs_resource res;
    struct ka_alterconfigs_request_alterable_config cfg;
    cfg_case_t c;
    uint8_t *frame;
    size_t len;

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    cfg_run_captured(&c, "alterconfigs-v2-request-pyrdkafka-set-topic.bin");
    assert_int_equal(c.o.action, KA_ADM_ANSWER);
    assert_non_null(
        strstr(c.o.protect_message,
               "setting retention.ms through kadmit is refused, because it can delete "
               "the topic's records (and AlterConfigs resets every key it leaves out)"));
    /* Only a harmless key listed: the keys it leaves out go back to the broker's defaults. */
    ka_alterconfigs_request_init(&m);
    ka_alterconfigs_request_alter_configs_resource_init(&res);
    ka_alterconfigs_request_alterable_config_init(&cfg);
    cfg.name = S("min.insync.replicas");
    cfg.value = S("2");
    res.resource_type = KA_CFG_RESOURCE_TOPIC;
    res.resource_name = S("team-a.orders");
    res.configs.count = 1;
    res.configs.items = &cfg;
    m.resources.count = 1;
    m.resources.items = &res;
    frame = fx_request_frame(AC, 2, 6, &m, &len);
    cfg_run(&c, frame, len);
    expect_refused(&c, AC, "AlterConfigs replaces its whole configuration");
    /* Not protected: the same request goes on. */
    res.resource_name = S("team-b.orders");
    free(frame);
    frame = fx_request_frame(AC, 2, 6, &m, &len);
    cfg_run(&c, frame, len);
    assert_int_equal(c.o.action, KA_ADM_FORWARD);
    free(frame);
    cfg_end(&c);
}

/* IncrementalAlterConfigs v1 (correlation id 5), one resource with one config. */
static uint8_t *ia_one(int8_t type, const char *name, const char *key, int8_t op, const char *value,
                       size_t *len)
{
    struct ka_incrementalalterconfigs_request m;
    struct ka_incrementalalterconfigs_request_alter_configs_resource res;
    struct ka_incrementalalterconfigs_request_alterable_config cfg;

    ka_incrementalalterconfigs_request_init(&m);
    ka_incrementalalterconfigs_request_alter_configs_resource_init(&res);
    ka_incrementalalterconfigs_request_alterable_config_init(&cfg);
    res.resource_type = type;
    res.resource_name = S(name);
    cfg.name = S(key);
    cfg.config_operation = op;
    cfg.value = value != NULL ? S(value) : KA_SLICE_NULL;
    res.configs.count = 1;
    res.configs.items = &cfg;
    m.resources.count = 1;
    m.resources.items = &res;
    return fx_request_frame(IA, 1, 5, &m, len);
}

static void test_every_destructive_key_is_refused_set_or_deleted(void **s)
{
    (void)s;
    for (size_t k = 0; k < sizeof(destructive) / sizeof(destructive[0]); k++) {
        for (int8_t op = 0; op <= 1; op++) {
            cfg_case_t c;
            char needle[128];
            size_t len;
            uint8_t *frame = ia_one(KA_CFG_RESOURCE_TOPIC, "team-a.orders", destructive[k], op,
                                    op == 0 ? "1" : NULL, &len);

            cfg_start(&c, PROTECT_TEAM_A);
            cfg_run(&c, frame, len);
            snprintf(needle, sizeof(needle), "%s %s through kadmit is refused",
                     op == 0 ? "setting" : "deleting", destructive[k]);
            expect_refused(&c, IA, needle);
            cfg_end(&c);
            free(frame);
        }
    }
}

static void test_harmless_keys_go_on_untouched(void **s)
{
    (void)s;
    for (size_t k = 0; k < sizeof(harmless) / sizeof(harmless[0]); k++) {
        for (int8_t op = 0; op <= 1; op++) {
            cfg_case_t c;
            size_t len;
            uint8_t *frame = ia_one(KA_CFG_RESOURCE_TOPIC, "team-a.orders", harmless[k], op,
                                    op == 0 ? "1" : NULL, &len);

            cfg_start(&c, PROTECT_TEAM_A);
            cfg_run(&c, frame, len);
            assert_int_equal(c.o.action, KA_ADM_FORWARD);
            assert_null(c.o.pending);
            assert_int_equal(c.o.protected_refused + c.o.protected_audited, 0);
            cfg_end(&c);
            free(frame);
        }
    }
}

static void test_audit_mode_forwards_flagged_and_an_exempt_principal_passes(void **s)
{
    cfg_case_t c;
    size_t len;
    uint8_t *frame = ia_one(KA_CFG_RESOURCE_TOPIC, "team-a.orders", "retention.ms", 0, "1", &len);

    (void)s;
    cfg_start(&c, AUDIT_TEAM_A);
    cfg_run(&c, frame, len);
    assert_int_equal(c.o.action, KA_ADM_FORWARD);
    assert_null(c.o.bytes);
    assert_int_equal(c.o.protected_refused, 0);
    assert_int_equal(c.o.protected_audited, 1);
    assert_non_null(strstr(c.o.protect_message, "setting retention.ms through kadmit is refused"));
    assert_string_equal(c.verdict, "audit");
    assert_string_equal(c.reason, "protected_topic");
    cfg_end(&c);
    cfg_start(&c, PROTECT_TEAM_A);
    c.ctx.principal = "User:ops";
    cfg_run(&c, frame, len);
    assert_int_equal(c.o.action, KA_ADM_FORWARD);
    assert_int_equal(c.o.protected_refused + c.o.protected_audited, 0);
    cfg_end(&c);
    free(frame);
}

/* Kafka's internal topics need no policy key, and no exemption lets retention.ms through. */
static void test_internal_topics_refuse_destructive_keys_with_no_exemption(void **s)
{
    cfg_case_t c;
    size_t len;
    uint8_t *frame =
        ia_one(KA_CFG_RESOURCE_TOPIC, "__consumer_offsets", "retention.ms", 0, "1", &len);

    (void)s;
    cfg_start(&c, PROTECT_TEAM_A);
    c.ctx.principal = "User:ops";
    cfg_run(&c, frame, len);
    expect_refused(&c, IA,
                   "topic '__consumer_offsets' is one of Kafka's internal topics, which kadmit "
                   "always protects: setting retention.ms through kadmit is refused");
    free(frame);
    frame =
        ia_one(KA_CFG_RESOURCE_TOPIC, "__consumer_offsets", "min.insync.replicas", 0, "2", &len);
    cfg_run(&c, frame, len);
    assert_int_equal(c.o.action, KA_ADM_FORWARD);
    cfg_end(&c);
    free(frame);
}

/* Only TOPIC resources are judged: a broker's log.retention.ms (the default entity "" or a
 * broker id) and a TOPIC resource named "" (which the broker refuses) go on untouched. */
static void test_broker_resources_and_a_topic_named_empty_are_not_judged(void **s)
{
    static const struct {
        int8_t type;
        const char *name, *key;
    } cases[] = {{KA_CFG_RESOURCE_BROKER, "", "log.retention.ms"},
                 {KA_CFG_RESOURCE_BROKER, "1", "log.retention.ms"},
                 {KA_CFG_RESOURCE_BROKER, "team-a.orders", "retention.ms"},
                 {KA_CFG_RESOURCE_TOPIC, "", "retention.ms"}};

    (void)s;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cfg_case_t c;
        size_t len;
        uint8_t *frame = ia_one(cases[i].type, cases[i].name, cases[i].key, 0, "1", &len);

        cfg_start(&c, PROTECT_TEAM_A);
        cfg_run(&c, frame, len);
        assert_int_equal(c.o.action, KA_ADM_FORWARD);
        assert_int_equal(c.o.protected_refused + c.o.protected_audited, 0);
        cfg_end(&c);
        free(frame);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kafka_configs_add_config_of_destructive_keys_is_refused),
        cmocka_unit_test(test_confluent_kafka_incremental_retention_ms_is_refused),
        cmocka_unit_test(test_java_append_to_cleanup_policy_is_refused),
        cmocka_unit_test(test_kafka_configs_delete_of_a_harmless_key_goes_on),
        cmocka_unit_test(test_legacy_alter_configs_of_a_protected_topic_is_refused),
        cmocka_unit_test(test_every_destructive_key_is_refused_set_or_deleted),
        cmocka_unit_test(test_harmless_keys_go_on_untouched),
        cmocka_unit_test(test_audit_mode_forwards_flagged_and_an_exempt_principal_passes),
        cmocka_unit_test(test_internal_topics_refuse_destructive_keys_with_no_exemption),
        cmocka_unit_test(test_broker_resources_and_a_topic_named_empty_are_not_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
