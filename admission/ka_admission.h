/*
 * ka_admission.h: the pure glue between a Kafka request frame and the
 * admission engine (policy/ka_engine.h).
 *
 * ka_adm_request() decodes one CreateTopics, CreatePartitions,
 * AlterPartitionReassignments or Metadata request frame, builds the engine's
 * inputs, asks for one verdict per item and turns the verdicts into one
 * action for the relay:
 *   FORWARD  the original bytes, untouched (every item admitted as sent);
 *   REWRITE  a re-encoded request: rejected items removed, placed items
 *            carrying kadmit's explicit assignment, or (Metadata) the
 *            auto-creation flag cleared;
 *   ANSWER   a complete local response: every item rejected;
 *   CLOSE    the version is above what kadmit decodes, or the body does
 *            not decode (message says which API, version and byte);
 *   WAIT     this request needs a decision on a fresher view: the caller
 *            asked for one (want_fresh_view), or an item names a topic,
 *            partition or broker the view does not know and the caller
 *            allows waiting (may_wait_for_view). Call again after a refresh.
 * When `pending` is set, the broker's response must be passed to
 * ka_adm_response(): it merges the local rejections into it in request
 * order and marks the items the broker failed, whose reservations the
 * caller releases.
 *
 * ka_adm_request() is the one-call form of the steps below, which a
 * cluster-wide ledger runs apart: ka_adm_decode, ka_adm_judge (phase 1,
 * against the local view and reservations), then optionally
 * ka_adm_rejudge (phase 2, against only the intents ordered earlier) or
 * ka_adm_reject_all, and ka_adm_finish. Each API is one descriptor in
 * ka_admission_apis.c; the path in ka_admission.c is written once.
 *
 * No I/O and no clock: frames in, frames out (malloc'd, size prefix
 * included), so everything here is unit-tested with byte arrays.
 */
#ifndef KA_ADMISSION_H
#define KA_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_adm_kinds.h"
#include "ka_arena.h"
#include "ka_policy.h"
#include "ka_reservations.h"

#define KA_ADM_MESSAGE_MAX 1100

/* One judged item of a final decision, for audit events; everything is
 * borrowed from the request and valid only during the callback. */
typedef struct ka_adm_judged {
    enum ka_adm_api api;
    ka_slice_t topic;
    int32_t partition;    /* reassignments; -1 otherwise */
    ka_slice_t client_id; /* the request header's (len -1: none) */
    const char *rule;     /* the rule or policy key that decided, or NULL */
    const char
        *verdict; /* "admit", "reject", "audit" (admitted, flagged), "defer" (to the broker) */
    enum ka_reason reason;
    const char *message; /* the rejection or audit sentence, or NULL */
} ka_adm_judged_t;

typedef struct ka_adm_ctx {
    const ka_policy_t *policy;
    const ka_cluster_t *view; /* NULL before the first view */
    ka_reservations_t *ledger;
    int64_t now_ms;
    uint64_t seed;
    bool want_fresh_view; /* the view should be refreshed before deciding */
    /* An item about a topic, partition or broker the view does not know may
     * wait for a fresher view (action WAIT) instead of being rejected. */
    bool may_wait_for_view;
    /* The view was taken after the request arrived (ka_decision_context_t). */
    bool view_follows_request;
    size_t max_frame; /* cap on frames written */
    /* Where the decoded request (its copy of the frame and its arena) is
     * accounted; NULL: nowhere. A refusal makes the decision KA_ENOMEM. */
    const ka_arena_budget_t *budget;
    /* Who sent the request ("User:name"), or NULL: the policy's principal.unknown. */
    const char *principal;
    /* Called for each item, in request order, when ka_adm_finish (or
     * ka_adm_request) ends a decision; not on WAIT. NULL: nobody listens. */
    void (*on_judged)(void *arg, const ka_adm_judged_t *item);
    void *on_judged_arg;
} ka_adm_ctx_t;

