/*
 * ka_admission_ledger.c: a decision ordered through the cluster-wide ledger
 * (see ka_admission_hook.c's header and ka_ledger.h): phase 1 reserves and
 * appends an intent, or waits for the ledger to be read; phase 2 judges the
 * admitted items again against the intents ordered before the request's,
 * or refuses them when the ledger did not answer in time.
 */
#include "ka_admission_events.h"
#include "ka_admission_hook_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_log.h"

ledger_wait_t *ka_adm_ledger_take_wait(ka_admission_t *a, const uint8_t *frame, size_t len,
                                       void *arg)
{
    for (ledger_wait_t **pp = &a->ledger_waits; *pp != NULL; pp = &(*pp)->next) {
        ledger_wait_t *w = *pp;
        if ((frame != NULL && w->frame == frame && w->len == len &&
             memcmp(w->copy, frame, len) == 0) ||
            (arg != NULL && w->arg == arg)) {
            *pp = w->next;
            return w;
        }
    }
    return NULL;
}

void ka_adm_ledger_write_outcome(ka_admission_t *a, uint64_t seq, const ka_ledger_claims_t *c)
{
    if (a->ledger_client != NULL &&
        ka_ledger_append_outcome(a->ledger_client, seq, c->admitted, c->n) < 0)
        ka_log(KA_LOG_WARN, "ledger outcome not written; the intent expires instead",
               KA_KI("seq", seq));
}

/* Ends a wait whose request went away or failed: nothing of it is admitted. */
void ka_adm_ledger_wait_free(ka_admission_t *a, ledger_wait_t *w)
{
    if (!w->done) {
        ka_ledger_forget(a->ledger_client, w->seq);
    } else if (w->status == KA_LEDGER_READ_BACK) {
        for (size_t k = 0; k < w->claims.n; k++) {
            ka_reservations_release(a->ledger, w->claims.ids[k]);
            w->claims.admitted[k] = 0;
        }
        ka_adm_ledger_write_outcome(a, w->seq, &w->claims);
    }
    ka_ledger_claims_free(&w->claims);
    ka_adm_req_free(w->req);
    free(w->copy);
    free(w);
}

/* The relay cancels a wait only until it is woken; one woken and never
 * resumed belongs to a connection that closed meanwhile. */
#define WOKEN_WAIT_MAX_MS 10000

void ka_adm_ledger_sweep_waits(ka_admission_t *a, int64_t now)
{
    for (ledger_wait_t **pp = &a->ledger_waits; *pp != NULL;) {
        ledger_wait_t *w = *pp;
        if (w->done && now - w->woken_at_ms > WOKEN_WAIT_MAX_MS) {
            *pp = w->next;
            ka_adm_ledger_wait_free(a, w);
        } else {
            pp = &w->next;
        }
    }
}

static int64_t ledger_now(ledger_wait_t *w)
{
    return ka_adm_hook_now_ms(w->a);
}

static void ledger_cb(void *arg, enum ka_ledger_status status, uint64_t order)
{
    ledger_wait_t *w = arg;
    w->done = 1;
    w->woken_at_ms = ledger_now(w);
    w->status = status;
    w->order = order;
    if (w->wake != NULL)
        w->wake(w->arg);
}

void ka_adm_ledger_reject_unavailable(ka_admission_t *a, ka_adm_req_t *req, const ka_adm_ctx_t *ctx,
                                      int64_t waited_ms)
{
    char msg[900];
    if (ka_ledger_usable(a->ledger_client) && !ka_server_metrics(a->srv)->limits_loaded)
        snprintf(msg, sizeof(msg),
                 "Cannot decide on this request: kadmit is still reading the cluster's limits "
                 "(topic %s) and decides on none older than them; it did not finish within %lld "
                 "ms. Retry shortly.",
                 ka_server_config(a->srv)->limits_topic, (long long)waited_ms);
    else if (ka_server_metrics(a->srv)->ledger_blocked_why[0] != '\0')
        snprintf(msg, sizeof(msg),
                 "Cannot decide on this request: kadmit could not order it with the other "
                 "sidecars' decisions, because its admission ledger (topic %s) %s. It rejects "
                 "requests that create or move partitions until the ledger recovers. Retry "
                 "shortly.",
                 ka_server_config(a->srv)->ledger_topic,
                 ka_server_metrics(a->srv)->ledger_blocked_why);
    else
        snprintf(msg, sizeof(msg),
                 "Cannot decide on this request: kadmit could not order it with the other "
                 "sidecars' decisions, because its admission ledger (topic %s) did not answer "
                 "within %lld ms. It rejects requests that create or move partitions until the "
                 "ledger is reachable. Retry shortly.",
                 ka_server_config(a->srv)->ledger_topic, (long long)waited_ms);
    ka_adm_reject_all(req, ctx, KA_REASON_LEDGER_UNAVAILABLE, msg);
}

/*
 * Phase 2, once the intent was read back at w->order: the admitted items
 * again, against the view and the intents ordered before. Or, when the
 * ledger did not answer, every admitted item rejected (audit: flagged).
 */
