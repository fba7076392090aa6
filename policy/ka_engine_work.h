/*
 * ka_engine_work.h: the engine's per-call working state, shared by the
 * judging core (ka_engine.c), the topic rules and budgets
 * (ka_engine_rules.c), the phase-2 recheck (ka_engine_recheck.c) and the
 * per-API front ends (ka_engine_requests.c). Not part of policy/'s public
 * face. It includes ka_verdict.h, not ka_engine.h, so that the topic rules
 * (ka_engine_rules.c), which include it, need nothing of the engine's API.
 *
 * A call copies what it needs from the view, policy and ledger into flat
 * per-broker arrays once, then keeps them current as items are admitted,
 * so judging an item never walks the ledger or the policy again.
 */
#ifndef KA_ENGINE_WORK_H
#define KA_ENGINE_WORK_H

#include "ka_verdict.h"
#include "ka_placement.h"
#include "ka_policy_rules.h"
#include "ka_rules_configs.h"

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
    int64_t *limit;   /* the policy's limit per broker */
    int64_t *current; /* hosted + reserved + this call's validate_only items */
    int64_t *delta;   /* scratch: what the item being judged adds; zero between items */
    int64_t *shares;  /* scratch for the bound */
    /* Place mode's session over brokers, started at the call's first placed item. While
     * place_ready, its headroom is limit - current for every broker: an item it placed
     * is reserved as placed (place_synced); any other change to current ends it. */
    ka_place_session_t place;
    bool place_ready, place_synced;
    ka_bound_t bound; /* the bound's counts of brokers, from the call's first bound item */
    bool bound_ready;
    int64_t partitions; /* cluster partitions + reserved + validate_only items */
    /* Who sent the request (ctx->principal, or principal.unknown), its entry in the policy
     * (NULL: none) and what that entry exempts it from (enum ka_exemption). */
    const char *principal_name;
    const ka_principal_rule_t *principal;
    unsigned exempt;
    /* Budgets in use, counted at their first use in the call and then kept
     * current as items are admitted, so that a request of many topics never
     * walks the ledger per item (ka_engine_rules.c). */
    int64_t *rule_used;     /* per rule; -1: not counted yet; NULL: none counted */
    int64_t principal_used; /* the principal's; -1: not counted yet */
    long pending_rule;      /* the rule of the item being judged, or -1 */
    bool pending_principal; /* the item counts against the principal's budget */
};

/* An item's plan is a claim (ka_verdict.h) whose deltas are still in
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
                        int32_t partitions, int32_t replication, bool may_place);
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
/* Zeroes w->delta (between items, or when an item stops before its decision). */
void ka_work_clear_delta(struct ka_work *w);

/*
 * The judging core's steps (ka_engine.c), which the phase-2 recheck
 * (ka_engine_recheck.c) runs again on a claim. Each writes NULL to
 * *message when the item fits, or the rejection sentence (0 or KA_ENOMEM):
 * max.partitions; the brokers for which current + added[i] exceeds the
 * limit, or with list_all every broker that added[i] touches.
 */
int ka_work_check_max_partitions(const struct ka_work *w, const ka_plan_t *plan, char **message);
int ka_work_check_brokers(const struct ka_work *w, const int64_t *added, const char *advice,
                          bool list_all, char **message);
/*
 * Ends an item that exceeds a limit (message taken over): REJECT in enforce
 * mode; in audit mode ADMIT with the flag, reserving w->delta because the
 * item does go ahead.
 */
int ka_work_exceeded(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan, char *message,
                     enum ka_reason reason);
/* Commits w->delta (checked by the caller, or needing no check): into the
 * ledger, or for validate_only into this call only, and into v's claim. */
int ka_work_reserve(struct ka_work *w, ka_verdict_t *v, const ka_plan_t *plan);

/* What topic rules and principals judge of one item (ka_engine_rules.c). */
enum ka_rules_api {
    KA_RULES_CREATE,        /* CreateTopics: every check */
    KA_RULES_GROW,          /* CreatePartitions: partitions.max and budgets */
    KA_RULES_REASSIGN,      /* AlterPartitionReassignments: a new replica count */
    KA_RULES_BROKER_CREATE, /* auto-creation, broker-created topics: at the broker's defaults */
};

typedef struct ka_rules_item {
    enum ka_rules_api api;
    ka_slice_t topic;
    int32_t partitions;               /* the topic's partition total afterwards */
    int32_t replication;              /* its replication factor (REASSIGN: the target's count) */
    bool partitions_default;          /* num_partitions was -1: the broker's num.partitions */
    bool replication_default;         /* replication_factor was -1 */
    int32_t added;                    /* partitions the item adds, against budgets */
    int32_t partition;                /* REASSIGN: the partition */
    int32_t current_replication;      /* REASSIGN: its replica count now */
    const ka_topic_config_t *configs; /* CREATE: the configs the request sets */
    size_t config_count;
} ka_rules_item_t;

/*
 * Judges item against the topic rules and the principal's entry. Returns 1
 * when v now holds a rejection (stop there), 0 when the item goes on to the
 * KIP-578 checks (v may then carry an audit-mode rule's flag: audit, reason,
 * message, rule), or KA_ENOMEM.
 */
int ka_work_judge_rules(struct ka_work *w, const ka_rules_item_t *item, ka_verdict_t *v);
/* Phase 2: the budgets of a claimed item again, against w's ledger; 1, 0 or KA_ENOMEM as above. */
int ka_work_recheck_budgets(struct ka_work *w, ka_verdict_t *v);
/* An admitted item's partitions join the budgets it was judged against. */
void ka_work_budget_commit(struct ka_work *w, int32_t new_partitions);
/* True for the reasons ka_work_judge_rules gives. */
bool ka_reason_is_guardrail(enum ka_reason reason);

/* Kafka's topic-name rule: 1..249 of [a-zA-Z0-9._-], not "." or "..". */
bool ka_topic_name_valid(ka_slice_t name);

#endif
