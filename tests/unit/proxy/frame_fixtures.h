/*
 * frame_fixtures.h: builds Kafka frames and replays them through the
 * splitter the way the relay does, for test_frame.c and the fuzz target.
 */
#ifndef FRAME_FIXTURES_H
#define FRAME_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "ka_frame.h"

typedef struct fx_buf {
    uint8_t data[1 << 17];
    size_t len;
} fx_buf_t;

void fx_i16(fx_buf_t *b, int16_t v);
void fx_i32(fx_buf_t *b, int32_t v);
void fx_bytes(fx_buf_t *b, const void *p, size_t n);
void fx_uvarint(fx_buf_t *b, uint32_t v);

/* Appends a request frame: header v1 (or v2 when flexible) and a body. */
void fx_request(fx_buf_t *b, int16_t key, int16_t ver, int32_t corr, const char *client_id,
                int flexible, const uint8_t *body, size_t body_len);
/* Appends a Produce request with the given acks in the layout of its version. */
void fx_produce(fx_buf_t *b, int16_t ver, int32_t corr, int16_t acks, const char *txn_id);
/* Appends a response frame: correlation id then body. */
void fx_response(fx_buf_t *b, int32_t corr, const uint8_t *body, size_t body_len);

/* What one replay saw. */
typedef struct fx_seen {
    int headers, ends;
    int32_t corr[4096];
    int16_t acks[4096];
    int16_t key[4096];
    uint64_t end_at[4096]; /* stream offset just after each frame */
    uint8_t out[1 << 17];  /* bytes the relay would have forwarded */
    size_t out_len;
    int err; /* negative ka_err from feed, or 0 */
    uint64_t fed;
} fx_seen_t;

/* Allocator counters, to check that carry buffers are all returned. */
extern long fx_live_allocs;
extern int fx_fail_allocs; /* make the next N allocations fail */
extern const ka_frame_alloc_t fx_alloc;

/*
 * Feeds `len` bytes of `stream` to s in chunks whose sizes are taken in
 * turn from `chunks` (cycled; 0 entries mean "the rest"), recording events
 * and reassembling the forwarded bytes like the relay does.
 */
void fx_replay(ka_splitter_t *s, const uint8_t *stream, size_t len, const size_t *chunks,
               size_t nchunks, fx_seen_t *seen);

#endif
