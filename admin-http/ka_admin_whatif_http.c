/*
 * ka_admin_whatif_http.c: POST /v1/what-if, and the tenant budgets GET
 * /v1/brokers shows.
 *
 * A what-if asks the engine exactly what a real request would ask it, with
 * every item validate_only, against a copy of the reservations: the engine
 * may drop expired entries from the ledger it is given, and a what-if must
 * change nothing, not even that. The answer names, per item, the verdict,
 * the rule that decided, the message, the placement kadmit would use and
 * each broker's current and projected count with its limit; items are
 * counted within the call in order, as in one request.
 */
#include "ka_admin_router.h"
#include "ka_admin_whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_engine_rules.h"
#include "ka_metrics.h"
#include "ka_policy_rules.h"

/* The same seed every time: the same body on the same view gets the same placement. */
#define KA_WHATIF_SEED 0x5EEDu

static const char *verdict_word(const ka_verdict_t *v)
{
    switch (v->kind) {
    case KA_VERDICT_REJECT:
        return "reject";
    case KA_VERDICT_DEFER_TO_BROKER:
        return "defer";
    case KA_VERDICT_ADMIT_WITH_ASSIGNMENT:
        return v->audit ? "audit" : "place";
    default:
        return v->audit ? "audit" : "admit";
    }
}

static json_t *placement_json(const ka_verdict_t *v)
{
    json_t *rows;

    if (v->kind != KA_VERDICT_ADMIT_WITH_ASSIGNMENT || v->assignment == NULL)
        return json_null();
    rows = json_array();
    for (int32_t p = 0; rows != NULL && p < v->assignment_partitions; p++) {
        json_t *row = json_array();

        for (int32_t r = 0; row != NULL && r < v->assignment_replication; r++)
            json_array_append_new(
                row,
                json_integer(v->assignment[(size_t)p * (size_t)v->assignment_replication + r]));
        json_array_append_new(rows, row);
    }
    return rows;
}

/* Each broker's count now (hosted + reserved), after the items so far, and its limit. */
static json_t *brokers_json(const ka_policy_t *policy, const ka_cluster_t *view,
                            const ka_reservations_t *ledger, const int64_t *added)
{
    json_t *out = json_array();

    for (size_t i = 0; out != NULL && i < ka_cluster_broker_count(view); i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        int64_t current = b->replicas + ka_reservations_broker_replicas(ledger, b->id);

        json_array_append_new(out, json_pack("{s:i,s:I,s:I,s:i}", "id", (int)b->id, "current",
                                             (json_int_t)current, "projected",
                                             (json_int_t)(current + added[i]), "limit",
                                             (int)ka_policy_broker_limit(policy, b->id)));
    }
    return out;
}

/* Adds what an admitted item takes to the per-broker running totals (view order). */
static void add_claim(const ka_cluster_t *view, const ka_verdict_t *v, int64_t *added)
{
    if (!v->claimed || v->kind == KA_VERDICT_REJECT)
        return;
    for (size_t d = 0; d < v->claim.delta_count; d++)
        for (size_t i = 0; i < ka_cluster_broker_count(view); i++)
            if (ka_cluster_broker_at(view, i)->id == v->claim.deltas[d].broker_id)
                added[i] += v->claim.deltas[d].replicas;
}

static json_t *item_json(const ka_policy_t *policy, const ka_cluster_t *view,
                         const ka_reservations_t *ledger, ka_slice_t name, const ka_verdict_t *v,
                         const int64_t *added)
{
    return json_pack("{s:s%,s:s,s:s?,s:s?,s:i,s:s?,s:o,s:o}", "name", (const char *)name.ptr,
                     (size_t)(name.len > 0 ? name.len : 0), "verdict", verdict_word(v), "rule",
                     v->rule, "reason",
                     v->reason != KA_REASON_NONE ? ka_adm_reason_name(v->reason) : NULL,
                     "error_code", (int)v->error_code, "message", v->message, "placement",
                     placement_json(v), "brokers", brokers_json(policy, view, ledger, added));
}

/* Judges w against the view and a copy of the reservations; 0 or KA_ENOMEM. */
static int judge(const ka_decision_context_t *dctx, const ka_whatif_t *w, ka_verdict_t *verdicts)
{
    if (ka_whatif_kind(w) == KA_WHATIF_CREATE_TOPICS)
        return ka_engine_create_topics(dctx, ka_whatif_topics(w), ka_whatif_count(w), verdicts);
    return ka_engine_create_partitions(dctx, ka_whatif_partitions(w), ka_whatif_count(w), verdicts);
}

static ka_slice_t item_name(const ka_whatif_t *w, size_t i)
{
    return ka_whatif_kind(w) == KA_WHATIF_CREATE_TOPICS ? ka_whatif_topics(w)[i].name
                                                        : ka_whatif_partitions(w)[i].name;
}

