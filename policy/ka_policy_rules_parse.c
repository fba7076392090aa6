/*
 * ka_policy_rules_parse.c: the policy keys of ka_policy_rules.h, parsed
 * with the same strictness as the rest of the policy (ka_policy_parse.c): every
 * error is one sentence "<dotted.path>: <what is wrong>", unknown keys at
 * any depth are errors, and nothing is kept from a document that fails.
 */
#include "ka_policy_rules_parse.h"

#include "ka_policy_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 192

/* The topic configs a rule can bound, and the range of a numeric bound. */
static const struct config_key {
    const char *name;
    bool numeric; /* min/max allowed; otherwise only "allowed" */
    int64_t min, max;
} config_keys[] = {
    {"min.insync.replicas", true, 1, INT32_MAX}, {"retention.ms", true, -1, INT64_MAX},
    {"retention.bytes", true, -1, INT64_MAX},    {"cleanup.policy", false, 0, 0},
    {"max.message.bytes", true, 0, INT32_MAX},   {"segment.bytes", true, 14, INT32_MAX},
};
#define CONFIG_KEY_NAMES                                                                           \
    "min.insync.replicas, retention.ms, retention.bytes, cleanup.policy, max.message.bytes and "   \
    "segment.bytes"

/* A path one level deeper, for error sentences; a cut path still names the place. */
static void path_key(char out[PATH_MAX_LEN], const char *path, const char *key)
{
    size_t a = strnlen(path, PATH_MAX_LEN - 2), b = strnlen(key, PATH_MAX_LEN - 2 - a);

    memmove(out, path, a);
    out[a] = '.';
    memcpy(out + a + 1, key, b);
    out[a + 1 + b] = '\0';
}

static void path_index(char out[PATH_MAX_LEN], const char *path, size_t index)
{
    char number[24];

    snprintf(number, sizeof(number), "%zu", index);
    path_key(out, path, number);
}

static int unknown_key(const char *path, const char *key, const char *known, char *err,
                       size_t errlen)
{
    ka_error_printf(err, errlen, "%s.%.60s: unknown key; the known keys here are %s", path, key,
                    known);
    return KA_EINVALID;
}

static int must_be(const json_t *v, const char *path, const char *what, char *err, size_t errlen)
{
    char got[64];

    ka_policy_describe(v, got, sizeof(got));
    ka_error_printf(err, errlen, "%s: must be %s, got %s", path, what, got);
    return KA_EINVALID;
}

static int get_string(const json_t *v, const char *path, const char **out, char *err, size_t errlen)
{
    if (!json_is_string(v) || json_string_length(v) == 0)
        return must_be(v, path, "a non-empty string", err, errlen);
    *out = json_string_value(v);
    return 0;
}

static int get_pattern(const json_t *v, const char *path, ka_pattern_t **out, char *err,
                       size_t errlen)
{
    const char *source;
    char why[192];
    int rc;

    if (get_string(v, path, &source, err, errlen) < 0)
        return KA_EINVALID;
    rc = ka_pattern_compile(source, out, why, sizeof(why));
    if (rc == KA_EINVALID)
        ka_error_printf(err, errlen, "%s: %s", path, why);
    return rc;
}

/* An array of patterns; *count grows as each compiles, so a failure frees the rest. */
static int get_patterns(const json_t *v, const char *path, ka_pattern_t ***out, size_t *count,
                        char *err, size_t errlen)
{
    char item[PATH_MAX_LEN];
    size_t n = json_array_size(v);
    int rc;

    if (!json_is_array(v))
        return must_be(v, path, "an array of regular expressions", err, errlen);
    /* One slot even when empty: an empty list ("may create nowhere") differs from none. */
    *out = calloc(n > 0 ? n : 1, sizeof(**out));
    if (*out == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        path_index(item, path, i);
        rc = get_pattern(json_array_get(v, i), item, &(*out)[i], err, errlen);
        if (rc < 0)
            return rc;
        (*count)++;
    }
    return 0;
}

static int check_order(const char *path, const char *lo, int64_t min, const char *hi, int64_t max,
                       char *err, size_t errlen)
{
    if (min == KA_RULE_UNSET || max == KA_RULE_UNSET || min <= max)
        return 0;
    ka_error_printf(err, errlen,
                    "%s: %s (%" PRId64 ") is greater than %s (%" PRId64 "), so nothing could pass",
                    path, lo, min, hi, max);
    return KA_EINVALID;
}

static const struct config_key *find_config_key(const char *name)
{
    for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++) {
        if (strcmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    }
    return NULL;
}

