/*
 * test_rules_configs.c: a topic rule's config bounds (ka_rules_configs.h),
 * judged at the values a request sets and at the broker's defaults, and
 * those defaults as the view builder reads them from DescribeConfigs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ka_rules_configs.h"
#include "ka_view_build.h"
#include "policy_fixtures.h"

static const char *delete_only[] = {"delete"};

/* The team-a rule, with a bound on every key kadmit knows a default for. */
static const ka_config_bound_t team_a_bounds[] = {
    {"min.insync.replicas", 2, KA_RULE_UNSET, NULL, 0},
    {"retention.ms", KA_RULE_UNSET, 604800000, NULL, 0},
    {"retention.bytes", KA_RULE_UNSET, 1073741824, NULL, 0},
    {"cleanup.policy", KA_RULE_UNSET, KA_RULE_UNSET, delete_only, 1},
    {"max.message.bytes", 1024, 8388608, NULL, 0},
    {"segment.bytes", 1048576, KA_RULE_UNSET, NULL, 0},
};

static const ka_topic_rule_t team_a = {
    .name = "team-a\\..*",
    .replication_factor_min = KA_RULE_UNSET,
    .replication_factor_max = KA_RULE_UNSET,
    .partitions_min = KA_RULE_UNSET,
    .partitions_max = KA_RULE_UNSET,
    .budget_partitions = KA_RULE_UNSET,
    .configs = team_a_bounds,
    .config_count = sizeof(team_a_bounds) / sizeof(team_a_bounds[0]),
    .enforcement = KA_ENFORCEMENT_ENFORCE,
};

static const ka_topic_rule_t only_isr = {
    .name = "team-b\\..*",
    .configs = team_a_bounds,
    .config_count = 1,
    .enforcement = KA_ENFORCEMENT_ENFORCE,
};

/* The harness's brokers: Kafka's defaults, min.insync.replicas 1, retention 7 days. */
static ka_broker_defaults_t kafka_defaults(void)
{
    ka_broker_defaults_t d = {.num_partitions = 1,
                              .default_replication_factor = 1,
                              .auto_create_topics_enable = true,
                              .topic_known = 0x3f,
                              .min_insync_replicas = 1,
                              .retention_ms = 604800000,
                              .retention_bytes = -1,
                              .max_message_bytes = 1048588,
                              .segment_bytes = 1073741824};
    memcpy(d.cleanup_policy, "delete", 7);
    return d;
}

static ka_cluster_t *view_with(const ka_broker_defaults_t *d)
{
    ka_cluster_builder_t *b = fx_builder(1000);

    fx_broker(b, 1, NULL, false);
    ka_cluster_builder_set_defaults(b, d);
    return fx_finish(b);
}

/* Sets the six keys within team-a's bounds; `key` (if any) gets `value` instead. */
static int check_with(const ka_topic_rule_t *rule, const ka_cluster_t *view, const char *key,
                      const char *value, bool absent_means_default, char *msg, size_t msglen)
{
    ka_topic_config_t in[] = {
        {S("min.insync.replicas"), S("2")},   {S("retention.ms"), S("86400000")},
        {S("retention.bytes"), S("1048576")}, {S("cleanup.policy"), S("delete")},
        {S("max.message.bytes"), S("65536")}, {S("segment.bytes"), S("1073741824")},
    };

    for (size_t i = 0; key != NULL && i < sizeof(in) / sizeof(in[0]); i++)
        if (strncmp((const char *)in[i].name.ptr, key, (size_t)in[i].name.len) == 0 &&
            strlen(key) == (size_t)in[i].name.len)
            in[i].value = value != NULL ? S(value) : (ka_slice_t){NULL, -1};
    return ka_rules_check_configs(rule, view, in, sizeof(in) / sizeof(in[0]), absent_means_default,
                                  msg, msglen);
}