static json_t *answer(const ka_policy_t *policy, const ka_cluster_t *view,
                      const ka_reservations_t *ledger, const ka_whatif_t *w,
                      const ka_verdict_t *verdicts, const char *principal)
{
    size_t n = ka_whatif_count(w);
    int64_t *added = calloc(ka_cluster_broker_count(view) + 1, sizeof(*added));
    json_t *items = json_array();
    bool admitted = true;

    for (size_t i = 0; added != NULL && items != NULL && i < n; i++) {
        add_claim(view, &verdicts[i], added);
        admitted &= verdicts[i].kind != KA_VERDICT_REJECT;
        json_array_append_new(
            items, item_json(policy, view, ledger, item_name(w, i), &verdicts[i], added));
    }
    free(added);
    return json_pack("{s:I,s:s,s:s,s:b,s:o}", "policy_version",
                     (json_int_t)ka_policy_version(policy), "principal", principal, "api",
                     ka_whatif_kind(w) == KA_WHATIF_CREATE_TOPICS ? "CreateTopics"
                                                                  : "CreatePartitions",
                     "admitted", admitted, "items", items);
}

/* A copy of the proxy's reservations (or an empty ledger) the engine may change. */
static int ledger_copy(const ka_admin_ops_t *ops, ka_reservations_t **out)
{
    const ka_reservations_t *src = ops->reservations_get ? ops->reservations_get(ops->ctx) : NULL;

    return src != NULL ? ka_reservations_copy(src, out) : ka_reservations_new(out);
}

void ka_admin_handle_whatif_post(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res)
{
    const ka_admin_ops_t *ops = ctx->ops;
    ka_cluster_t *view = NULL;
    ka_reservations_t *ledger = NULL;
    ka_policy_t *policy = NULL;
    ka_verdict_t *verdicts = NULL;
    ka_whatif_t *w = NULL;
    char err[512];
    size_t n = 0;
    int rc;

    (void)arg;
    if (req->body_len > KA_WHATIF_MAX_BODY) {
        ka_admin_response_error(res, 413, "a what-if body may have at most %zu bytes",
                                KA_WHATIF_MAX_BODY);
        return;
    }
    if ((rc = ka_whatif_parse(req->body, req->body_len, &w, err, sizeof(err))) < 0) {
        ka_admin_response_error(res, rc == KA_ENOMEM ? 503 : 400, "%s", err);
        return;
    }
    view = ops->cluster_get ? ops->cluster_get(ops->ctx) : NULL;
    if (view == NULL) {
        ka_admin_response_error(res, 503,
                                "no cluster view yet: kadmit has not completed its first metadata "
                                "refresh from the broker, so it cannot judge anything");
        goto done;
    }
    policy = ops->policy_get(ops->ctx);
    n = ka_whatif_count(w);
    if (ledger_copy(ops, &ledger) < 0 || (verdicts = calloc(n, sizeof(*verdicts))) == NULL) {
        ka_admin_response_error(res, 503, "out of memory judging the what-if");
        goto done;
    }
    const char *principal =
        ka_whatif_principal(w) ? ka_whatif_principal(w) : ka_policy_unknown_principal(policy);
    ka_decision_context_t dctx = {.policy = policy,
                                  .view = view,
                                  .ledger = ledger,
                                  .now_ms = ops->clock_ms ? ops->clock_ms(ops->ctx)
                                                          : ka_cluster_taken_at_ms(view),
                                  .seed = KA_WHATIF_SEED,
                                  .principal = principal};
    if (judge(&dctx, w, verdicts) < 0) {
        free(verdicts);
        verdicts = NULL;
        ka_admin_response_error(res, 503, "out of memory judging the what-if");
        goto done;
    }
    ka_admin_response_json(res, 200, answer(policy, view, ledger, w, verdicts, principal));
done:
    for (size_t i = 0; verdicts != NULL && i < n; i++)
        ka_verdict_release(&verdicts[i]);
    free(verdicts);
    ka_reservations_free(ledger);
    ka_policy_unref(policy);
    ka_cluster_unref(view);
    ka_whatif_free(w);
}

/* --- budgets ---------------------------------------------------------------- */

json_t *ka_admin_budgets_json(const ka_admin_ops_t *ops, const ka_policy_t *policy,
                              const ka_cluster_t *view)
{
    ka_reservations_t *ledger = NULL;
    json_t *rules = json_array(), *principals = json_array();
    ka_decision_context_t dctx = {.policy = policy, .view = view};

    if (ledger_copy(ops, &ledger) < 0 || rules == NULL || principals == NULL) {
        json_decref(rules);
        json_decref(principals);
        ka_reservations_free(ledger);
        return json_null();
    }
    dctx.ledger = ledger;
    for (size_t i = 0; i < ka_policy_rule_count(policy); i++) {
        const ka_topic_rule_t *r = ka_policy_rule_at(policy, i);

        if (r->budget_partitions == KA_RULE_UNSET)
            continue;
        json_array_append_new(rules, json_pack("{s:s,s:I,s:I}", "rule", r->name, "used",
                                               (json_int_t)ka_rules_rule_budget_used(&dctx, r),
                                               "budget", (json_int_t)r->budget_partitions));
    }
    for (size_t i = 0; i < ka_policy_principal_count(policy); i++) {
        const ka_principal_rule_t *pr = ka_policy_principal_at(policy, i);

        if (pr->budget_partitions == KA_RULE_UNSET)
            continue;
        json_array_append_new(principals,
                              json_pack("{s:s,s:I,s:I}", "principal", pr->principal, "used",
                                        (json_int_t)ka_rules_principal_budget_used(&dctx, pr),
                                        "budget", (json_int_t)pr->budget_partitions));
    }
    ka_reservations_free(ledger);
    return json_pack("{s:o,s:o}", "rules", rules, "principals", principals);
}
