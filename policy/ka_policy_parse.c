/*
 * ka_policy_parse.c: parsing and validating the admission policy
 * (ka_policy_parse in ka_policy.h); the guardrails' keys are parsed by
 * ka_policy_rules_parse.c, the snapshot built here is ka_policy_snapshot.h's.
 *
 * Parsing is table-free but strict: every key of the document is looked
 * at once, in document order, and the first problem becomes the error
 * sentence, always "<dotted.field>: <what is wrong>, got <value>". A
 * snapshot is built only from a document that passed every check, so a
 * caller can keep its previous policy on any error.
 */
#include "ka_policy_snapshot.h"

#include "ka_policy_json.h"
#include "ka_policy_rules_parse.h"
#include "ka_rules_model.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_MAX 86400000 /* one day: longer intervals are certainly typos */

/* Leaves parse_key on the first invalid value; the error is already written. */
#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) < 0)                                                                            \
            return KA_EINVALID;                                                                    \
    } while (0)

static int get_choice(const json_t *v, const char *field, const char *a, const char *b, int *out,
                      char *err, size_t errlen)
{
    char got[64];

    if (json_is_string(v) && strcmp(json_string_value(v), a) == 0) {
        *out = 0;
        return 0;
    }
    if (json_is_string(v) && strcmp(json_string_value(v), b) == 0) {
        *out = 1;
        return 0;
    }
    ka_policy_describe(v, got, sizeof(got));
    ka_error_printf(err, errlen, "%s: must be \"%s\" or \"%s\", got %s", field, a, b, got);
    return KA_EINVALID;
}

/* Broker ids are written as canonical decimals: "7", never "07" or "+7". */
static int parse_broker_id(const char *key, int32_t *out)
{
    int64_t v = 0;
    size_t n = strlen(key);

    if (n == 0 || n > 10 || (n > 1 && key[0] == '0'))
        return KA_EINVALID;
    for (size_t i = 0; i < n; i++) {
        if (key[i] < '0' || key[i] > '9')
            return KA_EINVALID;
        v = v * 10 + (key[i] - '0');
    }
    if (v > INT32_MAX)
        return KA_EINVALID;
    *out = (int32_t)v;
    return 0;
}

static int parse_brokers(ka_policy_t *p, const json_t *brokers, char *err, size_t errlen)
{
    const char *key;
    json_t *entry;
    size_t n = json_object_size(brokers), i = 0;
    char got[64], field[128];

    if (!json_is_object(brokers)) {
        ka_policy_describe(brokers, got, sizeof(got));
        ka_error_printf(err, errlen,
                        "brokers: must be an object mapping broker ids to "
                        "{\"max.broker.partitions\": N}, got %s",
                        got);
        return KA_EINVALID;
    }
    if (n == 0)
        return 0;
    p->overrides = calloc(n, sizeof(*p->overrides));
    if (p->overrides == NULL)
        return KA_ENOMEM;
    json_object_foreach((json_t *)brokers, key, entry)
    {
        const char *inner_key;
        json_t *inner;
        int64_t limit = -1;

        if (parse_broker_id(key, &p->overrides[i].broker_id) < 0) {
            ka_error_printf(
                err, errlen,
                "brokers.%.40s: broker id must be a decimal integer between 0 and 2147483647", key);
            return KA_EINVALID;
        }
        if (!json_is_object(entry)) {
            ka_policy_describe(entry, got, sizeof(got));
            ka_error_printf(
                err, errlen,
                "brokers.%s: must be an object such as {\"max.broker.partitions\": 1000}, got %s",
                key, got);
            return KA_EINVALID;
        }
        json_object_foreach(entry, inner_key, inner)
        {
            snprintf(field, sizeof(field), "brokers.%s.%.40s", key, inner_key);
            if (strcmp(inner_key, "max.broker.partitions") != 0) {
                ka_error_printf(err, errlen,
                                "%s: unknown key (the only key allowed here is "
                                "max.broker.partitions)",
                                field);
                return KA_EINVALID;
            }
            if (ka_policy_get_int(inner, field, 0, INT32_MAX, &limit, err, errlen) < 0)
                return KA_EINVALID;
        }
        if (limit < 0) {
            ka_error_printf(err, errlen, "brokers.%s: missing max.broker.partitions", key);
            return KA_EINVALID;
        }
        p->overrides[i++].limit = (int32_t)limit;
    }
    p->override_count = i;
    qsort(p->overrides, p->override_count, sizeof(*p->overrides), ka_policy_compare_override);
    return 0;
}

