/*
 * ka_admission_config_protect.c: IncrementalAlterConfigs and AlterConfigs
 * of protected topics and of kadmit's own (ka_admission_configs_int.h).
 *
 * A delete is not the only way to destroy a topic: retention.ms=1 purges
 * it at the broker's next retention check, cleanup.policy=compact drops
 * every record but the last of each key, and max.message.bytes=64 makes
 * the broker refuse what its producers send. So a TOPIC resource is
 * judged before its topic rule:
 *
 * - kadmit's own topics (ka_admission_own.c), under their configured names
 *   and their defaults: every change is refused, any key, any operation,
 *   an empty list too (AlterConfigs with no entry resets every key). No
 *   policy setting, audit mode or exemption lets one through.
 * - Kafka's internal topics: a change of a destructive key (below) is
 *   refused, with no exemption, as their deletes are.
 * - Topics "protected.topics" matches: a change of a destructive key is
 *   refused with POLICY_VIOLATION; in audit mode it goes on, flagged; a
 *   principal exempt from "protected.topics" is not judged. Other keys go
 *   on to the broker.
 *
 * What a change of a destructive key is, per API: IncrementalAlterConfigs
 * names it, with any operation (SET, DELETE, APPEND, SUBTRACT: APPEND adds
 * "compact" to cleanup.policy). AlterConfigs replaces the topic's whole
 * configuration, so a key it leaves out goes back to the broker's default:
 * every AlterConfigs of a protected topic sets or resets all of them, and
 * is refused; IncrementalAlterConfigs changes the other keys.
 *
 * Only TOPIC resources are judged. A TOPIC resource named "" is refused by
 * the broker in every state ("Default topic resources are not allowed"), so
 * it goes on unjudged (invariant 10). BROKER resources (a broker id, or ""
 * for the cluster default) hold the log.* defaults that topics without an
 * override follow: those are the broker's to authorize (ACLs on the
 * cluster resource), and docs/admission.md says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission_configs_int.h"
#include "ka_policy_rules.h"

/* Why a change of each destructive key can lose data, for the client. */
#define WHY_SEGMENTS                                                                               \
    "it decides how the log is cut into segments, which retention and compaction remove whole, "   \
    "and how many files the broker holds open"

static const struct destructive_key {
    const char *name;
    const char *why;
} destructive_keys[] = {
    {"retention.ms", "it can delete the topic's records"},
    {"retention.bytes", "it can delete the topic's records"},
    {"delete.retention.ms", "it decides how long deletions (tombstones) stay readable, so a "
                            "consumer replaying the topic can miss them"},
    {"cleanup.policy", "it can turn on the deletion or the compaction of the topic's records"},
    {"max.message.bytes", "it can make the broker refuse the records the topic's producers send"},
    {"segment.bytes", WHY_SEGMENTS},
    {"segment.ms", WHY_SEGMENTS},
    {"segment.index.bytes", WHY_SEGMENTS},
    {"segment.jitter.ms", WHY_SEGMENTS},
    {"remote.storage.enable", "turning tiered storage off can delete the topic's remote copy"},
    {"remote.log.delete.on.disable",
     "it lets turning tiered storage off delete the topic's remote copy"},
};

static const struct destructive_key *destructive_key(ka_slice_t name)
{
    for (size_t i = 0; i < sizeof(destructive_keys) / sizeof(destructive_keys[0]); i++)
        if (name.len >= 0 && (size_t)name.len == strlen(destructive_keys[i].name) &&
            memcmp(name.ptr, destructive_keys[i].name, (size_t)name.len) == 0)
            return &destructive_keys[i];
    return NULL;
}

static const char *op_word(int8_t op)
{
    switch (op) {
    case KA_CFG_OP_SET:
        return "setting";
    case KA_CFG_OP_DELETE:
        return "deleting";
    case KA_CFG_OP_APPEND:
        return "appending to";
    case KA_CFG_OP_SUBTRACT:
        return "subtracting from";
    default:
        return "changing";
    }
}

