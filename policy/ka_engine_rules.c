/*
 * ka_engine_rules.c: topic rules, principals and budgets in the engine;
 * see ka_engine_rules.h and ka_engine_work.h.
 *
 * An item is judged here after the checks that are the broker's business
 * and before the KIP-578 arithmetic. The checks, in order: the name pattern,
 * the principal's "topics", the first matching rule's replication factor,
 * partition count and topic configs, the rule's budget, the principal's
 * budget. The first that fails in enforce mode rejects; one that fails in
 * an audit-mode rule flags the item, which then goes on.
 *
 * Budgets. Matching every topic of a 200,000-partition view against the
 * rules on every decision would cost milliseconds; the partitions each rule
 * and principal covers in a view are counted once per (rules, view) pair and
 * cached in the rules. Only the outstanding reservations, which are few, are
 * matched per decision.
 */
#include "ka_engine_rules.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_engine_work.h"
#include "ka_message.h"
#include "ka_policy_snapshot.h"
#include "ka_rules_model.h"

/* Guardrail rejections are policy violations, whatever reject.error.code says for limits. */
#define GUARDRAIL_ERROR_CODE KA_KAFKA_ERR_POLICY_VIOLATION

static bool principal_covers(const ka_principal_rule_t *pr, ka_slice_t topic, void *md)
{
    for (size_t i = 0; i < pr->topic_count; i++) {
        if (ka_pattern_matches_with(pr->topics[i], topic, md))
            return true;
    }
    return false;
}

/* Whether the principal may create topic: its "topics", or anywhere without them. */
static bool principal_may(const ka_principal_rule_t *pr, ka_slice_t topic)
{
    void *md;
    bool may;

    if (pr->topics == NULL)
        return true;
    md = ka_pattern_match_data_new();
    may = principal_covers(pr, topic, md);
    ka_pattern_match_data_free(md);
    return may;
}

/* Counts, for every rule and principal, the partitions of the view's topics it covers. */
static int count_view(const ka_rules_t *r, const ka_cluster_t *view, int64_t *rules,
                      int64_t *principals)
{
    size_t n = ka_cluster_topic_count(view);
    void *md = ka_pattern_match_data_new();

    if (md == NULL)
        return KA_ENOMEM;
    for (size_t t = 0; t < n; t++) {
        ka_slice_t name;
        int32_t count = ka_cluster_topic_partition_count(ka_cluster_topic_at(view, t, &name));

        for (size_t i = 0; i < r->rule_count; i++) {
            if (ka_pattern_matches_with(r->rules[i].match, name, md)) {
                rules[i] += count;
                break;
            }
        }
        for (size_t i = 0; i < r->principal_count; i++) {
            if (principal_covers(&r->principals[i], name, md))
                principals[i] += count;
        }
    }
    ka_pattern_match_data_free(md);
    return 0;
}

/* The view's total for rule or principal `index` (is_rule picks which); -1 without memory. */
static int64_t view_total(const ka_policy_t *policy, const ka_cluster_t *view, bool is_rule,
                          size_t index)
{
    ka_rules_t *r = policy->rules;
    int64_t total = -1;

    if (view == NULL)
        return 0;
    pthread_mutex_lock(&r->cache_lock);
    if (r->cache_view != view) {
        int64_t *rules = calloc(r->rule_count + 1, sizeof(*rules));
        int64_t *principals = calloc(r->principal_count + 1, sizeof(*principals));

        if (rules == NULL || principals == NULL || count_view(r, view, rules, principals) < 0) {
            free(rules);
            free(principals);
            goto out;
        }
        ka_rules_cache_free(r);
        /* The reference only keeps the address from being reused; the view is not changed. */
        r->cache_view = ka_cluster_ref((ka_cluster_t *)view);
        r->cache_rule_totals = rules;
        r->cache_principal_totals = principals;
    }
    total = is_rule ? r->cache_rule_totals[index] : r->cache_principal_totals[index];
out:
    pthread_mutex_unlock(&r->cache_lock);
    return total;
}

/*
 * Partitions that outstanding reservations add to covered topics beyond what
 * the view shows: a new topic's partitions, a CreatePartitions' new ones.
 */
