/*
 * frame_fixtures.c: frame builders and the relay-like replay loop.
 */
#include "frame_fixtures.h"

#include <stdlib.h>
#include <string.h>

long fx_live_allocs;
int fx_fail_allocs;

static uint8_t *fx_alloc_fn(void *ctx, size_t n)
{
    (void)ctx;
    if (fx_fail_allocs > 0) {
        fx_fail_allocs--;
        return NULL;
    }
    fx_live_allocs++;
    return malloc(n);
}

static void fx_release_fn(void *ctx, uint8_t *p)
{
    (void)ctx;
    fx_live_allocs--;
    free(p);
}

const ka_frame_alloc_t fx_alloc = {fx_alloc_fn, fx_release_fn, NULL};

void fx_bytes(fx_buf_t *b, const void *p, size_t n)
{
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void fx_i16(fx_buf_t *b, int16_t v)
{
    uint8_t x[2] = {(uint8_t)((uint16_t)v >> 8), (uint8_t)v};
    fx_bytes(b, x, 2);
}

void fx_i32(fx_buf_t *b, int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t x[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    fx_bytes(b, x, 4);
}

void fx_uvarint(fx_buf_t *b, uint32_t v)
{
    while (v >= 0x80) {
        uint8_t c = (uint8_t)(v | 0x80);
        fx_bytes(b, &c, 1);
        v >>= 7;
    }
    uint8_t c = (uint8_t)v;
    fx_bytes(b, &c, 1);
}

static void patch_size(fx_buf_t *b, size_t at)
{
    uint32_t size = (uint32_t)(b->len - at - 4);
    b->data[at] = (uint8_t)(size >> 24);
    b->data[at + 1] = (uint8_t)(size >> 16);
    b->data[at + 2] = (uint8_t)(size >> 8);
    b->data[at + 3] = (uint8_t)size;
}

static void header(fx_buf_t *b, int16_t key, int16_t ver, int32_t corr, const char *client_id,
                   int flexible)
{
    fx_i16(b, key);
    fx_i16(b, ver);
    fx_i32(b, corr);
    if (client_id == NULL) {
        fx_i16(b, -1);
    } else {
        fx_i16(b, (int16_t)strlen(client_id));
        fx_bytes(b, client_id, strlen(client_id));
    }
    if (flexible)
        fx_uvarint(b, 0); /* no tagged fields */
}

void fx_request(fx_buf_t *b, int16_t key, int16_t ver, int32_t corr, const char *client_id,
                int flexible, const uint8_t *body, size_t body_len)
{
    size_t at = b->len;
    fx_i32(b, 0);
    header(b, key, ver, corr, client_id, flexible);
    if (body_len)
        fx_bytes(b, body, body_len);
    patch_size(b, at);
}

void fx_produce(fx_buf_t *b, int16_t ver, int32_t corr, int16_t acks, const char *txn_id)
{
    size_t at = b->len;
    int flexible = ver >= 9;
    fx_i32(b, 0);
    header(b, 0, ver, corr, "producer-1", flexible);
    if (ver >= 3) {
        if (flexible) {
            if (txn_id == NULL) {
                fx_uvarint(b, 0);
            } else {
                fx_uvarint(b, (uint32_t)strlen(txn_id) + 1);
                fx_bytes(b, txn_id, strlen(txn_id));
            }
        } else if (txn_id == NULL) {
            fx_i16(b, -1);
        } else {
            fx_i16(b, (int16_t)strlen(txn_id));
            fx_bytes(b, txn_id, strlen(txn_id));
        }
    }
    fx_i16(b, acks);
    fx_i32(b, 30000); /* timeout_ms */
    fx_bytes(b, "records...", 10);
    patch_size(b, at);
}

void fx_response(fx_buf_t *b, int32_t corr, const uint8_t *body, size_t body_len)
{
    size_t at = b->len;
    fx_i32(b, 0);
    fx_i32(b, corr);
    if (body_len)
        fx_bytes(b, body, body_len);
    patch_size(b, at);
}

static void out(fx_seen_t *seen, const uint8_t *p, size_t n)
{
    if (seen->out_len + n <= sizeof(seen->out)) {
        memcpy(seen->out + seen->out_len, p, n);
        seen->out_len += n;
    }
}

void fx_replay(ka_splitter_t *s, const uint8_t *stream, size_t len, const size_t *chunks,
               size_t nchunks, fx_seen_t *seen)
{
    size_t pos = 0, ci = 0;
    ka_frame_event_t ev;

    memset(seen, 0, sizeof(*seen));
    while (pos < len && seen->err == 0) {
        size_t clen = nchunks ? chunks[ci++ % nchunks] : 0;
        if (clen == 0 || clen > len - pos)
            clen = len - pos;
        const uint8_t *data = stream + pos;
        size_t off = 0;
        for (;;) {
            long n = ka_frame_feed(s, data + off, clen - off, &ev);
            if (n < 0) {
                seen->err = (int)n;
                break;
            }
            const uint8_t *a = data + off;
            off += (size_t)n;
            seen->fed += (uint64_t)n;
            if (ev.type == KA_FRAME_NONE || ev.type == KA_FRAME_NOMEM) {
                if (!ka_frame_awaiting_header(s) || s->mode == KA_FRAME_OPAQUE)
                    out(seen, a, (size_t)n);
                break;
            }
            if (ev.type == KA_FRAME_HEADER) {
                int i = seen->headers++ & 4095;
                seen->corr[i] = ev.hdr.correlation_id;
                seen->acks[i] = ev.hdr.acks;
                seen->key[i] = ev.hdr.api_key;
                if (ev.carried) {
                    out(seen, ev.carried, ev.carried_len);
                    s->alloc.release(s->alloc.ctx, ev.carried);
                } else {
                    out(seen, a, (size_t)n);
                }
            } else {
                out(seen, a, (size_t)n);
                seen->end_at[seen->ends++ & 4095] = s->consumed;
            }
        }
        pos += off;
        if (off < clen && seen->err == 0)
            break; /* NOMEM: the caller retries */
    }
}
