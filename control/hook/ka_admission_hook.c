/*
 * ka_admission_hook.c: the admission runtime (see ka_admission_hook.h).
 *
 * With --ledger on, a decision that admits anything runs in two phases
 * (ka_ledger.h): phase 1 judges against the view and every reservation
 * known (the mirror: all live intents of all sidecars, own in-flight ones
 * included), appends an intent for the admitted items and DEFERs; when the
 * intent is read back at offset O, phase 2 judges those items again
 * against the view and only the intents ordered before O, keeping phase
 * 1's placement, and the request goes on. The broker's answer is recorded
 * as an outcome. A decision that admits nothing never touches the ledger.
 * The two phases live in ka_admission_ledger.c; this file holds the hook,
 * the waits for a fresher view, and setup.
 */
#include "ka_admission_hook_int.h"
#include "ka_admission_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission.h"
#include "ka_audit.h"
#include "ka_ledger.h"
#include "ka_ledger_claims.h"
#include "ka_log.h"
#include "ka_metadata_client.h"
#include "ka_policy_rules.h"
#include "ka_protocol.h"
#include "ka_rdk_side.h"

int64_t ka_adm_hook_now_ms(ka_admission_t *a)
{
    uv_update_time(ka_server_loop(a->srv));
    return (int64_t)uv_now(ka_server_loop(a->srv));
}

/* Wakes every waiter of a list, emptied first (a woken decision may wait again). */
static void wake_list(waiter_t **list, size_t *n, size_t *cap)
{
    size_t count = *n;
    waiter_t *w = *list;
    *list = NULL;
    *n = *cap = 0;
    for (size_t i = 0; i < count; i++)
        w[i].wake(w[i].arg);
    free(w);
}

static void wake_all(ka_admission_t *a)
{
    wake_list(&a->waiters, &a->nwaiters, &a->capwaiters);
}

static void on_view(void *arg, ka_cluster_t *view, const char *error)
{
    ka_admission_t *a = arg;
    int64_t now = ka_adm_hook_now_ms(a);
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
        if (a->ledger_client != NULL)
            ka_ledger_on_view(a->ledger_client, view);
    } else {
        ka_reservations_expire(a->ledger, now);
        ka_log(KA_LOG_WARN, "cluster view refresh failed", KA_KS("error", error),
               KA_KI("view_age_ms", a->view ? now - ka_cluster_taken_at_ms(a->view) : -1));
    }
    wake_all(a);
}

static int push_waiter(waiter_t **list, size_t *n, size_t *cap, void (*wake)(void *arg), void *arg)
{
    if (*n == *cap) {
        size_t grown = *cap ? *cap * 2 : 16;
        waiter_t *w = realloc(*list, grown * sizeof(*w));
        if (w == NULL)
            return KA_ENOMEM;
        *list = w;
        *cap = grown;
    }
    (*list)[(*n)++] = (waiter_t){wake, arg};
    return 0;
}

static bool drop_waiter(waiter_t *list, size_t *n, void *arg)
{
    for (size_t i = 0; i < *n; i++) {
        if (list[i].arg == arg) {
            memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(waiter_t));
            (*n)--;
            return true;
        }
    }
    return false;
}

static void memory_timer_cb(uv_timer_t *t)
{
    ka_admission_t *a = t->data;
    wake_list(&a->memory_waiters, &a->nmemory, &a->capmemory);
}

static void free_timer_cb(uv_handle_t *h)
{
    free(h);
}

static int defer_cb(void *user, void (*wake)(void *arg), void *arg)
{
    ka_admission_t *a = user;
    if (a->just_deferred != NULL) { /* waits for the ledger, not for a view */
        a->just_deferred->wake = wake;
        a->just_deferred->arg = arg;
        a->just_deferred = NULL;
        return 0;
    }
    if (a->memory_wait_next) { /* waits for pool memory: tried again on a timer */
        a->memory_wait_next = 0;
        int rc = push_waiter(&a->memory_waiters, &a->nmemory, &a->capmemory, wake, arg);
        if (rc == 0 && !uv_is_active((uv_handle_t *)a->memory_timer))
            uv_timer_start(a->memory_timer, memory_timer_cb, KA_MEMORY_WAIT_MS, 0);
        return rc;
    }
    /* The broker is unreachable: do not wait out the backoff, decide now
     * (against a view that may be stale: the engine then fails closed). */
    if (ka_mdc_down(a->mdc))
        return KA_EINVALID;
    if (push_waiter(&a->waiters, &a->nwaiters, &a->capwaiters, wake, arg) < 0)
        return KA_ENOMEM;
    ka_server_metrics(a->srv)->adm_deferred++;
    ka_mdc_note_request(a->mdc); /* the first request after idleness waits here */
    ka_mdc_refresh(a->mdc);
    return 0;
}

