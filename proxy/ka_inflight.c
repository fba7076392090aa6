/*
 * ka_inflight.c: the in-flight ring (see ka_inflight.h).
 */
#include "ka_inflight.h"

#include <stdlib.h>
#include <string.h>

#include "ka_error.h"
#include "ka_error_codes.h"

void ka_inflight_init(ka_inflight_t *q)
{
    memset(q, 0, sizeof(*q));
}

void ka_inflight_free(ka_inflight_t *q)
{
    free(q->ring);
    memset(q, 0, sizeof(*q));
}

static int grow(ka_inflight_t *q)
{
    uint32_t cap = q->cap ? q->cap * 2 : 8;
    ka_inflight_entry_t *ring = malloc(sizeof(*ring) * cap);
    if (ring == NULL)
        return KA_ENOMEM;
    /* Unwrap the old ring so the oldest entry lands at index 0. */
    for (uint32_t i = 0; i < q->count; i++)
        ring[i] = q->ring[(q->head + i) & (q->cap - 1)];
    free(q->ring);
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
    return 0;
}

int ka_inflight_push(ka_inflight_t *q, const ka_inflight_entry_t *e)
{
    if (q->count >= KA_INFLIGHT_MAX)
        return KA_ELIMIT;
    if (q->count == q->cap) {
        int rc = grow(q);
        if (rc < 0)
            return rc;
    }
    q->ring[(q->head + q->count) & (q->cap - 1)] = *e;
    q->count++;
    return 0;
}

ka_inflight_entry_t *ka_inflight_head(ka_inflight_t *q)
{
    return q->count ? &q->ring[q->head] : NULL;
}

int ka_inflight_pop(ka_inflight_t *q, ka_inflight_entry_t *out)
{
    if (q->count == 0)
        return KA_EUNDERFLOW;
    if (out != NULL)
        *out = q->ring[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
    return 0;
}

int ka_inflight_pop_due_answer(ka_inflight_t *q, ka_inflight_entry_t *out)
{
    ka_inflight_entry_t *h = ka_inflight_head(q);
    if (h == NULL || !(h->flags & KA_INFLIGHT_LOCAL))
        return 0;
    ka_inflight_pop(q, out);
    return 1;
}

/* The mechanisms whose SaslHandshake v0 exchange has a fixed number of raw tokens. */
static const struct {
    const char *name;
    int tokens;
} followed[] = {
    /* PLAIN: one message; the broker answers with an empty token. */
    {"PLAIN", 1},
    /* SCRAM: client-first and client-final, each answered. */
    {"SCRAM-SHA-256", 2},
    {"SCRAM-SHA-512", 2},
    /* OAUTHBEARER: the initial client response, answered once. */
    {"OAUTHBEARER", 1},
};

int ka_sasl_mechanism_tokens(const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < sizeof(followed) / sizeof(followed[0]); i++) {
        if (strlen(followed[i].name) == len && memcmp(followed[i].name, name, len) == 0)
            return followed[i].tokens;
    }
    return -1;
}

static size_t put_be(uint8_t *p, uint32_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return n;
}

size_t ka_sasl_refusal_answer(int32_t correlation_id, uint8_t *buf, size_t cap)
{
    size_t n = 4 + 4 + 2 + 4, off = 0;

    for (size_t i = 0; i < sizeof(followed) / sizeof(followed[0]); i++)
        n += 2 + strlen(followed[i].name);
    if (buf == NULL || cap < n)
        return n;
    off += put_be(buf + off, (uint32_t)(n - 4), 4);
    off += put_be(buf + off, (uint32_t)correlation_id, 4);
    off += put_be(buf + off, KA_KAFKA_ERR_UNSUPPORTED_SASL_MECHANISM, 2);
    off += put_be(buf + off, sizeof(followed) / sizeof(followed[0]), 4);
    for (size_t i = 0; i < sizeof(followed) / sizeof(followed[0]); i++) {
        size_t len = strlen(followed[i].name);
        off += put_be(buf + off, (uint32_t)len, 2);
        memcpy(buf + off, followed[i].name, len);
        off += len;
    }
    return off;
}
