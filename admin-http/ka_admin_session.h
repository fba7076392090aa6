/*
 * ka_admin_session.h: one admin connection's HTTP/1.1 state, without I/O.
 *
 * The server feeds received bytes in and takes response bytes out; the
 * session parses them with llhttp, enforces the header and body caps,
 * answers each complete request through the router, in request order, and
 * says when the connection must stop reading (its output is large: flush
 * it, then resume) or close (Connection: close, a parse error, an oversized
 * request). The fuzz target drives exactly this interface.
 */
#ifndef KA_ADMIN_SESSION_H
#define KA_ADMIN_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#include "ka_admin_buf.h"
#include "ka_admin_router.h"

/* Above this much unsent output the session pauses after the current request. */
#define KA_ADMIN_SESSION_OUTPUT_HIGH (64u * 1024)

typedef struct ka_admin_session {
    llhttp_t parser;
    ka_admin_context_t *ctx;

    /* The request being received; reset when it completes. */
    ka_admin_buf_t url;
    ka_admin_buf_t field;         /* the header name being received */
    bool field_too_long;          /* longer than any name we read: not kept */
    ka_admin_buf_t value;         /* its value, kept only for headers we read */
    ka_admin_buf_t authorization; /* the Authorization header's value */
    bool has_authorization;
    bool duplicate_authorization; /* a second Authorization header: answered with 400 */
    ka_admin_buf_t host;          /* the Host header's value (capped with the head) */
    bool has_host;
    bool duplicate_host;  /* a second Host header: 400 (RFC 9112 3.2) */
    bool keep_value;      /* the current header is one we read */
    bool expect_continue; /* the client waits for 100 Continue before its body */
    ka_admin_buf_t body;
    size_t header_bytes; /* request line and headers so far, against max_header_bytes */
    int reject_status;   /* 413 or 431 when a callback stopped the parser */
    bool in_request;     /* bytes of a request have arrived but not all of it */
    uint64_t completed;  /* requests answered on this connection */

    ka_admin_buf_t out;     /* response bytes not yet taken by the server */
    ka_admin_buf_t pending; /* received bytes not yet parsed, kept while paused */
    bool paused;            /* output reached KA_ADMIN_SESSION_OUTPUT_HIGH */
    bool closing;           /* no more requests: flush out, then close */
    bool input_ended;       /* the client half-closed: close once pending is answered */
    /* A connection of the probe reserve (all slots were in use): it may ask
     * only ka_admin_is_probe_path paths, and closes after one answer so the
     * reserve turns over as fast as probes come. */
    bool probe_only;

    /* A mutation answered later: no other request is parsed until it is. */
    ka_admin_reply_t *waiting;
    bool waiting_close;           /* its answer closes the connection */
    void (*wake)(void *wake_arg); /* the server's: new output to send */
    void *wake_arg;
} ka_admin_session_t;

void ka_admin_session_init(ka_admin_session_t *s, ka_admin_context_t *ctx);
void ka_admin_session_free(ka_admin_session_t *s);

/*
 * Parses data (appending responses to s->out). Bytes after a pause are kept
 * in s->pending; bytes after the session decided to close are dropped.
 * Returns 0, or KA_ENOMEM (the caller should close).
 */
int ka_admin_session_feed(ka_admin_session_t *s, const char *data, size_t len);
/* After the caller took s->out: clears the pause and parses pending bytes. */
int ka_admin_session_resume(ka_admin_session_t *s);
/* The client sent EOF: answer what is pending, then close. */
void ka_admin_session_end_input(ka_admin_session_t *s);
/*
 * The answer to the waiting request (called by ka_admin_reply_finish):
 * appends it to s->out and wakes the server, which sends it and resumes.
 */
void ka_admin_session_answer(ka_admin_session_t *s, const ka_admin_response_t *res);
/* The connection's timer fired: 408 when mid-request; closing either way. */
void ka_admin_session_timeout(ka_admin_session_t *s);

#endif
