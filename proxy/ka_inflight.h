/*
 * ka_inflight.h: the per-connection FIFO of requests awaiting a response.
 *
 * Kafka answers the requests of one connection in the order they were
 * sent, so the response direction matches each response frame to the head
 * of this queue. Requests that get no response (Produce with acks=0) never
 * enter it. A request kadmit answers itself stays in the queue as a LOCAL
 * entry holding its answer: it reaches the head only once every earlier
 * response has been written, which is what keeps responses in order
 * (ARCHITECTURE invariant 1).
 *
 * The queue is a ring that grows by doubling and never shrinks below its
 * high-water mark, so steady traffic does not allocate per request; an idle
 * connection that never sent a request holds no ring at all.
 */
#ifndef KA_INFLIGHT_H
#define KA_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

/* A connection pipelining more requests than this is refused. */
#define KA_INFLIGHT_MAX 65536

enum ka_inflight_flag {
    KA_INFLIGHT_RAW = 1 << 0,               /* a raw SASL token: the response is raw too */
    KA_INFLIGHT_BUFFER_RESPONSE = 1 << 1,   /* buffer the response whole for a handler */
    KA_INFLIGHT_LOCAL = 1 << 2,             /* answered by kadmit; answer holds the bytes */
    KA_INFLIGHT_SASL_HANDSHAKE_V0 = 1 << 3, /* its response decides raw SASL framing */
    KA_INFLIGHT_HOOK_STATE = 1 << 4,        /* answer holds a handler's per-request state */
    KA_INFLIGHT_SASL_AUTH = 1 << 5,  /* a SaslAuthenticate: its answer says if the client is in */
    KA_INFLIGHT_SASL_FINAL = 1 << 6, /* the last token of a PLAIN or SCRAM exchange */
    KA_INFLIGHT_SASL_HANDSHAKE =
        1 << 7, /* a SaslHandshake (any version): its answer starts an exchange */
};

typedef struct ka_inflight_entry {
    int32_t correlation_id;
    int16_t api_key;
    int16_t api_version;
    uint32_t flags; /* ka_inflight_flag */
    uint32_t answer_len;
    void *answer; /* LOCAL: the answer frame, owned by the entry's producer */
} ka_inflight_entry_t;

typedef struct ka_inflight {
    ka_inflight_entry_t *ring; /* NULL until the first request */
    uint32_t cap;              /* a power of two */
    uint32_t head;             /* index of the oldest entry */
    uint32_t count;
} ka_inflight_t;

void ka_inflight_init(ka_inflight_t *q);
/* Frees the ring; LOCAL answers still queued must be released by the caller first. */
void ka_inflight_free(ka_inflight_t *q);

/* Appends an entry; KA_ENOMEM, or KA_ELIMIT beyond KA_INFLIGHT_MAX. */
int ka_inflight_push(ka_inflight_t *q, const ka_inflight_entry_t *e);

/* The oldest entry, or NULL when empty. */
ka_inflight_entry_t *ka_inflight_head(ka_inflight_t *q);

/* Removes the oldest entry into *out (may be NULL); KA_EUNDERFLOW when empty. */
int ka_inflight_pop(ka_inflight_t *q, ka_inflight_entry_t *out);

/* Pops the head into *out only if it is a LOCAL answer now due; 1 if so. */
int ka_inflight_pop_due_answer(ka_inflight_t *q, ka_inflight_entry_t *out);

static inline uint32_t ka_inflight_count(const ka_inflight_t *q)
{
    return q->count;
}

/* Number of SASL tokens the client sends after SaslHandshake v0 for this
 * mechanism, or -1 when the exchange has no fixed shape (GSSAPI, unknown). */
int ka_sasl_mechanism_tokens(const uint8_t *name, size_t len);

/*
 * The SaslHandshake v0 answer that refuses a mechanism kadmit cannot follow
 * (size prefix included): UNSUPPORTED_SASL_MECHANISM and the mechanisms it
 * follows, the answer a broker gives for a mechanism it does not enable.
 * Writes it when cap is enough; returns its length either way.
 */
size_t ka_sasl_refusal_answer(int32_t correlation_id, uint8_t *buf, size_t cap);

#endif
