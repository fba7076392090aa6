/*
 * test_rules_parse.c: the guardrail keys of the policy (topic rules,
 * principals, protected topics, name pattern): the issue's example as
 * written, every refusal with its path, canonical round trips, derivations
 * that keep the rules, and full-name pattern matching.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_policy.h"
#include "ka_policy_rules.h"

#define S(str) ((ka_slice_t){(const uint8_t *)(str), (int32_t)strlen(str)})

/* The policy of issue #19, as written there. */
static const char *const example =
    "{\n"
    "  \"max.broker.partitions\": 1000,\n"
    "  \"topic.name.pattern\": \"^[a-z0-9][a-z0-9._-]*$\",\n"
    "  \"protected.topics\": [ \"keep\\\\..*\" ],\n"
    "  \"topic.rules\": [\n"
    "    { \"match\": \"team-a\\\\..*\",\n"
    "      \"replication.factor.min\": 2, \"replication.factor.max\": 3,\n"
    "      \"partitions.max\": 12,\n"
    "      \"budget.partitions\": 20,\n"
    "      \"configs\": { \"min.insync.replicas\": { \"min\": 2 }, \"retention.ms\": { \"max\": "
    "604800000 } },\n"
    "      \"enforcement\": \"enforce\" } ],\n"
    "  \"principals\": { \"User:cruise-control\": { \"exempt\": [ \"topic.rules\" ] } }\n"
    "}\n";

static ka_policy_t *parse_ok(const char *json)
{
    ka_policy_t *p = NULL;
    char err[512] = "";

    if (ka_policy_parse(json, strlen(json), 1, &p, err, sizeof(err)) != 0)
        fail_msg("refused: %s", err);
    return p;
}

static void test_issue_example_parses_as_written(void **state)
{
    ka_policy_t *p = parse_ok(example);
    const ka_topic_rule_t *rule;
    const ka_principal_rule_t *cc;

    (void)state;
    assert_int_equal(ka_policy_default_broker_limit(p), 1000);
    assert_string_equal(ka_pattern_source(ka_policy_topic_name_pattern(p)),
                        "^[a-z0-9][a-z0-9._-]*$");
    assert_int_equal(ka_policy_rule_count(p), 1);
    rule = ka_policy_rule_for(p, S("team-a.orders"));
    assert_non_null(rule);
    assert_ptr_equal(rule, ka_policy_rule_at(p, 0));
    assert_string_equal(rule->name, "team-a\\..*");
    assert_int_equal(rule->replication_factor_min, 2);
    assert_int_equal(rule->replication_factor_max, 3);
    assert_int_equal(rule->partitions_min, KA_RULE_UNSET);
    assert_int_equal(rule->partitions_max, 12);
    assert_int_equal(rule->budget_partitions, 20);
    assert_int_equal(rule->enforcement, KA_ENFORCEMENT_ENFORCE);
    assert_int_equal(rule->config_count, 2);
    /* Sorted by name: min.insync.replicas before retention.ms. */
    assert_string_equal(rule->configs[0].name, "min.insync.replicas");
    assert_int_equal(rule->configs[0].min, 2);
    assert_int_equal(rule->configs[0].max, KA_RULE_UNSET);
    assert_string_equal(rule->configs[1].name, "retention.ms");
    assert_int_equal(rule->configs[1].max, 604800000);
    assert_null(rule->configs[1].allowed);
    assert_null(ka_policy_rule_for(p, S("team-b.orders")));
    assert_null(ka_policy_rule_for(p, S("team-a")));
    cc = ka_policy_principal(p, "User:cruise-control");
    assert_non_null(cc);
    assert_int_equal(cc->exempt, KA_EXEMPT_TOPIC_RULES);
    assert_null(cc->topics);
    assert_int_equal(cc->budget_partitions, KA_RULE_UNSET);
    assert_null(ka_policy_principal(p, "User:alice"));
    assert_string_equal(ka_policy_unknown_principal(p), "User:ANONYMOUS");
    assert_true(ka_policy_topic_is_protected(p, S("keep.me")));
    assert_false(ka_policy_topic_is_protected(p, S("keeper")));
    ka_policy_unref(p);
}