static int64_t reserved_beyond_view(const ka_decision_context_t *ctx, const ka_topic_rule_t *rule,
                                    const ka_principal_rule_t *pr)
{
    size_t n = ctx->ledger != NULL ? ka_reservations_count(ctx->ledger) : 0;
    void *md = n > 0 ? ka_pattern_match_data_new() : NULL;
    int64_t sum = 0;

    for (size_t i = 0; i < n && md != NULL; i++) {
        ka_reservation_spec_t s;
        const ka_cluster_topic_t *t;
        int64_t beyond;

        ka_reservations_spec_at(ctx->ledger, i, &s);
        if (s.kind != KA_RESERVATION_PARTITIONS || s.new_partitions <= 0)
            continue;
        if (rule != NULL ? ka_policy_rule_for(ctx->policy, s.topic) != rule
                         : !principal_covers(pr, s.topic, md))
            continue;
        t = ctx->view != NULL ? ka_cluster_find_topic(ctx->view, s.topic) : NULL;
        beyond = s.partition_count - (t != NULL ? ka_cluster_topic_partition_count(t) : 0);
        sum += beyond < s.new_partitions ? (beyond > 0 ? beyond : 0) : s.new_partitions;
    }
    ka_pattern_match_data_free(md);
    return sum;
}

int64_t ka_rules_rule_budget_used(const ka_decision_context_t *ctx, const ka_topic_rule_t *rule)
{
    const ka_rules_t *r = ctx->policy->rules;
    int64_t total;

    if (r == NULL || rule < r->rules || rule >= r->rules + r->rule_count)
        return 0;
    total = view_total(ctx->policy, ctx->view, true, (size_t)(rule - r->rules));
    return total < 0 ? total : total + reserved_beyond_view(ctx, rule, NULL);
}

int64_t ka_rules_principal_budget_used(const ka_decision_context_t *ctx,
                                       const ka_principal_rule_t *pr)
{
    const ka_rules_t *r = ctx->policy->rules;
    int64_t total;

    if (r == NULL || pr < r->principals || pr >= r->principals + r->principal_count)
        return 0;
    total = view_total(ctx->policy, ctx->view, false, (size_t)(pr - r->principals));
    return total < 0 ? total : total + reserved_beyond_view(ctx, NULL, pr);
}

bool ka_reason_is_guardrail(enum ka_reason reason)
{
    return reason >= KA_REASON_TOPIC_NAME && reason <= KA_REASON_PRINCIPAL_BUDGET;
}

/*
 * One failed check. Enforce: v becomes the rejection (1). Audit: the first
 * flag is kept and the item goes on (0). message is taken over.
 */
static int flag(const struct ka_work *w, ka_verdict_t *v, bool audit, enum ka_reason reason,
                const char *rule, char *message)
{
    (void)w;
    if (message == NULL)
        return KA_ENOMEM;
    if (audit && v->message != NULL) {
        free(message);
        return 0;
    }
    if (ka_verdict_set_cause(v, message, reason, rule, audit) < 0)
        return KA_ENOMEM;
    if (audit)
        return 0;
    v->kind = KA_VERDICT_REJECT;
    v->error_code = GUARDRAIL_ERROR_CODE;
    return 1;
}

#define TOPIC(item) (int)(item)->topic.len, (const char *)(item)->topic.ptr

static int check_name(const struct ka_work *w, const ka_rules_item_t *item, ka_verdict_t *v)
{
    const ka_pattern_t *pattern = ka_policy_topic_name_pattern(w->ctx->policy);

    if (pattern == NULL || (w->exempt & KA_EXEMPT_TOPIC_NAME_PATTERN) ||
        ka_pattern_matches(pattern, item->topic))
        return 0;
    return flag(w, v, w->audit, KA_REASON_TOPIC_NAME, "topic.name.pattern",
                ka_message_format("Topic name '%.*s' does not match topic.name.pattern '%s'. "
                                  "Choose a name that matches it.",
                                  TOPIC(item), ka_pattern_source(pattern)));
}

