/*
 * ka_policy_snapshot.c: what can be done with a validated policy: start one
 * at the defaults, serialize it, derive a changed copy for the admin API,
 * compare it, read it (its limits, and its guardrails through
 * ka_policy_rules.h), and share it by reference count. The parser is
 * ka_policy_parse.c; the rules a snapshot shares are ka_rules_model.c's.
 */
#include "ka_policy_snapshot.h"
#include "ka_own_topics.h"
#include "ka_rules_model.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_int(json_t *obj, const char *key, json_int_t v)
{
    return json_object_set_new(obj, key, json_integer(v));
}

void ka_policy_set_defaults(ka_policy_t *p, uint64_t version)
{
    atomic_init(&p->refs, 1);
    p->version = version;
    p->default_limit = KA_POLICY_UNLIMITED;
    p->max_partitions = KA_POLICY_UNLIMITED;
    p->enforcement = KA_ENFORCEMENT_ENFORCE;
    p->reject_error_code = KA_KAFKA_ERR_UNSTABLE_OFFSET_COMMIT; /* KIP-578 names 88 */
    p->auto_assignment = KA_AUTO_ASSIGNMENT_PLACE;
    p->refresh_interval_ms = 30000;
    p->max_staleness_ms = 120000;
    p->refresh_before_decision_ms = 5000;
    p->refresh_idle_interval_ms = -1;
    p->reservation_expiry_ms = 300000;
    p->override_count = 0;
    p->overrides = NULL;
    p->rules = NULL;
}

int ka_policy_new_default(uint64_t version, ka_policy_t **out)
{
    *out = malloc(sizeof(**out));
    if (*out == NULL)
        return KA_ENOMEM;
    ka_policy_set_defaults(*out, version);
    return 0;
}

int ka_policy_compare_override(const void *a, const void *b)
{
    const struct ka_broker_limit *x = a, *y = b;

    return (x->broker_id > y->broker_id) - (x->broker_id < y->broker_id);
}

char *ka_policy_serialize(const ka_policy_t *p)
{
    json_t *root = json_object(), *brokers = json_object();
    char *text = NULL, *copy = NULL;
    char id[16];
    int bad = root == NULL || brokers == NULL;

    bad |= add_int(root, "max.broker.partitions", p->default_limit);
    for (size_t i = 0; i < p->override_count && !bad; i++) {
        json_t *entry = json_object();

        snprintf(id, sizeof(id), "%" PRId32, p->overrides[i].broker_id);
        bad |= entry == NULL || add_int(entry, "max.broker.partitions", p->overrides[i].limit);
        bad |= json_object_set_new(brokers, id, entry);
    }
    bad |= json_object_set(root, "brokers", brokers);
    bad |= add_int(root, "max.partitions", p->max_partitions);
    bad |= json_object_set_new(
        root, "enforcement",
        json_string(p->enforcement == KA_ENFORCEMENT_AUDIT ? "audit" : "enforce"));
    bad |= add_int(root, "reject.error.code", p->reject_error_code);
    bad |= json_object_set_new(
        root, "auto.assignment",
        json_string(p->auto_assignment == KA_AUTO_ASSIGNMENT_BOUND ? "bound" : "place"));
    bad |= add_int(root, "metadata.refresh.interval.ms", p->refresh_interval_ms);
    bad |= add_int(root, "metadata.max.staleness.ms", p->max_staleness_ms);
    bad |= add_int(root, "metadata.refresh.before.decision.ms", p->refresh_before_decision_ms);
    if (p->refresh_idle_interval_ms >= 0) /* unset stays unset: it follows the other keys */
        bad |= add_int(root, "metadata.refresh.idle.interval.ms", p->refresh_idle_interval_ms);
    bad |= add_int(root, "reservation.expiry.ms", p->reservation_expiry_ms);
    bad |= ka_rules_to_json(p->rules, root) < 0;
    if (!bad)
        text = json_dumps(root, JSON_INDENT(2));
    /* Copied so that callers free() it whatever allocator jansson uses. */
    if (text != NULL) {
        copy = strdup(text);
        free(text);
    }
    json_decref(brokers);
    json_decref(root);
    return copy;
}