static void cancel_cb(void *user, void *arg)
{
    ka_admission_t *a = user;
    ledger_wait_t *w = ka_adm_ledger_take_wait(a, NULL, 0, arg);
    if (w != NULL) {
        ka_adm_ledger_wait_free(a, w);
        return;
    }
    if (!drop_waiter(a->waiters, &a->nwaiters, arg))
        drop_waiter(a->memory_waiters, &a->nmemory, arg);
}

static void free_state_cb(void *user, void *state)
{
    hook_state_t *hs = state;
    /* The client went away before the broker answered: what was forwarded
     * counts as admitted until a view shows it or it expires. */
    if (hs->outcome_due)
        ka_adm_ledger_write_outcome(user, hs->seq, &hs->claims);
    ka_ledger_claims_free(&hs->claims);
    ka_adm_pending_free(hs->pending);
    free(hs);
}

/* One audit event per judged item (ka_adm_ctx_t.on_judged). */
static void audit_item_cb(void *arg, const ka_adm_judged_t *it)
{
    ka_admission_t *a = arg;

    ka_admission_audit_item(a->origin, it);
    int rejects = strcmp(it->verdict, "reject") == 0;
    if (it->rule != NULL && (a->decided_rule[0] == '\0' || (rejects && !a->decided_rule_rejects))) {
        snprintf(a->decided_rule, sizeof(a->decided_rule), "%s", it->rule);
        a->decided_rule_rejects = rejects;
    }
}

/* For the status page's latest decisions (GET /v1/decisions). */
static void record_decision(ka_admission_t *a, const ka_adm_outcome_t *o, int32_t correlation_id,
                            int audit_mode)
{
    ka_metrics_t *m = ka_server_metrics(a->srv);
    ka_metrics_decision_t d = {.api = o->api,
                               .decision = o->decision,
                               .reason = o->reason,
                               .correlation_id = correlation_id,
                               .items = (uint32_t)o->items,
                               .admitted = (uint32_t)o->admitted,
                               .rejected = (uint32_t)o->rejected,
                               .audit = audit_mode};
    const char *who = a->origin ? a->origin->principal : NULL;
    snprintf(d.principal, sizeof(d.principal), "%s",
             who ? who : ka_policy_unknown_principal(a->policy));
    snprintf(d.rule, sizeof(d.rule), "%s", a->decided_rule);
    ka_metrics_record_decision(m, &d, o->message);
}

/* The context of one decision: the policy and view in force now (references taken). */
ka_adm_ctx_t ka_adm_hook_decision_ctx(ka_admission_t *a, const ka_frame_header_t *hdr, int resumed)
{
    int64_t now = ka_adm_hook_now_ms(a);
    a->origin = hdr->origin;
    a->decided_rule[0] = '\0';
    a->decided_rule_rejects = 0;
    ka_policy_t *policy = ka_policy_ref(a->policy);
    ka_cluster_t *view = ka_cluster_ref(a->view);
    return (ka_adm_ctx_t){.policy = policy,
                          .view = view,
                          .ledger = a->ledger,
                          .now_ms = now,
                          .seed = ++a->seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)now,
                          .want_fresh_view =
                              !resumed && ka_adm_view_needs_refresh(policy, view, now),
                          /* An item the view does not know (a topic admitted a
                           * moment ago, through any sidecar) waits for refreshes, a
                           * bounded number of them; then it is judged on what the
                           * view shows, or refused with a message. */
                          .may_wait_for_view = resumed < KA_VIEW_WAIT_ROUNDS,
                          /* The first wake may come from a refresh already under way when
                           * the request arrived; the second was asked for after it. A frame
                           * that cannot wait (LAST) has no such view. */
                          .view_follows_request = resumed >= 2 && resumed != KA_HOOK_RESUMED_LAST,
                          .max_frame = ka_server_config(a->srv)->max_frame_bytes,
                          .budget = ka_pool_arena_budget(ka_server_pool(a->srv)),
                          .principal = hdr->origin ? hdr->origin->principal : NULL,
                          .on_judged = audit_item_cb,
                          .on_judged_arg = a};
}