static void test_configs_within_every_bound_are_admitted(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(check_with(&team_a, view, NULL, NULL, true, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "");
    ka_cluster_unref(view);
}

static void test_min_insync_replicas_below_the_minimum_says_what_to_set(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(check_with(&team_a, view, "min.insync.replicas", "1", true, msg, sizeof(msg)),
                     1);
    assert_string_equal(msg, "min.insync.replicas 1 is below the minimum 2 of rule 'team-a\\..*'; "
                             "set min.insync.replicas to at least 2");
    ka_cluster_unref(view);
}

static void test_retention_above_the_maximum_says_what_to_set(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(check_with(&team_a, view, "retention.ms", "604800001", true, msg, sizeof(msg)),
                     1);
    assert_string_equal(msg, "retention.ms 604800001 is above the maximum 604800000 of rule "
                             "'team-a\\..*'; set retention.ms to at most 604800000");
    assert_int_equal(check_with(&team_a, view, "retention.ms", "604800000", true, msg, sizeof(msg)),
                     0);
    ka_cluster_unref(view);
}

static void test_unlimited_retention_is_above_any_maximum(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(check_with(&team_a, view, "retention.ms", "-1", true, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "retention.ms -1 (unlimited) is above the maximum 604800000"));
    assert_int_equal(check_with(&team_a, view, "retention.bytes", "-1", true, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "retention.bytes -1 (unlimited) is above the maximum"));
    ka_cluster_unref(view);
}

static void test_a_value_that_is_not_a_number_is_refused_saying_so(void **state)
{
    static const char *const bad[] = {"2x", "", " ", "two", "1e3", "99999999999999999999", "--2"};
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(
            check_with(&team_a, view, "min.insync.replicas", bad[i], true, msg, sizeof(msg)), 1);
        assert_non_null(strstr(msg, "is not a number"));
        assert_non_null(strstr(msg, "set min.insync.replicas to an integer"));
    }
    /* Kafka trims spaces around a number, so kadmit reads " 3 " as 3 too. */
    assert_int_equal(
        check_with(&team_a, view, "min.insync.replicas", " 3 ", true, msg, sizeof(msg)), 0);
    ka_cluster_unref(view);
}

static void test_cleanup_policy_outside_the_allowed_values_is_refused(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(check_with(&team_a, view, "cleanup.policy", "compact", true, msg, sizeof(msg)),
                     1);
    assert_string_equal(msg, "cleanup.policy \"compact\" is not allowed by rule 'team-a\\..*'; set "
                             "cleanup.policy to one of: delete");
    /* A list is judged entry by entry. */
    assert_int_equal(
        check_with(&team_a, view, "cleanup.policy", "delete,compact", true, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "\"compact\""));
    assert_int_equal(
        check_with(&team_a, view, "cleanup.policy", "delete, delete", true, msg, sizeof(msg)), 0);
    ka_cluster_unref(view);
}

static void test_a_key_left_out_is_judged_at_the_broker_default(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];
    ka_topic_config_t none[1];

    (void)state;
    assert_int_equal(ka_rules_check_configs(&only_isr, view, none, 0, true, msg, sizeof(msg)), 1);
    assert_string_equal(msg, "min.insync.replicas 1 (the broker's default, which applies when the "
                             "request does not set it) is below the minimum 2 of rule "
                             "'team-b\\..*'; set min.insync.replicas to at least 2");
    /* IncrementalAlterConfigs: a key it does not name keeps the topic's value. */
    assert_int_equal(ka_rules_check_configs(&only_isr, view, none, 0, false, msg, sizeof(msg)), 0);
    d.min_insync_replicas = 2;
    ka_cluster_unref(view);
    view = view_with(&d);
    assert_int_equal(ka_rules_check_configs(&only_isr, view, none, 0, true, msg, sizeof(msg)), 0);
    ka_cluster_unref(view);
}

