/*
 * ka_engine_rules.h: topic rules, principals and budgets in the admission
 * engine (the policy side is ka_policy_rules.h).
 *
 * A budget counts partitions, not replicas: every topic of the view that
 * it covers, plus the outstanding PARTITIONS reservations (this sidecar's,
 * and in phase 2 the cluster's earlier intents) for covered topics beyond
 * what the view shows. A rule's budget covers the topics the rule applies
 * to; a principal's covers the topics matching its "topics" patterns.
 */
#ifndef KA_ENGINE_RULES_H
#define KA_ENGINE_RULES_H

#include <stdint.h>

#include "ka_policy_rules.h"
#include "ka_verdict.h"

/* The partitions counted against the budget now, from ctx's view and ledger. */
int64_t ka_rules_rule_budget_used(const ka_decision_context_t *ctx, const ka_topic_rule_t *rule);
int64_t ka_rules_principal_budget_used(const ka_decision_context_t *ctx,
                                       const ka_principal_rule_t *principal);

#endif
