/*
 * ka_rules_configs.c: see ka_rules_configs.h.
 *
 * Every value is judged as text, whether the request set it or the broker's
 * default supplies it, so that one parser decides what a number is. Numbers
 * are parsed strictly (digits with an optional sign, spaces around as Kafka
 * trims them): a value that is not a number is refused rather than read as
 * 0. retention.ms and retention.bytes take -1 for unlimited, which is above
 * any maximum and meets any minimum. cleanup.policy is a list: each of its
 * entries must be allowed.
 */
#include "ka_rules_configs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Where the value judged came from, for the message. */
enum value_source { FROM_REQUEST, FROM_DEFAULT_ABSENT, FROM_DEFAULT_DELETED };

static bool slice_is(ka_slice_t s, const char *lit)
{
    size_t n = strlen(lit);

    return s.len == (int32_t)n && memcmp(s.ptr, lit, n) == 0;
}

static bool unlimited_below_zero(const char *key)
{
    return strcmp(key, "retention.ms") == 0 || strcmp(key, "retention.bytes") == 0;
}

int ka_rules_config_default(const ka_broker_defaults_t *defaults, const char *key, char *buf,
                            size_t buflen)
{
    static const struct {
        const char *key;
        unsigned bit;
        size_t offset;
    } numeric[] = {
        {"min.insync.replicas", KA_TOPIC_DEFAULT_MIN_INSYNC_REPLICAS,
         offsetof(ka_broker_defaults_t, min_insync_replicas)},
        {"retention.ms", KA_TOPIC_DEFAULT_RETENTION_MS,
         offsetof(ka_broker_defaults_t, retention_ms)},
        {"retention.bytes", KA_TOPIC_DEFAULT_RETENTION_BYTES,
         offsetof(ka_broker_defaults_t, retention_bytes)},
        {"max.message.bytes", KA_TOPIC_DEFAULT_MAX_MESSAGE_BYTES,
         offsetof(ka_broker_defaults_t, max_message_bytes)},
        {"segment.bytes", KA_TOPIC_DEFAULT_SEGMENT_BYTES,
         offsetof(ka_broker_defaults_t, segment_bytes)},
    };

    if (defaults == NULL || key == NULL || buf == NULL || buflen == 0)
        return KA_EINVALID;
    if (strcmp(key, "cleanup.policy") == 0) {
        if (!(defaults->topic_known & KA_TOPIC_DEFAULT_CLEANUP_POLICY))
            return 1;
        snprintf(buf, buflen, "%s", defaults->cleanup_policy);
        return 0;
    }
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        if (strcmp(key, numeric[i].key) != 0)
            continue;
        if (!(defaults->topic_known & numeric[i].bit))
            return 1;
        snprintf(buf, buflen, "%" PRId64,
                 *(const int64_t *)((const char *)defaults + numeric[i].offset));
        return 0;
    }
    return 1;
}