int ka_adm_ledger_phase2(ka_admission_t *a, ledger_wait_t *w, const ka_frame_header_t *hdr,
                         ka_hook_verdict_t *v)
{
    ka_adm_ctx_t ctx = ka_adm_hook_decision_ctx(a, hdr, 1);
    int audit_mode = ka_policy_enforcement(ctx.policy) == KA_ENFORCEMENT_AUDIT;
    ka_reservations_t *before = NULL;
    ka_adm_outcome_t o;
    int rc = 0, read_back = w->done && w->status == KA_LEDGER_READ_BACK;
    if (read_back) {
        if (ctx.view != NULL)
            ka_reservations_reconcile(a->ledger, ctx.view);
        rc = ka_reservations_copy_before(a->ledger, w->order, &before);
        if (rc == 0) {
            ctx.ledger = before;
            rc = ka_adm_rejudge(w->req, &ctx, KA_REASON_CONCURRENT);
            ka_admission_log_basis(ctx.view, before, w->order, ctx.now_ms);
        }
    } else {
        ka_adm_ledger_reject_unavailable(a, w->req, &ctx,
                                         (int64_t)((uv_hrtime() - w->started_ns) / 1000000));
    }
    if (rc == 0)
        rc = ka_adm_finish(w->req, &ctx, &o);
    ka_reservations_free(before);
    ka_adm_hook_ctx_release(&ctx);
    if (rc < 0) {
        ka_adm_ledger_wait_free(a, w);
        v->kind = KA_HOOK_CLOSE;
        v->reason = "out of memory deciding admission";
        return 0;
    }
    hook_state_t *hs = NULL;
    if (read_back) {
        int forwarded = o.action != KA_ADM_ANSWER && !o.auto_create_denied;
        ka_ledger_claims_bind(&w->claims, o.pending, forwarded, a->ledger);
        if (o.pending != NULL && (hs = calloc(1, sizeof(*hs))) != NULL) {
            hs->outcome_due = 1;
            hs->seq = w->seq;
            hs->claims = w->claims;
            memset(&w->claims, 0, sizeof(w->claims));
        } else {
            ka_adm_ledger_write_outcome(a, w->seq, &w->claims);
        }
    }
    ka_ledger_claims_free(&w->claims);
    ka_adm_req_free(w->req);
    free(w->copy);
    uint64_t started_ns = w->started_ns;
    free(w);
    return ka_adm_hook_apply_outcome(a, hdr, &o, audit_mode, hs, v, started_ns);
}

/*
 * Phase 1 with the ledger on. Returns 1 when the request now waits for its
 * intent (v says DEFER), 0 when *o holds the final outcome.
 */
int ka_adm_ledger_phase1(ka_admission_t *a, const uint8_t *frame, size_t len, ka_adm_ctx_t *ctx,
                         ka_adm_outcome_t *o, int *rc)
{
    ka_adm_req_t *req = NULL;
    if ((*rc = ka_adm_decode(ctx, frame, len, &req, o)) < 0 || req == NULL)
        return 0;
    if ((*rc = ka_adm_judge(req, ctx)) < 0)
        goto done;
    size_t n = ka_adm_req_wants_view(req) ? 0 : ka_adm_req_reservations(req, NULL, 0);
    /* A refusal on the policy file's limits while the cluster's limits (which may raise them)
     * are still being read is a decision on limits older than the topic: it waits, a bounded
     * number of refreshes, like an item the view does not know yet. */
    if (n == 0 && !ka_server_metrics(a->srv)->limits_loaded && ctx->may_wait_for_view &&
        ka_adm_req_any_rejected(req))
        ka_adm_req_wait(req, ctx);
    if (n == 0) /* nothing admitted takes capacity: the ledger is not touched */
        goto finish;
    /* kadmit's own topics are what the ledger needs to exist: while it is not read yet (the
     * first start of a cluster), creating them is decided by this sidecar alone, against its
     * view and its reservations. Any other admission waits for the ledger (ka_ledger.c). */
    if (!ka_ledger_usable(a->ledger_client) && ka_adm_req_only_own_topics(req)) {
        ka_log(KA_LOG_INFO, "kadmit's own topic judged without the ledger, which is not read yet",
               KA_KI("items", n));
        goto finish;
    }
    ledger_wait_t *w = calloc(1, sizeof(*w));
    uint64_t *ids = calloc(n, sizeof(*ids));
    if (w == NULL || ids == NULL) {
        free(w);
        free(ids);
        *rc = KA_ENOMEM;
        goto done;
    }
    ka_adm_req_reservations(req, ids, n);
    /* A request that arrives before the ledger is read (a sidecar starting) waits for it as
     * long as it asked to (its timeout_ms), at least --ledger-timeout-ms and at most
     * --held-request-timeout-ms, and is then judged. */
    w->wait_ms = ka_adm_req_wait_ms(req, ka_server_config(a->srv)->ledger_timeout_ms,
                                    ka_server_config(a->srv)->held_request_timeout_ms);
    if ((w->copy = malloc(len)) != NULL)
        memcpy(w->copy, frame, len);
    if (w->copy == NULL || ka_ledger_claims_take(&w->claims, a->ledger, ids, n) < 0 ||
        ka_ledger_append_intent(a->ledger_client, ids, n, w->wait_ms, ledger_cb, w, &w->seq) < 0) {
        ka_ledger_claims_free(&w->claims);
        free(w->copy);
        free(w);
        free(ids);
        ka_server_metrics(a->srv)->ledger_failures++;
        ka_adm_ledger_reject_unavailable(a, req, ctx, 0);
        goto finish;
    }
    free(ids);
    w->a = a;
    w->frame = frame;
    w->len = len;
    w->req = req;
    w->next = a->ledger_waits;
    a->ledger_waits = w;
    a->just_deferred = w;
    return 1;
finish:
    *rc = ka_adm_finish(req, ctx, o);
done:
    ka_adm_req_free(req);
    return 0;
}
