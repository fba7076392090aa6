/*
 * ka_admission_topic_configs.c: the TOPIC resources of IncrementalAlterConfigs
 * and AlterConfigs, judged against their topic rule's config bounds
 * (ka_rules_configs.h).
 *
 * What each request means for a bounded key:
 * - AlterConfigs replaces every config of the topic, so a key it leaves
 *   out, or sets to null, falls back to the broker's default and is judged
 *   there;
 * - IncrementalAlterConfigs SET is judged at its value and DELETE at the
 *   broker's default; a key it does not name keeps the topic's value, which
 *   was judged when it was set. APPEND on a list (cleanup.policy) is judged
 *   at the entries it adds: a list bound allows entry by entry, so the
 *   resulting list breaks it exactly when an added entry does (or already
 *   did). SUBTRACT only takes entries away and cannot break an allowed set.
 *   APPEND and SUBTRACT on a number are left to the broker, which refuses
 *   them.
 *
 * A resource whose bound is broken is refused here, with POLICY_VIOLATION
 * and the rule's sentence, and never reaches the broker; the other
 * resources go on and the answers are merged per resource, as for
 * kadmit's own broker keys. Under an audit rule it goes on, flagged. A
 * principal exempt from "topic.rules" is not judged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission_configs_int.h"
#include "ka_policy_rules.h"
#include "ka_rules_configs.h"

/* The principal is exempt from topic rules. */
static bool exempt(const ka_cfg_ctx_t *ctx)
{
    const char *who =
        ctx->principal != NULL ? ctx->principal : ka_policy_unknown_principal(ctx->policy);
    const ka_principal_rule_t *pr = who != NULL ? ka_policy_principal(ctx->policy, who) : NULL;

    return pr != NULL && (pr->exempt & KA_EXEMPT_TOPIC_RULES) != 0;
}

/* The bound on a config key, or NULL. */
static const ka_config_bound_t *bound_of(const ka_topic_rule_t *rule, ka_slice_t name)
{
    for (size_t k = 0; k < rule->config_count; k++)
        if (name.len == (int32_t)strlen(rule->configs[k].name) &&
            memcmp(name.ptr, rule->configs[k].name, (size_t)name.len) == 0)
            return &rule->configs[k];
    return NULL;
}

/*
 * What the resource's configs mean for the rule's bounds, as the configs a
 * request sets (value null: back to the default). Returns how many went into
 * out (room for rv->count).
 */
static size_t judged_configs(const ka_topic_rule_t *rule, const cfg_res_view_t *rv,
                             ka_topic_config_t *out)
{
    size_t n = 0;

    for (size_t j = 0; j < rv->count; j++) {
        const cfg_entry_t *c = &rv->configs[j];
        const ka_config_bound_t *b = bound_of(rule, c->name);

        if (b == NULL)
            continue;
        if (c->op == KA_CFG_OP_SET)
            out[n++] = (ka_topic_config_t){c->name, c->value};
        else if (c->op == KA_CFG_OP_DELETE)
            out[n++] = (ka_topic_config_t){c->name, {NULL, -1}};
        else if (c->op == KA_CFG_OP_APPEND && b->allowed != NULL && c->value.len >= 0)
            out[n++] = (ka_topic_config_t){c->name, c->value};
    }
    return n;
}

int ka_cfg_plan_topic(const ka_cfg_ctx_t *ctx, bool replaces_all, const cfg_res_view_t *rv,
                      ka_cfg_resource_t *res)
{
    const ka_topic_rule_t *rule;
    ka_topic_config_t *configs;
    char msg[KA_ADM_MESSAGE_MAX];
    int rc;

    if (ctx->policy == NULL || rv->name.len <= 0)
        return 0;
    rule = ka_policy_rule_for(ctx->policy, rv->name);
    if (rule == NULL || rule->config_count == 0 || exempt(ctx))
        return 0;
    if ((res->rule = strdup(rule->name)) == NULL ||
        (configs = calloc(rv->count ? rv->count : 1, sizeof(*configs))) == NULL)
        return KA_ENOMEM;
    rc = ka_rules_check_configs(rule, ctx->view, configs, judged_configs(rule, rv, configs),
                                replaces_all, msg, sizeof(msg));
    free(configs);
    if (rc <= 0)
        return rc;
    if ((res->message = strdup(msg)) == NULL)
        return KA_ENOMEM;
    if (rule->enforcement == KA_ENFORCEMENT_AUDIT) {
        res->audited = true;
        return 0;
    }
    res->local = true;
    res->error_code = KA_KAFKA_ERR_POLICY_VIOLATION;
    return 0;
}

void ka_cfg_count_topic(const ka_cfg_resource_t *res, ka_cfg_outcome_t *out)
{
    if (res->protect != KA_CFG_PROTECT_NONE) {
        out->protected_refused += res->protect == KA_CFG_PROTECT_REJECT;
        out->protected_audited += res->protect == KA_CFG_PROTECT_AUDIT;
        if (out->protect_message[0] == '\0')
            snprintf(out->protect_message, sizeof(out->protect_message), "%s",
                     res->protect_message);
    }
    if (res->rule == NULL)
        return;
    if (out->topics_judged++ == 0)
        snprintf(out->rule, sizeof(out->rule), "%s", res->rule);
    out->topics_refused += res->local;
    out->topics_audited += res->audited;
    if ((res->local || res->audited) && out->topic_message[0] == '\0')
        snprintf(out->topic_message, sizeof(out->topic_message), "%s", res->message);
}
