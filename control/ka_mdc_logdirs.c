/*
 * ka_mdc_logdirs.c: the view checked against the broker's log directories
 * (see ka_mdc_logdirs.h).
 */
#include "ka_mdc_logdirs.h"

#include <stdio.h>
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
done:
    ka_arena_destroy(&arena);
}

void ka_logdirs_partial_reason(const ka_logdirs_check_t *check, const char *principal, char *why,
                               size_t len)
{
    char who[300];

    if (principal[0])
        snprintf(who, sizeof(who), "User:%s", principal);
    else
        snprintf(who, sizeof(who), "kadmit's metadata principal");
    if (check->result == KA_LOGDIRS_UNAUTHORIZED)
        snprintf(why, len,
                 "the broker refused DescribeLogDirs, so kadmit cannot check that Metadata shows "
                 "it every topic; grant %s Describe on the cluster and on every topic "
                 "(kafka-acls --add --allow-principal %s --operation Describe --cluster "
                 "--topic '*')",
                 who, who);
    else
        snprintf(why, len,
                 "the broker hosts %lld replicas of partitions Metadata did not show kadmit, such "
                 "as topic %s; grant %s Describe on every topic (kafka-acls --add "
                 "--allow-principal %s --operation Describe --topic '*')",
                 (long long)check->missing, check->first_missing, who, who);
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
        if (st->missing_before)
            ka_logdirs_partial_reason(check, principal, why, sizeof(why));
        else if (was)
            snprintf(why, sizeof(why), "%s", st->partial); /* still partial, it seems */
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
