/*
 * test_engine_rules.c: the engine's guardrail checks on synthetic views:
 * topic.name.pattern, a rule's replication-factor and partition bounds (also
 * at the broker's defaults), rule and principal budgets with reservations
 * and in phase 2, principals' topics, exemptions, and audit-mode rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ka_engine_rules.h"
#include "policy_fixtures.h"

#define TEAM_A "\"match\": \"team-a\\\\..*\""
#define RULES                                                                                      \
    "{\"max.broker.partitions\": 100, \"topic.name.pattern\": \"^[a-z0-9][a-z0-9._-]*$\","         \
    " \"topic.rules\": [{" TEAM_A                                                                  \
    ", \"replication.factor.min\": 2, \"replication.factor.max\": 3,"                              \
    " \"partitions.max\": 12, \"budget.partitions\": 20}],"                                        \
    " \"principals\": {\"User:cruise-control\": {\"exempt\": [\"topic.rules\"]},"                  \
    " \"User:bob\": {\"topics\": [\"bob\\\\..*\"], \"budget.partitions\": 8},"                     \
    " \"User:ops\": {\"exempt\": [\"max.broker.partitions\"]}}}"

struct env {
    ka_policy_t *policy;
    ka_cluster_t *view;
    ka_reservations_t *ledger;
    ka_decision_context_t ctx;
};

/* Brokers 1..3; team-a.base with 10 partitions (RF 2); defaults num.partitions 20, RF 1. */
static ka_cluster_t *view_with_team_a(int32_t num_partitions, int16_t rf)
{
    ka_cluster_builder_t *b = fx_builder(0);

    for (int32_t id = 1; id <= 3; id++)
        fx_broker(b, id, NULL, false);
    fx_topic(b, "team-a.base", 10, 2, (const int32_t[]){1, 2, 3}, 3);
    fx_topic(b, "bob.base", 5, 1, (const int32_t[]){1, 2, 3}, 3);
    fx_topic(b, "other", 30, 1, (const int32_t[]){1, 2, 3}, 3);
    ka_cluster_builder_set_defaults(b, &(ka_broker_defaults_t){num_partitions, rf, true});
    return fx_finish(b);
}

static void env_init(struct env *e, const char *policy)
{
    e->policy = fx_policy(policy);
    e->view = view_with_team_a(20, 1);
    OK(ka_reservations_new(&e->ledger));
    e->ctx = (ka_decision_context_t){e->policy, e->view, e->ledger, 1000, 42, NULL};
}

static void env_free(struct env *e)
{
    ka_policy_unref(e->policy);
    ka_cluster_unref(e->view);
    ka_reservations_free(e->ledger);
}

/* One CreateTopics item through the engine. */
static ka_verdict_t create(struct env *e, const char *name, int32_t partitions, int16_t rf)
{
    ka_create_topic_t t = fx_create(name, partitions, rf);
    ka_verdict_t v;

    OK(ka_engine_create_topics(&e->ctx, &t, 1, &v));
    return v;
}

static void assert_rejected(const ka_verdict_t *v, enum ka_reason reason, const char *rule,
                            const char *message_start)
{
    assert_int_equal(v->kind, KA_VERDICT_REJECT);
    assert_int_equal(v->reason, reason);
    assert_int_equal(v->error_code, 44);
    assert_int_equal(v->reservation_id, 0);
    assert_string_equal(v->rule, rule);
    if (strncmp(v->message, message_start, strlen(message_start)) != 0)
        fail_msg("message: %s\n  want: %s...", v->message, message_start);
}