static void test_a_deleted_key_is_judged_at_the_broker_default(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view = view_with(&d);
    char msg[KA_MESSAGE_MAX];

    (void)state;
    assert_int_equal(
        check_with(&team_a, view, "min.insync.replicas", NULL, false, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "min.insync.replicas 1 (the broker's default, which applies once "
                                "the request deletes it) is below the minimum 2"));
    /* The broker's retention default (7 days) is within the maximum. */
    assert_int_equal(check_with(&team_a, view, "retention.ms", NULL, false, msg, sizeof(msg)), 0);
    ka_cluster_unref(view);
}

static void test_an_unknown_broker_default_is_refused_never_passed(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    ka_cluster_t *view;
    char msg[KA_MESSAGE_MAX];
    ka_topic_config_t none[1];

    (void)state;
    d.topic_known &= ~(unsigned)KA_TOPIC_DEFAULT_MIN_INSYNC_REPLICAS;
    view = view_with(&d);
    assert_int_equal(ka_rules_check_configs(&only_isr, view, none, 0, true, msg, sizeof(msg)), 1);
    assert_string_equal(msg, "kadmit does not know the broker's default for min.insync.replicas, "
                             "which applies when the request does not set it, so it cannot judge "
                             "it against rule 'team-b\\..*'; set min.insync.replicas explicitly");
    /* Set explicitly, the value is judged and the unknown default does not matter. */
    assert_int_equal(check_with(&only_isr, view, NULL, NULL, true, msg, sizeof(msg)), 0);
    ka_cluster_unref(view);
    /* No view at all: nothing is known. */
    assert_int_equal(ka_rules_check_configs(&only_isr, NULL, none, 0, true, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "does not know the broker's default"));
}

static void test_a_rule_without_bounds_or_no_rule_admits(void **state)
{
    ka_topic_rule_t bare = team_a;
    char msg[KA_MESSAGE_MAX];

    (void)state;
    bare.config_count = 0;
    assert_int_equal(ka_rules_check_configs(NULL, NULL, NULL, 0, true, msg, sizeof(msg)), 0);
    assert_int_equal(ka_rules_check_configs(&bare, NULL, NULL, 0, true, msg, sizeof(msg)), 0);
}

static void test_every_bounded_key_has_a_default_kadmit_can_name(void **state)
{
    ka_broker_defaults_t d = kafka_defaults();
    char text[64];

    (void)state;
    for (size_t i = 0; i < team_a.config_count; i++)
        assert_int_equal(ka_rules_config_default(&d, team_a_bounds[i].name, text, sizeof(text)), 0);
    OK(ka_rules_config_default(&d, "retention.bytes", text, sizeof(text)));
    assert_string_equal(text, "-1");
    OK(ka_rules_config_default(&d, "cleanup.policy", text, sizeof(text)));
    assert_string_equal(text, "delete");
    assert_int_equal(ka_rules_config_default(&d, "compression.type", text, sizeof(text)), 1);
    d.topic_known = 0;
    assert_int_equal(ka_rules_config_default(&d, "segment.bytes", text, sizeof(text)), 1);
}

/* --- the defaults as DescribeConfigs answers them ----------------------- */

/* A config value, or null (NULL). */
static ka_slice_t opt(const char *v)
{
    return v != NULL ? S(v) : (ka_slice_t){NULL, -1};
}

#define ENTRY(k, v)                                                                                \
    {                                                                                              \
        .name = S(k), .value = opt(v)                                                              \
    }

static ka_broker_defaults_t
defaults_from(struct ka_describeconfigs_response_describe_configs_resource_result *entries,
              int32_t n)
{
    struct ka_describeconfigs_response_describe_configs_result result = {
        .error_code = 0, .resource_type = 4, .resource_name = S("1")};
    struct ka_describeconfigs_response resp = {0};
    const struct ka_describeconfigs_response *answers[] = {&resp};
    ka_broker_defaults_t d;

    result.configs.count = n;
    result.configs.items = entries;
    resp.results.count = 1;
    resp.results.items = &result;
    assert_int_equal(ka_view_broker_defaults(answers, 1, &d), 1);
    return d;
}

