/*
 * ka_own_rf.c: when and how to raise a kadmit topic's replication (see
 * ka_own_rf.h).
 */
#include "ka_own_rf.h"

#include <stdio.h>
#include <string.h>

#include "ka_admission_int.h"
#include "ka_alterpartitionreassignments_response.h"
#include "ka_log.h"
#include "ka_metrics.h"

static int has(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] == id)
            return 1;
    }
    return 0;
}

int ka_own_rf_target(const ka_cluster_t *view, const int32_t *replicas, int32_t n,
                     int32_t out[KA_OWN_RF_MAX], int32_t *out_count)
{
    int32_t brokers = 0;
    size_t count = ka_cluster_broker_count(view);
    for (size_t i = 0; i < count; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        brokers += b->listed && !b->fenced;
    }
    int32_t want = brokers < KA_OWN_RF_MAX ? brokers : KA_OWN_RF_MAX;
    *out_count = 0;
    if (n <= 0 || n >= want)
        return 0;
    for (int32_t i = 0; i < n && *out_count < KA_OWN_RF_MAX; i++)
        out[(*out_count)++] = replicas[i];
    /* Then the lowest ids not yet in: every sidecar picks the same. */
    while (*out_count < want) {
        int32_t best = -1;
        for (size_t i = 0; i < count; i++) {
            const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
            if (!b->listed || b->fenced || has(out, *out_count, b->id))
                continue;
            if (best < 0 || b->id < best)
                best = b->id;
        }
        if (best < 0)
            break;
        out[(*out_count)++] = best;
    }
    return *out_count > n;
}

int ka_own_rf_due(ka_own_rf_t *s, const ka_cluster_t *view, int (*own)(ka_slice_t name),
                  int64_t now_ms, int64_t jitter_ms, ka_own_rf_plan_t *plan)
{
    size_t topics = ka_cluster_topic_count(view);
    int need = 0; /* a partition is short, asked or not */
    for (size_t t = 0; t < topics; t++) {
        ka_slice_t name;
        const ka_cluster_topic_t *topic = ka_cluster_topic_at(view, t, &name);
        if (!own(name) || name.len <= 0 || name.len > KA_OWN_RF_TOPIC_MAX)
            continue;
        int32_t parts = ka_cluster_topic_partition_count(topic);
        for (int32_t p = 0; p < parts; p++) {
            int32_t n = 0;
            const int32_t *replicas = ka_cluster_topic_replicas(topic, p, &n);
            if (replicas == NULL ||
                !ka_own_rf_target(view, replicas, n, plan->target, &plan->count))
                continue;
            snprintf(plan->topic, sizeof(plan->topic), "%.*s", (int)name.len,
                     (const char *)name.ptr);
            plan->partition = p;
            plan->from = n;
            need = 1;
            if (s->due_ms == 0) { /* seen first: wait, then look again on a newer view */
                s->due_ms = now_ms + jitter_ms;
                return 0;
            }
            if (now_ms < s->due_ms)
                return 0;
            if (s->sent_ms != 0 && now_ms - s->sent_ms < KA_OWN_RF_RESEND_MS &&
                strcmp(s->sent.topic, plan->topic) == 0 && s->sent.partition == p &&
                s->sent.count == plan->count &&
                memcmp(s->sent.target, plan->target, sizeof(int32_t) * (size_t)plan->count) == 0)
                continue; /* asked already: Kafka is moving it */
            s->sent = *plan;
            s->sent_ms = now_ms;
            return 1;
        }
    }
    if (!need)
        s->due_ms = 0; /* nothing to raise (any more) */
    return 0;
}

void ka_own_rf_request(const ka_own_rf_plan_t *plan, ka_own_rf_msg_t *msg)
{
    ka_alterpartitionreassignments_request_init(&msg->req);
    ka_alterpartitionreassignments_request_reassignable_topic_init(&msg->topic);
    ka_alterpartitionreassignments_request_reassignable_partition_init(&msg->part);
    msg->part.partition_index = plan->partition;
    msg->part.replicas.count = plan->count;
    msg->part.replicas.items = (int32_t *)plan->target;
    msg->topic.name = (ka_slice_t){(const uint8_t *)plan->topic, (int32_t)strlen(plan->topic)};
    msg->topic.partitions.count = 1;
    msg->topic.partitions.items = &msg->part;
    msg->req.timeout_ms = 30000;
    msg->req.allow_replication_factor_change = 1;
    msg->req.topics.count = 1;
    msg->req.topics.items = &msg->topic;
}

int ka_own_rf_is_own(ka_slice_t name)
{
    return ka_adm_own_topic(name) != KA_ADM_OWN_NONE;
}

static void replicas_text(const int32_t *ids, int32_t n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, i ? ",%d" : "%d", (int)ids[i]);
}

void ka_own_rf_answer(const ka_own_rf_plan_t *sent,
                      const struct ka_alterpartitionreassignments_response *resp,
                      struct ka_metrics *m)
{
    char target[64], msg[200] = "";
    int16_t code = resp->error_code;
    if (code == 0 && resp->responses.count > 0 && resp->responses.items[0].partitions.count > 0) {
        const struct ka_alterpartitionreassignments_response_reassignable_partition_response *p =
            &resp->responses.items[0].partitions.items[0];
        code = p->error_code;
        if (p->error_message.len > 0)
            snprintf(msg, sizeof(msg), "%.*s", (int)p->error_message.len,
                     (const char *)p->error_message.ptr);
    } else if (resp->error_message.len > 0) {
        snprintf(msg, sizeof(msg), "%.*s", (int)resp->error_message.len,
                 (const char *)resp->error_message.ptr);
    }
    replicas_text(sent->target, sent->count, target, sizeof(target));
    if (code == 0) {
        m->own_topic_reassignments++;
        ka_log(KA_LOG_WARN, "raising the replication of kadmit's topic to min(3, brokers)",
               KA_KS("topic", sent->topic), KA_KI("partition", sent->partition),
               KA_KI("from_replicas", sent->from), KA_KI("to_replicas", sent->count),
               KA_KS("replicas", target));
    } else {
        ka_log(KA_LOG_WARN, "kadmit's topic replication not raised: the broker refused",
               KA_KS("topic", sent->topic), KA_KI("partition", sent->partition),
               KA_KS("replicas", target), KA_KI("error_code", code), KA_KS("message", msg));
    }
}