static int check_principal_topics(const struct ka_work *w, const ka_rules_item_t *item,
                                  ka_verdict_t *v)
{
    const ka_principal_rule_t *pr = w->principal;
    char list[512] = "";
    size_t used = 0;

    if (pr == NULL || pr->topics == NULL || principal_may(pr, item->topic))
        return 0;
    for (size_t i = 0; i < pr->topic_count && used < sizeof(list); i++) {
        int n = snprintf(list + used, sizeof(list) - used, "%s'%s'", i > 0 ? ", " : "",
                         ka_pattern_source(pr->topics[i]));
        used += n > 0 ? (size_t)n : 0;
    }
    if (pr->topic_count == 0)
        return flag(w, v, w->audit, KA_REASON_PRINCIPAL_TOPICS, "principals",
                    ka_message_format("Principal %s may not create topics (principals.%s.topics "
                                      "is empty), so topic '%.*s' is refused. Ask an operator to "
                                      "add a pattern for it.",
                                      pr->principal, pr->principal, TOPIC(item)));
    return flag(w, v, w->audit, KA_REASON_PRINCIPAL_TOPICS, "principals",
                ka_message_format("Principal %s may not create topic '%.*s': it may create only "
                                  "topics matching %s (principals.%s.topics). Choose a name that "
                                  "matches one of them.",
                                  pr->principal, TOPIC(item), list, pr->principal));
}

/* " (the broker's X)" after a value that came from a -1. */
static const char *default_note(bool is_default, const char *config)
{
    if (!is_default)
        return "";
    return strcmp(config, "num.partitions") == 0 ? " (the broker's num.partitions)"
                                                 : " (the broker's default.replication.factor)";
}

static int check_replication(const struct ka_work *w, const ka_topic_rule_t *rule,
                             const ka_rules_item_t *item, ka_verdict_t *v)
{
    int32_t rf = item->replication, lo = rule->replication_factor_min,
            hi = rule->replication_factor_max;
    bool audit = rule->enforcement == KA_ENFORCEMENT_AUDIT;
    const char *note = default_note(item->replication_default, "default.replication.factor");

    if (item->api == KA_RULES_GROW ||
        ((lo == KA_RULE_UNSET || rf >= lo) && (hi == KA_RULE_UNSET || rf <= hi)))
        return 0;
    if (item->api == KA_RULES_REASSIGN)
        return flag(w, v, audit, KA_REASON_RULE_REPLICATION, rule->name,
                    ka_message_format("Reassigning partition %d of topic '%.*s' to %d replicas "
                                      "goes %s the %s replication factor %d of rule '%s'. Keep "
                                      "the partition at %s %d replicas.",
                                      item->partition, TOPIC(item), rf, rf < lo ? "below" : "above",
                                      rf < lo ? "minimum" : "maximum", rf < lo ? lo : hi,
                                      rule->name, rf < lo ? "at least" : "at most",
                                      rf < lo ? lo : hi));
    if (lo != KA_RULE_UNSET && rf < lo)
        return flag(w, v, audit, KA_REASON_RULE_REPLICATION, rule->name,
                    ka_message_format("replication factor %d%s is below the minimum %d of rule "
                                      "'%s'. Create topic '%.*s' with a replication factor of at "
                                      "least %d.",
                                      rf, note, lo, rule->name, TOPIC(item), lo));
    return flag(w, v, audit, KA_REASON_RULE_REPLICATION, rule->name,
                ka_message_format("replication factor %d%s is above the maximum %d of rule '%s'. "
                                  "Create topic '%.*s' with a replication factor of at most %d.",
                                  rf, note, hi, rule->name, TOPIC(item), hi));
}