static int parse_key(ka_policy_t *p, const char *key, const json_t *v, char *err, size_t errlen)
{
    int64_t n;
    int choice;

    if (strcmp(key, "max.broker.partitions") == 0) {
        CHECK(ka_policy_get_int(v, key, 0, INT32_MAX, &n, err, errlen));
        p->default_limit = (int32_t)n;
    } else if (strcmp(key, "brokers") == 0) {
        return parse_brokers(p, v, err, errlen);
    } else if (strcmp(key, "max.partitions") == 0) {
        CHECK(ka_policy_get_int(v, key, 0, INT32_MAX, &n, err, errlen));
        p->max_partitions = (int32_t)n;
    } else if (strcmp(key, "enforcement") == 0) {
        CHECK(get_choice(v, key, "enforce", "audit", &choice, err, errlen));
        p->enforcement = choice ? KA_ENFORCEMENT_AUDIT : KA_ENFORCEMENT_ENFORCE;
    } else if (strcmp(key, "reject.error.code") == 0) {
        CHECK(ka_policy_get_int(v, key, 1, INT16_MAX, &n, err, errlen));
        if (n == 41 || n == 89) {
            ka_error_printf(err, errlen,
                            "reject.error.code: %" PRId64
                            " is retriable, so clients would retry the "
                            "rejected request; use 88 or 44 (POLICY_VIOLATION), got %" PRId64,
                            n, n);
            return KA_EINVALID;
        }
        p->reject_error_code = (int16_t)n;
    } else if (strcmp(key, "auto.assignment") == 0) {
        CHECK(get_choice(v, key, "place", "bound", &choice, err, errlen));
        p->auto_assignment = choice ? KA_AUTO_ASSIGNMENT_BOUND : KA_AUTO_ASSIGNMENT_PLACE;
    } else if (strcmp(key, "metadata.refresh.interval.ms") == 0) {
        CHECK(ka_policy_get_int(v, key, 100, MS_MAX, &p->refresh_interval_ms, err, errlen));
    } else if (strcmp(key, "metadata.max.staleness.ms") == 0) {
        CHECK(ka_policy_get_int(v, key, 1000, MS_MAX, &p->max_staleness_ms, err, errlen));
    } else if (strcmp(key, "metadata.refresh.before.decision.ms") == 0) {
        CHECK(ka_policy_get_int(v, key, 0, MS_MAX, &p->refresh_before_decision_ms, err, errlen));
    } else if (strcmp(key, "metadata.refresh.idle.interval.ms") == 0) {
        CHECK(ka_policy_get_int(v, key, 100, MS_MAX, &p->refresh_idle_interval_ms, err, errlen));
    } else if (strcmp(key, "reservation.expiry.ms") == 0) {
        CHECK(ka_policy_get_int(v, key, 1000, MS_MAX, &p->reservation_expiry_ms, err, errlen));
    } else if (ka_rules_is_key(key)) {
        return ka_rules_parse_key(&p->rules, key, v, err, errlen);
    } else {
        ka_error_printf(err, errlen,
                        "%.60s: unknown key; the known keys are max.broker.partitions, brokers, "
                        "max.partitions, enforcement, reject.error.code, auto.assignment, "
                        "metadata.refresh.interval.ms, metadata.max.staleness.ms, "
                        "metadata.refresh.before.decision.ms, metadata.refresh.idle.interval.ms, "
                        "reservation.expiry.ms, "
                        "topic.name.pattern, protected.topics, topic.rules, principals and "
                        "principal.unknown",
                        key);
        return KA_EINVALID;
    }
    return 0;
}

/* Relations between keys, checked once every key has its value. */
static int check_relations(const ka_policy_t *p, char *err, size_t errlen)
{
    if (p->refresh_interval_ms > p->max_staleness_ms) {
        ka_error_printf(
            err, errlen,
            "metadata.refresh.interval.ms: must not exceed metadata.max.staleness.ms (%" PRId64
            "), or the view goes stale between refreshes, got %" PRId64,
            p->max_staleness_ms, p->refresh_interval_ms);
        return KA_EINVALID;
    }
    if (p->refresh_before_decision_ms > p->max_staleness_ms) {
        ka_error_printf(
            err, errlen,
            "metadata.refresh.before.decision.ms: must not exceed metadata.max.staleness.ms "
            "(%" PRId64 "), got %" PRId64,
            p->max_staleness_ms, p->refresh_before_decision_ms);
        return KA_EINVALID;
    }
    if (p->refresh_idle_interval_ms >= 0 && (p->refresh_idle_interval_ms < p->refresh_interval_ms ||
                                             p->refresh_idle_interval_ms > p->max_staleness_ms)) {
        ka_error_printf(err, errlen,
                        "metadata.refresh.idle.interval.ms: must be at least "
                        "metadata.refresh.interval.ms (%" PRId64
                        ") and at most metadata.max.staleness.ms (%" PRId64
                        "), or an idle sidecar's view goes stale, got %" PRId64,
                        p->refresh_interval_ms, p->max_staleness_ms, p->refresh_idle_interval_ms);
        return KA_EINVALID;
    }
    if (p->reservation_expiry_ms <= p->max_staleness_ms) {
        ka_error_printf(
            err, errlen,
            "reservation.expiry.ms: must be greater than metadata.max.staleness.ms (%" PRId64
            "), or a reservation could expire before any usable view shows it, got %" PRId64,
            p->max_staleness_ms, p->reservation_expiry_ms);
        return KA_EINVALID;
    }
    return 0;
}

int ka_policy_parse(const char *json, size_t len, uint64_t version, ka_policy_t **out, char *err,
                    size_t errlen)
{
    json_error_t jerr;
    json_t *root, *v;
    const char *key;
    ka_policy_t *p = NULL;
    char got[64];
    int rc = KA_EINVALID;

    *out = NULL;
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        ka_error_printf(err, errlen, "policy: not valid JSON at line %d, column %d: %s", jerr.line,
                        jerr.column, jerr.text);
        return KA_EINVALID;
    }
    if (!json_is_object(root)) {
        ka_policy_describe(root, got, sizeof(got));
        ka_error_printf(err, errlen, "policy: must be a JSON object, got %s", got);
        goto out;
    }
    p = malloc(sizeof(*p));
    if (p == NULL) {
        rc = KA_ENOMEM;
        goto out;
    }
    ka_policy_set_defaults(p, version);
    json_object_foreach(root, key, v)
    {
        rc = parse_key(p, key, v, err, errlen);
        if (rc < 0)
            goto out;
    }
    rc = check_relations(p, err, errlen);
    if (rc < 0)
        goto out;
    ka_rules_finish(p->rules, p->enforcement);
    *out = p;
    p = NULL;
out:
    if (p != NULL) {
        ka_rules_unref(p->rules);
        free(p->overrides);
        free(p);
    }
    json_decref(root);
    return rc;
}
