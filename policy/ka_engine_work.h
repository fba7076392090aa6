/*
 * ka_engine_work.h: the engine's per-call working state, shared by the
 * judging core (ka_engine.c) and the per-API front ends
 * (ka_engine_requests.c). Not part of policy/'s public face.
 *
 * A call copies what it needs from the view, policy and ledger into flat
 * per-broker arrays once, then keeps them current as items are admitted,
 * so judging an item never walks the ledger or the policy again.
 */
#ifndef KA_ENGINE_WORK_H
#define KA_ENGINE_WORK_H

#include "ka_engine.h"
#include "ka_placement.h"

/* Above this many replicas in one item, place mode falls back to bound. */
#define KA_PLACE_MAX_REPLICAS (1 << 20)

struct ka_work {
    const ka_decision_context_t *ctx;
    bool stale; /* enforce: reject everything; audit: flag everything */
    bool audit; /* enforcement is audit */
    /* Listed brokers of the view, in id order; headroom is refreshed per item. */
    ka_place_broker_t *brokers;
    size_t broker_count;
    size_t unfenced_count;
    int32_t rack_count;
    int64_t *limit;     /* the policy's limit per broker */
    int64_t *current;   /* hosted + reserved + this call's validate_only items */
    int64_t *delta;     /* scratch: what the item being judged adds; zero between items */
    int64_t *shares;    /* scratch for the bound */
    int64_t partitions; /* cluster partitions + reserved + validate_only items */
};

/* An item's plan is a claim (ka_engine.h) whose deltas are still in
 * w->delta: how a reservation is recognised in a later view, and what the
 * item counts against max.partitions. */
typedef ka_claim_t ka_plan_t;

int ka_work_init(struct ka_work *w, const ka_decision_context_t *ctx);
void ka_work_free(struct ka_work *w);
/* Index of a listed broker, or -1. */
long ka_work_broker_index(const struct ka_work *w, int32_t broker_id);

/* Judges the item whose replicas per broker are in w->delta (explicit). */
int ka_work_decide_exact(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan);
/* Judges an item the broker would place: place or bound per policy. */
int ka_work_decide_auto(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan,
                        int32_t partitions, int32_t replication, uint64_t seed, bool may_place);
/* The verdict for any item when the view is stale (or missing). */
int ka_work_stale(const struct ka_work *w, ka_verdict_t *v);
/*
 * An item naming a topic, partition or broker the view does not know:
 * enforce rejects it with error_code, audit admits it flagged. Never
 * reserves: nothing is known to count.
 */
int ka_work_unknown(const struct ka_work *w, ka_verdict_t *v, enum ka_reason reason,
                    int16_t error_code, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int ka_work_defer(ka_verdict_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Kafka's topic-name rule: 1..249 of [a-zA-Z0-9._-], not "." or "..". */
bool ka_topic_name_valid(ka_slice_t name);

#endif