void ka_adm_hook_ctx_release(ka_adm_ctx_t *ctx)
{
    ka_cluster_unref((ka_cluster_t *)ctx->view);
    ka_policy_unref((ka_policy_t *)ctx->policy);
}

static int count_decode_error(ka_metrics_t *m, const ka_adm_outcome_t *o)
{
    return (int)++m->adm_decode_errors[o->api][o->api_version < KA_ADM_VERSION_SLOTS
                                                   ? o->api_version
                                                   : KA_ADM_VERSION_SLOTS - 1];
}

/*
 * Turns an outcome into the relay's verdict, logging and counting it. hs
 * (or a new state) keeps the pending items to the response; an outcome
 * without pending frees hs.
 */
int ka_adm_hook_apply_outcome(ka_admission_t *a, const ka_frame_header_t *hdr, ka_adm_outcome_t *o,
                              int audit_mode, hook_state_t *hs, ka_hook_verdict_t *v,
                              uint64_t started_ns)
{
    ka_metrics_t *m = ka_server_metrics(a->srv);
    switch (o->action) {
    case KA_ADM_WAIT:
        v->kind = KA_HOOK_DEFER;
        ka_log(KA_LOG_DEBUG, "admission waits for a metadata refresh",
               KA_KS("api", ka_adm_api_name(o->api)), KA_KI("correlation_id", hdr->correlation_id));
        free(hs);
        return 0;
    case KA_ADM_CLOSE:
        if (o->version_refused)
            m->adm_version_refused[o->api]++;
        if (o->decode_error)
            count_decode_error(m, o);
        ka_log(KA_LOG_WARN, "admission request refused, closing the connection",
               KA_KS("api", ka_adm_api_name(o->api)), KA_KI("version", o->api_version),
               KA_KS("detail", o->message));
        snprintf(a->reason, sizeof(a->reason), "%s", o->message);
        v->kind = KA_HOOK_CLOSE;
        v->reason = a->reason;
        ka_adm_outcome_release(o);
        free(hs);
        return 0;
    default:
        break;
    }
    if (o->decode_error) { /* answered with an error (AlterPartitionReassignments) */
        count_decode_error(m, o);
        ka_log(KA_LOG_WARN, "admission request does not decode, answered with an error",
               KA_KS("api", ka_adm_api_name(o->api)), KA_KI("version", o->api_version),
               KA_KS("detail", o->message));
    }
    if (o->decided) {
        ka_mdc_note_request(a->mdc);
        m->adm_decisions[o->api][o->decision][o->reason]++;
        uint64_t took = uv_hrtime() - started_ns;
        ka_metrics_observe_decision(m, o->api, took);
        record_decision(a, o, hdr->correlation_id, audit_mode);
        if (o->auto_create_denied)
            m->adm_auto_create_denials++;
        if (o->api == KA_ADM_DELETE_TOPICS)
            m->protected_refused_delete_topics += o->protected_refused;
        else if (o->api == KA_ADM_DELETE_RECORDS)
            m->protected_refused_delete_records += o->protected_refused;
        ka_admission_log_decision(o, hdr->correlation_id, audit_mode, took);
        if (o->auto_create_denied)
            ka_log(KA_LOG_INFO, "auto-creation denied, forwarding Metadata with the flag cleared",
                   KA_KI("auto_create_denials", m->adm_auto_create_denials));
    }
    if (o->action == KA_ADM_ANSWER || o->action == KA_ADM_REWRITE) {
        v->kind = o->action == KA_ADM_ANSWER ? KA_HOOK_ANSWER : KA_HOOK_FORWARD;
        v->bytes = o->bytes;
        v->len = o->len;
        v->free_bytes = free;
        o->bytes = NULL;
    }
    if (o->pending != NULL && hs == NULL && (hs = calloc(1, sizeof(*hs))) == NULL) {
        ka_adm_outcome_release(o);
        v->kind = KA_HOOK_CLOSE;
        v->reason = "out of memory deciding admission";
        return 0;
    }
    if (o->pending != NULL) {
        hs->pending = o->pending;
        v->state = hs;
        v->buffer_response = 1;
        o->pending = NULL;
    } else {
        free(hs);
    }
    ka_adm_outcome_release(o);
    return 0;
}

