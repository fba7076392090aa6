/*
 * ka_policy_rules.h: guardrails beyond partition counts, part of a policy
 * snapshot.
 *
 * The keys (docs/admission.md has each one):
 *   "topic.name.pattern"  a full-name regex every new topic must match;
 *   "protected.topics"    full-name regexes; DeleteTopics and DeleteRecords
 *                         of a matching topic are refused, and config
 *                         changes that can destroy its data. Kafka's
 *                         internal topics are always protected, kadmit's
 *                         own cannot be changed at all (admission/);
 *   "topic.rules"         an ordered list; the first rule whose "match"
 *                         matches a topic's full name applies to it;
 *   "principals"          per principal ("User:alice"): the topics it may
 *                         create, its budget, and what it is exempt from;
 *   "principal.unknown"   the principal a request is judged as when kadmit
 *                         cannot know who sent it (default User:ANONYMOUS).
 *
 * Patterns are PCRE2 (close to the java.util.regex syntax Kafka operators
 * write) and always match the whole name. Everything here belongs to the
 * snapshot and lives as long as it does; it never changes.
 *
 * Like ka_policy.h, a face without a source of its own name: the patterns
 * are ka_rules_model.c's, the accessors that read a snapshot
 * ka_policy_snapshot.c's.
 */
#ifndef KA_POLICY_RULES_H
#define KA_POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_policy.h"
#include "ka_reader.h"

/* An unset bound in the structs below. */
#define KA_RULE_UNSET (-1)

/* A compiled full-name pattern (PCRE2). */
typedef struct ka_pattern ka_pattern_t;

/* Compiles `source` as a full-name match; err names the offset on failure. */
int ka_pattern_compile(const char *source, ka_pattern_t **out, char *err, size_t errlen);
void ka_pattern_free(ka_pattern_t *pattern);
/* True when the whole of name matches. Thread-safe. */
bool ka_pattern_matches(const ka_pattern_t *pattern, ka_slice_t name);
const char *ka_pattern_source(const ka_pattern_t *pattern);

/* A bound on one topic config, e.g. "min.insync.replicas": {"min": 2}. */
typedef struct ka_config_bound {
    const char *name;     /* the topic config key */
    int64_t min, max;     /* numeric bounds, or KA_RULE_UNSET */
    const char **allowed; /* the values allowed (e.g. cleanup.policy), or NULL */
    size_t allowed_count;
} ka_config_bound_t;

typedef struct ka_topic_rule {
    const char *name; /* how messages and metrics name it: its "match" as written */
    ka_pattern_t *match;
    int32_t replication_factor_min, replication_factor_max; /* or KA_RULE_UNSET */
    int32_t partitions_min, partitions_max;                 /* per topic, or KA_RULE_UNSET */
    int64_t budget_partitions; /* all partitions of matching topics together, or KA_RULE_UNSET */
    const ka_config_bound_t *configs;
    size_t config_count;
    enum ka_enforcement enforcement; /* "enforce" or "audit", for this rule's checks */
} ka_topic_rule_t;

/* What a principal may be exempt from ("exempt": [...]). */
enum ka_exemption {
    KA_EXEMPT_TOPIC_RULES = 1u << 0,        /* "topic.rules": bounds, configs, rule budgets */
    KA_EXEMPT_TOPIC_NAME_PATTERN = 1u << 1, /* "topic.name.pattern" */
    KA_EXEMPT_BROKER_LIMITS = 1u << 2,      /* "max.broker.partitions" (and max.partitions) */
    KA_EXEMPT_PROTECTED_TOPICS = 1u << 3,   /* "protected.topics" (never kadmit's own) */
};

typedef struct ka_principal_rule {
    const char *principal;             /* "User:cruise-control" */
    const ka_pattern_t *const *topics; /* "topics": where it may create; NULL: anywhere */
    size_t topic_count;
    /* "budget.partitions": all partitions of topics matching its "topics" together, or
     * KA_RULE_UNSET. */
    int64_t budget_partitions;
    unsigned exempt; /* enum ka_exemption bits */
} ka_principal_rule_t;

/* The first rule whose match covers the topic, or NULL. */
const ka_topic_rule_t *ka_policy_rule_for(const ka_policy_t *policy, ka_slice_t topic);
size_t ka_policy_rule_count(const ka_policy_t *policy);
const ka_topic_rule_t *ka_policy_rule_at(const ka_policy_t *policy, size_t index);

/* NULL when no pattern is set. */
const ka_pattern_t *ka_policy_topic_name_pattern(const ka_policy_t *policy);

/* Kafka's internal topics and kadmit's own at their default names: always protected, and
 * never judged by topic.name.pattern, principals' topics or topic rules, so that kadmit (and
 * Kafka) can create them under any policy. */
bool ka_policy_topic_is_internal(ka_slice_t topic);

/* True for a topic whose DeleteTopics/DeleteRecords must be refused. */
bool ka_policy_topic_is_protected(const ka_policy_t *policy, ka_slice_t topic);
/* The source of the first "protected.topics" pattern matching topic, or NULL (none
 * matches: a topic protected only by default has none), for the message that says
 * what to change. */
const char *ka_policy_protected_pattern(const ka_policy_t *policy, ka_slice_t topic);

/* The principal's entry, or NULL when the policy names it nowhere. */
const ka_principal_rule_t *ka_policy_principal(const ka_policy_t *policy, const char *principal);
size_t ka_policy_principal_count(const ka_policy_t *policy);
const ka_principal_rule_t *ka_policy_principal_at(const ka_policy_t *policy, size_t index);
/* "principal.unknown": never NULL. */
const char *ka_policy_unknown_principal(const ka_policy_t *policy);

#endif
