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
#include "ka_reservations.h"

/* Every message fits in this many bytes, NUL included. */
#define KA_MESSAGE_MAX 1024

/* Everything one decision reads; the engine keeps none of it. */
typedef struct ka_decision_context {
    const ka_policy_t *policy;
    const ka_cluster_t *view;  /* NULL before the first view: treated as stale */
    ka_reservations_t *ledger; /* reserved into; expired entries are dropped first */
    int64_t now_ms;            /* same clock as the view's taken_at_ms */
    uint64_t seed;             /* place mode: same inputs and seed, same assignment */
} ka_decision_context_t;

enum ka_verdict_kind {
    KA_VERDICT_ADMIT,
    KA_VERDICT_ADMIT_WITH_ASSIGNMENT,
    KA_VERDICT_REJECT,
    KA_VERDICT_DEFER_TO_BROKER,
};

typedef struct ka_verdict {
    enum ka_verdict_kind kind;
    int16_t error_code; /* REJECT: the policy's reject.error.code; otherwise 0 */
    bool audit;         /* audit mode: enforce would have rejected this item */
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
} ka_verdict_t;

/* Frees the message and assignment (not the reservation); accepts zeroed verdicts. */
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

/* The view is missing or older than metadata.max.staleness.ms. */
bool ka_engine_view_is_stale(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms);
/* The view is older than metadata.refresh.before.decision.ms: refresh, then decide. */
bool ka_engine_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view,
                                  int64_t now_ms);

#endif