static int on_request(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                      ka_hook_verdict_t *v)
{
    ka_admission_t *a = user;
    int resumed = v->resumed;
    ka_adm_outcome_t o;
    int rc;
    uint64_t started_ns = uv_hrtime();

    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    a->memory_wait_next = 0; /* set again below only for this frame's wait for memory */
    ka_adm_ledger_sweep_waits(a, ka_adm_hook_now_ms(a));
    /* A connection whose SASL login is under way or failed, or that has not logged in on a
     * SASL listener: the broker refuses every such request and closes the connection, in
     * any cluster state. Judging it would reserve headroom (kept on a disconnect, invariant
     * 12) for a request that creates nothing, so it goes on unjudged and reserves nothing. */
    if (hdr->origin != NULL && !hdr->origin->authenticated) {
        ka_server_metrics(a->srv)->adm_unauthenticated++;
        ka_log(KA_LOG_DEBUG, "admission request before authentication, left to the broker",
               KA_KI("api_key", hdr->api_key), KA_KI("correlation_id", hdr->correlation_id));
        return 0;
    }
    ledger_wait_t *w = resumed ? ka_adm_ledger_take_wait(a, frame, *len, NULL) : NULL;
    if (w != NULL)
        return ka_adm_ledger_phase2(a, w, hdr, v);
    ka_adm_ctx_t ctx = ka_adm_hook_decision_ctx(a, hdr, resumed);
    int audit_mode = ka_policy_enforcement(ctx.policy) == KA_ENFORCEMENT_AUDIT;
    if (a->ledger_client == NULL) {
        rc = ka_adm_request(&ctx, frame, *len, &o);
    } else if (ka_adm_ledger_phase1(a, frame, *len, &ctx, &o, &rc)) {
        a->just_deferred->started_ns = started_ns;
        ka_adm_hook_ctx_release(&ctx);
        v->kind = KA_HOOK_DEFER;
        return 0;
    }
    ka_adm_hook_ctx_release(&ctx);
    /* Deciding takes memory (decode arenas, charged to the pool's priority class), which
     * streamed reads and held requests can leave short for seconds: the request then tries
     * again every KA_MEMORY_WAIT_MS, for up to --held-request-timeout-ms, before its
     * connection is closed. */
    if (rc == KA_ENOMEM && resumed != KA_HOOK_RESUMED_LAST &&
        (int64_t)resumed * KA_MEMORY_WAIT_MS <
            (int64_t)ka_server_config(a->srv)->held_request_timeout_ms) {
        ka_log(KA_LOG_DEBUG, "admission waits for memory to decide", KA_KI("api_key", hdr->api_key),
               KA_KI("correlation_id", hdr->correlation_id), KA_KI("round", resumed));
        a->memory_wait_next = 1;
        v->kind = KA_HOOK_DEFER;
        return 0;
    }
    if (rc < 0) {
        v->kind = KA_HOOK_CLOSE;
        v->reason = "out of memory deciding admission";
        return 0;
    }
    return ka_adm_hook_apply_outcome(a, hdr, &o, audit_mode, NULL, v, started_ns);
}

