/*
 * ka_verdict.h: the engine's vocabulary: what one decision reads (the
 * context) and what it gives (a verdict per item, with the claim of what an
 * admitted item takes).
 *
 * A header of its own, below the judging core (ka_engine.c), the topic rules
 * (ka_engine_rules.c) and the phase-2 recheck (ka_engine_recheck.c), so that
 * each of them uses these types without using the others. Callers include
 * ka_engine.h, which includes this.
 */
#ifndef KA_VERDICT_H
#define KA_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_error.h"
#include "ka_message.h" /* KA_MESSAGE_MAX, the bound on a verdict's message */
#include "ka_policy.h"
#include "ka_reader.h"
#include "ka_reason.h"
#include "ka_reservations.h"

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
    bool creates_topic; /* PARTITIONS: a create (a new incarnation of the name), not a growth */
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
    /* REJECT on a view taken before the request that a later view may overturn: a create of a
     * name the view lists, which may have been deleted a moment ago. A caller that may wait
     * judges it again on a view that follows the request (the refusal then stands only if
     * that view still lists the name). */
    bool wants_later_view;
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

/*
 * What decided an item: its message (taken over, freed with the verdict),
 * reason, rule (copied) and audit flag, replacing any earlier ones. 0 or
 * KA_ENOMEM.
 */
int ka_verdict_set_cause(ka_verdict_t *v, char *message, enum ka_reason reason, const char *rule,
                         bool audit);

#endif
