/*
 * ka_admission_hook.c: the admission runtime (see ka_admission_hook.h).
 */
#include "ka_admission_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission.h"
#include "ka_log.h"
#include "ka_metadata_client.h"
#include "ka_protocol.h"

typedef struct waiter {
    void (*wake)(void *arg);
    void *arg;
} waiter_t;

struct ka_admission {
    ka_server_t *srv;
    ka_policy_t *policy; /* the active policy: the one pointer a reload swaps */
    ka_cluster_t *view;  /* NULL until the first refresh */
    ka_reservations_t *ledger;
    ka_mdc_t *mdc;
    waiter_t *waiters;
    size_t nwaiters, capwaiters;
    uint64_t seed;
    int view_logged;
    char reason[KA_ADM_MESSAGE_MAX]; /* the last CLOSE reason, read at once by the relay */
};

static int64_t now_ms(ka_admission_t *a)
{
    uv_update_time(a->srv->loop);
    return (int64_t)uv_now(a->srv->loop);
}

static void wake_all(ka_admission_t *a)
{
    size_t n = a->nwaiters;
    waiter_t *w = a->waiters;
    a->waiters = NULL;
    a->nwaiters = a->capwaiters = 0;
    for (size_t i = 0; i < n; i++)
        w[i].wake(w[i].arg);
    free(w);
}

static void on_view(void *arg, ka_cluster_t *view, const char *error)
{
    ka_admission_t *a = arg;
    int64_t now = now_ms(a);
    if (view != NULL) {
        size_t reconciled = ka_reservations_reconcile(a->ledger, view);
        ka_cluster_t *old = a->view;
        a->view = view;
        ka_cluster_unref(old);
        size_t expired = ka_reservations_expire(a->ledger, now);
        enum ka_log_level lvl = a->view_logged ? KA_LOG_DEBUG : KA_LOG_INFO;
        a->view_logged = 1;
        ka_log(lvl, "cluster view refreshed", KA_KI("brokers", ka_cluster_broker_count(view)),
               KA_KI("topics", ka_cluster_topic_count(view)),
               KA_KI("partitions", ka_cluster_total_partitions(view)),
               KA_KI("num.partitions", ka_cluster_broker_defaults(view)->num_partitions),
               KA_KI("default.replication.factor",
                     ka_cluster_broker_defaults(view)->default_replication_factor),
               KA_KI("reservations_reconciled", reconciled), KA_KI("reservations_expired", expired),
               KA_KI("reservations_outstanding", ka_reservations_count(a->ledger)));
    } else {
        ka_reservations_expire(a->ledger, now);
        ka_log(KA_LOG_WARN, "cluster view refresh failed", KA_KS("error", error),
               KA_KI("view_age_ms", a->view ? now - ka_cluster_taken_at_ms(a->view) : -1));
    }
    wake_all(a);
}

static int defer_cb(void *user, void (*wake)(void *arg), void *arg)
{
    ka_admission_t *a = user;
    /* The broker is unreachable: do not wait out the backoff, decide now
     * (against a view that may be stale: the engine then fails closed). */
    if (ka_mdc_down(a->mdc))
        return KA_EINVALID;
    if (a->nwaiters == a->capwaiters) {
        size_t cap = a->capwaiters ? a->capwaiters * 2 : 16;
        waiter_t *w = realloc(a->waiters, cap * sizeof(*w));
        if (w == NULL)
            return KA_ENOMEM;
        a->waiters = w;
        a->capwaiters = cap;
    }
    a->waiters[a->nwaiters++] = (waiter_t){wake, arg};
    a->srv->metrics.adm_deferred++;
    ka_mdc_refresh(a->mdc);
    return 0;
}

static void cancel_cb(void *user, void *arg)
{
    ka_admission_t *a = user;
    for (size_t i = 0; i < a->nwaiters; i++) {
        if (a->waiters[i].arg == arg) {
            memmove(&a->waiters[i], &a->waiters[i + 1], (a->nwaiters - i - 1) * sizeof(waiter_t));
            a->nwaiters--;
            return;
        }
    }
}

static void free_state_cb(void *user, void *state)
{
    (void)user;
    ka_adm_pending_free(state);
}

static void log_decision(const ka_adm_outcome_t *o, int32_t correlation_id, int audit_mode)
{
    ka_log(KA_LOG_INFO, "admission decision", KA_KS("api", ka_adm_api_name(o->api)),
           KA_KI("version", o->api_version), KA_KI("correlation_id", correlation_id),
           KA_KS("decision", ka_adm_decision_name(o->decision)),
           KA_KS("reason", ka_adm_reason_name(o->reason)), KA_KI("items", o->items),
           KA_KI("admitted", o->admitted), KA_KI("rejected", o->rejected),
           KA_KI("placed", o->placed), KA_KI("deferred_to_broker", o->deferred_to_broker),
           KA_KI("audited", o->audited), KA_KS("mode", audit_mode ? "audit" : "enforce"),
           KA_KS("message", o->message[0] ? o->message : NULL));
}

