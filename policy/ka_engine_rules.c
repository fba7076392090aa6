/*
 * ka_engine_rules.c: see ka_engine_rules.h.
 *
 * Interface first: a policy has no rules or principals until the parser
 * fills them in (ka_policy_rules.c), so no budget is in use yet.
 */
#include "ka_engine_rules.h"

int64_t ka_rules_rule_budget_used(const ka_decision_context_t *ctx, const ka_topic_rule_t *rule)
{
    (void)ctx;
    (void)rule;
    return 0;
}

int64_t ka_rules_principal_budget_used(const ka_decision_context_t *ctx,
                                       const ka_principal_rule_t *principal)
{
    (void)ctx;
    (void)principal;
    return 0;
}