static void test_a_name_outside_the_pattern_is_refused_and_one_inside_admitted(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    v = create(&e, "Orders", 3, 1);
    assert_rejected(&v, KA_REASON_TOPIC_NAME, "topic.name.pattern",
                    "Topic name 'Orders' does not match topic.name.pattern "
                    "'^[a-z0-9][a-z0-9._-]*$'. Choose a name that matches it.");
    fx_release(&v, 1);
    v = create(&e, "orders", 3, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_null(v.rule);
    fx_release(&v, 1);
    /* kadmit creates its own topics under any policy. */
    v = create(&e, "__kadmit_ledger", 1, 3);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_replication_factor_outside_the_rule_says_what_to_use(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    v = create(&e, "team-a.low", 3, 1);
    assert_rejected(&v, KA_REASON_RULE_REPLICATION, "team-a\\..*",
                    "replication factor 1 is below the minimum 2 of rule 'team-a\\..*'. Create "
                    "topic 'team-a.low' with a replication factor of at least 2.");
    fx_release(&v, 1);
    v = create(&e, "team-a.high", 3, 4);
    /* Four replicas on three brokers is the broker's error, not a rule's: it waits for a view
     * taken after the request before it is left to the broker. */
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_UNKNOWN_BROKER);
    fx_release(&v, 1);
    v = create(&e, "team-a.ok", 3, 2);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_defaults_are_judged_at_the_brokers_values(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    /* num.partitions 20 > partitions.max 12 (replication given). */
    v = create(&e, "team-a.dflt", -1, 2);
    assert_rejected(&v, KA_REASON_RULE_PARTITIONS, "team-a\\..*",
                    "partition count 20 (the broker's num.partitions) is above the maximum 12 of "
                    "rule 'team-a\\..*'. Create topic 'team-a.dflt' with at most 12 partitions.");
    fx_release(&v, 1);
    /* default.replication.factor 1 < 2. */
    v = create(&e, "team-a.dflt", 4, -1);
    assert_rejected(&v, KA_REASON_RULE_REPLICATION, "team-a\\..*",
                    "replication factor 1 (the broker's default.replication.factor) is below the "
                    "minimum 2");
    fx_release(&v, 1);
    v = create(&e, "team-a.many", 13, 2);
    assert_rejected(&v, KA_REASON_RULE_PARTITIONS, "team-a\\..*",
                    "partition count 13 is above the maximum 12");
    fx_release(&v, 1);
    env_free(&e);
}

static void test_rule_budget_counts_the_view_and_reservations(void **state)
{
    struct env e;
    ka_verdict_t v;
    const ka_topic_rule_t *rule;

    (void)state;
    env_init(&e, RULES);
    rule = ka_policy_rule_at(e.policy, 0);
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 10);
    v = create(&e, "team-a.one", 6, 2); /* 10 + 6 = 16 */
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 16);
    v = create(&e, "team-a.two", 5, 2); /* 16 + 5 = 21 > 20 */
    assert_rejected(&v, KA_REASON_RULE_BUDGET, "team-a\\..*",
                    "Topic 'team-a.two' would add 5 partitions to rule 'team-a\\..*', whose topics "
                    "already have 16 of its budget.partitions 20. Add at most 4 partitions, delete "
                    "topics it covers, or raise its budget.partitions.");
    fx_release(&v, 1);
    v = create(&e, "team-a.two", 4, 2); /* exactly 20 */
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    /* Topics of no rule, or of another, do not count. */
    v = create(&e, "free", 12, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 20);
    env_free(&e);
}

static void test_growing_a_topic_is_bounded_by_partitions_max_and_the_budget(void **state)
{
    struct env e;
    ka_create_partitions_t grow = {.name = S("team-a.base"), .count = 13};
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_rejected(&v, KA_REASON_RULE_PARTITIONS, "team-a\\..*",
                    "Growing topic 'team-a.base' to 13 partitions goes above the maximum 12 "
                    "partitions of rule 'team-a\\..*'. Ask for at most 12 partitions in total.");
    fx_release(&v, 1);
    grow.count = 12;
    OK(ka_engine_create_partitions(&e.ctx, &grow, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    /* The growth is reserved: 12 of 20 in use now. */
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, ka_policy_rule_at(e.policy, 0)), 12);
    env_free(&e);
}