/* One item of a request, in request order, kept until the response. */
typedef struct ka_adm_item {
    char *topic; /* NUL-terminated copy */
    int32_t topic_len;
    int32_t partition; /* reassignments; -1 otherwise */
    bool local;        /* rejected by kadmit: answered with error_code/message */
    int16_t error_code;
    char *message;
    uint64_t reservation_id;
    int16_t broker_error; /* set by ka_adm_response for forwarded items */
    uint8_t topic_id[16]; /* DeleteTopics v6+: the id the item was named by, or all zero */
} ka_adm_item_t;

typedef struct ka_adm_pending {
    int16_t api_key;
    int16_t api_version; /* of the request as forwarded */
    /* The version the client asked for, which a merged response is encoded
     * at: api_version but for a request kadmit sent on at another (Metadata
     * v0-3 as v4, to clear auto-creation). */
    int16_t client_version;
    size_t count;
    ka_adm_item_t *items;
    size_t local_count; /* > 0: the response is merged */
} ka_adm_pending_t;

void ka_adm_pending_free(ka_adm_pending_t *p);

enum ka_adm_action { KA_ADM_FORWARD = 0, KA_ADM_REWRITE, KA_ADM_ANSWER, KA_ADM_CLOSE, KA_ADM_WAIT };

typedef struct ka_adm_outcome {
    enum ka_adm_action action;
    uint8_t *bytes; /* REWRITE and ANSWER: the frame to send (free()) */
    size_t len;
    ka_adm_pending_t *pending; /* buffer the response and call ka_adm_response */
    /* For logs and metrics. */
    enum ka_adm_api api;
    int16_t api_version;
    enum ka_adm_decision decision;
    enum ka_reason reason; /* of the first rejected (else audited) item */
    size_t items, admitted, rejected, audited, placed, deferred_to_broker;
    size_t protected_refused; /* rejected: a protected topic, or one of kadmit's own */
    bool decided;             /* the engine was asked (counts a decision) */
    bool auto_create_denied;  /* Metadata forwarded with the flag cleared */
    bool decode_error;
    bool version_refused;
    size_t trailing_bytes; /* Metadata: bytes after the message, ignored like the broker does */
    char message[KA_ADM_MESSAGE_MAX]; /* first rejection / audit message, or why it closed */
} ka_adm_outcome_t;

/* `frame` is a whole request frame, size prefix included. Returns 0 or KA_ENOMEM. */
int ka_adm_request(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len,
                   ka_adm_outcome_t *out);
/* Frees the outcome's bytes and pending state (if not taken by the caller). */
void ka_adm_outcome_release(ka_adm_outcome_t *out);

/*
 * The broker's response to a request that left `pending`. Sets
 * items[i].broker_error for forwarded items. When local items must be
 * merged, *out receives a new response frame (free()) listing every
 * requested item in request order; otherwise *out is NULL and the
 * response goes on unchanged. Returns 0, KA_ENOMEM, or a decode error (the
 * response is then forwarded unchanged and nothing is marked failed).
 */
int ka_adm_response(ka_adm_pending_t *p, const uint8_t *frame, size_t len, size_t max_frame,
                    uint8_t **out, size_t *out_len);

/* --- the steps of ka_adm_request, for a two-phase (ledger) decision ------ */

typedef struct ka_adm_req ka_adm_req_t; /* a decoded request and its items' verdicts */

/*
 * Decodes `frame` (size prefix included; the request keeps its own copy).
 * On version refusal or decode error, or when there is nothing to judge,
 * fills *early (action CLOSE or FORWARD; ANSWER for an undecodable
 * AlterPartitionReassignments, which has a top-level error) and sets
 * *out = NULL. Returns 0 or KA_ENOMEM.
 */
int ka_adm_decode(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len, ka_adm_req_t **out,
                  ka_adm_outcome_t *early);
/*
 * Phase 1: one verdict per item, reserving admitted items into
 * ctx->ledger; place mode fixes each placed item's assignment inside req.
 * Returns with ka_adm_req_wants_view(req) true, having reserved nothing,
 * when ctx->want_fresh_view is set, or when ctx->may_wait_for_view is set
 * and an item names a topic, partition or broker the view does not know.
 */
