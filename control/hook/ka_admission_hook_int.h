/*
 * ka_admission_hook_int.h: what the admission runtime's two files share
 * (ka_admission_hook.c: the hook, the view waits and setup;
 * ka_admission_ledger.c: the two phases of a decision ordered through the
 * ledger). Not part of control/'s public face.
 */
#ifndef KA_ADMISSION_HOOK_INT_H
#define KA_ADMISSION_HOOK_INT_H

#include "ka_admission.h"
#include "ka_admission_hook.h"
#include "ka_intercept.h"
#include "ka_ledger.h"
#include "ka_ledger_claims.h"
#include "ka_metadata_client.h"

typedef struct waiter {
    void (*wake)(void *arg);
    void *arg;
} waiter_t;

/* A decision between its two phases: its intent is in the ledger. */
typedef struct ledger_wait {
    struct ledger_wait *next;
    const uint8_t *frame; /* the held frame: how the resumed call finds its wait */
    uint8_t *copy;        /* its bytes: a buffer reused by another frame is no match */
    size_t len;
    int64_t woken_at_ms;     /* a woken wait never resumed (its connection closed) goes */
    void (*wake)(void *arg); /* the relay's, bound by defer_cb */
    void *arg;
    ka_admission_t *a;
    ka_adm_req_t *req;         /* judged once (phase 1) */
    ka_ledger_claims_t claims; /* phase 1's reservations, announced in the intent */
    uint64_t seq;              /* the intent */
    int done;                  /* the ledger answered: status, order */
    enum ka_ledger_status status;
    uint64_t order;
    uint64_t started_ns; /* uv_hrtime() of phase 1: the decision-latency histogram's start */
    int64_t wait_ms;     /* how long it may wait for the ledger (ka_adm_req_wait_ms) */
} ledger_wait_t;

/* What a forwarded request keeps until its response. */
typedef struct hook_state {
    ka_adm_pending_t *pending;
    int outcome_due; /* claims and seq name an intent whose outcome is not written yet */
    uint64_t seq;
    ka_ledger_claims_t claims;
} hook_state_t;

/* How many metadata refreshes a decision may wait for an item the view does not
 * know yet. Kafka's brokers learn a new topic from the metadata log within tens of
 * milliseconds; each round is one full refresh. */
#define KA_VIEW_WAIT_ROUNDS 20

/* A decision short of pool memory (streamed reads and held requests have it for now) tries
 * again this often, until --held-request-timeout-ms has passed: memory comes back as clients
 * read, or as the stalled-reader check closes those that do not (seconds, not refreshes). */
#define KA_MEMORY_WAIT_MS 100

struct ka_admission {
    ka_server_t *srv;
    ka_policy_t *policy;       /* the active policy: the one pointer a reload swaps */
    ka_cluster_t *view;        /* NULL until the first refresh */
    ka_reservations_t *ledger; /* with the ledger on: the mirror of every live intent */
    ka_mdc_t *mdc;
    ka_ledger_t *ledger_client; /* NULL with --ledger off */
    ledger_wait_t *ledger_waits;
    ledger_wait_t *just_deferred; /* the wait on_request made; defer_cb binds it */
    waiter_t *waiters;
    size_t nwaiters, capwaiters;
    /* Decisions waiting for pool memory, woken by memory_timer (not by a refresh). */
    waiter_t *memory_waiters;
    size_t nmemory, capmemory;
    uv_timer_t *memory_timer; /* its own allocation: it outlives a stopped admission until closed */
    int memory_wait_next;     /* on_request's DEFER is a wait for memory: defer_cb files it so */
    uint64_t seed;
    int view_logged;
    char reason[KA_ADM_MESSAGE_MAX]; /* the last CLOSE reason, read at once by the relay */
    /* The decision being made now (decisions run one at a time on the loop):
     * who sent it, for its audit events, and the rule its status row names. */
    const ka_frame_origin_t *origin;
    char decided_rule[sizeof(((ka_metrics_decision_t *)0)->rule)];
    int decided_rule_rejects; /* decided_rule is a rejected item's */
};

/* The loop's clock, in ms. */
int64_t ka_adm_hook_now_ms(ka_admission_t *a);
/* The context of one decision: the policy and view in force now (references taken). */
ka_adm_ctx_t ka_adm_hook_decision_ctx(ka_admission_t *a, const ka_frame_header_t *hdr, int resumed);
void ka_adm_hook_ctx_release(ka_adm_ctx_t *ctx);
/* Turns an outcome into the relay's verdict, logging and counting it (hs: kept state). */
int ka_adm_hook_apply_outcome(ka_admission_t *a, const ka_frame_header_t *hdr, ka_adm_outcome_t *o,
                              int audit_mode, hook_state_t *hs, ka_hook_verdict_t *v,
                              uint64_t started_ns);

/* ka_admission_ledger.c */
/* The wait of a resumed frame (by its bytes) or of a relay argument, taken off the list. */
ledger_wait_t *ka_adm_ledger_take_wait(ka_admission_t *a, const uint8_t *frame, size_t len,
                                       void *arg);
void ka_adm_ledger_write_outcome(ka_admission_t *a, uint64_t seq, const ka_ledger_claims_t *c);
void ka_adm_ledger_wait_free(ka_admission_t *a, ledger_wait_t *w);
/* Forgets woken waits whose connection went away. */
void ka_adm_ledger_sweep_waits(ka_admission_t *a, int64_t now);
/* Every admitted item refused: the ledger (or the limits) did not answer within waited_ms. */
void ka_adm_ledger_reject_unavailable(ka_admission_t *a, ka_adm_req_t *req, const ka_adm_ctx_t *ctx,
                                      int64_t waited_ms);
/* Phase 1: 1 when the request now waits for its intent (v says DEFER), 0 when *o is final. */
int ka_adm_ledger_phase1(ka_admission_t *a, const uint8_t *frame, size_t len, ka_adm_ctx_t *ctx,
                         ka_adm_outcome_t *o, int *rc);
/* Phase 2, once the intent was read back (or the ledger failed it). */
int ka_adm_ledger_phase2(ka_admission_t *a, ledger_wait_t *w, const ka_frame_header_t *hdr,
                         ka_hook_verdict_t *v);

#endif
