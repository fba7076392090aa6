/*
 * ka_admission_events.c: what one admission decision writes: its log event
 * and an audit event per judged item (docs/logging.md has both).
 */
#include "ka_admission_events.h"

#include <stdio.h>
#include <string.h>

#include "ka_audit.h"
#include "ka_log.h"
#include "ka_metrics.h"

/* The one log event of each decision; docs/logging.md documents its fields. */
void ka_admission_log_decision(const ka_adm_outcome_t *o, int32_t correlation_id, int audit_mode,
                               uint64_t duration_ns)
{
    ka_log(KA_LOG_INFO, "admission decision", KA_KS("event", "admission_decision"),
           KA_KS("api", ka_adm_api_name(o->api)), KA_KI("version", o->api_version),
           KA_KI("correlation_id", correlation_id),
           KA_KS("decision", ka_adm_decision_name(o->decision)),
           KA_KS("reason", ka_adm_reason_name(o->reason)), KA_KI("items", o->items),
           KA_KI("admitted", o->admitted), KA_KI("rejected", o->rejected),
           KA_KI("placed", o->placed), KA_KI("deferred_to_broker", o->deferred_to_broker),
           KA_KI("audited", o->audited), KA_KS("mode", audit_mode ? "audit" : "enforce"),
           KA_KI("duration_us", (long long)(duration_ns / 1000)),
           KA_KS("message", o->message[0] ? o->message : NULL));
}

/* Debug: the counts a cluster-wide decision was judged against, per broker, so that an
 * admission can be checked by hand against the brokers' own counts afterwards. */
void ka_admission_log_basis(const ka_cluster_t *view, const ka_reservations_t *before,
                            uint64_t order, int64_t now_ms)
{
    if (!ka_log_enabled(KA_LOG_DEBUG) || view == NULL)
        return;
    char counts[512];
    size_t off = 0;
    counts[0] = '\0';
    for (size_t i = 0; i < ka_cluster_broker_count(view) && off < sizeof(counts) - 48; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        int n = snprintf(counts + off, sizeof(counts) - off, "%s%d:%lld+%lld", i ? "," : "",
                         (int)b->id, (long long)b->replicas,
                         (long long)(before ? ka_reservations_broker_replicas(before, b->id) : 0));
        if (n < 0)
            break;
        off += (size_t)n;
    }
    ka_log(KA_LOG_DEBUG, "admission basis", KA_KI("ledger_order", order),
           KA_KI("view_age_ms", now_ms - ka_cluster_taken_at_ms(view)),
           KA_KI("reservations", before ? ka_reservations_count(before) : 0),
           KA_KS("broker_view_plus_reserved", counts));
}

void ka_admission_audit_item(const ka_frame_origin_t *origin, const ka_adm_judged_t *it)
{
    char resource[320];
    size_t n = it->topic.len > 0 ? (size_t)it->topic.len : 0;
    if (it->partition >= 0)
        snprintf(resource, sizeof(resource), "%.*s-%d", (int)(n < 300 ? n : 300),
                 (const char *)it->topic.ptr, (int)it->partition);
    ka_audit_event_t e = {
        .principal = origin ? origin->principal : NULL,
        .client_addr = origin ? origin->peer : NULL,
        .client_id = it->client_id.len >= 0 ? (const char *)it->client_id.ptr : NULL,
        .client_id_len = it->client_id.len > 0 ? (size_t)it->client_id.len : 0,
        .api = ka_adm_api_name(it->api),
        .resource = it->partition >= 0 ? resource : (const char *)it->topic.ptr,
        .resource_len = it->partition >= 0 ? strlen(resource) : n,
        .rule = it->rule,
        .verdict = it->verdict,
        .reason = it->reason != KA_REASON_NONE ? ka_adm_reason_name(it->reason) : NULL,
        .message = it->message};
    ka_audit_emit(&e);
}