int ka_adm_judge(ka_adm_req_t *req, const ka_adm_ctx_t *ctx);
bool ka_adm_req_wants_view(const ka_adm_req_t *req);
/* The reservation ids of the admitted items (in ctx->ledger of the last
 * judge or rejudge call), in item order; returns how many there are. */
size_t ka_adm_req_reservations(const ka_adm_req_t *req, uint64_t *ids, size_t cap);
/*
 * Phase 2: re-checks every item admitted by judge against ctx (whose
 * ledger holds only the earlier intents), keeping the assignment judge
 * chose, reserving into ctx->ledger again (ka_adm_req_reservations then
 * lists these new ids; the entries judge made stay the caller's to
 * release). An item that no longer fits becomes a rejection with
 * `reason_if_rejected` and a KIP-578 message; audit mode admits it flagged.
 * Items judge rejected stay rejected. Returns 0 or KA_ENOMEM.
 */
int ka_adm_rejudge(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, enum ka_reason reason_if_rejected);
/*
 * Rejects every admitted item that takes capacity with `reason` and
 * `message` (e.g. the ledger is unreachable), releasing its reservation in
 * ctx->ledger; audit mode flags them and lets them go. Items that take
 * nothing (a cancelled reassignment, an existing topic) stay admitted.
 */
void ka_adm_reject_all(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, enum ka_reason reason,
                       const char *message);
/* Builds the action (FORWARD / REWRITE / ANSWER, or WAIT when the request
 * wants a view) and `pending` from the current verdicts. Returns 0 or
 * KA_ENOMEM (out then says CLOSE). */
int ka_adm_finish(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out);
void ka_adm_req_free(ka_adm_req_t *req);

/*
 * True when the broker's error for an item of api_key means the item created nothing, so
 * its reservation may end (ARCHITECTURE invariant 12). Timeouts, NOT_CONTROLLER, unknown
 * codes and missing answers are false: the reservation waits for a view or its expiry.
 */
bool ka_adm_error_created_nothing(int16_t api_key, int16_t error);

/*
 * kadmit's own topics (ka_admission_own.c): the ledger and limits topics as
 * configured (--ledger-topic, --limits-topic; NULL or "": the default name
 * alone). Their default names are always included. Call once at startup,
 * before the first decision; decisions only read the names. Returns 0, or
 * KA_EINVALID for a name longer than a Kafka topic name (nothing changes).
 */
int ka_adm_own_topics_setup(const char *ledger_topic, const char *limits_topic);

/* True when a judged request has an item rejected (or flagged in audit mode). */
bool ka_adm_req_any_rejected(const ka_adm_req_t *req);
/* True when every item of a judged request that reserved names one of kadmit's own topics. */
bool ka_adm_req_only_own_topics(const ka_adm_req_t *req);
/*
 * How long a request may wait for kadmit's ledger (a sidecar starting) before it is judged
 * anyway: its own timeout_ms (CreateTopics, CreatePartitions, AlterPartitionReassignments),
 * never less than floor_ms (librdkafka's clients send 0 unless told otherwise; Metadata has
 * none) and never more than cap_ms (when positive).
 */
int64_t ka_adm_req_wait_ms(const ka_adm_req_t *req, int64_t floor_ms, int64_t cap_ms);
/* Forgets the verdicts (giving back what they reserved): ka_adm_finish then says WAIT, and
 * the request is judged again after the next refresh. */
void ka_adm_req_wait(ka_adm_req_t *req, const ka_adm_ctx_t *ctx);

/* ka_engine_view_needs_refresh, for callers that cannot include ka_engine.h. */
bool ka_adm_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms);

/* Which admission API an api_key is, or -1. */
int ka_adm_api_of(int16_t api_key);

/*
 * Invariant 4, in one place for the relay and the admission path: true when
 * api_key is an admission API and version is outside what kadmit decodes,
 * with the sentence for logs and the close reason in why.
 */
bool ka_adm_version_refused(int16_t api_key, int16_t version, char *why, size_t cap);

#endif
