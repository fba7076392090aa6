/*
 * ka_admin_status.c: the status page (GET /, its script and style) and the
 * latest decisions it lists (GET /v1/decisions).
 *
 * The page's files are compiled into the binary (embed_assets.cmake turns
 * admin-http/status/ into ka_admin_assets.c), so a sidecar serves it with
 * no file on disk and the browser fetches nothing from elsewhere. Reading
 * needs no token, like every GET.
 *
 * The ledger's health (ka_admin_ledger_health_json) is built here from the
 * metrics for GET /v1/admission, which the page shows too.
 */
#include "ka_admin_router.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ka_metrics.h"

/* The table embed_assets.cmake generates. */
typedef struct ka_admin_asset {
    const char *path; /* as requested: "/" for index.html */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} ka_admin_asset_t;
extern const ka_admin_asset_t ka_admin_assets[];
extern const size_t ka_admin_asset_count;

void ka_admin_handle_asset_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                               const char *arg, ka_admin_response_t *res)
{
    (void)ctx, (void)arg;
    for (size_t i = 0; i < ka_admin_asset_count; i++) {
        const ka_admin_asset_t *a = &ka_admin_assets[i];
        if (strcmp(a->path, req->path) != 0)
            continue;
        ka_admin_buf_reset(&res->body);
        if (ka_admin_buf_append(&res->body, a->data, a->len) < 0) {
            ka_admin_response_error(res, 500, "out of memory");
            return;
        }
        res->status = 200;
        res->content_type = a->content_type;
        return;
    }
    ka_admin_response_error(res, 404, "no such page: %s", req->path);
}

static void iso_time(int64_t unix_ms, char *buf, size_t len)
{
    time_t secs = (time_t)(unix_ms / 1000);
    struct tm tm;

    if (gmtime_r(&secs, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf + strlen(buf), len - strlen(buf), ".%03dZ", (int)(unix_ms % 1000));
}

static json_t *decision_json(const ka_metrics_decision_t *d)
{
    char at[48];

    iso_time(d->at_unix_ms, at, sizeof(at));
    return json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:b,s:s?,s:s?,s:s?}", "at", at, "api",
                     ka_adm_api_name(d->api), "decision", ka_adm_decision_name(d->decision),
                     "reason", ka_adm_reason_name(d->reason), "correlation_id", d->correlation_id,
                     "items", (int)d->items, "admitted", (int)d->admitted, "rejected",
                     (int)d->rejected, "audit", d->audit, "message",
                     d->message[0] ? d->message : NULL, "principal",
                     d->principal[0] ? d->principal : NULL, "rule", d->rule[0] ? d->rule : NULL);
}

void ka_admin_handle_decisions_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                   const char *arg, ka_admin_response_t *res)
{
    const ka_metrics_t *m = ctx->ops->metrics_get ? ctx->ops->metrics_get(ctx->ops->ctx) : NULL;
    json_t *list = json_array();
    const ka_metrics_decision_t *d;

    (void)req, (void)arg;
    for (size_t i = 0; m != NULL && list != NULL && (d = ka_metrics_recent(m, i)) != NULL; i++)
        json_array_append_new(list, decision_json(d));
    ka_admin_response_json(res, 200,
                           json_pack("{s:I,s:o}", "total",
                                     (json_int_t)(m != NULL ? m->recent_total : 0), "decisions",
                                     list));
}

/* A last error and when, or nothing when there was none. */
static void set_last_error(json_t *o, const char *err, int64_t at_unix_ms)
{
    char at[48];
    if (err[0] == '\0')
        return;
    iso_time(at_unix_ms, at, sizeof(at));
    json_object_set_new(o, "last_error", json_string(err));
    json_object_set_new(o, "last_error_at", json_string(at));
}

static json_t *topic_json(uint64_t replicas, uint64_t isr, uint64_t under, uint64_t unavailable,
                          const char *state)
{
    return json_pack("{s:I,s:I,s:b,s:b,s:s}", "replicas", (json_int_t)replicas, "isr",
                     (json_int_t)isr, "under_replicated", (int)under, "unavailable",
                     (int)unavailable, "state", state[0] ? state : "not checked yet");
}

json_t *ka_admin_ledger_health_json(const ka_metrics_t *m)
{
    if (m == NULL || (m->ledger_blocked_why[0] == '\0' && !m->ledger_usable))
        return NULL; /* no ledger client: --ledger off */
    json_t *consumer = json_pack(
        "{s:I,s:I,s:b,s:I}", "lag_records", (json_int_t)m->ledger_consumer_lag_records, "lag_ms",
        (json_int_t)m->ledger_consumer_lag_ms, "error", (int)m->ledger_consumer_error,
        "errors_total", (json_int_t)m->ledger_consumer_errors);
    json_t *producer = json_pack("{s:b,s:b,s:I}", "error", (int)m->ledger_producer_error, "fatal",
                                 (int)m->ledger_producer_fatal, "recreated_total",
                                 (json_int_t)m->ledger_client_recreated);
    if (consumer == NULL || producer == NULL) {
        json_decref(consumer);
        json_decref(producer);
        return NULL;
    }
    set_last_error(consumer, m->ledger_consumer_last_error, m->ledger_consumer_last_error_unix_ms);
    set_last_error(producer, m->ledger_producer_last_error, m->ledger_producer_last_error_unix_ms);
    return json_pack(
        "{s:b,s:s?,s:o,s:o,s:o,s:o}", "usable", (int)m->ledger_usable, "why",
        m->ledger_usable ? NULL : m->ledger_blocked_why, "consumer", consumer, "producer", producer,
        "topic",
        topic_json(m->ledger_topic_replicas, m->ledger_topic_isr, m->ledger_topic_under_replicated,
                   m->ledger_topic_unavailable, m->ledger_topic_state),
        "limits_topic",
        topic_json(m->limits_topic_replicas, m->limits_topic_isr, m->limits_topic_under_replicated,
                   m->limits_topic_unavailable, m->limits_topic_state));
}
