/*
 * ka_engine.h: the admission engine, pure decisions on KIP-578 limits.
 *
 * The proxy decodes an admission request, copies the few fields that
 * matter into the small structs below (names stay slices into the frame),
 * and asks the engine for one verdict per item, in request order. Each
 * admitted item reserves its replicas in the ledger before the next item is
 * judged, so items of one request, and concurrent requests, can never
 * together exceed a limit. The engine reads no clock: the caller passes
 * the time, and the seed that makes placement deterministic.
 *
 * Verdicts:
 *   ADMIT                   forward the item unchanged;
 *   ADMIT_WITH_ASSIGNMENT   forward it with the explicit assignment in the
 *                           verdict (place mode), num_partitions and
 *                           replication_factor set to -1 as Kafka requires;
 *   REJECT                  answer locally with error_code and message;
 *   DEFER_TO_BROKER         not a limit question (the topic exists, the
 *                           assignment is malformed, ...): forward it
 *                           unchanged and let the broker give its native error.
 * In audit mode nothing is rejected: the verdict is ADMIT with `audit` set
 * and the message kadmit would have sent. docs/admission.md has the rules.
 *
 * Every verdict also says why, as an enum (ka_reason.h): callers count and
 * log the reason from it and never search the message. An item about a
 * topic, partition or broker that the view does not know is never passed
 * unjudged: it gets KA_REASON_UNKNOWN_TOPIC or KA_REASON_UNKNOWN_BROKER, and
 * the caller may wait for a fresher view and ask again.
 */
#ifndef KA_ENGINE_H
#define KA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_error.h"
#include "ka_policy.h"
#include "ka_reader.h"
#include "ka_reason.h"
#include "ka_reservations.h"

/* Every message fits in this many bytes, NUL included. */
#define KA_MESSAGE_MAX 1024

/* Kafka's UNKNOWN_TOPIC_OR_PARTITION: what the broker says for a missing
 * topic, so kadmit says it too when its view lacks one. The one place to
 * switch to a generated error-code table. */
#define KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION KA_KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION

/* Everything one decision reads; the engine keeps none of it. */
typedef struct ka_decision_context {
    const ka_policy_t *policy;
    const ka_cluster_t *view;  /* NULL before the first view: treated as stale */
    ka_reservations_t *ledger; /* reserved into; expired entries are dropped first */
    int64_t now_ms;            /* same clock as the view's taken_at_ms */
    uint64_t seed;             /* place mode: same inputs and seed, same assignment */
    /* Who sent the request, as "User:name" (ka_policy_rules.h): the caller passes the policy's
     * principal.unknown when kadmit cannot know. NULL is read as principal.unknown. */
    const char *principal;
    /* The view was taken after the request arrived (the request waited for a refresh asked
     * for after it came). Only then may an item the view says the broker refuses be left to
     * the broker, and only when that refusal holds in every state (ARCHITECTURE invariant 10). */
    bool view_follows_request;
} ka_decision_context_t;

enum ka_verdict_kind {
    KA_VERDICT_ADMIT,
    KA_VERDICT_ADMIT_WITH_ASSIGNMENT,
    KA_VERDICT_REJECT,
    KA_VERDICT_DEFER_TO_BROKER,
};

/*
 * What an admitted item consumes, exactly as judged: enough to check it
 * again against another ledger with the same placement (ka_engine_recheck)
 * and to reserve it there. The topic and targets point into the caller's
 * request, so they live as long as it does; the deltas belong to the verdict.
 */
typedef struct ka_claim {
    enum ka_reservation_kind kind;
    ka_slice_t topic;
    int32_t partition_count; /* PARTITIONS: the total the view must show */
    int32_t partition;       /* REPLICAS */
    const int32_t *targets;  /* REPLICAS */
    int32_t target_count;
    int32_t new_partitions; /* against max.partitions */
    /* PARTITIONS: the id of the topic of that name the view showed when the item was judged
     * (all zero: none). The item creates the topic anew, so only a view with another id
     * shows it. */
    uint8_t replaces_topic_id[16];
    ka_broker_delta_t *deltas;
    size_t delta_count;
    bool validate_only; /* counted within the call, never reserved */
    const char *advice; /* the rejection's last sentence */
} ka_claim_t;