static void test_view_reads_each_topic_default_from_the_broker(void **state)
{
    struct ka_describeconfigs_response_describe_configs_resource_result e[] = {
        ENTRY("num.partitions", "3"),
        ENTRY("min.insync.replicas", "2"),
        ENTRY("log.retention.ms", NULL),
        ENTRY("log.retention.minutes", NULL),
        ENTRY("log.retention.hours", "168"),
        ENTRY("log.retention.bytes", "-1"),
        ENTRY("log.cleanup.policy", "delete"),
        ENTRY("message.max.bytes", "1048588"),
        ENTRY("log.segment.bytes", "1073741824"),
    };
    ka_broker_defaults_t d;

    (void)state;
    d = defaults_from(e, (int32_t)(sizeof(e) / sizeof(e[0])));
    assert_int_equal(d.num_partitions, 3);
    assert_int_equal(d.topic_known, 0x3f);
    assert_int_equal(d.min_insync_replicas, 2);
    assert_int_equal(d.retention_ms, 168LL * 3600 * 1000);
    assert_int_equal(d.retention_bytes, -1);
    assert_string_equal(d.cleanup_policy, "delete");
    assert_int_equal(d.max_message_bytes, 1048588);
    assert_int_equal(d.segment_bytes, 1073741824);
}

static void test_view_resolves_retention_like_kafka_ms_then_minutes_then_hours(void **state)
{
    struct ka_describeconfigs_response_describe_configs_resource_result minutes[] = {
        ENTRY("log.retention.hours", "168"),
        ENTRY("log.retention.minutes", "10"),
        ENTRY("log.retention.ms", NULL),
    };
    struct ka_describeconfigs_response_describe_configs_resource_result ms[] = {
        ENTRY("log.retention.ms", "5000"),
        ENTRY("log.retention.minutes", "10"),
        ENTRY("log.retention.hours", "168"),
    };
    struct ka_describeconfigs_response_describe_configs_resource_result unlimited[] = {
        ENTRY("log.retention.ms", "-1"),
        ENTRY("log.retention.hours", "168"),
    };
    struct ka_describeconfigs_response_describe_configs_resource_result none[] = {
        ENTRY("num.partitions", "1"),
    };

    (void)state;
    assert_int_equal(defaults_from(minutes, 3).retention_ms, 600000);
    assert_int_equal(defaults_from(ms, 3).retention_ms, 5000);
    assert_int_equal(defaults_from(unlimited, 2).retention_ms, -1);
    assert_int_equal(defaults_from(none, 1).topic_known, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configs_within_every_bound_are_admitted),
        cmocka_unit_test(test_min_insync_replicas_below_the_minimum_says_what_to_set),
        cmocka_unit_test(test_retention_above_the_maximum_says_what_to_set),
        cmocka_unit_test(test_unlimited_retention_is_above_any_maximum),
        cmocka_unit_test(test_a_value_that_is_not_a_number_is_refused_saying_so),
        cmocka_unit_test(test_cleanup_policy_outside_the_allowed_values_is_refused),
        cmocka_unit_test(test_a_key_left_out_is_judged_at_the_broker_default),
        cmocka_unit_test(test_a_deleted_key_is_judged_at_the_broker_default),
        cmocka_unit_test(test_an_unknown_broker_default_is_refused_never_passed),
        cmocka_unit_test(test_a_rule_without_bounds_or_no_rule_admits),
        cmocka_unit_test(test_every_bounded_key_has_a_default_kadmit_can_name),
        cmocka_unit_test(test_view_reads_each_topic_default_from_the_broker),
        cmocka_unit_test(test_view_resolves_retention_like_kafka_ms_then_minutes_then_hours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
