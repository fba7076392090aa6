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
 * The context, verdict and claim types are in ka_verdict.h, which this
 * includes. Every verdict also says why, as an enum (ka_reason.h): callers
 * count and log the reason from it and never search the message. An item
 * about a topic, partition or broker that the view does not know is never
 * passed unjudged: it gets KA_REASON_UNKNOWN_TOPIC or
 * KA_REASON_UNKNOWN_BROKER, and the caller may wait for a fresher view and
 * ask again.
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
#include "ka_verdict.h"

/* Kafka's UNKNOWN_TOPIC_OR_PARTITION: what the broker says for a missing
 * topic, so kadmit says it too when its view lacks one. The one place to
 * switch to a generated error-code table. */
#define KA_ENGINE_UNKNOWN_TOPIC_OR_PARTITION KA_KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION

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