static int get_allowed(const json_t *v, const char *path, ka_config_bound_t *b, char *err,
                       size_t errlen)
{
    char item[PATH_MAX_LEN];
    const char **list;
    const char *s;
    size_t n = json_array_size(v);

    if (!json_is_array(v) || n == 0)
        return must_be(v, path, "a non-empty array of strings", err, errlen);
    list = calloc(n, sizeof(*list));
    if (list == NULL)
        return KA_ENOMEM;
    b->allowed = list;
    for (size_t i = 0; i < n; i++) {
        path_index(item, path, i);
        if (get_string(json_array_get(v, i), item, &s, err, errlen) < 0)
            return KA_EINVALID;
        if ((list[i] = strdup(s)) == NULL)
            return KA_ENOMEM;
        b->allowed_count++;
    }
    return 0;
}

static int parse_config_bound(const struct config_key *k, const json_t *v, const char *path,
                              ka_config_bound_t *b, char *err, size_t errlen)
{
    char field[PATH_MAX_LEN];
    const char *key;
    json_t *inner;
    int rc;

    if (!json_is_object(v) || json_object_size(v) == 0)
        return must_be(v, path,
                       k->numeric ? "an object such as {\"min\": 2}, {\"max\": N} or "
                                    "{\"allowed\": [...]}"
                                  : "an object such as {\"allowed\": [\"delete\"]}",
                       err, errlen);
    json_object_foreach((json_t *)v, key, inner)
    {
        path_key(field, path, key);
        if (k->numeric && (strcmp(key, "min") == 0 || strcmp(key, "max") == 0)) {
            rc = ka_policy_get_int(inner, field, k->min, k->max,
                                   strcmp(key, "min") == 0 ? &b->min : &b->max, err, errlen);
        } else if (strcmp(key, "allowed") == 0) {
            rc = get_allowed(inner, field, b, err, errlen);
        } else {
            return unknown_key(path, key, k->numeric ? "min, max and allowed" : "allowed", err,
                               errlen);
        }
        if (rc < 0)
            return rc;
    }
    if (b->allowed != NULL && (b->min != KA_RULE_UNSET || b->max != KA_RULE_UNSET)) {
        ka_error_printf(err, errlen, "%s: set either min/max or allowed, not both", path);
        return KA_EINVALID;
    }
    return check_order(path, "min", b->min, "max", b->max, err, errlen);
}

static int compare_bound(const void *a, const void *b)
{
    return strcmp(((const ka_config_bound_t *)a)->name, ((const ka_config_bound_t *)b)->name);
}

static int parse_configs(const json_t *v, const char *path, ka_topic_rule_t *rule, char *err,
                         size_t errlen)
{
    char field[PATH_MAX_LEN];
    ka_config_bound_t *bounds;
    const struct config_key *k;
    const char *key;
    json_t *inner;
    int rc;

    if (!json_is_object(v))
        return must_be(v, path, "an object mapping topic configs to bounds", err, errlen);
    bounds = calloc(json_object_size(v) + 1, sizeof(*bounds));
    if (bounds == NULL)
        return KA_ENOMEM;
    rule->configs = bounds;
    json_object_foreach((json_t *)v, key, inner)
    {
        path_key(field, path, key);
        k = find_config_key(key);
        if (k == NULL) {
            ka_error_printf(err, errlen,
                            "%s: unknown topic config; a rule can bound " CONFIG_KEY_NAMES, field);
            return KA_EINVALID;
        }
        bounds[rule->config_count] =
            (ka_config_bound_t){.min = KA_RULE_UNSET, .max = KA_RULE_UNSET};
        if ((bounds[rule->config_count].name = strdup(key)) == NULL)
            return KA_ENOMEM;
        rule->config_count++;
        rc = parse_config_bound(k, inner, field, &bounds[rule->config_count - 1], err, errlen);
        if (rc < 0)
            return rc;
    }
    /* Sorted, so that the serialized form is canonical. */
    qsort(bounds, rule->config_count, sizeof(*bounds), compare_bound);
    return 0;
}

#define RULE_KEYS                                                                                  \
    "match, replication.factor.min, replication.factor.max, partitions.min, partitions.max, "      \
    "budget.partitions, configs and enforcement"