static int on_request(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                      ka_hook_verdict_t *v)
{
    ka_admission_t *a = user;
    ka_metrics_t *m = &a->srv->metrics;
    int resumed = v->resumed;
    ka_adm_outcome_t o;
    int64_t now = now_ms(a);
    ka_policy_t *policy = ka_policy_ref(a->policy);
    ka_cluster_t *view = ka_cluster_ref(a->view);

    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    ka_adm_ctx_t ctx = {.policy = policy,
                        .view = view,
                        .ledger = a->ledger,
                        .now_ms = now,
                        .seed = ++a->seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)now,
                        .want_fresh_view = !resumed && ka_adm_view_needs_refresh(policy, view, now),
                        /* An item the view does not know waits for one refresh, then
                         * the resumed decision judges it on what the view shows. */
                        .may_wait_for_view = !resumed,
                        .max_frame = a->srv->cfg->max_frame_bytes};
    int rc = ka_adm_request(&ctx, frame, *len, &o);
    int audit_mode = ka_policy_enforcement(policy) == KA_ENFORCEMENT_AUDIT;
    ka_cluster_unref(view);
    ka_policy_unref(policy);
    if (rc < 0) {
        v->kind = KA_HOOK_CLOSE;
        v->reason = "out of memory deciding admission";
        return 0;
    }
    switch (o.action) {
    case KA_ADM_WAIT:
        v->kind = KA_HOOK_DEFER;
        ka_log(KA_LOG_DEBUG, "admission waits for a metadata refresh",
               KA_KS("api", ka_adm_api_name(o.api)), KA_KI("correlation_id", hdr->correlation_id));
        return 0;
    case KA_ADM_CLOSE:
        if (o.version_refused)
            m->adm_version_refused[o.api]++;
        if (o.decode_error)
            m->adm_decode_errors[o.api][o.api_version < KA_ADM_VERSION_SLOTS
                                            ? o.api_version
                                            : KA_ADM_VERSION_SLOTS - 1]++;
        ka_log(KA_LOG_WARN, "admission request refused, closing the connection",
               KA_KS("api", ka_adm_api_name(o.api)), KA_KI("version", o.api_version),
               KA_KS("detail", o.message));
        snprintf(a->reason, sizeof(a->reason), "%s", o.message);
        v->kind = KA_HOOK_CLOSE;
        v->reason = a->reason;
        ka_adm_outcome_release(&o);
        return 0;
    default:
        break;
    }
    if (o.decode_error) { /* answered with an error (AlterPartitionReassignments) */
        m->adm_decode_errors[o.api][o.api_version < KA_ADM_VERSION_SLOTS
                                        ? o.api_version
                                        : KA_ADM_VERSION_SLOTS - 1]++;
        ka_log(KA_LOG_WARN, "admission request does not decode, answered with an error",
               KA_KS("api", ka_adm_api_name(o.api)), KA_KI("version", o.api_version),
               KA_KS("detail", o.message));
    }
    if (o.decided) {
        m->adm_decisions[o.api][o.decision][o.reason]++;
        if (o.auto_create_denied)
            m->adm_auto_create_denials++;
        log_decision(&o, hdr->correlation_id, audit_mode);
        if (o.auto_create_denied)
            ka_log(KA_LOG_INFO, "auto-creation denied, forwarding Metadata with the flag cleared",
                   KA_KI("auto_create_denials", m->adm_auto_create_denials));
    }
    if (o.action == KA_ADM_ANSWER || o.action == KA_ADM_REWRITE) {
        v->kind = o.action == KA_ADM_ANSWER ? KA_HOOK_ANSWER : KA_HOOK_FORWARD;
        v->bytes = o.bytes;
        v->len = o.len;
        v->free_bytes = free;
        o.bytes = NULL;
    }
    if (o.pending != NULL) {
        v->state = o.pending;
        v->buffer_response = 1;
        o.pending = NULL;
    }
    ka_adm_outcome_release(&o);
    return 0;
}