/* A strict integer: optional spaces, an optional sign, digits, optional spaces. */
static int parse_number(ka_slice_t v, int64_t *out)
{
    int32_t i = 0, end = v.len;
    bool negative = false;
    uint64_t x = 0;

    if (v.len < 0)
        return -1;
    while (i < end && (v.ptr[i] == ' ' || v.ptr[i] == '\t'))
        i++;
    while (end > i && (v.ptr[end - 1] == ' ' || v.ptr[end - 1] == '\t'))
        end--;
    if (i < end && (v.ptr[i] == '+' || v.ptr[i] == '-'))
        negative = v.ptr[i++] == '-';
    if (i == end)
        return -1;
    for (; i < end; i++) {
        if (v.ptr[i] < '0' || v.ptr[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(v.ptr[i] - '0');
        if (x > (uint64_t)INT64_MAX)
            return -1;
    }
    *out = negative ? -(int64_t)x : (int64_t)x;
    return 0;
}

/* The value as a message shows it: quoted and cut at 60 bytes. */
static void show_value(ka_slice_t v, char *buf, size_t len)
{
    int n = v.len > 60 ? 60 : v.len;

    snprintf(buf, len, "\"%.*s%s\"", n > 0 ? n : 0, n > 0 ? (const char *)v.ptr : "",
             v.len > 60 ? "..." : "");
}

static const char *source_words(enum value_source from)
{
    switch (from) {
    case FROM_DEFAULT_ABSENT:
        return " (the broker's default, which applies when the request does not set it)";
    case FROM_DEFAULT_DELETED:
        return " (the broker's default, which applies once the request deletes it)";
    default:
        return "";
    }
}

static int judge_number(const ka_topic_rule_t *rule, const ka_config_bound_t *b, ka_slice_t v,
                        enum value_source from, char *msg, size_t msglen)
{
    const char *src = source_words(from);
    bool unlimited;
    char shown[80];
    int64_t x;

    if (parse_number(v, &x) < 0) {
        show_value(v, shown, sizeof(shown));
        ka_error_printf(msg, msglen,
                        "%s %s%s is not a number, so it cannot meet the bounds of rule '%s'; set "
                        "%s to an integer",
                        b->name, shown, src, rule->name, b->name);
        return 1;
    }
    unlimited = x < 0 && unlimited_below_zero(b->name);
    if (b->max != KA_RULE_UNSET && (unlimited || x > b->max)) {
        ka_error_printf(msg, msglen,
                        "%s %" PRId64 "%s%s is above the maximum %" PRId64
                        " of rule '%s'; set %s to at most %" PRId64,
                        b->name, x, unlimited ? " (unlimited)" : "", src, b->max, rule->name,
                        b->name, b->max);
        return 1;
    }
    if (b->min != KA_RULE_UNSET && !unlimited && x < b->min) {
        ka_error_printf(msg, msglen,
                        "%s %" PRId64 "%s is below the minimum %" PRId64
                        " of rule '%s'; set %s to at least %" PRId64,
                        b->name, x, src, b->min, rule->name, b->name, b->min);
        return 1;
    }
    return 0;
}

static bool allowed(const ka_config_bound_t *b, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < b->allowed_count; i++)
        if (strlen(b->allowed[i]) == n && memcmp(b->allowed[i], p, n) == 0)
            return true;
    return false;
}

/* The allowed values as "delete, compact" for a message. */
static void list_allowed(const ka_config_bound_t *b, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < b->allowed_count && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", b->allowed[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* A list value: each comma-separated entry (spaces trimmed) must be allowed. */
static int judge_list(const ka_topic_rule_t *rule, const ka_config_bound_t *b, ka_slice_t v,
                      enum value_source from, char *msg, size_t msglen)
{
    int32_t i = 0;

    do {
        int32_t start = i, end;

        while (i < v.len && v.ptr[i] != ',')
            i++;
        end = i;
        while (start < end && v.ptr[start] == ' ')
            start++;
        while (end > start && v.ptr[end - 1] == ' ')
            end--;
        if (!allowed(b, v.ptr + start, (size_t)(end - start))) {
            char shown[80], list[256];

            show_value((ka_slice_t){v.ptr + start, end - start}, shown, sizeof(shown));
            list_allowed(b, list, sizeof(list));
            ka_error_printf(msg, msglen,
                            "%s %s%s is not allowed by rule '%s'; set %s to one of: %s", b->name,
                            shown, source_words(from), rule->name, b->name, list);
            return 1;
        }
    } while (i++ < v.len);
    return 0;
}

static int judge(const ka_topic_rule_t *rule, const ka_config_bound_t *b, ka_slice_t v,
                 enum value_source from, char *msg, size_t msglen)
{
    int rc = 0;

    if (b->allowed != NULL)
        rc = judge_list(rule, b, v, from, msg, msglen);
    if (rc == 0 && (b->min != KA_RULE_UNSET || b->max != KA_RULE_UNSET))
        rc = judge_number(rule, b, v, from, msg, msglen);
    return rc;
}

/* Judges the bound at the broker's default, or refuses when kadmit does not know it. */
static int judge_default(const ka_topic_rule_t *rule, const ka_cluster_t *view,
                         const ka_config_bound_t *b, enum value_source from, char *msg,
                         size_t msglen)
{
    char text[64];
    int rc = view != NULL ? ka_rules_config_default(ka_cluster_broker_defaults(view), b->name, text,
                                                    sizeof(text))
                          : 1;

    if (rc < 0)
        return rc;
    if (rc > 0) {
        ka_error_printf(msg, msglen,
                        "kadmit does not know the broker's default for %s, which applies %s, so "
                        "it cannot judge it against rule '%s'; set %s explicitly",
                        b->name,
                        from == FROM_DEFAULT_DELETED ? "once the request deletes it"
                                                     : "when the request does not set it",
                        rule->name, b->name);
        return 1;
    }
    return judge(rule, b, (ka_slice_t){(const uint8_t *)text, (int32_t)strlen(text)}, from, msg,
                 msglen);
}

int ka_rules_check_configs(const ka_topic_rule_t *rule, const ka_cluster_t *view,
                           const ka_topic_config_t *configs, size_t count,
                           bool absent_means_default, char *msg, size_t msglen)
{
    if (msg != NULL && msglen > 0)
        msg[0] = '\0';
    if (rule == NULL || rule->config_count == 0)
        return 0;
    if ((configs == NULL && count > 0) || rule->configs == NULL)
        return KA_EINVALID;
    for (size_t k = 0; k < rule->config_count; k++) {
        const ka_config_bound_t *b = &rule->configs[k];
        bool given = false;
        int rc = 0;

        for (size_t i = 0; i < count && rc == 0; i++) {
            if (!slice_is(configs[i].name, b->name))
                continue;
            given = true;
            rc = configs[i].value.len < 0
                     ? judge_default(rule, view, b, FROM_DEFAULT_DELETED, msg, msglen)
                     : judge(rule, b, configs[i].value, FROM_REQUEST, msg, msglen);
        }
        if (rc == 0 && !given && absent_means_default)
            rc = judge_default(rule, view, b, FROM_DEFAULT_ABSENT, msg, msglen);
        if (rc != 0)
            return rc;
    }
    return 0;
}
