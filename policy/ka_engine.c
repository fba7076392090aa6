/*
 * ka_engine.c: the judging core shared by every admission API: the
 * per-call working state and the KIP-578 arithmetic.
 *
 * An item arrives here already checked for everything that is the
 * broker's business, and by the topic rules (ka_engine_rules.c). What is
 * left is arithmetic: the cluster-wide count against max.partitions, then
 * each broker's hosted + reserved + added against its max.broker.partitions.
 * Admitted items reserve in the ledger at once (validate_only items only in
 * this call's own counts, so later items of the same request see them),
 * which is what keeps invariant 6. Phase 2 runs the same checks again
 * (ka_engine_recheck.c).
 */
#include "ka_engine.h"
#include "ka_engine_work.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_message.h"

bool ka_engine_view_is_stale(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms)
{
    return view == NULL ||
           now_ms - ka_cluster_taken_at_ms(view) > ka_policy_metadata_max_staleness_ms(policy);
}

bool ka_engine_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view,
                                  int64_t now_ms)
{
    return view == NULL || now_ms - ka_cluster_taken_at_ms(view) >
                               ka_policy_metadata_refresh_before_decision_ms(policy);
}

bool ka_topic_name_valid(ka_slice_t name)
{
    if (name.len <= 0 || name.len > 249)
        return false;
    if ((name.len == 1 && name.ptr[0] == '.') ||
        (name.len == 2 && name.ptr[0] == '.' && name.ptr[1] == '.'))
        return false;
    for (int32_t i = 0; i < name.len; i++) {
        uint8_t c = name.ptr[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Gives each distinct rack (and "no rack") a small index. */
static int32_t rack_index(const char **racks, int32_t *count, const char *rack)
{
    for (int32_t i = 0; i < *count; i++)
        if ((racks[i] == NULL && rack == NULL) ||
            (racks[i] != NULL && rack != NULL && strcmp(racks[i], rack) == 0))
            return i;
    racks[*count] = rack;
    return (*count)++;
}

int ka_work_init(struct ka_work *w, const ka_decision_context_t *ctx)
{
    const ka_cluster_t *view = ctx->view;
    size_t n = view ? ka_cluster_broker_count(view) : 0;
    const char **racks = NULL;

    *w = (struct ka_work){.ctx = ctx};
    ka_reservations_expire(ctx->ledger, ctx->now_ms);
    /* A view that may be partial fails closed as a stale one does (ka_work_stale). */
    w->stale = ka_engine_view_is_stale(ctx->policy, view, ctx->now_ms) ||
               ka_cluster_partial_reason(view) != NULL;
    w->audit = ka_policy_enforcement(ctx->policy) == KA_ENFORCEMENT_AUDIT;
    w->principal_name =
        ctx->principal != NULL ? ctx->principal : ka_policy_unknown_principal(ctx->policy);
    w->principal = ka_policy_principal(ctx->policy, w->principal_name);
    w->exempt = w->principal != NULL ? w->principal->exempt : 0;
    w->principal_used = -1;
    w->pending_rule = -1;
    w->brokers = calloc(n + 1, sizeof(*w->brokers));
    w->limit = calloc(n + 1, sizeof(*w->limit));
    w->current = calloc(n + 1, sizeof(*w->current));
    w->delta = calloc(n + 1, sizeof(*w->delta));
    w->shares = calloc(n + 1, sizeof(*w->shares));
    racks = calloc(n + 1, sizeof(*racks));
    if (!w->brokers || !w->limit || !w->current || !w->delta || !w->shares || !racks) {
        free(racks);
        ka_work_free(w);
        return KA_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        size_t at = w->broker_count;

        if (!b->listed)
            continue;
        w->brokers[at].id = b->id;
        w->brokers[at].rack = rack_index(racks, &w->rack_count, b->rack);
        w->brokers[at].fenced = b->fenced;
        w->limit[at] = ka_policy_broker_limit(ctx->policy, b->id);
        w->current[at] = b->replicas + ka_reservations_broker_replicas(ctx->ledger, b->id);
        w->unfenced_count += !b->fenced;
        w->broker_count++;
    }
    free(racks);
    if (view != NULL)
        w->partitions = ka_cluster_total_partitions(view) + ka_reservations_partitions(ctx->ledger);
    return 0;
}

void ka_work_free(struct ka_work *w)
{
    free(w->brokers);
    free(w->limit);
    free(w->current);
    free(w->delta);
    free(w->shares);
    free(w->rule_used);
    ka_place_end(&w->place);
    ka_bound_free(&w->bound);
}

long ka_work_broker_index(const struct ka_work *w, int32_t broker_id)
{
    size_t lo = 0, hi = w->broker_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (w->brokers[mid].id == broker_id)
            return (long)mid;
        if (w->brokers[mid].id < broker_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The verdict's message from a format; KA_ENOMEM without memory. */
__attribute__((format(printf, 2, 0))) static int format_message(ka_verdict_t *v, const char *fmt,
                                                                va_list ap)
{
    v->message = malloc(KA_MESSAGE_MAX);
    if (v->message == NULL)
        return KA_ENOMEM;
    vsnprintf(v->message, KA_MESSAGE_MAX, fmt, ap);
    v->message = ka_message_shrink(v->message);
    return 0;
}

int ka_work_defer(ka_verdict_t *v, const char *fmt, ...)
{
    va_list ap;
    int rc;

    v->kind = KA_VERDICT_DEFER_TO_BROKER;
    va_start(ap, fmt);
    rc = format_message(v, fmt, ap);
    va_end(ap);
    return rc;
}

int ka_work_stale(const struct ka_work *w, ka_verdict_t *v)
{
    const ka_decision_context_t *ctx = w->ctx;

    bool old = ka_engine_view_is_stale(ctx->policy, ctx->view, ctx->now_ms);

    v->reason = ctx->view == NULL ? KA_REASON_NO_VIEW
                : old             ? KA_REASON_STALE_VIEW
                                  : KA_REASON_PARTIAL_VIEW;
    if (!old)
        v->message = ka_message_format(
            "Cannot decide on this request: kadmit's cluster view may be partial (%s), so it "
            "rejects requests that create or move partitions rather than undercount.",
            ka_cluster_partial_reason(ctx->view));
    else if (ctx->view == NULL)
        v->message = ka_message_format(
            "Cannot decide on this request: kadmit has no view of the cluster yet, so it rejects "
            "requests that create or move partitions until its first metadata refresh succeeds. "
            "Retry shortly.");
    else
        v->message = ka_message_format(
            "Cannot decide on this request: kadmit's cluster view is stale (taken %" PRId64
            " ms ago; metadata.max.staleness.ms is %" PRId64 "), so it rejects requests that "
            "create or move partitions until a metadata refresh succeeds. Retry shortly.",
            ctx->now_ms - ka_cluster_taken_at_ms(ctx->view),
            ka_policy_metadata_max_staleness_ms(ctx->policy));
    if (v->message == NULL)
        return KA_ENOMEM;
    v->kind = w->audit ? KA_VERDICT_ADMIT : KA_VERDICT_REJECT;
    v->audit = w->audit;
    v->error_code = w->audit ? 0 : ka_policy_reject_error_code(ctx->policy);
    return 0;
}

int ka_work_unknown(const struct ka_work *w, ka_verdict_t *v, enum ka_reason reason,
                    int16_t error_code, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = format_message(v, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return rc;
    v->reason = reason;
    v->kind = w->audit ? KA_VERDICT_ADMIT : KA_VERDICT_REJECT;
    v->audit = w->audit;
    v->error_code = w->audit ? 0 : error_code;
    return 0;
}

/* Keeps what the item takes in the verdict, for a later ka_engine_recheck. */
static void keep_claim(ka_verdict_t *v, const ka_plan_t *plan, ka_broker_delta_t *deltas,
                       size_t count)
{
    free(v->claim.deltas);
    v->claim = *plan;
    v->claim.deltas = deltas;
    v->claim.delta_count = count;
    v->claimed = true;
}

static inline void apply_one(struct ka_work *w, size_t i, ka_broker_delta_t *deltas, size_t *n,
                             bool *over)
{
    int64_t d = w->delta[i];

    if (d > 0) {
        deltas[(*n)++] = (ka_broker_delta_t){w->brokers[i].id, (int32_t)d};
        *over |= w->current[i] + d > w->limit[i];
    }
    w->current[i] += d;
}

/*
 * w->delta, in one pass over the brokers it can touch (an item the session placed
 * touched only the brokers it lists): added to w->current, and as the claim's list
 * in index order. *over: some broker ends past its limit. NULL: no memory.
 */
static ka_broker_delta_t *apply_delta(struct ka_work *w, bool synced, size_t *count, bool *over)
{
    const uint32_t *touched = NULL;
    size_t used = synced ? ka_place_touched(&w->place, &touched) : w->broker_count, n = 0;
    ka_broker_delta_t *deltas = malloc((used + 1) * sizeof(*deltas));
    bool o = false;

    if (deltas == NULL)
        return NULL;
    if (synced)
        for (size_t k = 0; k < used; k++)
            apply_one(w, touched[k], deltas, &n, &o);
    else
        for (size_t i = 0; i < used; i++)
            apply_one(w, i, deltas, &n, &o);
    *count = n;
    *over = o;
    return deltas;
}

static void unapply_delta(struct ka_work *w, bool synced)
{
    const uint32_t *touched = NULL;
    size_t used = synced ? ka_place_touched(&w->place, &touched) : w->broker_count;

    for (size_t k = 0; k < used; k++)
        w->current[synced ? touched[k] : k] -= w->delta[synced ? touched[k] : k];
}

/*
 * Commits an applied w->delta (its list, deltas): into the ledger, or for
 * validate_only into this call only, and keeps it in the verdict's claim.
 */
static int commit(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan, bool synced,
                  ka_broker_delta_t *deltas, size_t count)
{
    int rc = 0;

    w->place_synced = false;
    if (!plan->validate_only && (count > 0 || plan->new_partitions > 0)) {
        ka_reservation_spec_t spec = {
            .kind = plan->kind,
            .topic = plan->topic,
            .partition_count = plan->partition_count,
            .partition = plan->partition,
            .replicas = plan->targets,
            .replica_count = plan->target_count,
            .new_partitions = plan->new_partitions,
            .creates_topic = plan->creates_topic,
            .deltas = deltas,
            .delta_count = count,
            .expires_at_ms = w->ctx->now_ms + ka_policy_reservation_expiry_ms(w->ctx->policy),
            .added_at_ms = w->ctx->now_ms,
        };

        memcpy(spec.replaces_topic_id, plan->replaces_topic_id, sizeof(spec.replaces_topic_id));

        if ((rc = ka_reservations_add(w->ctx->ledger, &spec, &v->reservation_id)) < 0) {
            unapply_delta(w, synced);
            free(deltas);
            return rc;
        }
    }
    keep_claim(v, plan, deltas, count);
    /* Brokers changed behind the session's back: the next placed item starts another. */
    w->place_ready &= synced;
    w->partitions += plan->new_partitions;
    ka_work_budget_commit(w, plan->new_partitions);
    return 0;
}

/* Commits w->delta, checked by the caller or needing no check. */
int ka_work_reserve(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan)
{
    bool synced = w->place_synced, over;
    size_t count;
    ka_broker_delta_t *deltas = apply_delta(w, synced, &count, &over);

    if (deltas == NULL)
        return KA_ENOMEM;
    return commit(w, v, plan, synced, deltas, count);
}

/* max.partitions: NULL message when the item fits. */
int ka_work_check_max_partitions(const struct ka_work *w, const ka_plan_t *plan, char **message)
{
    int64_t limit = ka_policy_max_partitions(w->ctx->policy);

    *message = NULL;
    if ((w->exempt & KA_EXEMPT_BROKER_LIMITS) || plan->new_partitions <= 0 ||
        w->partitions + plan->new_partitions <= limit)
        return 0;
    *message =
        ka_message_max_partitions(limit, w->partitions, w->partitions + plan->new_partitions);
    return *message ? 0 : KA_ENOMEM;
}

/*
 * Lists the brokers for which current + added[i] exceeds the limit, or with
 * list_all every broker that added[i] touches. NULL message: none.
 */
int ka_work_check_brokers(const struct ka_work *w, const int64_t *added, const char *advice,
                          bool list_all, char **message)
{
    ka_concern_t *concerns = NULL;
    size_t count = 0;

    *message = NULL;
    /* A principal exempt from max.broker.partitions (the policy says so for it). */
    if (w->exempt & KA_EXEMPT_BROKER_LIMITS)
        return 0;
    if (!list_all) { /* the usual answer, none over, in one branch-free pass */
        bool over = false;

        for (size_t i = 0; i < w->broker_count; i++)
            over |= (added[i] > 0) & (w->current[i] + added[i] > w->limit[i]);
        if (!over)
            return 0;
    }
    for (size_t i = 0; i < w->broker_count; i++) {
        if (added[i] <= 0 || (!list_all && w->current[i] + added[i] <= w->limit[i]))
            continue;
        if (concerns == NULL) {
            concerns = malloc(w->broker_count * sizeof(*concerns));
            if (concerns == NULL)
                return KA_ENOMEM;
        }
        concerns[count++] =
            (ka_concern_t){w->brokers[i].id, w->limit[i], w->current[i], w->current[i] + added[i]};
    }
    if (count == 0)
        return 0;
    *message = ka_message_brokers(concerns, count, advice);
    free(concerns);
    return *message ? 0 : KA_ENOMEM;
}

/*
 * Ends an item that exceeds a limit: REJECT in enforce mode; in audit mode
 * ADMIT with the flag, reserving w->delta because the item does go ahead.
 */
int ka_work_exceeded(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan, char *message,
                     enum ka_reason reason)
{
    /* A limit outranks an audit-mode rule's flag, which may be there already. */
    if (ka_verdict_set_cause(v, message, reason,
                             reason == KA_REASON_MAX_PARTITIONS ? "max.partitions"
                                                                : "max.broker.partitions",
                             false) < 0)
        return KA_ENOMEM;
    if (!w->audit) {
        v->kind = KA_VERDICT_REJECT;
        v->error_code = ka_policy_reject_error_code(w->ctx->policy);
        return 0;
    }
    v->kind = KA_VERDICT_ADMIT;
    v->audit = true;
    return ka_work_reserve(w, v, plan);
}

void ka_work_clear_delta(struct ka_work *w)
{
    memset(w->delta, 0, w->broker_count * sizeof(*w->delta));
}

/*
 * max.broker.partitions for w->delta, then ADMIT and commit, or ka_work_exceeded(). The usual
 * answer, none over, comes from the pass that applies the delta.
 */
static int decide_delta(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan)
{
    bool over;
    size_t count;
    char *message = NULL;
    ka_broker_delta_t *deltas = apply_delta(w, false, &count, &over);
    int rc;

    if (deltas == NULL)
        return KA_ENOMEM;
    if (!over || (w->exempt & KA_EXEMPT_BROKER_LIMITS)) {
        v->kind = KA_VERDICT_ADMIT;
        return commit(w, v, plan, false, deltas, count);
    }
    unapply_delta(w, false);
    free(deltas);
    rc = ka_work_check_brokers(w, w->delta, plan->advice, false, &message);
    if (rc == 0 && message != NULL)
        return ka_work_exceeded(w, v, plan, message, KA_REASON_BROKER_LIMIT);
    if (rc == 0) { /* over, so check_brokers lists a broker; admit should it not */
        v->kind = KA_VERDICT_ADMIT;
        rc = ka_work_reserve(w, v, plan);
    }
    return rc;
}

int ka_work_decide_exact(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan)
{
    char *message;
    int rc = ka_work_check_max_partitions(w, plan, &message);

    if (rc == 0 && message != NULL)
        rc = ka_work_exceeded(w, v, plan, message, KA_REASON_MAX_PARTITIONS);
    else if (rc == 0)
        rc = decide_delta(w, v, plan);
    ka_work_clear_delta(w);
    return rc;
}

/* The worst case Kafka's placer could produce, into w->delta. */
static void bound_delta(struct ka_work *w, int32_t partitions, int32_t replication)
{
    if (!w->bound_ready) /* without memory, ka_bound_fill assumes the worst */
        w->bound_ready = ka_bound_init(&w->bound, w->brokers, w->broker_count, w->rack_count) == 0;
    ka_bound_fill(&w->bound, w->brokers, w->broker_count, partitions, replication, w->delta);
}

/*
 * When placement fails: the unfenced brokers short of an even share of the
 * request, or, when fencing rather than headroom blocked it, all of them.
 */
static int place_failure(struct ka_work *w, const ka_plan_t *plan, int32_t partitions,
                         int32_t replication, char **message)
{
    int64_t even = ((int64_t)partitions * replication + (int64_t)w->unfenced_count - 1) /
                   (int64_t)w->unfenced_count;
    int rc;

    if (even > partitions)
        even = partitions;
    for (size_t i = 0; i < w->broker_count; i++)
        w->shares[i] = w->brokers[i].fenced ? 0 : even;
    rc = ka_work_check_brokers(w, w->shares, plan->advice, false, message);
    if (rc == 0 && *message == NULL)
        rc = ka_work_check_brokers(w, w->shares, plan->advice, true, message);
    return rc;
}

static int decide_place(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan,
                        int32_t partitions, int32_t replication)
{
    size_t cells = (size_t)partitions * (size_t)replication;
    int32_t *assignment = malloc(cells * sizeof(*assignment));
    char *message = NULL;
    int rc = 0;

    if (assignment == NULL)
        return KA_ENOMEM;
    if (!w->place_ready) {
        for (size_t i = 0; i < w->broker_count; i++) {
            int64_t h = w->limit[i] - w->current[i];

            w->brokers[i].headroom = h > 0 ? h : 0;
        }
        rc = ka_place_begin(&w->place, w->brokers, w->broker_count, w->rack_count, w->ctx->seed);
        w->place_ready = rc == 0;
    }
    if (rc == 0)
        rc = ka_place_next(&w->place, partitions, replication, assignment, w->delta);
    if (rc == KA_ELIMIT) {
        free(assignment);
        rc = place_failure(w, plan, partitions, replication, &message);
        if (rc < 0)
            return rc;
        bound_delta(w, partitions, replication); /* audit: the broker places it */
        return ka_work_exceeded(w, v, plan, message, KA_REASON_BROKER_LIMIT);
    }
    if (rc < 0) {
        free(assignment);
        return rc;
    }
    if (w->audit) { /* audit forwards unchanged: reserve the broker's worst case */
        free(assignment);
        bound_delta(w, partitions, replication);
        v->kind = KA_VERDICT_ADMIT;
        return ka_work_reserve(w, v, plan);
    }
    v->kind = KA_VERDICT_ADMIT_WITH_ASSIGNMENT;
    v->assignment = assignment;
    v->assignment_partitions = partitions;
    v->assignment_replication = replication;
    w->place_synced = true;
    return ka_work_reserve(w, v, plan);
}

int ka_work_decide_auto(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan,
                        int32_t partitions, int32_t replication, bool may_place)
{
    char *message;
    int rc = ka_work_check_max_partitions(w, plan, &message);

    if (rc == 0 && message != NULL) {
        bound_delta(w, partitions, replication);
        rc = ka_work_exceeded(w, v, plan, message, KA_REASON_MAX_PARTITIONS);
    } else if (rc == 0 && may_place && !(w->exempt & KA_EXEMPT_BROKER_LIMITS) &&
               ka_policy_auto_assignment(w->ctx->policy) == KA_AUTO_ASSIGNMENT_PLACE &&
               (int64_t)partitions * replication <= KA_PLACE_MAX_REPLICAS) {
        rc = decide_place(w, v, plan, partitions, replication);
    } else if (rc == 0) {
        bound_delta(w, partitions, replication);
        rc = decide_delta(w, v, plan);
    }
    ka_work_clear_delta(w);
    return rc;
}
