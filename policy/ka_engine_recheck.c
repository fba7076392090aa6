/*
 * ka_engine_recheck.c: phase 2 of a cluster-wide decision (ka_engine_recheck
 * in ka_engine.h).
 *
 * Phase 1 judged every item against this sidecar's view and ledger and kept
 * in each admitted verdict the claim of what it takes. Once the cluster-wide
 * ledger has ordered this request's intents among everyone's, each claim is
 * judged again here against a ledger of only the intents ordered before it,
 * with the placement it already has (ARCHITECTURE invariant 6): the
 * judging core's checks (ka_engine.c) and the budgets (ka_engine_rules.c),
 * nothing else.
 */
#include "ka_engine.h"
#include "ka_engine_work.h"

#include <stdlib.h>

/* Loads a claim's deltas into w->delta; false (with *missing) for a broker the view lacks. */
static bool load_claim(struct ka_work *w, const ka_claim_t *c, int32_t *missing)
{
    for (size_t i = 0; i < c->delta_count; i++) {
        long at = ka_work_broker_index(w, c->deltas[i].broker_id);

        if (at < 0) {
            *missing = c->deltas[i].broker_id;
            ka_work_clear_delta(w);
            return false;
        }
        w->delta[at] += c->deltas[i].replicas;
    }
    return true;
}

/* Keeps (or, with restore, puts back) an audit-mode rule's flag across a recheck. */
struct kept_flag {
    char *message, *rule;
    enum ka_reason reason;
};

static void keep_flag(ka_verdict_t *v, struct kept_flag *k)
{
    *k = (struct kept_flag){0};
    if (v->audit && ka_reason_is_guardrail(v->reason))
        *k = (struct kept_flag){v->message, v->rule, v->reason};
    else {
        free(v->message);
        free(v->rule);
    }
    v->message = NULL;
    v->rule = NULL;
}

static void restore_flag(ka_verdict_t *v, struct kept_flag *k)
{
    if (k->message != NULL && v->message == NULL && v->kind != KA_VERDICT_REJECT) {
        v->message = k->message;
        v->rule = k->rule;
        v->reason = k->reason;
        v->audit = true;
        return;
    }
    free(k->message);
    free(k->rule);
}

/* One claimed verdict against w, keeping its placement (see ka_engine_recheck). */
static int recheck_one(struct ka_work *w, ka_verdict_t *v, enum ka_reason reason)
{
    const ka_claim_t c = v->claim;
    ka_plan_t plan = c;
    enum ka_verdict_kind kind = v->kind;
    struct kept_flag kept;
    int32_t missing = 0;
    char *message;
    int rc;

    keep_flag(v, &kept);
    v->reservation_id = 0;
    v->audit = false;
    v->reason = KA_REASON_NONE;
    if (w->stale)
        rc = ka_work_stale(w, v);
    else if (!load_claim(w, &c, &missing))
        rc = ka_work_unknown(w, v, reason, ka_policy_reject_error_code(w->ctx->policy),
                             "Cannot satisfy request: broker %d, chosen for this request, left "
                             "kadmit's cluster view before the decision was confirmed. Retry.",
                             missing);
    else {
        rc = ka_work_check_max_partitions(w, &plan, &message);
        if (rc == 0 && message == NULL)
            rc = ka_work_check_brokers(w, w->delta, plan.advice, false, &message);
        if (rc == 0 && message != NULL) {
            rc = ka_work_exceeded(w, v, &plan, message, reason);
        } else if (rc == 0 && (rc = ka_work_recheck_budgets(w, v)) == 0) {
            v->kind = kind; /* the same verdict, the same assignment */
            rc = ka_work_reserve(w, v, &plan);
        } else if (rc == 1) {
            rc = 0; /* a budget that earlier intents used up: rejected */
        }
        ka_work_clear_delta(w);
    }
    restore_flag(v, &kept);
    return rc;
}

int ka_engine_recheck(const ka_decision_context_t *ctx, ka_verdict_t *verdicts, size_t count,
                      enum ka_reason reason_if_rejected)
{
    struct ka_work w;
    int rc = ka_work_init(&w, ctx);

    if (rc < 0)
        return rc;
    for (size_t i = 0; i < count && rc == 0; i++) {
        ka_verdict_t *v = &verdicts[i];

        if (v->claimed &&
            (v->kind == KA_VERDICT_ADMIT || v->kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT))
            rc = recheck_one(&w, v, reason_if_rejected);
    }
    ka_work_free(&w);
    return rc;
}