static int on_response(void *user, const ka_inflight_entry_t *request, uint8_t *frame, size_t *len,
                       ka_hook_verdict_t *v)
{
    ka_admission_t *a = user;
    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (!(request->flags & KA_INFLIGHT_HOOK_STATE) || request->answer == NULL)
        return 0;
    hook_state_t *hs = request->answer;
    ka_adm_pending_t *p = hs->pending;
    uint8_t *merged = NULL;
    size_t mlen = 0;
    int rc =
        ka_adm_response(p, frame, *len, ka_server_config(a->srv)->max_frame_bytes, &merged, &mlen);
    if (rc < 0) {
        ka_log(KA_LOG_WARN, "admission: broker response does not decode, forwarded unchanged",
               KA_KS("api", ka_api_name(p->api_key)), KA_KI("version", p->api_version),
               KA_KS("error", ka_strerror(rc)));
        return 0;
    }
    size_t released = 0, failed = 0, kept = 0;
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        if (it->local || it->broker_error == 0)
            continue;
        failed++;
        /* Invariant 12: only an answer that means nothing was created ends the reservation;
         * a timeout or an unknown answer keeps it until a view shows the result or it expires. */
        if (!ka_adm_error_created_nothing(p->api_key, it->broker_error)) {
            kept += it->reservation_id != 0;
            continue;
        }
        if (it->reservation_id != 0 && ka_reservations_release(a->ledger, it->reservation_id) == 0)
            released++;
        it->reservation_id = 0;
    }
    ka_server_metrics(a->srv)->adm_reservations_kept += kept;
    ka_server_metrics(a->srv)->adm_reservations_released += released;
    if (hs->outcome_due) {
        ka_ledger_claims_settle(&hs->claims, p);
        ka_adm_ledger_write_outcome(a, hs->seq, &hs->claims);
        hs->outcome_due = 0;
    }
    if (merged != NULL || failed > 0)
        ka_log(KA_LOG_INFO, "admission response", KA_KS("api", ka_api_name(p->api_key)),
               KA_KI("correlation_id", request->correlation_id), KA_KI("items", p->count),
               KA_KI("rejected_locally", p->local_count), KA_KI("failed_at_broker", failed),
               KA_KI("reservations_released", released), KA_KI("reservations_kept", kept),
               KA_KS("merged", merged ? "yes" : "no"));
    if (merged != NULL) {
        v->bytes = merged;
        v->len = mlen;
        v->free_bytes = free;
    }
    return 0;
}

