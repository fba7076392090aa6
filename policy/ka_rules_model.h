/*
 * ka_rules_model.h: the layout of a policy's guardrails (topic rules,
 * principals, protected topics), and what is done with it: compiled
 * patterns, sharing, freeing, serializing and comparing (ka_rules_model.c).
 * The layout is shared by the parser (ka_policy_rules_parse.c), the
 * snapshot (ka_policy_snapshot.c, which also holds the accessors of
 * ka_policy_rules.h) and the engine's budgets (ka_engine_rules.c). Private
 * to policy/; other modules use ka_policy_rules.h.
 *
 * One ka_rules_t belongs to one or more policy snapshots: the admin API's
 * derivations (ka_policy_with_*) change only limits, so they share the
 * parent's rules by reference count instead of copying compiled patterns.
 */
#ifndef KA_RULES_MODEL_H
#define KA_RULES_MODEL_H

#include <jansson.h>
#include <pthread.h>
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
    /* Budgets count the partitions of every covered topic of a view: matched
     * once per (rules, view) pair, not per decision. The engine fills the
     * cache (ka_engine_rules.c); the rules own it and free it with themselves.
     * It holds a reference to its view, so a new view at the same address can
     * never be mistaken for it. The lock makes it safe to share the rules
     * across threads, as snapshots are. */
    pthread_mutex_t cache_lock;
    struct ka_cluster *cache_view;
    int64_t *cache_rule_totals;      /* per rule: partitions of the topics it applies to */
    int64_t *cache_principal_totals; /* per principal: partitions matching its topics */
} ka_rules_t;

/* The names of enum ka_exemption's bits, in bit order ("exempt": [...]). */
#define KA_RULES_EXEMPTION_COUNT 4
extern const char *const ka_rules_exemption_names[KA_RULES_EXEMPTION_COUNT];

/* Both accept NULL. */
ka_rules_t *ka_rules_ref(ka_rules_t *rules);
void ka_rules_unref(ka_rules_t *rules);

/* Adds the rules' keys (those that differ from their defaults) to root; 0 or -1. */
int ka_rules_to_json(const ka_rules_t *rules, json_t *root);
/* Same settings; NULL equals rules that set nothing. */
bool ka_rules_equal(const ka_rules_t *a, const ka_rules_t *b);

/* Matching many names in a row with one match data (ka_pattern_matches allocates per call). */
void *ka_pattern_match_data_new(void);
void ka_pattern_match_data_free(void *match_data);
bool ka_pattern_matches_with(const ka_pattern_t *pattern, ka_slice_t name, void *match_data);
/* Drops the budget cache (its view and totals): before the engine fills it
 * for another view, and when the rules are freed. The lock stays. */
void ka_rules_cache_free(ka_rules_t *rules);

#endif
