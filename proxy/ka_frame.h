/*
 * ka_frame.h: the frame splitter, an incremental state machine over one
 * direction of a Kafka connection.
 *
 * It is fed the bytes of a stream in whatever chunks the network delivers
 * and reports, for each frame (int32 size + body), two events: HEADER once
 * the frame's header has been peeked, and END once its last byte has been
 * consumed. Every call stops right after an event, so a frame always starts
 * at the first byte of some feed call; the caller forwards bytes straight
 * from its own buffers and knows exactly where each frame starts and ends.
 *
 * The splitter copies bytes only when a header straddles two chunks: then
 * the frame's bytes up to the end of the header are accumulated in a small
 * buffer (capped by peek_limit) and handed to the caller with HEADER, who
 * writes them out and frees them. The body is never touched: consuming it
 * is one subtraction per call.
 *
 * What a header peek reads depends on the mode set for the frame: a request
 * header (api_key, api_version, correlation_id, client_id; Produce's acks;
 * SaslHandshake's mechanism), a response header (correlation_id, and an
 * optional error_code), nothing (raw SASL tokens) or no framing at all
 * (opaque connections). Pure C, no I/O.
 */
#ifndef KA_FRAME_H
#define KA_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "ka_api_keys.h"
#include "ka_reader.h"

/* The smallest request: api_key, api_version, correlation_id, client_id length. */
#define KA_FRAME_REQUEST_MIN 10
/* The smallest response: correlation_id. */
#define KA_FRAME_RESPONSE_MIN 4
/* How many header bytes may be accumulated across chunks. */
#define KA_FRAME_PEEK_LIMIT (64 * 1024)
/* acks value reported for frames that are not Produce requests. */
#define KA_ACKS_NONE INT16_MIN

enum ka_frame_mode {
    KA_FRAME_REQUEST = 0,
    KA_FRAME_RESPONSE,
    KA_FRAME_RAW,    /* a SASL token after SaslHandshake v0: size and bytes only */
    KA_FRAME_OPAQUE, /* no framing any more: every byte passes, no events */
};

/* Response peek option: also read the int16 error_code after correlation_id. */
#define KA_FRAME_PEEK_ERROR_CODE 0x1

enum ka_frame_event_type {
    KA_FRAME_NONE = 0, /* every byte consumed, no event */
    KA_FRAME_HEADER,
    KA_FRAME_END,
    KA_FRAME_NOMEM, /* the carry buffer could not be allocated; retry the rest later */
};

/* Why a stream was refused; the feed call returns a negative ka_err too. */
enum ka_frame_error {
    KA_FRAME_OK = 0,
    KA_FRAME_EOVERSIZE,  /* size above the cap, or negative */
    KA_FRAME_EUNDERSIZE, /* size below the smallest header */
    KA_FRAME_ETLS,       /* a TLS ClientHello on a plaintext listener */
    KA_FRAME_EPEEK,      /* the header is longer than peek_limit */
    KA_FRAME_EMALFORMED, /* a header field runs past the end of the frame */
};

/*
 * Who sent a request held for an interception handler. The splitter never
 * fills it: the relay points a held request's header at its session's
 * origin, which stays valid while the handler runs (and while it defers).
 */
typedef struct ka_frame_origin {
    const char *principal; /* "User:alice" once the broker accepted it; NULL: unknown */
    const char *peer;      /* the client's address, "127.0.0.1:53422" */
    const char *client_id; /* the request header's client id (a copy, maybe cut), or NULL */
    size_t client_id_len;
    /* 0 when the broker surely refuses the request for want of authentication
     * (a SASL listener before the login completed, a login under way or
     * failed): ka_session_authenticated. */
    int authenticated;
} ka_frame_origin_t;