/* The principal is exempt from protected.topics. */
static bool exempt(const ka_cfg_ctx_t *ctx)
{
    const char *who =
        ctx->principal != NULL ? ctx->principal : ka_policy_unknown_principal(ctx->policy);
    const ka_principal_rule_t *pr = who != NULL ? ka_policy_principal(ctx->policy, who) : NULL;

    return pr != NULL && (pr->exempt & KA_EXEMPT_PROTECTED_TOPICS) != 0;
}

static bool kafka_internal(ka_slice_t name)
{
    /* ka_policy_topic_is_internal also holds kadmit's default names, judged before. */
    return ka_adm_own_topic(name) == KA_ADM_OWN_NONE && ka_policy_topic_is_internal(name);
}

/* The first destructive change of the resource into *what (a sentence), or false. */
static bool destructive_change(bool replaces_all, const cfg_res_view_t *rv, char *what, size_t cap)
{
    for (size_t j = 0; j < rv->count; j++) {
        const cfg_entry_t *c = &rv->configs[j];
        const struct destructive_key *k = destructive_key(c->name);

        if (k == NULL)
            continue;
        snprintf(what, cap, "%s %s through kadmit is refused, because %s%s", op_word(c->op),
                 k->name, k->why,
                 replaces_all ? " (and AlterConfigs resets every key it leaves out)" : "");
        return true;
    }
    if (!replaces_all)
        return false;
    snprintf(what, cap,
             "AlterConfigs replaces its whole configuration, which resets retention.ms, "
             "cleanup.policy and the other keys that keep its records to the broker's defaults, "
             "so it is refused through kadmit; IncrementalAlterConfigs (kafka-configs --alter) "
             "changes one key at a time");
    return true;
}

static int decide(ka_cfg_resource_t *res, enum ka_cfg_protect protect, const char *msg)
{
    res->protect = protect;
    if ((res->protect_message = strdup(msg)) == NULL)
        return KA_ENOMEM;
    if (protect != KA_CFG_PROTECT_REJECT)
        return 0;
    res->local = true;
    res->ours = false;
    res->error_code = KA_KAFKA_ERR_POLICY_VIOLATION;
    return (res->message = strdup(msg)) != NULL ? 0 : KA_ENOMEM;
}

int ka_cfg_protect_topic(const ka_cfg_ctx_t *ctx, int16_t api_key, bool replaces_all,
                         const cfg_res_view_t *rv, ka_cfg_resource_t *res)
{
    enum ka_adm_own own = ka_adm_own_topic(rv->name);
    char msg[KA_ADM_MESSAGE_MAX], what[600];
    const char *pattern;
    int n = rv->name.len > 0 ? (int)rv->name.len : 0;
    const char *name = n > 0 ? (const char *)rv->name.ptr : "";

    if (rv->name.len <= 0)
        return 0; /* the broker refuses a default topic resource */
    if (own != KA_ADM_OWN_NONE) {
        ka_adm_own_message(own, rv->name, ka_api_name(api_key), msg, sizeof(msg));
        return decide(res, KA_CFG_PROTECT_REJECT, msg);
    }
    if (kafka_internal(rv->name)) {
        if (!destructive_change(replaces_all, rv, what, sizeof(what)))
            return 0;
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is one of Kafka's internal topics, which kadmit always protects: "
                 "%s",
                 n, name, what);
        return decide(res, KA_CFG_PROTECT_REJECT, msg);
    }
    if (ctx->policy == NULL || !ka_policy_topic_is_protected(ctx->policy, rv->name) ||
        exempt(ctx) || !destructive_change(replaces_all, rv, what, sizeof(what)))
        return 0;
    if ((pattern = ka_policy_protected_pattern(ctx->policy, rv->name)) != NULL)
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is protected by protected.topics pattern '%s': %s; remove it from "
                 "protected.topics to change it",
                 n, name, pattern, what);
    else
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is protected by protected.topics: %s; remove its pattern from "
                 "protected.topics to change it",
                 n, name, what);
    return decide(res,
                  ka_policy_enforcement(ctx->policy) == KA_ENFORCEMENT_AUDIT
                      ? KA_CFG_PROTECT_AUDIT
                      : KA_CFG_PROTECT_REJECT,
                  msg);
}
