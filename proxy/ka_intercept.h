/*
 * ka_intercept.h: which frames kadmit holds back to inspect, and what it
 * does with them.
 *
 * The table is indexed by api_key. An entry can ask for the request frame
 * to be buffered whole and passed to on_request before anything of it is
 * forwarded, and for the matching response to be buffered whole and passed
 * to on_response before it reaches the client. Every other frame streams
 * through untouched. Handlers are pure functions of the frame: they get the
 * whole frame (size prefix included) in a writable buffer and return a
 * verdict; they never touch sockets.
 *
 * Verdicts:
 *   FORWARD - send the frame on; a handler may have edited it in place and
 *             changed *len (never above the buffer), or put new bytes in
 *             the verdict;
 *   ANSWER  - (requests) do not forward; answer the client with the
 *             verdict's bytes, after every earlier response on the
 *             connection has been written;
 *   CLOSE   - close the connection; reason goes to the log;
 *   DEFER   - not yet: the handler needs something first (a request: a
 *             fresh cluster view; a response: a change the broker accepted
 *             must be stored before the client hears of it). The relay keeps
 *             the frame, stops reading that side (so later frames keep their
 *             order, invariant 1) and calls the entry's defer(user, wake,
 *             arg); once the handler calls wake(arg) the relay runs the
 *             handler again on the same frame with v->resumed set. If the
 *             connection closes first, the relay calls cancel(user, arg) and
 *             wake must not be called.
 *
 * A request handler may attach per-request state (v->state); the relay keeps
 * it with the in-flight entry, hands it to on_response as request->answer
 * (flag KA_INFLIGHT_HOOK_STATE) and frees it with the entry's free_state once
 * the response has passed or the connection has closed.
 */
#ifndef KA_INTERCEPT_H
#define KA_INTERCEPT_H

#include <stddef.h>
#include <stdint.h>

#include "ka_frame.h"
#include "ka_inflight.h"

/* API keys at or above this are never intercepted (none exist yet). */
#define KA_INTERCEPT_MAX_API 128

#define KA_HOOK_RESUMED_LAST 0x7fffffff

enum ka_hook_action { KA_HOOK_FORWARD = 0, KA_HOOK_ANSWER, KA_HOOK_CLOSE, KA_HOOK_DEFER };

typedef struct ka_hook_verdict {
    enum ka_hook_action kind;
    /* Replacement (FORWARD) or answer (ANSWER) frame, size prefix included;
     * NULL to forward the handler's buffer. The proxy copies the bytes and
     * then calls free_bytes(bytes) if it is set. */
    uint8_t *bytes;
    size_t len;
    void (*free_bytes)(void *bytes);
    /* Requests only: also buffer this request's response for on_response. */
    int buffer_response;
    const char *reason; /* CLOSE, or a note for the debug log */
    /* Requests: per-request state for on_response (implies buffer_response). */
    void *state;
    /* In: 0 on a frame's first decision; then how many times on_request has run
     * again on it after a DEFER, or KA_HOOK_RESUMED_LAST when the handler cannot
     * wait again and must decide now. */
    int resumed;
} ka_hook_verdict_t;

typedef int (*ka_request_handler_fn)(void *user, const ka_frame_header_t *hdr, uint8_t *frame,
                                     size_t *len, ka_hook_verdict_t *v);
typedef int (*ka_response_handler_fn)(void *user, const ka_inflight_entry_t *request,
                                      uint8_t *frame, size_t *len, ka_hook_verdict_t *v);

typedef struct ka_intercept_entry {
    uint8_t buffer_request;  /* hold request frames of this key whole */
    uint8_t buffer_response; /* hold every response to this key whole */
    ka_request_handler_fn on_request;
    ka_response_handler_fn on_response;
    void *user; /* handed to both handlers (e.g. the admission engine) */
    /* DEFER support (see above); both NULL when the handler never defers. */
    int (*defer)(void *user, void (*wake)(void *arg), void *arg);
    void (*cancel)(void *user, void *arg);
    /* Frees a verdict's state; NULL when the handler never attaches any. */
    void (*free_state)(void *user, void *state);
    /* When set, only responses to the versions it accepts are held for
     * on_response (gateway mode: the versions that carry broker endpoints). */
    int (*response_wanted)(int16_t api_key, int16_t api_version);
} ka_intercept_entry_t;

typedef struct ka_intercept_table {
    ka_intercept_entry_t api[KA_INTERCEPT_MAX_API];
} ka_intercept_table_t;

/* The entry for an api_key, or NULL when frames of that key stream through. */
static inline const ka_intercept_entry_t *ka_intercept_lookup(const ka_intercept_table_t *t,
                                                              int16_t api_key)
{
    if (t == NULL || api_key < 0 || api_key >= KA_INTERCEPT_MAX_API)
        return NULL;
    const ka_intercept_entry_t *e = &t->api[api_key];
    return e->buffer_request || e->buffer_response ? e : NULL;
}

/* The table without a policy: only ApiVersions responses are held, to be clamped. */
void ka_intercept_table_default(ka_intercept_table_t *t);

/* The ApiVersions response handler (exposed for tests). */
int ka_intercept_apiversions_response(void *user, const ka_inflight_entry_t *request,
                                      uint8_t *frame, size_t *len, ka_hook_verdict_t *v);

#endif