static void test_patterns_match_the_whole_name_only(void **state)
{
    ka_pattern_t *pat = NULL;
    char err[256];

    (void)state;
    assert_int_equal(ka_pattern_compile("team-a\\..*|ops", &pat, err, sizeof(err)), 0);
    assert_true(ka_pattern_matches(pat, S("team-a.x")));
    assert_true(ka_pattern_matches(pat, S("ops")));
    assert_false(ka_pattern_matches(pat, S("xops")));
    assert_false(ka_pattern_matches(pat, S("opsx")));
    assert_false(ka_pattern_matches(pat, S("my.team-a.x")));
    assert_false(ka_pattern_matches(pat, S("ops\n")));
    ka_pattern_free(pat);
    assert_int_equal(ka_pattern_compile("a*", &pat, err, sizeof(err)), 0);
    assert_true(ka_pattern_matches(pat, (ka_slice_t){NULL, 0}));
    ka_pattern_free(pat);
}

static void test_internal_and_kadmit_topics_are_always_protected(void **state)
{
    ka_policy_t *p = parse_ok("{}");
    const char *names[] = {"__consumer_offsets", "__transaction_state", "__share_group_state",
                           "__cluster_metadata", "__kadmit_ledger",     "__kadmit_limits"};

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_true(ka_policy_topic_is_protected(p, S(names[i])));
    assert_false(ka_policy_topic_is_protected(p, S("__consumer_offsets2")));
    assert_false(ka_policy_topic_is_protected(p, S("orders")));
    assert_int_equal(ka_policy_rule_count(p), 0);
    assert_null(ka_policy_topic_name_pattern(p));
    assert_string_equal(ka_policy_unknown_principal(p), "User:ANONYMOUS");
    ka_policy_unref(p);
}

static void test_first_matching_rule_applies_and_inherits_enforcement(void **state)
{
    ka_policy_t *p =
        parse_ok("{\"topic.rules\": [{\"match\": \"a\\\\..*\", \"partitions.max\": 4},"
                 " {\"match\": \".*\", \"partitions.max\": 8, \"enforcement\": \"enforce\"}],"
                 " \"enforcement\": \"audit\"}");

    (void)state;
    assert_int_equal(ka_policy_rule_for(p, S("a.b"))->partitions_max, 4);
    assert_int_equal(ka_policy_rule_for(p, S("b"))->partitions_max, 8);
    /* The top-level key comes after the rules but still applies to the first one. */
    assert_int_equal(ka_policy_rule_at(p, 0)->enforcement, KA_ENFORCEMENT_AUDIT);
    assert_int_equal(ka_policy_rule_at(p, 1)->enforcement, KA_ENFORCEMENT_ENFORCE);
    ka_policy_unref(p);
}

static void test_principals_with_topics_budgets_and_unknown_principal(void **state)
{
    ka_policy_t *p = parse_ok(
        "{\"principals\": {\"User:bob\": {\"topics\": [\"bob\\\\..*\"], \"budget.partitions\": 5,"
        " \"exempt\": [\"max.broker.partitions\", \"topic.name.pattern\"]},"
        " \"User:alice\": {\"topics\": []}}, \"principal.unknown\": \"User:guest\","
        " \"topic.rules\": [{\"match\": \"x\", \"configs\": {\"cleanup.policy\":"
        " {\"allowed\": [\"delete\", \"compact\"]}}}]}");
    const ka_principal_rule_t *bob = ka_policy_principal(p, "User:bob");
    const ka_principal_rule_t *alice = ka_policy_principal(p, "User:alice");
    const ka_config_bound_t *c = &ka_policy_rule_at(p, 0)->configs[0];

    (void)state;
    assert_non_null(bob);
    assert_int_equal(bob->topic_count, 1);
    assert_true(ka_pattern_matches(bob->topics[0], S("bob.t")));
    assert_int_equal(bob->budget_partitions, 5);
    assert_int_equal(bob->exempt, KA_EXEMPT_BROKER_LIMITS | KA_EXEMPT_TOPIC_NAME_PATTERN);
    /* An empty list is "nowhere", not "anywhere". */
    assert_non_null(alice);
    assert_non_null(alice->topics);
    assert_int_equal(alice->topic_count, 0);
    assert_int_equal(ka_policy_principal_count(p), 2);
    assert_string_equal(ka_policy_principal_at(p, 0)->principal, "User:alice");
    assert_string_equal(ka_policy_unknown_principal(p), "User:guest");
    assert_int_equal(c->allowed_count, 2);
    assert_string_equal(c->allowed[1], "compact");
    ka_policy_unref(p);
}

