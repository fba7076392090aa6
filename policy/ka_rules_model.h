/*
 * ka_rules_model.h: the layout of a policy's guardrails (topic rules,
 * principals, protected topics), shared by their parser
 * (ka_policy_rules_parse.c), their accessors and snapshot operations
 * (ka_policy_rules.c) and the policy snapshot itself. Private to policy/;
 * other modules use ka_policy_rules.h.
 *
 * One ka_rules_t belongs to one or more policy snapshots: the admin API's
 * derivations (ka_policy_with_*) change only limits, so they share the
 * parent's rules by reference count instead of copying compiled patterns.
 */
#ifndef KA_RULES_MODEL_H
#define KA_RULES_MODEL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ka_policy_rules.h"

typedef struct ka_rules {
    atomic_int refs;
    ka_pattern_t *name_pattern; /* "topic.name.pattern", or NULL */
    ka_pattern_t **protected_topics;
    size_t protected_count;
    ka_topic_rule_t *rules; /* in document order: the first match applies */
    size_t rule_count;
    /* Per rule: whether it wrote "enforcement"; the others follow the policy's
     * top-level key, which may come later in the document (ka_rules_finish). */
    bool *enforcement_written;
    ka_principal_rule_t *principals; /* sorted by name, for bsearch */
    size_t principal_count;
    char *unknown_principal; /* "principal.unknown", or NULL for User:ANONYMOUS */
} ka_rules_t;

/* The names of enum ka_exemption's bits, in bit order ("exempt": [...]). */
#define KA_RULES_EXEMPTION_COUNT 4
extern const char *const ka_rules_exemption_names[KA_RULES_EXEMPTION_COUNT];

/* True for the keys of the policy's top level that this module parses. */
bool ka_rules_is_key(const char *key);
/* Parses one such key into *rules (allocated on first use). */
int ka_rules_parse_key(ka_rules_t **rules, const char *key, const json_t *value, char *err,
                       size_t errlen);
/* Resolves what depends on other keys, once the whole document is read. */
void ka_rules_finish(ka_rules_t *rules, enum ka_enforcement policy_enforcement);

/* Both accept NULL. */
ka_rules_t *ka_rules_ref(ka_rules_t *rules);
void ka_rules_unref(ka_rules_t *rules);

/* Adds the rules' keys (those that differ from their defaults) to root; 0 or -1. */
int ka_rules_to_json(const ka_rules_t *rules, json_t *root);
/* Same settings; NULL equals rules that set nothing. */
bool ka_rules_equal(const ka_rules_t *a, const ka_rules_t *b);

/* ka_policy.c's value readers, shared so that every error reads alike. */
void ka_policy_describe(const json_t *v, char *buf, size_t len);
int ka_policy_get_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
                      char *err, size_t errlen);

#endif