static int ledger_start(ka_admission_t *a, char *err, size_t errlen)
{
    const ka_config_t *cfg = ka_server_config(a->srv);
    char bootstrap[KA_RDK_BOOTSTRAP_MAX], why[400] = "";
    enum ka_rdk_bootstrap_source source;
    ka_ledger_config_t lc = {.topic = cfg->ledger_topic,
                             .limits_topic = cfg->limits_topic,
                             .sidecar_id = cfg->sidecar_id,
                             .bootstrap = bootstrap,
                             .timeout_ms = cfg->ledger_timeout_ms,
                             .ttl_ms = cfg->ledger_intent_ttl_ms};
    /* The sidecars' client side, not the upstream side (ka_rdk_side.h). */
    int rc = ka_rdk_side_from(&lc.security, bootstrap, sizeof(bootstrap), &source, cfg,
                              ka_server_upstream_security(a->srv), why, sizeof(why));
    if (rc == 0)
        rc = ka_ledger_start(ka_server_loop(a->srv), &lc, a->ledger, ka_server_metrics(a->srv),
                             &a->ledger_client, why, sizeof(why));
    if (rc < 0) {
        snprintf(err, errlen, "cannot start the admission ledger client: %s", why);
        return rc;
    }
    ka_log(KA_LOG_INFO, "admission ledger on", KA_KS("topic", lc.topic),
           KA_KS("sidecar", lc.sidecar_id), KA_KS("bootstrap", bootstrap),
           KA_KS("bootstrap_from", ka_rdk_bootstrap_source_name(source)),
           KA_KS("tls", lc.security.tls ? "yes" : "no"),
           KA_KS("client_cert", lc.security.cert_file ? "yes" : "no"),
           KA_KS("sasl", lc.security.mechanism ? lc.security.mechanism : "none"),
           KA_KI("timeout_ms", lc.timeout_ms), KA_KI("intent_ttl_ms", lc.ttl_ms));
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
    /* An intent must count until every sidecar's view shows its result. Its item reaches the
     * broker up to --ledger-timeout-ms after the intent was written, and a decision may use a
     * view up to metadata.max.staleness.ms old: the intent must outlive both together. */
    const ka_config_t *cfg = ka_server_config(srv);
    if (cfg->ledger &&
        ka_policy_metadata_max_staleness_ms(policy) + (int64_t)cfg->ledger_timeout_ms >=
            (int64_t)cfg->ledger_intent_ttl_ms) {
        snprintf(err, errlen,
                 "metadata.max.staleness.ms %lld in the policy plus --ledger-timeout-ms %u must "
                 "be below --ledger-intent-ttl-ms %u: an admitted item reaches the broker up to "
                 "the ledger timeout after its intent, a decision may use a view as old as the "
                 "staleness bound, and an intent that expired before such a view shows its "
                 "result would be counted by no one",
                 (long long)ka_policy_metadata_max_staleness_ms(policy),
                 (unsigned)cfg->ledger_timeout_ms, (unsigned)cfg->ledger_intent_ttl_ms);
        ka_reservations_free(a->ledger);
        ka_policy_unref(policy);
        free(a);
        return KA_EINVALID;
    }
    ka_audit_setup(ka_server_metrics(srv), ka_policy_unknown_principal(policy));
    int rc =
        ka_mdc_start(ka_server_loop(srv), ka_server_metadata_addr(srv),
                     ka_server_metadata_name(srv), ka_policy_metadata_refresh_interval_ms(policy),
                     ka_server_metrics(srv), on_view, a, &a->mdc);
    if (rc < 0) {
        ka_reservations_free(a->ledger);
        ka_policy_unref(policy);
        free(a);
        snprintf(err, errlen, "cannot start the metadata client: %s", ka_strerror(rc));
        return rc;
    }
    ka_mdc_set_interval(a->mdc, ka_policy_metadata_refresh_interval_ms(policy),
                        ka_policy_metadata_refresh_idle_interval_ms(policy));
    ka_mdc_set_security(a->mdc, ka_server_upstream_security(srv));
    ka_mdc_set_pool(a->mdc, ka_server_pool(srv));
    if ((a->memory_timer = malloc(sizeof(*a->memory_timer))) == NULL) {
        ka_admission_stop(a);
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    uv_timer_init(ka_server_loop(srv), a->memory_timer);
    a->memory_timer->data = a;
    uv_unref((uv_handle_t *)a->memory_timer);
    if (ka_server_config(srv)->ledger && (rc = ledger_start(a, err, errlen)) < 0) {
        ka_admission_stop(a);
        return rc;
    }
    static const int16_t keys[] = {KA_CREATETOPICS_REQUEST_API_KEY,
                                   KA_CREATEPARTITIONS_REQUEST_API_KEY,
                                   KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY,
                                   KA_METADATA_REQUEST_API_KEY,
                                   KA_STREAMSGROUPHEARTBEAT_REQUEST_API_KEY,
                                   KA_DELETETOPICS_REQUEST_API_KEY,
                                   KA_DELETERECORDS_REQUEST_API_KEY};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[keys[i]];
        e->buffer_request = 1;
        e->on_request = on_request;
        /* Only requests that leave state buffer their response (Metadata: one
         * sent on at another version). */
        e->on_response = on_response;
        e->user = a;
        e->defer = defer_cb;
        e->cancel = cancel_cb;
        e->free_state = free_state_cb;
    }
    ka_server_set_admission(srv, a);
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
    ka_audit_setup(ka_server_metrics(a->srv), ka_policy_unknown_principal(policy));
    ka_mdc_set_interval(a->mdc, ka_policy_metadata_refresh_interval_ms(policy),
                        ka_policy_metadata_refresh_idle_interval_ms(policy));
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

int ka_admission_ledger_usable(const ka_admission_t *a)
{
    return a->ledger_client == NULL || ka_ledger_usable(a->ledger_client);
}

int64_t ka_admission_now_ms(ka_admission_t *a)
{
    return ka_adm_hook_now_ms(a);
}

void ka_admission_stop(ka_admission_t *a)
{
    if (a == NULL)
        return;
    ka_mdc_stop(a->mdc);
    a->mdc = NULL;
    /* No callback of the ledger runs after this; waits still held by the
     * relay were cancelled when their connections closed. */
    ka_ledger_stop(a->ledger_client);
    a->ledger_client = NULL;
    while (a->ledger_waits != NULL) {
        ledger_wait_t *w = a->ledger_waits;
        a->ledger_waits = w->next;
        ka_ledger_claims_free(&w->claims);
        ka_adm_req_free(w->req);
        free(w->copy);
        free(w);
    }
    free(a->waiters);
    free(a->memory_waiters);
    if (a->memory_timer != NULL) {
        uv_timer_stop(a->memory_timer);
        uv_close((uv_handle_t *)a->memory_timer, free_timer_cb);
    }
    ka_cluster_unref(a->view);
    ka_reservations_free(a->ledger);
    ka_policy_unref(a->policy);
    ka_audit_setup(NULL, NULL);
    ka_server_set_admission(a->srv, NULL);
    free(a);
}