static const struct {
    const char *json;
    const char *message; /* the error starts with this */
} refusals[] = {
    {"{\"topic.rules\": [{\"match\": \"a\", \"replication.factor.mni\": 2}]}",
     "topic.rules.0.replication.factor.mni: unknown key"},
    {"{\"topic.rules\": [{\"partitions.max\": 2}]}", "topic.rules.0: missing \"match\""},
    {"{\"topic.rules\": [{\"match\": \"team-(a\"}]}",
     "topic.rules.0.match: not a valid regular expression at offset 7"},
    {"{\"topic.name.pattern\": \"[a-z\"}",
     "topic.name.pattern: not a valid regular expression at offset 4"},
    {"{\"protected.topics\": [\"ok\", \"*x\"]}",
     "protected.topics.1: not a valid regular expression at offset 0"},
    {"{\"protected.topics\": \"keep\"}", "protected.topics: must be an array"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"replication.factor.min\": 3,"
     " \"replication.factor.max\": 2}]}",
     "topic.rules.0: replication.factor.min (3) is greater than replication.factor.max (2)"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"partitions.min\": 5, \"partitions.max\": 4}]}",
     "topic.rules.0: partitions.min (5) is greater than partitions.max (4)"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"partitions.max\": 0}]}",
     "topic.rules.0.partitions.max: must be an integer between 1 and 2147483647, got 0"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"budget.partitions\": -1}]}",
     "topic.rules.0.budget.partitions: must be an integer between 0"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"enforcement\": \"warn\"}]}",
     "topic.rules.0.enforcement: must be \"enforce\" or \"audit\", got \"warn\""},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"compression.type\": {\"allowed\": "
     "[\"lz4\"]}}}]}",
     "topic.rules.0.configs.compression.type: unknown topic config; a rule can bound "
     "min.insync.replicas, retention.ms, retention.bytes, cleanup.policy, max.message.bytes and "
     "segment.bytes"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"retention.ms\": {\"min\": 10, "
     "\"max\": 5}}}]}",
     "topic.rules.0.configs.retention.ms: min (10) is greater than max (5)"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"retention.ms\": {\"least\": 1}}}]}",
     "topic.rules.0.configs.retention.ms.least: unknown key"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"cleanup.policy\": {\"min\": 1}}}]}",
     "topic.rules.0.configs.cleanup.policy.min: unknown key"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"retention.ms\": {}}}]}",
     "topic.rules.0.configs.retention.ms: must be an object"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"retention.ms\": {\"min\": 1, "
     "\"allowed\": [\"2\"]}}}]}",
     "topic.rules.0.configs.retention.ms: set either min/max or allowed"},
    {"{\"topic.rules\": [{\"match\": \"a\", \"configs\": {\"min.insync.replicas\": {\"min\": "
     "0}}}]}",
     "topic.rules.0.configs.min.insync.replicas.min: must be an integer between 1"},
    {"{\"topic.rules\": {\"match\": \"a\"}}", "topic.rules: must be an array of rules"},
    {"{\"principals\": {\"cruise-control\": {}}}",
     "principals.cruise-control: must look like \"Type:name\""},
    {"{\"principals\": {\"User:cc\": {\"exempt\": [\"everything\"]}}}",
     "principals.User:cc.exempt.0: must be one of"},
    {"{\"principals\": {\"User:cc\": {\"exempt\": [\"topic.rules\"], \"admin\": true}}}",
     "principals.User:cc.admin: unknown key"},
    {"{\"principals\": {\"User:cc\": {\"budget.partitions\": 4}}}",
     "principals.User:cc.budget.partitions: needs \"topics\""},
    {"{\"principals\": {\"User:cc\": {\"topics\": [\"(\"]}}}",
     "principals.User:cc.topics.0: not a valid regular expression at offset 1"},
    {"{\"principal.unknown\": \"ANONYMOUS\"}", "principal.unknown: must look like \"Type:name\""},
    {"{\"principal.unknown\": 3}", "principal.unknown: must be a non-empty string, got 3"},
    {"{\"topic.rule\": []}", "topic.rule: unknown key"},
};

