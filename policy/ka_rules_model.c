/*
 * ka_rules_model.c: compiled patterns, and what a snapshot does with its
 * rules (ka_rules_model.h): share, free, serialize, compare. The parser is
 * ka_policy_rules_parse.c; the accessors of ka_policy_rules.h, which read a
 * snapshot, are with the snapshot's others in ka_policy_snapshot.c.
 *
 * Patterns are compiled once, when the policy is parsed; matching allocates
 * its own match data on every call, so one compiled pattern serves any
 * number of threads at once (decisions on the loop, views built elsewhere).
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "ka_rules_model.h"

#include "ka_cluster.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ka_pattern {
    pcre2_code *code;
    char *source; /* as written, for messages and serialization */
};

int ka_pattern_compile(const char *source, ka_pattern_t **out, char *err, size_t errlen)
{
    ka_pattern_t *p = calloc(1, sizeof(*p));
    PCRE2_UCHAR text[160];
    PCRE2_SIZE offset = 0;
    int code = 0;

    *out = NULL;
    if (p == NULL || (p->source = strdup(source)) == NULL) {
        free(p);
        return KA_ENOMEM;
    }
    /* Anchored at both ends by the engine, not by wrapping the source, so
     * that "a|b" means "a" or "b" and offsets in errors match what was written. */
    p->code = pcre2_compile((PCRE2_SPTR)source, PCRE2_ZERO_TERMINATED,
                            PCRE2_ANCHORED | PCRE2_ENDANCHORED, &code, &offset, NULL);
    if (p->code == NULL) {
        pcre2_get_error_message(code, text, sizeof(text));
        ka_error_printf(err, errlen, "not a valid regular expression at offset %zu: %s",
                        (size_t)offset, (const char *)text);
        ka_pattern_free(p);
        return KA_EINVALID;
    }
    /* The JIT is an optimisation only: without it pcre2_match interprets. */
    (void)pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
    *out = p;
    return 0;
}

void ka_pattern_free(ka_pattern_t *pattern)
{
    if (pattern == NULL)
        return;
    pcre2_code_free(pattern->code);
    free(pattern->source);
    free(pattern);
}

void *ka_pattern_match_data_new(void)
{
    return pcre2_match_data_create(1, NULL);
}

void ka_pattern_match_data_free(void *match_data)
{
    pcre2_match_data_free(match_data);
}

bool ka_pattern_matches_with(const ka_pattern_t *pattern, ka_slice_t name, void *match_data)
{
    size_t len = name.len > 0 ? (size_t)name.len : 0;

    if (pattern == NULL || match_data == NULL)
        return false;
    /* 0 means a match whose groups did not fit the one-pair vector. */
    return pcre2_match(pattern->code, len > 0 ? (PCRE2_SPTR)name.ptr : (PCRE2_SPTR) "", len, 0, 0,
                       match_data, NULL) >= 0;
}

bool ka_pattern_matches(const ka_pattern_t *pattern, ka_slice_t name)
{
    void *md = ka_pattern_match_data_new();
    bool matched = ka_pattern_matches_with(pattern, name, md);

    ka_pattern_match_data_free(md);
    return matched;
}

const char *ka_pattern_source(const ka_pattern_t *pattern)
{
    return pattern->source;
}

ka_rules_t *ka_rules_ref(ka_rules_t *rules)
{
    if (rules != NULL)
        atomic_fetch_add_explicit(&rules->refs, 1, memory_order_relaxed);
    return rules;
}

void ka_rules_cache_free(ka_rules_t *r)
{
    ka_cluster_unref(r->cache_view);
    free(r->cache_rule_totals);
    free(r->cache_principal_totals);
    r->cache_view = NULL;
    r->cache_rule_totals = r->cache_principal_totals = NULL;
}

static void free_rule(ka_topic_rule_t *rule)
{
    for (size_t i = 0; i < rule->config_count; i++) {
        const ka_config_bound_t *b = &rule->configs[i];

        for (size_t j = 0; j < b->allowed_count; j++)
            free((char *)b->allowed[j]);
        free((char **)b->allowed);
        free((char *)b->name);
    }
    free((ka_config_bound_t *)rule->configs);
    free((char *)rule->name);
    ka_pattern_free(rule->match);
}

static void free_principal(ka_principal_rule_t *pr)
{
    for (size_t i = 0; i < pr->topic_count; i++)
        ka_pattern_free((ka_pattern_t *)pr->topics[i]);
    free((ka_pattern_t **)pr->topics);
    free((char *)pr->principal);
}