typedef struct ka_verdict {
    enum ka_verdict_kind kind;
    enum ka_reason reason; /* REJECT and audit: why; otherwise KA_REASON_NONE */
    int16_t error_code;    /* REJECT: the policy's reject.error.code; otherwise 0 */
    bool audit;            /* audit mode: enforce would have rejected this item */
    /* REJECT and audit: the rejection sentence; DEFER: the reason, for logs;
     * otherwise NULL. At most KA_MESSAGE_MAX bytes. */
    char *message;
    /* The ledger entry holding this item's replicas, or 0. Release it when
     * the broker's answer reports an error for the item. */
    uint64_t reservation_id;
    /* ADMIT_WITH_ASSIGNMENT: assignment_partitions rows of
     * assignment_replication broker ids, leader first; the rows are the new
     * partitions in order (for CreatePartitions, the added ones). */
    int32_t assignment_partitions;
    int32_t assignment_replication;
    int32_t *assignment;
    /* The topic rule (its name, ka_topic_rule_t.name) or the policy key ("topic.name.pattern",
     * "principals", "max.broker.partitions", ...) that decided, for audit events and metrics; a
     * copy owned by the verdict, or NULL when no rule applied. */
    char *rule;
    /* ADMIT and ADMIT_WITH_ASSIGNMENT, audited or not: what the item takes. */
    bool claimed;
    ka_claim_t claim;
} ka_verdict_t;

/* Frees the message, assignment and claim (not the reservation); accepts zeroed verdicts. */
void ka_verdict_release(ka_verdict_t *verdict);

/* One partition's replicas in a request (leader first). */
typedef struct ka_replica_assignment {
    int32_t partition_index; /* CreateTopics only; CreatePartitions lists new partitions in order */
    const int32_t *broker_ids;
    int32_t broker_count;
} ka_replica_assignment_t;

typedef struct ka_create_topic {
    ka_slice_t name;
    int32_t num_partitions;                     /* -1: the broker's num.partitions */
    int16_t replication_factor;                 /* -1: default.replication.factor */
    const ka_replica_assignment_t *assignments; /* NULL: the broker would choose */
    int32_t assignment_count;
    bool validate_only;
    /* The topic configs the request sets (ka_rules_configs.h), or NULL. */
    const struct ka_topic_config *configs;
    size_t config_count;
} ka_create_topic_t;

typedef struct ka_create_partitions {
    ka_slice_t name;
    int32_t count;                              /* the new total partition count */
    const ka_replica_assignment_t *assignments; /* NULL, or one per new partition */
    int32_t assignment_count;
    bool validate_only;
} ka_create_partitions_t;

typedef struct ka_reassignment {
    ka_slice_t topic;
    int32_t partition;
    const int32_t *replicas; /* the target; NULL cancels a pending reassignment */
    int32_t replica_count;
} ka_reassignment_t;

/*
 * Each fills verdicts[0..count) (the caller's array, zeroed or not) and
 * returns 0, or KA_ENOMEM after undoing its reservations and releasing the
 * verdicts it filled.
 */
int ka_engine_create_topics(const ka_decision_context_t *ctx, const ka_create_topic_t *topics,
                            size_t count, ka_verdict_t *verdicts);
int ka_engine_create_partitions(const ka_decision_context_t *ctx,
                                const ka_create_partitions_t *topics, size_t count,
                                ka_verdict_t *verdicts);
int ka_engine_alter_reassignments(const ka_decision_context_t *ctx,
                                  const ka_reassignment_t *partitions, size_t count,
                                  ka_verdict_t *verdicts);
/*
 * Metadata auto-creation: one verdict per requested topic. ADMIT means the
 * flag may stay (the topic exists, nothing will be created, or the creation
 * fits); REJECT means clear allow_auto_topic_creation for this request.
 */
int ka_engine_auto_create(const ka_decision_context_t *ctx, const ka_slice_t *topics, size_t count,
                          bool allow_auto_topic_creation, ka_verdict_t *verdicts);
/*
 * Topics the broker creates and places itself from counts kadmit cannot
 * rewrite (a streams group's internal topics, KIP-1071): one verdict per
 * topic, judged against the bound like auto-creation. num_partitions and
 * replication_factor of 0 or -1 mean the broker's defaults; assignments are
 * ignored. ADMIT also covers a topic that exists or is already reserved.
 */
int ka_engine_broker_creates(const ka_decision_context_t *ctx, const ka_create_topic_t *topics,
                             size_t count, ka_verdict_t *verdicts);

/*
 * Phase 2 of a cluster-wide decision: checks every verdict that holds a
 * claim again, against ctx (whose ledger holds only the intents ordered
 * before this request's), with the placement already chosen, and reserves
 * each item that still fits into ctx->ledger (its reservation_id becomes
 * that entry, or 0). An item that no longer fits becomes REJECT (audit:
 * ADMIT with `audit`) with reason `reason_if_rejected` and a message naming
 * each broker's limit, current and projected count. Verdicts without a claim
 * (rejected, deferred, consuming nothing) are left as they are. Returns 0 or
 * KA_ENOMEM.
 */
int ka_engine_recheck(const ka_decision_context_t *ctx, ka_verdict_t *verdicts, size_t count,
                      enum ka_reason reason_if_rejected);

/* The view is missing or older than metadata.max.staleness.ms. */
bool ka_engine_view_is_stale(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms);
/* The view is older than metadata.refresh.before.decision.ms: refresh, then decide. */
bool ka_engine_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view,
                                  int64_t now_ms);

#endif