static void test_each_mistake_is_refused_naming_its_path(void **state)
{
    char err[512];
    ka_policy_t *p;

    (void)state;
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        p = NULL;
        err[0] = '\0';
        if (ka_policy_parse(refusals[i].json, strlen(refusals[i].json), 1, &p, err, sizeof(err)) !=
            KA_EINVALID)
            fail_msg("accepted: %s", refusals[i].json);
        assert_null(p);
        if (strncmp(err, refusals[i].message, strlen(refusals[i].message)) != 0)
            fail_msg("%s\n  said: %s\n  want: %s", refusals[i].json, err, refusals[i].message);
    }
}

static void test_rules_round_trip_canonically(void **state)
{
    const char *docs[] = {
        example,
        "{\"topic.rules\": [{\"match\": \"b\", \"enforcement\": \"audit\", \"configs\":"
        " {\"segment.bytes\": {\"min\": 1048576}, \"cleanup.policy\": {\"allowed\": "
        "[\"delete\"]}}},"
        " {\"match\": \"a\", \"partitions.min\": 1}], \"principals\": {\"User:z\": {},"
        " \"User:a\": {\"topics\": [], \"exempt\": [\"protected.topics\", \"topic.rules\"]}},"
        " \"principal.unknown\": \"User:nobody\", \"enforcement\": \"audit\"}",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        ka_policy_t *a = parse_ok(docs[i]), *b;
        char *first = ka_policy_serialize(a), *second;

        assert_non_null(first);
        b = parse_ok(first);
        second = ka_policy_serialize(b);
        assert_true(ka_policy_equal(a, b));
        assert_string_equal(first, second);
        free(first);
        free(second);
        ka_policy_unref(a);
        ka_policy_unref(b);
    }
}

static void test_rules_make_policies_differ(void **state)
{
    ka_policy_t *plain = parse_ok("{}"),
                *ruled = parse_ok("{\"topic.rules\": [{\"match\": \"a\", \"partitions.max\": 4}]}"),
                *other = parse_ok("{\"topic.rules\": [{\"match\": \"a\", \"partitions.max\": 5}]}"),
                *inherit = parse_ok("{\"topic.rules\": [{\"match\": \"a\"}]}"),
                *written = parse_ok("{\"topic.rules\": [{\"match\": \"a\", \"enforcement\": "
                                    "\"enforce\"}]}"),
                *anon = parse_ok("{\"principal.unknown\": \"User:ANONYMOUS\"}");

    (void)state;
    assert_false(ka_policy_equal(plain, ruled));
    assert_false(ka_policy_equal(ruled, other));
    /* Inheriting and writing the same value differ: a later top-level change tells them apart. */
    assert_false(ka_policy_equal(inherit, written));
    assert_true(ka_policy_equal(plain, anon));
    ka_policy_unref(plain);
    ka_policy_unref(ruled);
    ka_policy_unref(other);
    ka_policy_unref(inherit);
    ka_policy_unref(written);
    ka_policy_unref(anon);
}

static void test_derived_policies_keep_the_rules(void **state)
{
    ka_policy_t *base = parse_ok(example), *a = NULL, *b = NULL, *c = NULL;
    char err[256];

    (void)state;
    assert_int_equal(ka_policy_with_broker_limit(base, 2, 50, 2, &a, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_with_default_limit(a, 70, 3, &b, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_without_broker_limit(b, 2, 4, &c), 0);
    ka_policy_unref(base);
    ka_policy_unref(a);
    ka_policy_unref(b);
    /* The rules outlive the snapshots they came from. */
    assert_int_equal(ka_policy_default_broker_limit(c), 70);
    assert_int_equal(ka_policy_rule_for(c, S("team-a.x"))->partitions_max, 12);
    assert_non_null(ka_policy_principal(c, "User:cruise-control"));
    assert_true(ka_policy_topic_is_protected(c, S("keep.x")));
    ka_policy_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_example_parses_as_written),
        cmocka_unit_test(test_patterns_match_the_whole_name_only),
        cmocka_unit_test(test_internal_and_kadmit_topics_are_always_protected),
        cmocka_unit_test(test_first_matching_rule_applies_and_inherits_enforcement),
        cmocka_unit_test(test_principals_with_topics_budgets_and_unknown_principal),
        cmocka_unit_test(test_each_mistake_is_refused_naming_its_path),
        cmocka_unit_test(test_rules_round_trip_canonically),
        cmocka_unit_test(test_rules_make_policies_differ),
        cmocka_unit_test(test_derived_policies_keep_the_rules),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