ka_policy_t *ka_policy_ref(ka_policy_t *p)
{
    if (p != NULL)
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void ka_policy_unref(ka_policy_t *p)
{
    if (p == NULL || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
        return;
    ka_rules_unref(p->rules);
    free(p->overrides);
    free(p);
}

/* Copies base with room for one more override. */
static int copy_policy(const ka_policy_t *base, uint64_t version, ka_policy_t **out)
{
    ka_policy_t *p = malloc(sizeof(*p));

    if (p == NULL)
        return KA_ENOMEM;
    memcpy(p, base, sizeof(*p));
    atomic_init(&p->refs, 1);
    p->version = version;
    p->overrides = malloc((base->override_count + 1) * sizeof(*p->overrides));
    if (p->overrides == NULL) {
        free(p);
        return KA_ENOMEM;
    }
    if (base->override_count > 0)
        memcpy(p->overrides, base->overrides, base->override_count * sizeof(*p->overrides));
    /* Derivations change limits only; the compiled rules are shared. */
    p->rules = ka_rules_ref(base->rules);
    *out = p;
    return 0;
}

static struct ka_broker_limit *find_override(const ka_policy_t *p, int32_t broker_id)
{
    struct ka_broker_limit key = {.broker_id = broker_id};

    if (p->override_count == 0)
        return NULL;
    return bsearch(&key, p->overrides, p->override_count, sizeof(key), ka_policy_compare_override);
}

int ka_policy_with_broker_limit(const ka_policy_t *base, int32_t broker_id, int64_t limit,
                                uint64_t version, ka_policy_t **out, char *err, size_t errlen)
{
    struct ka_broker_limit *o;
    int rc;

    if (broker_id < 0) {
        ka_error_printf(err, errlen,
                        "brokers.%" PRId32 ": broker id must be between 0 and 2147483647",
                        broker_id);
        return KA_EINVALID;
    }
    if (limit < 0 || limit > INT32_MAX) {
        ka_error_printf(err, errlen,
                        "brokers.%" PRId32
                        ".max.broker.partitions: must be an integer between 0 and "
                        "2147483647, got %" PRId64,
                        broker_id, limit);
        return KA_EINVALID;
    }
    rc = copy_policy(base, version, out);
    if (rc < 0)
        return rc;
    o = find_override(*out, broker_id);
    if (o == NULL) {
        o = &(*out)->overrides[(*out)->override_count++];
        o->broker_id = broker_id;
    }
    o->limit = (int32_t)limit;
    qsort((*out)->overrides, (*out)->override_count, sizeof(*o), ka_policy_compare_override);
    return 0;
}

int ka_policy_without_broker_limit(const ka_policy_t *base, int32_t broker_id, uint64_t version,
                                   ka_policy_t **out)
{
    struct ka_broker_limit *o;
    int rc = copy_policy(base, version, out);

    if (rc < 0)
        return rc;
    o = find_override(*out, broker_id);
    if (o != NULL) {
        size_t index = (size_t)(o - (*out)->overrides);

        memmove(o, o + 1, ((*out)->override_count - index - 1) * sizeof(*o));
        (*out)->override_count--;
    }
    return 0;
}

int ka_policy_with_default_limit(const ka_policy_t *base, int64_t limit, uint64_t version,
                                 ka_policy_t **out, char *err, size_t errlen)
{
    int rc;

    if (limit < 0 || limit > INT32_MAX) {
        ka_error_printf(
            err, errlen,
            "max.broker.partitions: must be an integer between 0 and 2147483647, got %" PRId64,
            limit);
        return KA_EINVALID;
    }
    rc = copy_policy(base, version, out);
    if (rc < 0)
        return rc;
    (*out)->default_limit = (int32_t)limit;
    return 0;
}

int ka_policy_equal(const ka_policy_t *a, const ka_policy_t *b)
{
    return a->default_limit == b->default_limit && a->max_partitions == b->max_partitions &&
           a->enforcement == b->enforcement && a->reject_error_code == b->reject_error_code &&
           a->auto_assignment == b->auto_assignment &&
           a->refresh_interval_ms == b->refresh_interval_ms &&
           a->max_staleness_ms == b->max_staleness_ms &&
           a->refresh_before_decision_ms == b->refresh_before_decision_ms &&
           a->refresh_idle_interval_ms == b->refresh_idle_interval_ms &&
           a->reservation_expiry_ms == b->reservation_expiry_ms &&
           a->override_count == b->override_count &&
           (a->override_count == 0 ||
            memcmp(a->overrides, b->overrides, a->override_count * sizeof(*a->overrides)) == 0) &&
           ka_rules_equal(a->rules, b->rules);
}

uint64_t ka_policy_version(const ka_policy_t *p)
{
    return p->version;
}

int32_t ka_policy_broker_limit(const ka_policy_t *p, int32_t broker_id)
{
    const struct ka_broker_limit *o = find_override(p, broker_id);

    return o != NULL ? o->limit : p->default_limit;
}

int32_t ka_policy_default_broker_limit(const ka_policy_t *p)
{
    return p->default_limit;
}

size_t ka_policy_override_count(const ka_policy_t *p)
{
    return p->override_count;
}

void ka_policy_override_at(const ka_policy_t *p, size_t index, int32_t *broker_id, int32_t *limit)
{
    *broker_id = p->overrides[index].broker_id;
    *limit = p->overrides[index].limit;
}

int32_t ka_policy_max_partitions(const ka_policy_t *p)
{
    return p->max_partitions;
}

enum ka_enforcement ka_policy_enforcement(const ka_policy_t *p)
{
    return p->enforcement;
}

int16_t ka_policy_reject_error_code(const ka_policy_t *p)
{
    return p->reject_error_code;
}

enum ka_auto_assignment ka_policy_auto_assignment(const ka_policy_t *p)
{
    return p->auto_assignment;
}

int64_t ka_policy_metadata_refresh_interval_ms(const ka_policy_t *p)
{
    return p->refresh_interval_ms;
}

int64_t ka_policy_metadata_max_staleness_ms(const ka_policy_t *p)
{
    return p->max_staleness_ms;
}

int64_t ka_policy_metadata_refresh_before_decision_ms(const ka_policy_t *p)
{
    return p->refresh_before_decision_ms;
}

int64_t ka_policy_reservation_expiry_ms(const ka_policy_t *p)
{
    return p->reservation_expiry_ms;
}

#define IDLE_INTERVAL_DEFAULT_MS 90000

int64_t ka_policy_metadata_refresh_idle_interval_ms(const ka_policy_t *p)
{
    if (p->refresh_idle_interval_ms >= 0)
        return p->refresh_idle_interval_ms;
    int64_t ms = IDLE_INTERVAL_DEFAULT_MS;
    if (ms > p->max_staleness_ms / 4 * 3)
        ms = p->max_staleness_ms / 4 * 3;
    return ms < p->refresh_interval_ms ? p->refresh_interval_ms : ms;
}

/* The accessors of ka_policy_rules.h: what the snapshot's guardrails say. */

/* Kafka's internal topics and kadmit's own, protected whatever the policy says. */
static const char *const always_protected[] = {
    "__consumer_offsets", "__transaction_state", "__share_group_state",
    "__cluster_metadata", KA_OWN_TOPIC_LEDGER,   KA_OWN_TOPIC_LIMITS,
};

static bool slice_is(ka_slice_t s, const char *str)
{
    size_t n = strlen(str);

    return s.len >= 0 && (size_t)s.len == n && (n == 0 || memcmp(s.ptr, str, n) == 0);
}

const ka_topic_rule_t *ka_policy_rule_for(const ka_policy_t *policy, ka_slice_t topic)
{
    const ka_rules_t *r = policy->rules;
    const ka_topic_rule_t *found = NULL;
    void *md;

    if (r == NULL || r->rule_count == 0)
        return NULL;
    md = ka_pattern_match_data_new();
    for (size_t i = 0; i < r->rule_count && found == NULL; i++) {
        if (ka_pattern_matches_with(r->rules[i].match, topic, md))
            found = &r->rules[i];
    }
    ka_pattern_match_data_free(md);
    return found;
}

size_t ka_policy_rule_count(const ka_policy_t *policy)
{
    return policy->rules != NULL ? policy->rules->rule_count : 0;
}

const ka_topic_rule_t *ka_policy_rule_at(const ka_policy_t *policy, size_t index)
{
    return index < ka_policy_rule_count(policy) ? &policy->rules->rules[index] : NULL;
}

const ka_pattern_t *ka_policy_topic_name_pattern(const ka_policy_t *policy)
{
    return policy->rules != NULL ? policy->rules->name_pattern : NULL;
}

bool ka_policy_topic_is_internal(ka_slice_t topic)
{
    for (size_t i = 0; i < sizeof(always_protected) / sizeof(always_protected[0]); i++) {
        if (slice_is(topic, always_protected[i]))
            return true;
    }
    return false;
}

bool ka_policy_topic_is_protected(const ka_policy_t *policy, ka_slice_t topic)
{
    const ka_rules_t *r = policy->rules;

    if (ka_policy_topic_is_internal(topic))
        return true;
    for (size_t i = 0; r != NULL && i < r->protected_count; i++) {
        if (ka_pattern_matches(r->protected_topics[i], topic))
            return true;
    }
    return false;
}

const char *ka_policy_protected_pattern(const ka_policy_t *policy, ka_slice_t topic)
{
    const ka_rules_t *r = policy->rules;

    for (size_t i = 0; r != NULL && i < r->protected_count; i++) {
        if (ka_pattern_matches(r->protected_topics[i], topic))
            return ka_pattern_source(r->protected_topics[i]);
    }
    return NULL;
}

static int compare_principal_name(const void *key, const void *entry)
{
    return strcmp(key, ((const ka_principal_rule_t *)entry)->principal);
}

const ka_principal_rule_t *ka_policy_principal(const ka_policy_t *policy, const char *principal)
{
    const ka_rules_t *r = policy->rules;

    if (r == NULL || r->principal_count == 0 || principal == NULL)
        return NULL;
    return bsearch(principal, r->principals, r->principal_count, sizeof(*r->principals),
                   compare_principal_name);
}

size_t ka_policy_principal_count(const ka_policy_t *policy)
{
    return policy->rules != NULL ? policy->rules->principal_count : 0;
}

const ka_principal_rule_t *ka_policy_principal_at(const ka_policy_t *policy, size_t index)
{
    return index < ka_policy_principal_count(policy) ? &policy->rules->principals[index] : NULL;
}

const char *ka_policy_unknown_principal(const ka_policy_t *policy)
{
    if (policy->rules != NULL && policy->rules->unknown_principal != NULL)
        return policy->rules->unknown_principal;
    return "User:ANONYMOUS";
}