static int parse_rule_key(ka_topic_rule_t *rule, bool *written, const char *path, const char *key,
                          const json_t *v, char *err, size_t errlen)
{
    char field[PATH_MAX_LEN];
    int64_t n = 0;
    int rc = 0;

    path_key(field, path, key);
    if (strcmp(key, "match") == 0) {
        rc = get_pattern(v, field, &rule->match, err, errlen);
        if (rc == 0 && (rule->name = strdup(ka_pattern_source(rule->match))) == NULL)
            rc = KA_ENOMEM;
    } else if (strcmp(key, "replication.factor.min") == 0 ||
               strcmp(key, "replication.factor.max") == 0) {
        rc = ka_policy_get_int(v, field, 1, INT16_MAX, &n, err, errlen);
        *(strstr(key, "min") ? &rule->replication_factor_min : &rule->replication_factor_max) =
            (int32_t)n;
    } else if (strcmp(key, "partitions.min") == 0 || strcmp(key, "partitions.max") == 0) {
        rc = ka_policy_get_int(v, field, 1, INT32_MAX, &n, err, errlen);
        *(strstr(key, "min") ? &rule->partitions_min : &rule->partitions_max) = (int32_t)n;
    } else if (strcmp(key, "budget.partitions") == 0) {
        rc = ka_policy_get_int(v, field, 0, INT32_MAX, &rule->budget_partitions, err, errlen);
    } else if (strcmp(key, "configs") == 0) {
        rc = parse_configs(v, field, rule, err, errlen);
    } else if (strcmp(key, "enforcement") == 0) {
        if (json_is_string(v) && strcmp(json_string_value(v), "enforce") == 0)
            rule->enforcement = KA_ENFORCEMENT_ENFORCE;
        else if (json_is_string(v) && strcmp(json_string_value(v), "audit") == 0)
            rule->enforcement = KA_ENFORCEMENT_AUDIT;
        else
            return must_be(v, field, "\"enforce\" or \"audit\"", err, errlen);
        *written = true;
    } else {
        return unknown_key(path, key, RULE_KEYS, err, errlen);
    }
    return rc < 0 ? rc : 0;
}