void ka_rules_unref(ka_rules_t *r)
{
    if (r == NULL || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
        return;
    ka_pattern_free(r->name_pattern);
    for (size_t i = 0; i < r->protected_count; i++)
        ka_pattern_free(r->protected_topics[i]);
    free(r->protected_topics);
    for (size_t i = 0; i < r->rule_count; i++)
        free_rule(&r->rules[i]);
    free(r->rules);
    free(r->enforcement_written);
    for (size_t i = 0; i < r->principal_count; i++)
        free_principal(&r->principals[i]);
    free(r->principals);
    free(r->unknown_principal);
    ka_rules_cache_free(r);
    pthread_mutex_destroy(&r->cache_lock);
    free(r);
}

/* The names of enum ka_exemption's bits, in bit order. */
const char *const ka_rules_exemption_names[KA_RULES_EXEMPTION_COUNT] = {
    "topic.rules", "topic.name.pattern", "max.broker.partitions", "protected.topics"};

static json_t *pattern_array(const ka_pattern_t *const *patterns, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < n; i++) {
        if (json_array_append_new(a, json_string(patterns[i]->source)) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Sets obj.key = v when v is not KA_RULE_UNSET; 0 or -1. */
static int set_bound(json_t *obj, const char *key, int64_t v)
{
    return v == KA_RULE_UNSET ? 0 : json_object_set_new(obj, key, json_integer(v));
}

static json_t *config_json(const ka_config_bound_t *b)
{
    json_t *o = json_object(), *allowed;
    int bad = o == NULL;

    if (!bad && b->allowed != NULL) {
        allowed = json_array();
        bad |= json_object_set_new(o, "allowed", allowed);
        for (size_t i = 0; !bad && i < b->allowed_count; i++)
            bad |= json_array_append_new(allowed, json_string(b->allowed[i]));
    }
    bad |= set_bound(o, "min", b->min) | set_bound(o, "max", b->max);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *rule_json(const ka_topic_rule_t *r, bool enforcement_written)
{
    json_t *o = json_object(), *configs;
    int bad = o == NULL;

    bad |= json_object_set_new(o, "match", json_string(r->name));
    bad |= set_bound(o, "replication.factor.min", r->replication_factor_min);
    bad |= set_bound(o, "replication.factor.max", r->replication_factor_max);
    bad |= set_bound(o, "partitions.min", r->partitions_min);
    bad |= set_bound(o, "partitions.max", r->partitions_max);
    bad |= set_bound(o, "budget.partitions", r->budget_partitions);
    if (!bad && r->config_count > 0) {
        configs = json_object();
        bad |= json_object_set_new(o, "configs", configs);
        for (size_t i = 0; !bad && i < r->config_count; i++)
            bad |= json_object_set_new(configs, r->configs[i].name, config_json(&r->configs[i]));
    }
    if (enforcement_written)
        bad |= json_object_set_new(
            o, "enforcement",
            json_string(r->enforcement == KA_ENFORCEMENT_AUDIT ? "audit" : "enforce"));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *principal_json(const ka_principal_rule_t *pr)
{
    json_t *o = json_object(), *exempt;
    int bad = o == NULL;

    if (!bad && pr->topics != NULL)
        bad |= json_object_set_new(o, "topics", pattern_array(pr->topics, pr->topic_count));
    bad |= set_bound(o, "budget.partitions", pr->budget_partitions);
    if (!bad && pr->exempt != 0) {
        exempt = json_array();
        bad |= json_object_set_new(o, "exempt", exempt);
        for (unsigned i = 0; !bad && i < KA_RULES_EXEMPTION_COUNT; i++) {
            if (pr->exempt & (1u << i))
                bad |= json_array_append_new(exempt, json_string(ka_rules_exemption_names[i]));
        }
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int ka_rules_to_json(const ka_rules_t *r, json_t *root)
{
    json_t *list, *principals;
    int bad = 0;

    if (r == NULL)
        return 0;
    if (r->name_pattern != NULL)
        bad |=
            json_object_set_new(root, "topic.name.pattern", json_string(r->name_pattern->source));
    if (r->protected_count > 0)
        bad |= json_object_set_new(
            root, "protected.topics",
            pattern_array((const ka_pattern_t *const *)r->protected_topics, r->protected_count));
    if (!bad && r->rule_count > 0) {
        list = json_array();
        bad |= json_object_set_new(root, "topic.rules", list);
        for (size_t i = 0; !bad && i < r->rule_count; i++)
            bad |= json_array_append_new(list, rule_json(&r->rules[i], r->enforcement_written[i]));
    }
    if (!bad && r->principal_count > 0) {
        principals = json_object();
        bad |= json_object_set_new(root, "principals", principals);
        for (size_t i = 0; !bad && i < r->principal_count; i++)
            bad |= json_object_set_new(principals, r->principals[i].principal,
                                       principal_json(&r->principals[i]));
    }
    if (r->unknown_principal != NULL)
        bad |= json_object_set_new(root, "principal.unknown", json_string(r->unknown_principal));
    return bad ? -1 : 0;
}

bool ka_rules_equal(const ka_rules_t *a, const ka_rules_t *b)
{
    json_t *x, *y;
    bool same;

    if (a == b)
        return true;
    x = json_object();
    y = json_object();
    same = x != NULL && y != NULL && ka_rules_to_json(a, x) == 0 && ka_rules_to_json(b, y) == 0 &&
           json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}