static void test_principal_topics_and_budget_bind_only_that_principal(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    e.ctx.principal = "User:bob";
    v = create(&e, "alice.x", 1, 1);
    assert_rejected(&v, KA_REASON_PRINCIPAL_TOPICS, "principals",
                    "Principal User:bob may not create topic 'alice.x': it may create only topics "
                    "matching 'bob\\..*' (principals.User:bob.topics).");
    fx_release(&v, 1);
    v = create(&e, "bob.x", 4, 1); /* 5 + 4 > 8 */
    assert_rejected(&v, KA_REASON_PRINCIPAL_BUDGET, "principals",
                    "Topic 'bob.x' would add 4 partitions to principal User:bob, whose topics "
                    "already have 5 of its budget.partitions 8. Add at most 3 partitions");
    fx_release(&v, 1);
    v = create(&e, "bob.x", 3, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    /* Another principal may create alice.x. */
    e.ctx.principal = "User:alice";
    v = create(&e, "alice.x", 1, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_unknown_principal_is_judged_as_principal_unknown(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"principal.unknown\": \"User:guest\","
                 " \"principals\": {\"User:guest\": {\"topics\": []}}}");
    v = create(&e, "anything", 1, 1); /* ctx.principal NULL */
    assert_rejected(&v, KA_REASON_PRINCIPAL_TOPICS, "principals",
                    "Principal User:guest may not create topics (principals.User:guest.topics is "
                    "empty)");
    fx_release(&v, 1);
    e.ctx.principal = "User:known";
    v = create(&e, "anything", 1, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_topic_rules_exemption_skips_rules_but_nothing_else(void **state)
{
    struct env e;
    ka_reassignment_t shrink = {S("team-a.base"), 0, (const int32_t[]){1}, 1};
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    OK(ka_engine_alter_reassignments(&e.ctx, &shrink, 1, &v));
    assert_rejected(&v, KA_REASON_RULE_REPLICATION, "team-a\\..*",
                    "Reassigning partition 0 of topic 'team-a.base' to 1 replicas goes below the "
                    "minimum replication factor 2 of rule 'team-a\\..*'. Keep the partition at "
                    "at least 2 replicas.");
    fx_release(&v, 1);
    e.ctx.principal = "User:cruise-control";
    OK(ka_engine_alter_reassignments(&e.ctx, &shrink, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    fx_release(&v, 1);
    /* Rule bounds and budgets are skipped, the name pattern is not. */
    v = create(&e, "team-a.big", 30, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    fx_release(&v, 1);
    v = create(&e, "Team-A", 1, 1);
    assert_int_equal(v.reason, KA_REASON_TOPIC_NAME);
    fx_release(&v, 1);
    /* ... nor max.broker.partitions: 3 x 100 replicas is far beyond the brokers' room. */
    v = create(&e, "cc.huge", 100, 3);
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.reason, KA_REASON_BROKER_LIMIT);
    assert_string_equal(v.rule, "max.broker.partitions");
    fx_release(&v, 1);
    env_free(&e);
}

static void test_broker_limit_exemption_only_for_the_principal_the_policy_names(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, RULES);
    v = create(&e, "huge", 100, 3);
    assert_int_equal(v.reason, KA_REASON_BROKER_LIMIT);
    fx_release(&v, 1);
    e.ctx.principal = "User:ops";
    v = create(&e, "huge", 100, 3);
    /* Forwarded unchanged: the broker places it, kadmit reserves the broker's worst case. */
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_false(v.audit);
    assert_true(v.reservation_id != 0);
    fx_release(&v, 1);
    /* ... still within the rules. */
    v = create(&e, "team-a.x", 3, 1);
    assert_int_equal(v.reason, KA_REASON_RULE_REPLICATION);
    fx_release(&v, 1);
    env_free(&e);
}

static void test_audit_rule_admits_what_it_flags_but_limits_still_reject(void **state)
{
    struct env e;
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"max.broker.partitions\": 40, \"topic.rules\": [{" TEAM_A
                 ", \"replication.factor.min\": 2, \"enforcement\": \"audit\"}]}");
    v = create(&e, "team-a.low", 3, 1);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_true(v.audit);
    assert_int_equal(v.reason, KA_REASON_RULE_REPLICATION);
    assert_string_equal(v.rule, "team-a\\..*");
    assert_non_null(strstr(v.message, "below the minimum 2 of rule 'team-a\\..*'"));
    assert_true(v.reservation_id != 0);
    fx_release(&v, 1);
    /* The broker limit follows the policy's enforcement (enforce). */
    v = create(&e, "team-a.big", 80, 1);
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_false(v.audit);
    assert_int_equal(v.reason, KA_REASON_BROKER_LIMIT);
    assert_string_equal(v.rule, "max.broker.partitions");
    fx_release(&v, 1);
    env_free(&e);
}

static void test_phase_two_rechecks_budgets_against_earlier_intents(void **state)
{
    struct env e;
    ka_reservations_t *earlier;
    ka_verdict_t v;
    uint64_t id;

    (void)state;
    env_init(&e, RULES);
    v = create(&e, "team-a.mine", 6, 2); /* phase 1: 10 + 6 fits */
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    /* Another sidecar's intent, ordered before, took 5 of the budget's 10. */
    OK(ka_reservations_new(&earlier));
    OK(ka_reservations_add(earlier,
                           &(ka_reservation_spec_t){.topic = S("team-a.theirs"),
                                                    .partition_count = 5,
                                                    .new_partitions = 5,
                                                    .deltas = &(ka_broker_delta_t){1, 5},
                                                    .delta_count = 1,
                                                    .expires_at_ms = 60000},
                           &id));
    e.ctx.ledger = earlier;
    OK(ka_engine_recheck(&e.ctx, &v, 1, KA_REASON_CONCURRENT));
    assert_rejected(
        &v, KA_REASON_RULE_BUDGET, "team-a\\..*",
        "Topic 'team-a.mine' would add 6 partitions to rule 'team-a\\..*', whose topics "
        "already have 15 of its budget.partitions 20. Add at most 5 partitions");
    assert_int_equal(ka_reservations_count(earlier), 1);
    ka_reservations_free(earlier);
    e.ctx.ledger = e.ledger;
    fx_release(&v, 1);
    env_free(&e);
}

static void test_phase_two_keeps_an_audit_rules_flag(void **state)
{
    struct env e;
    ka_reservations_t *earlier;
    ka_verdict_t v;

    (void)state;
    env_init(&e, "{\"topic.rules\": [{" TEAM_A
                 ", \"partitions.max\": 2, \"enforcement\": \"audit\"}]}");
    v = create(&e, "team-a.wide", 3, 1);
    assert_true(v.audit);
    OK(ka_reservations_new(&earlier));
    e.ctx.ledger = earlier;
    OK(ka_engine_recheck(&e.ctx, &v, 1, KA_REASON_CONCURRENT));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_true(v.audit);
    assert_int_equal(v.reason, KA_REASON_RULE_PARTITIONS);
    assert_string_equal(v.rule, "team-a\\..*");
    assert_true(v.reservation_id != 0);
    ka_reservations_free(earlier);
    e.ctx.ledger = e.ledger;
    fx_release(&v, 1);
    env_free(&e);
}

static void test_auto_creation_is_judged_by_name_and_rules_at_the_defaults(void **state)
{
    struct env e;
    ka_slice_t names[] = {S("Bad_Name"), S("team-a.auto"), S("plain")};
    ka_verdict_t v[3];

    (void)state;
    env_init(&e, RULES);
    OK(ka_engine_auto_create(&e.ctx, names, 3, true, v));
    assert_rejected(&v[0], KA_REASON_TOPIC_NAME, "topic.name.pattern", "Topic name 'Bad_Name'");
    /* Defaults 20 partitions x RF 1: both bounds of the rule are broken; the first is named. */
    assert_rejected(&v[1], KA_REASON_RULE_REPLICATION, "team-a\\..*",
                    "replication factor 1 (the broker's default.replication.factor) is below");
    assert_int_equal(v[2].kind, KA_VERDICT_ADMIT);
    fx_release(v, 3);
    env_free(&e);
}

static void test_budget_totals_follow_a_new_view(void **state)
{
    struct env e;
    ka_cluster_t *bigger;
    ka_cluster_builder_t *b = fx_builder(0);
    const ka_topic_rule_t *rule;

    (void)state;
    env_init(&e, RULES);
    rule = ka_policy_rule_at(e.policy, 0);
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 10);
    for (int32_t id = 1; id <= 3; id++)
        fx_broker(b, id, NULL, false);
    fx_topic(b, "team-a.base", 10, 2, (const int32_t[]){1, 2, 3}, 3);
    fx_topic(b, "team-a.new", 7, 2, (const int32_t[]){1, 2, 3}, 3);
    bigger = fx_finish(b);
    e.ctx.view = bigger;
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 17);
    e.ctx.view = e.view;
    assert_int_equal(ka_rules_rule_budget_used(&e.ctx, rule), 10);
    ka_cluster_unref(bigger);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_name_outside_the_pattern_is_refused_and_one_inside_admitted),
        cmocka_unit_test(test_replication_factor_outside_the_rule_says_what_to_use),
        cmocka_unit_test(test_defaults_are_judged_at_the_brokers_values),
        cmocka_unit_test(test_rule_budget_counts_the_view_and_reservations),
        cmocka_unit_test(test_growing_a_topic_is_bounded_by_partitions_max_and_the_budget),
        cmocka_unit_test(test_principal_topics_and_budget_bind_only_that_principal),
        cmocka_unit_test(test_unknown_principal_is_judged_as_principal_unknown),
        cmocka_unit_test(test_topic_rules_exemption_skips_rules_but_nothing_else),
        cmocka_unit_test(test_broker_limit_exemption_only_for_the_principal_the_policy_names),
        cmocka_unit_test(test_audit_rule_admits_what_it_flags_but_limits_still_reject),
        cmocka_unit_test(test_phase_two_rechecks_budgets_against_earlier_intents),
        cmocka_unit_test(test_phase_two_keeps_an_audit_rules_flag),
        cmocka_unit_test(test_auto_creation_is_judged_by_name_and_rules_at_the_defaults),
        cmocka_unit_test(test_budget_totals_follow_a_new_view),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
