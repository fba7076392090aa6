/*
 * ka_mdc_logdirs.c: the view checked against the broker's log directories
 * (see ka_mdc_logdirs.h).
 */
#include "ka_mdc_logdirs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_arena.h"
#include "ka_decode_error.h"
#include "ka_describelogdirs_response.h"
#include "ka_error_codes.h"
#include "ka_log.h"
#include "ka_metrics.h"

/* Whether the view has this partition, with replicas. */
static int view_has(const ka_cluster_t *view, ka_slice_t topic, int32_t partition)
{
    const ka_cluster_topic_t *t = ka_cluster_find_topic(view, topic);
    int32_t count = 0;

    if (t == NULL || partition < 0 || partition >= ka_cluster_topic_partition_count(t))
        return 0;
    return ka_cluster_topic_replicas(t, partition, &count) != NULL && count > 0;
}

/* FNV-1a: the same name hashes the same in every check. */
static uint64_t name_hash(ka_slice_t name)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (int32_t i = 0; i < name.len; i++)
        h = (h ^ name.ptr[i]) * 0x100000001b3ull;
    return h;
}

/* Remembers a missing topic once; a topic's partitions come together, so the last one
 * added is checked first. */
static void note_missing_topic(ka_logdirs_check_t *out, ka_slice_t name)
{
    uint64_t h = name_hash(name);

    if (out->missing_topic_count > 0 && out->missing_topics[out->missing_topic_count - 1] == h)
        return;
    for (size_t i = 0; i < out->missing_topic_count; i++)
        if (out->missing_topics[i] == h)
            return;
    if (out->missing_topic_count == KA_LOGDIRS_TOPICS_TRACKED)
        out->missing_topics_overflow = 1;
    else
        out->missing_topics[out->missing_topic_count++] = h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void compare_dir(const ka_cluster_t *view,
                        const struct ka_describelogdirs_response_describe_log_dirs_result *dir,
                        ka_logdirs_check_t *out)
{
    for (int32_t i = 0; i < dir->topics.count; i++) {
        const struct ka_describelogdirs_response_describe_log_dirs_topic *t = &dir->topics.items[i];

        for (int32_t j = 0; j < t->partitions.count; j++) {
            if (t->partitions.items[j].is_future_key)
                continue;
            out->replicas++;
            if (view_has(view, t->name, t->partitions.items[j].partition_index))
                continue;
            if (out->missing++ == 0)
                snprintf(out->first_missing, sizeof(out->first_missing), "%.*s", (int)t->name.len,
                         (const char *)t->name.ptr);
            note_missing_topic(out, t->name);
        }
    }
}

void ka_logdirs_compare(const ka_cluster_t *view, ka_reader_t r, int16_t version,
                        ka_logdirs_check_t *out)
{
    struct ka_describelogdirs_response resp;
    ka_arena_t arena;

    memset(out, 0, sizeof(*out));
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    if (ka_describelogdirs_response_decode(&r, version, &arena, &resp) < 0) {
        ka_decode_error_format_dir(out->err, sizeof(out->err), KA_DESCRIBELOGDIRS_RESPONSE_API_KEY,
                                   version, KA_RESPONSE, &r);
        out->result = KA_LOGDIRS_FAILED;
        goto done;
    }
    /* Versions 3+ say CLUSTER_AUTHORIZATION_FAILED; older ones answer no
     * directory at all, and a broker always has at least one. */
    if (resp.error_code == KA_KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED || resp.results.count <= 0) {
        out->result = KA_LOGDIRS_UNAUTHORIZED;
        goto done;
    }
    for (int32_t i = 0; i < resp.results.count; i++)
        if (resp.results.items[i].error_code == 0)
            compare_dir(view, &resp.results.items[i], out);
    out->result = out->missing > 0 ? KA_LOGDIRS_MISSING : KA_LOGDIRS_COMPLETE;
    qsort(out->missing_topics, out->missing_topic_count, sizeof(out->missing_topics[0]), cmp_u64);
done:
    ka_arena_destroy(&arena);
}

/* A reason cut at its buffer ends in "..." so a log line or API answer never
 * passes off a cut principal or topic name as the whole one. */
static void mark_if_cut(char *why, size_t len, int written)
{
    if (written >= 0 && (size_t)written < len)
        return;
    if (len >= 4)
        memcpy(why + len - 4, "...", 4);
}

void ka_logdirs_partial_reason(const ka_logdirs_check_t *check, const char *principal, char *why,
                               size_t len)
{
    char who[300];
    int n;

    if (principal[0])
        n = snprintf(who, sizeof(who), "User:%s", principal);
    else
        n = snprintf(who, sizeof(who), "kadmit's metadata principal");
    mark_if_cut(who, sizeof(who), n);
    if (check->result == KA_LOGDIRS_UNAUTHORIZED)
        n = snprintf(why, len,
                     "the broker refused DescribeLogDirs, so kadmit cannot check that Metadata "
                     "shows it every topic; grant %s Describe on the cluster and on every topic "
                     "(kafka-acls --add --allow-principal %s --operation Describe --cluster "
                     "--topic '*')",
                     who, who);
    else
        n = snprintf(why, len,
                     "the broker hosts %lld replicas of partitions Metadata did not show kadmit, "
                     "such as topic %s; grant %s Describe on every topic (kafka-acls --add "
                     "--allow-principal %s --operation Describe --topic '*')",
                     (long long)check->missing, check->first_missing, who, who);
    mark_if_cut(why, len, n);
}

/* Some topic was missing in the last check and is again, or either check lost count. */
static int missing_again(const ka_logdirs_state_t *st, const ka_logdirs_check_t *check)
{
    size_t i = 0, j = 0;

    if (!st->missing_before)
        return 0;
    if (st->missing_topics_overflow || check->missing_topics_overflow)
        return 1;
    while (i < st->missing_topic_count && j < check->missing_topic_count) {
        if (st->missing_topics[i] == check->missing_topics[j])
            return 1;
        if (st->missing_topics[i] < check->missing_topics[j])
            i++;
        else
            j++;
    }
    return 0;
}

void ka_logdirs_track(ka_logdirs_state_t *st, const ka_logdirs_check_t *check,
                      const char *principal, const char *upstream, struct ka_metrics *metrics)
{
    char why[KA_CLUSTER_PARTIAL_MAX] = "";
    int was = st->partial[0] != '\0';

    switch (check->result) {
    case KA_LOGDIRS_COMPLETE:
        metrics->view_checks_complete++;
        break;
    case KA_LOGDIRS_MISSING:
        metrics->view_checks_missing++;
        if (missing_again(st, check))
            ka_logdirs_partial_reason(check, principal, why, sizeof(why));
        else if (was && !st->missing_before) /* partial for another reason until now (refused): */
            snprintf(why, sizeof(why), "%s", st->partial); /* no second check to compare yet */
        break;
    case KA_LOGDIRS_UNAUTHORIZED:
        metrics->view_checks_unauthorized++;
        ka_logdirs_partial_reason(check, principal, why, sizeof(why));
        break;
    default:
        metrics->view_checks_failed++;
        ka_log(KA_LOG_WARN, "metadata client: cannot read DescribeLogDirs",
               KA_KS("upstream", upstream), KA_KS("error", check->err));
        return;
    }
    st->missing_before = check->result == KA_LOGDIRS_MISSING;
    memcpy(st->missing_topics, check->missing_topics,
           check->missing_topic_count * sizeof(check->missing_topics[0]));
    st->missing_topic_count = check->missing_topic_count;
    st->missing_topics_overflow = check->missing_topics_overflow;
    if (why[0] && strcmp(why, st->partial) != 0)
        ka_log(KA_LOG_WARN,
               "cluster view may be partial: admission requests are refused in enforce mode",
               KA_KS("upstream", upstream), KA_KI("replicas", check->replicas),
               KA_KI("missing", check->missing), KA_KS("reason", why));
    else if (!why[0] && was)
        ka_log(KA_LOG_INFO, "cluster view complete: the broker hosts no replica the view lacks",
               KA_KS("upstream", upstream), KA_KI("replicas", check->replicas));
    snprintf(st->partial, sizeof(st->partial), "%s", why);
    metrics->view_partial = why[0] != '\0';
}