static int parse_rule(const json_t *v, const char *path, ka_topic_rule_t *rule, bool *written,
                      char *err, size_t errlen)
{
    const char *key;
    json_t *inner;
    int rc;

    if (!json_is_object(v))
        return must_be(v, path, "an object such as {\"match\": \"team-a\\\\..*\", ...}", err,
                       errlen);
    json_object_foreach((json_t *)v, key, inner)
    {
        rc = parse_rule_key(rule, written, path, key, inner, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (rule->match == NULL) {
        ka_error_printf(err, errlen,
                        "%s: missing \"match\", the regular expression of the topics it covers",
                        path);
        return KA_EINVALID;
    }
    if (check_order(path, "replication.factor.min", rule->replication_factor_min,
                    "replication.factor.max", rule->replication_factor_max, err, errlen) < 0 ||
        check_order(path, "partitions.min", rule->partitions_min, "partitions.max",
                    rule->partitions_max, err, errlen) < 0)
        return KA_EINVALID;
    return 0;
}

static int parse_rules(ka_rules_t *r, const json_t *v, char *err, size_t errlen)
{
    char path[PATH_MAX_LEN];
    size_t n = json_array_size(v);
    int rc;

    if (!json_is_array(v))
        return must_be(v, "topic.rules", "an array of rules", err, errlen);
    r->rules = calloc(n + 1, sizeof(*r->rules));
    r->enforcement_written = calloc(n + 1, sizeof(*r->enforcement_written));
    if (r->rules == NULL || r->enforcement_written == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ka_topic_rule_t *rule = &r->rules[r->rule_count++];

        rule->replication_factor_min = rule->replication_factor_max = KA_RULE_UNSET;
        rule->partitions_min = rule->partitions_max = KA_RULE_UNSET;
        rule->budget_partitions = KA_RULE_UNSET;
        path_index(path, "topic.rules", i);
        rc = parse_rule(json_array_get(v, i), path, rule, &r->enforcement_written[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* "Type:name", as Kafka writes principals (KafkaPrincipal's toString). */
static int check_principal_name(const char *name, const char *path, char *err, size_t errlen)
{
    const char *colon = strchr(name, ':');

    if (colon != NULL && colon != name && colon[1] != '\0')
        return 0;
    ka_error_printf(err, errlen,
                    "%s: must look like \"Type:name\", e.g. \"User:alice\", got \"%.60s\"", path,
                    name);
    return KA_EINVALID;
}

static int parse_exempt(const json_t *v, const char *path, unsigned *out, char *err, size_t errlen)
{
    char item[PATH_MAX_LEN];
    size_t n = json_array_size(v), bit;

    if (!json_is_array(v))
        return must_be(v, path, "an array of exemptions", err, errlen);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);

        for (bit = 0; bit < KA_RULES_EXEMPTION_COUNT; bit++) {
            if (json_is_string(e) &&
                strcmp(json_string_value(e), ka_rules_exemption_names[bit]) == 0)
                break;
        }
        if (bit == KA_RULES_EXEMPTION_COUNT) {
            path_index(item, path, i);
            return must_be(e, item,
                           "one of \"topic.rules\", \"topic.name.pattern\", "
                           "\"max.broker.partitions\" and \"protected.topics\"",
                           err, errlen);
        }
        *out |= 1u << bit;
    }
    return 0;
}

static int parse_principal(const json_t *v, const char *path, ka_principal_rule_t *pr, char *err,
                           size_t errlen)
{
    char field[PATH_MAX_LEN];
    const char *key;
    json_t *inner;
    int rc;

    if (!json_is_object(v))
        return must_be(v, path, "an object such as {\"exempt\": [\"topic.rules\"]}", err, errlen);
    json_object_foreach((json_t *)v, key, inner)
    {
        path_key(field, path, key);
        if (strcmp(key, "topics") == 0) {
            ka_pattern_t **list = NULL;
            size_t n = 0;

            rc = get_patterns(inner, field, &list, &n, err, errlen);
            /* Kept even on failure, so that freeing the rules frees what compiled. */
            pr->topics = (const ka_pattern_t *const *)list;
            pr->topic_count = n;
        } else if (strcmp(key, "budget.partitions") == 0)
            rc = ka_policy_get_int(inner, field, 0, INT32_MAX, &pr->budget_partitions, err, errlen);
        else if (strcmp(key, "exempt") == 0)
            rc = parse_exempt(inner, field, &pr->exempt, err, errlen);
        else
            return unknown_key(path, key, "topics, budget.partitions and exempt", err, errlen);
        if (rc < 0)
            return rc;
    }
    if (pr->budget_partitions != KA_RULE_UNSET && pr->topics == NULL) {
        ka_error_printf(err, errlen,
                        "%s.budget.partitions: needs \"topics\", the patterns whose partitions "
                        "the budget counts",
                        path);
        return KA_EINVALID;
    }
    return 0;
}

static int compare_principal(const void *a, const void *b)
{
    return strcmp(((const ka_principal_rule_t *)a)->principal,
                  ((const ka_principal_rule_t *)b)->principal);
}

static int parse_principals(ka_rules_t *r, const json_t *v, char *err, size_t errlen)
{
    char path[PATH_MAX_LEN];
    const char *key;
    json_t *inner;
    int rc;

    if (!json_is_object(v))
        return must_be(v, "principals", "an object mapping principals (\"User:alice\") to rules",
                       err, errlen);
    r->principals = calloc(json_object_size(v) + 1, sizeof(*r->principals));
    if (r->principals == NULL)
        return KA_ENOMEM;
    json_object_foreach((json_t *)v, key, inner)
    {
        ka_principal_rule_t *pr = &r->principals[r->principal_count];

        path_key(path, "principals", key);
        if (check_principal_name(key, path, err, errlen) < 0)
            return KA_EINVALID;
        if ((pr->principal = strdup(key)) == NULL)
            return KA_ENOMEM;
        pr->budget_partitions = KA_RULE_UNSET;
        r->principal_count++;
        rc = parse_principal(inner, path, pr, err, errlen);
        if (rc < 0)
            return rc;
    }
    qsort(r->principals, r->principal_count, sizeof(*r->principals), compare_principal);
    return 0;
}

bool ka_rules_is_key(const char *key)
{
    return strcmp(key, "topic.name.pattern") == 0 || strcmp(key, "protected.topics") == 0 ||
           strcmp(key, "topic.rules") == 0 || strcmp(key, "principals") == 0 ||
           strcmp(key, "principal.unknown") == 0;
}

int ka_rules_parse_key(ka_rules_t **rules, const char *key, const json_t *v, char *err,
                       size_t errlen)
{
    ka_rules_t *r = *rules;
    const char *s;

    if (r == NULL) {
        r = calloc(1, sizeof(*r));
        if (r == NULL)
            return KA_ENOMEM;
        atomic_init(&r->refs, 1);
        if (pthread_mutex_init(&r->cache_lock, NULL) != 0) {
            free(r);
            return KA_ENOMEM;
        }
        *rules = r;
    }
    if (strcmp(key, "topic.name.pattern") == 0)
        return get_pattern(v, key, &r->name_pattern, err, errlen);
    if (strcmp(key, "protected.topics") == 0)
        return get_patterns(v, key, &r->protected_topics, &r->protected_count, err, errlen);
    if (strcmp(key, "topic.rules") == 0)
        return parse_rules(r, v, err, errlen);
    if (strcmp(key, "principals") == 0)
        return parse_principals(r, v, err, errlen);
    if (get_string(v, key, &s, err, errlen) < 0 || check_principal_name(s, key, err, errlen) < 0)
        return KA_EINVALID;
    /* The default is kept as "unset", so that it serializes like a policy without the key. */
    if (strcmp(s, "User:ANONYMOUS") != 0 && (r->unknown_principal = strdup(s)) == NULL)
        return KA_ENOMEM;
    return 0;
}

void ka_rules_finish(ka_rules_t *r, enum ka_enforcement policy_enforcement)
{
    for (size_t i = 0; r != NULL && i < r->rule_count; i++) {
        if (!r->enforcement_written[i])
            r->rules[i].enforcement = policy_enforcement;
    }
}