typedef struct ka_frame_header {
    int32_t size;    /* bytes after the size prefix */
    size_t peek_len; /* frame bytes the peek covered, size prefix included */
    int16_t api_key; /* requests only */
    int16_t api_version;
    int32_t correlation_id;    /* requests and responses */
    ka_slice_t client_id;      /* valid until the next feed call */
    int16_t acks;              /* Produce requests; KA_ACKS_NONE otherwise */
    ka_slice_t sasl_mechanism; /* SaslHandshake requests; valid until the next feed */
    int16_t error_code;        /* responses peeked with KA_FRAME_PEEK_ERROR_CODE */
    int has_error_code;
    const ka_frame_origin_t *origin; /* held requests: who sent it (the relay's); else NULL */
} ka_frame_header_t;

typedef struct ka_frame_event {
    enum ka_frame_event_type type;
    ka_frame_header_t hdr; /* HEADER */
    /* HEADER only: when the header straddled chunks, the frame's first
     * carried_len bytes (including this call's consumed bytes) are here,
     * and the caller now owns the buffer (free with the allocator's
     * release). NULL when the frame's bytes are all in this call's data. */
    uint8_t *carried;
    size_t carried_len;
} ka_frame_event_t;

/* Where carry buffers come from (the memory pool in the proxy). */
typedef struct ka_frame_alloc {
    uint8_t *(*alloc)(void *ctx, size_t n); /* NULL when memory is short */
    void (*release)(void *ctx, uint8_t *p);
    void *ctx;
} ka_frame_alloc_t;

enum ka_frame_state { KA_FRAME_S_PEEK = 0, KA_FRAME_S_BODY };

typedef struct ka_splitter {
    enum ka_frame_state state;
    enum ka_frame_mode mode; /* for the frame being peeked; set before its bytes arrive */
    unsigned peek_flags;     /* KA_FRAME_PEEK_* for the frame being peeked */
    uint64_t max_frame;      /* largest size accepted for requests and raw tokens */
    size_t peek_limit;
    ka_frame_alloc_t alloc;

    uint8_t *carry; /* bytes of a header that straddles chunks, or NULL */
    size_t carry_len, carry_cap;
    size_t carry_need;  /* bytes the next peek attempt needs */
    uint64_t body_left; /* bytes of the current frame still to come (state BODY) */

    uint64_t frames;           /* frames completed */
    uint64_t consumed;         /* bytes consumed in total */
    enum ka_frame_error error; /* sticky once set */
    int32_t last_size;         /* size field that caused EOVERSIZE/EUNDERSIZE */
} ka_splitter_t;

void ka_frame_init(ka_splitter_t *s, enum ka_frame_mode mode, uint64_t max_frame,
                   const ka_frame_alloc_t *alloc);

/* Releases a carry buffer still held. */
void ka_frame_free(ka_splitter_t *s);

/* Sets the mode of the frame whose header has not been peeked yet. */
void ka_frame_set_mode(ka_splitter_t *s, enum ka_frame_mode mode, unsigned peek_flags);

/* True between frames or while a header is being accumulated. */
static inline int ka_frame_awaiting_header(const ka_splitter_t *s)
{
    return s->state == KA_FRAME_S_PEEK;
}

/* True when no byte of an unfinished frame has been consumed. */
static inline int ka_frame_at_boundary(const ka_splitter_t *s)
{
    return s->state == KA_FRAME_S_PEEK && s->carry_len == 0;
}

/*
 * Consumes bytes of data, stopping right after the first event. Returns the
 * bytes consumed (>= 0) with ev filled in, or a negative ka_err when the
 * stream must be closed (s->error says why). Call again with the rest,
 * also with len 0 after a HEADER, until it returns KA_FRAME_NONE.
 */
long ka_frame_feed(ka_splitter_t *s, const uint8_t *data, size_t len, ka_frame_event_t *ev);

/*
 * Counts n bytes of the current frame's body as consumed without seeing them
 * (the proxy moved them socket to socket with splice(2)). Only in the middle
 * of a body (state BODY) and for at most body_left bytes; returns n, with ev
 * END when they were the frame's last, or a negative ka_err (nothing changed).
 */
long ka_frame_skip(ka_splitter_t *s, uint64_t n, ka_frame_event_t *ev);

const char *ka_frame_strerror(enum ka_frame_error e);

#endif
