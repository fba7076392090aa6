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
 *   WAIT     the caller asked to wait for a fresher view (want_fresh_view)
 *            and this request needs a decision: call again later.
 * When `pending` is set, the broker's response must be passed to
 * ka_adm_response(): it merges the local rejections into it in request
 * order and marks the items the broker failed, whose reservations the
 * caller releases.
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
#include "ka_metrics.h"
#include "ka_policy.h"
#include "ka_reservations.h"

#define KA_ADM_MESSAGE_MAX 1100

typedef struct ka_adm_ctx {
    const ka_policy_t *policy;
    const ka_cluster_t *view; /* NULL before the first view */
    ka_reservations_t *ledger;
    int64_t now_ms;
    uint64_t seed;
    bool want_fresh_view; /* the view should be refreshed before deciding */
    size_t max_frame;     /* cap on frames written */
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
} ka_adm_item_t;

typedef struct ka_adm_pending {
    int16_t api_key;
    int16_t api_version;
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
    enum ka_adm_reason reason;
    size_t items, admitted, rejected, audited, placed, deferred_to_broker;
    bool decided;            /* the engine was asked (counts a decision) */
    bool auto_create_denied; /* Metadata forwarded with the flag cleared */
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

/* ka_engine_view_needs_refresh / _is_stale, for callers that cannot include ka_engine.h. */
bool ka_adm_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms);
bool ka_adm_view_is_stale(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms);

/* Which admission API an api_key is, or -1. */
int ka_adm_api_of(int16_t api_key);

#endif