static int check_partitions(const struct ka_work *w, const ka_topic_rule_t *rule,
                            const ka_rules_item_t *item, ka_verdict_t *v)
{
    int32_t p = item->partitions, lo = rule->partitions_min, hi = rule->partitions_max;
    bool audit = rule->enforcement == KA_ENFORCEMENT_AUDIT;
    const char *note = default_note(item->partitions_default, "num.partitions");

    if (item->api == KA_RULES_REASSIGN)
        return 0;
    if (item->api == KA_RULES_GROW) {
        if (hi == KA_RULE_UNSET || p <= hi)
            return 0;
        return flag(w, v, audit, KA_REASON_RULE_PARTITIONS, rule->name,
                    ka_message_format("Growing topic '%.*s' to %d partitions goes above the "
                                      "maximum %d partitions of rule '%s'. Ask for at most %d "
                                      "partitions in total.",
                                      TOPIC(item), p, hi, rule->name, hi));
    }
    if (lo != KA_RULE_UNSET && p < lo)
        return flag(w, v, audit, KA_REASON_RULE_PARTITIONS, rule->name,
                    ka_message_format("partition count %d%s is below the minimum %d of rule "
                                      "'%s'. Create topic '%.*s' with at least %d partitions.",
                                      p, note, lo, rule->name, TOPIC(item), lo));
    if (hi != KA_RULE_UNSET && p > hi)
        return flag(w, v, audit, KA_REASON_RULE_PARTITIONS, rule->name,
                    ka_message_format("partition count %d%s is above the maximum %d of rule "
                                      "'%s'. Create topic '%.*s' with at most %d partitions.",
                                      p, note, hi, rule->name, TOPIC(item), hi));
    return 0;
}

static int check_configs(const struct ka_work *w, const ka_topic_rule_t *rule,
                         const ka_rules_item_t *item, ka_verdict_t *v)
{
    char msg[KA_MESSAGE_MAX];
    int rc;

    if (rule->config_count == 0 ||
        (item->api != KA_RULES_CREATE && item->api != KA_RULES_BROKER_CREATE))
        return 0;
    rc = ka_rules_check_configs(rule, w->ctx->view, item->configs, item->config_count, true, msg,
                                sizeof(msg));
    if (rc == KA_ENOMEM)
        return KA_ENOMEM;
    /* Any other error is an input the checker could not read: never pass it unjudged. */
    if (rc < 0)
        return flag(w, v, rule->enforcement == KA_ENFORCEMENT_AUDIT, KA_REASON_RULE_CONFIG,
                    rule->name,
                    ka_message_format("kadmit could not read the configs of this topic to judge "
                                      "them against rule '%s'; send them again",
                                      rule->name));
    if (rc == 0)
        return 0;
    return flag(w, v, rule->enforcement == KA_ENFORCEMENT_AUDIT, KA_REASON_RULE_CONFIG, rule->name,
                ka_message_format("%s", msg));
}

/* A budget: used + added against its size; `whose` names it in the message. */
static int check_budget(struct ka_work *w, ka_verdict_t *v, ka_slice_t topic, int32_t added,
                        int64_t budget, int64_t used, bool audit, enum ka_reason reason,
                        const char *rule, const char *whose)
{
    int64_t room = budget - used;

    if (used < 0)
        return KA_ENOMEM;
    if (added <= 0 || used + added <= budget)
        return 0;
    if (room <= 0)
        return flag(w, v, audit, reason, rule,
                    ka_message_format("Topic '%.*s' would add %d partitions to %s, whose topics "
                                      "already have %" PRId64 " of its budget.partitions %" PRId64
                                      ". The budget is used up: delete topics it covers, or raise "
                                      "its budget.partitions.",
                                      (int)topic.len, (const char *)topic.ptr, added, whose, used,
                                      budget));
    return flag(w, v, audit, reason, rule,
                ka_message_format("Topic '%.*s' would add %d partitions to %s, whose topics "
                                  "already have %" PRId64 " of its budget.partitions %" PRId64
                                  ". Add at most %" PRId64 " partitions, delete topics it "
                                  "covers, or raise its budget.partitions.",
                                  (int)topic.len, (const char *)topic.ptr, added, whose, used,
                                  budget, room));
}

/* The rule's budget in use in this call: counted once, then kept by ka_work_budget_commit. */
static int64_t rule_budget_in_use(struct ka_work *w, const ka_topic_rule_t *rule)
{
    size_t n = ka_policy_rule_count(w->ctx->policy), index;

    if (w->rule_used == NULL) {
        w->rule_used = malloc((n + 1) * sizeof(*w->rule_used));
        if (w->rule_used == NULL)
            return -1;
        for (size_t i = 0; i < n; i++)
            w->rule_used[i] = -1;
    }
    index = (size_t)(rule - ka_policy_rule_at(w->ctx->policy, 0));
    if (w->rule_used[index] < 0)
        w->rule_used[index] = ka_rules_rule_budget_used(w->ctx, rule);
    return w->rule_used[index];
}