static int on_response(void *user, const ka_inflight_entry_t *request, uint8_t *frame, size_t *len,
                       ka_hook_verdict_t *v)
{
    ka_admission_t *a = user;
    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (!(request->flags & KA_INFLIGHT_HOOK_STATE) || request->answer == NULL)
        return 0;
    ka_adm_pending_t *p = request->answer;
    uint8_t *merged = NULL;
    size_t mlen = 0;
    int rc = ka_adm_response(p, frame, *len, a->srv->cfg->max_frame_bytes, &merged, &mlen);
    if (rc < 0) {
        ka_log(KA_LOG_WARN, "admission: broker response does not decode, forwarded unchanged",
               KA_KS("api", ka_api_name(p->api_key)), KA_KI("version", p->api_version),
               KA_KS("error", ka_strerror(rc)));
        return 0;
    }
    size_t released = 0, failed = 0;
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        if (it->local || it->broker_error == 0)
            continue;
        failed++;
        if (it->reservation_id != 0 && ka_reservations_release(a->ledger, it->reservation_id) == 0)
            released++;
        it->reservation_id = 0;
    }
    a->srv->metrics.adm_reservations_released += released;
    if (merged != NULL || failed > 0)
        ka_log(KA_LOG_INFO, "admission response", KA_KS("api", ka_api_name(p->api_key)),
               KA_KI("correlation_id", request->correlation_id), KA_KI("items", p->count),
               KA_KI("rejected_locally", p->local_count), KA_KI("failed_at_broker", failed),
               KA_KI("reservations_released", released), KA_KS("merged", merged ? "yes" : "no"));
    if (merged != NULL) {
        v->bytes = merged;
        v->len = mlen;
        v->free_bytes = free;
    }
    return 0;
}

int ka_admission_start(ka_server_t *srv, ka_policy_t *policy, char *err, size_t errlen)
{
    ka_admission_t *a = calloc(1, sizeof(*a));
    if (a == NULL || ka_reservations_new(&a->ledger) < 0) {
        free(a);
        snprintf(err, errlen, "out of memory");
        ka_policy_unref(policy);
        return KA_ENOMEM;
    }
    a->srv = srv;
    a->policy = policy;
    int rc = ka_mdc_start(srv->loop, (const struct sockaddr *)&srv->metadata_addr,
                          srv->metadata_name, ka_policy_metadata_refresh_interval_ms(policy),
                          &srv->metrics, on_view, a, &a->mdc);
    if (rc < 0) {
        ka_reservations_free(a->ledger);
        ka_policy_unref(policy);
        free(a);
        snprintf(err, errlen, "cannot start the metadata client: %s", ka_strerror(rc));
        return rc;
    }
    ka_mdc_set_security(a->mdc, &srv->mdc_security);
    static const int16_t keys[] = {
        KA_CREATETOPICS_REQUEST_API_KEY, KA_CREATEPARTITIONS_REQUEST_API_KEY,
        KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY, KA_METADATA_REQUEST_API_KEY};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        ka_intercept_entry_t *e = &srv->intercept.api[keys[i]];
        e->buffer_request = 1;
        e->on_request = on_request;
        e->on_response = keys[i] == KA_METADATA_REQUEST_API_KEY ? NULL : on_response;
        e->user = a;
        e->defer = defer_cb;
        e->cancel = cancel_cb;
        e->free_state = free_state_cb;
    }
    srv->admission = a;
    ka_log(KA_LOG_INFO, "admission enabled",
           KA_KI("max.broker.partitions", ka_policy_default_broker_limit(policy)),
           KA_KI("broker_overrides", ka_policy_override_count(policy)),
           KA_KI("max.partitions", ka_policy_max_partitions(policy)),
           KA_KS("enforcement",
                 ka_policy_enforcement(policy) == KA_ENFORCEMENT_AUDIT ? "audit" : "enforce"),
           KA_KS("auto.assignment",
                 ka_policy_auto_assignment(policy) == KA_AUTO_ASSIGNMENT_BOUND ? "bound" : "place"),
           KA_KI("reject.error.code", ka_policy_reject_error_code(policy)));
    return 0;
}

void ka_admission_set_policy(ka_admission_t *a, ka_policy_t *policy)
{
    ka_policy_t *old = a->policy;
    a->policy = policy;
    ka_policy_unref(old);
    ka_mdc_set_interval(a->mdc, ka_policy_metadata_refresh_interval_ms(policy));
}

ka_policy_t *ka_admission_policy(const ka_admission_t *a)
{
    return a->policy;
}

ka_cluster_t *ka_admission_view(const ka_admission_t *a)
{
    return a->view;
}

const ka_reservations_t *ka_admission_ledger(const ka_admission_t *a)
{
    return a->ledger;
}

int ka_admission_upstream_connected(const ka_admission_t *a)
{
    return a->mdc != NULL && ka_mdc_connected(a->mdc);
}

int64_t ka_admission_now_ms(ka_admission_t *a)
{
    return now_ms(a);
}

void ka_admission_stop(ka_admission_t *a)
{
    if (a == NULL)
        return;
    ka_mdc_stop(a->mdc);
    a->mdc = NULL;
    free(a->waiters);
    ka_cluster_unref(a->view);
    ka_reservations_free(a->ledger);
    ka_policy_unref(a->policy);
    a->srv->admission = NULL;
    free(a);
}