static int64_t principal_budget_in_use(struct ka_work *w)
{
    if (w->principal_used < 0)
        w->principal_used = ka_rules_principal_budget_used(w->ctx, w->principal);
    return w->principal_used;
}

void ka_work_budget_commit(struct ka_work *w, int32_t new_partitions)
{
    if (new_partitions > 0 && w->pending_rule >= 0 && w->rule_used != NULL &&
        w->rule_used[w->pending_rule] >= 0)
        w->rule_used[w->pending_rule] += new_partitions;
    if (new_partitions > 0 && w->pending_principal && w->principal_used >= 0)
        w->principal_used += new_partitions;
    w->pending_rule = -1;
    w->pending_principal = false;
}

/*
 * The rule's budget (unless exempt from topic rules) and the principal's.
 * Whatever the exemptions, the item is noted as counting against both, so
 * the totals stay right once it is admitted.
 */
static int check_budgets(struct ka_work *w, const ka_topic_rule_t *rule, ka_slice_t topic,
                         int32_t added, ka_verdict_t *v)
{
    const ka_principal_rule_t *pr = w->principal;
    char whose[300];
    int rc = 0;

    w->pending_rule = rule != NULL ? (long)(rule - ka_policy_rule_at(w->ctx->policy, 0)) : -1;
    w->pending_principal =
        pr != NULL && pr->budget_partitions != KA_RULE_UNSET && principal_may(pr, topic);
    if (rule != NULL && rule->budget_partitions != KA_RULE_UNSET &&
        !(w->exempt & KA_EXEMPT_TOPIC_RULES)) {
        snprintf(whose, sizeof(whose), "rule '%.250s'", rule->name);
        rc = check_budget(w, v, topic, added, rule->budget_partitions, rule_budget_in_use(w, rule),
                          rule->enforcement == KA_ENFORCEMENT_AUDIT, KA_REASON_RULE_BUDGET,
                          rule->name, whose);
    }
    if (rc == 0 && w->pending_principal) {
        snprintf(whose, sizeof(whose), "principal %.250s", pr->principal);
        rc = check_budget(w, v, topic, added, pr->budget_partitions, principal_budget_in_use(w),
                          w->audit, KA_REASON_PRINCIPAL_BUDGET, "principals", whose);
    }
    return rc;
}

int ka_work_judge_rules(struct ka_work *w, const ka_rules_item_t *item, ka_verdict_t *v)
{
    const ka_topic_rule_t *rule = NULL;
    bool creates = item->api == KA_RULES_CREATE || item->api == KA_RULES_BROKER_CREATE;
    int rc = 0;

    w->pending_rule = -1;
    w->pending_principal = false;
    if (w->ctx->policy->rules == NULL || ka_policy_topic_is_internal(item->topic))
        return 0;
    if (creates)
        rc = check_name(w, item, v);
    if (rc == 0 && creates)
        rc = check_principal_topics(w, item, v);
    if (rc == 0 && !(w->exempt & KA_EXEMPT_TOPIC_RULES))
        rule = ka_policy_rule_for(w->ctx->policy, item->topic);
    if (rc == 0 && rule != NULL)
        rc = check_replication(w, rule, item, v);
    if (rc == 0 && rule != NULL)
        rc = check_partitions(w, rule, item, v);
    if (rc == 0 && rule != NULL)
        rc = check_configs(w, rule, item, v);
    if (rc == 0 && item->api != KA_RULES_REASSIGN)
        rc = check_budgets(w, rule != NULL ? rule : ka_policy_rule_for(w->ctx->policy, item->topic),
                           item->topic, item->added, v);
    return rc;
}

int ka_work_recheck_budgets(struct ka_work *w, ka_verdict_t *v)
{
    const ka_claim_t *c = &v->claim;

    w->pending_rule = -1;
    w->pending_principal = false;
    if (w->ctx->policy->rules == NULL || c->kind != KA_RESERVATION_PARTITIONS ||
        c->new_partitions <= 0)
        return 0;
    return check_budgets(w, ka_policy_rule_for(w->ctx->policy, c->topic), c->topic,
                         c->new_partitions, v);
}
