/*
 * fuzz_relay_modes.c: libFuzzer target for the mode switches of a client
 * connection, as the relay (proxy/ka_relay.c) drives the splitter.
 *
 * The relay changes how the client's next bytes are framed at three points:
 *   - the first bytes: a TLS ClientHello on a plaintext port is refused;
 *   - after a SaslHandshake v0 request has been answered: raw SASL tokens
 *     (as many as the mechanism uses), then Kafka frames again, or, for a
 *     mechanism with no fixed count, no framing at all (opaque);
 *   - a held frame (an admission API): its body goes in only as far as the
 *     growing buffer has room, so the splitter is fed short, even empty,
 *     chunks in the middle of a frame.
 * This target replays a client stream through those switches twice, in one
 * piece and in pseudo-random chunks, with the broker's answer to each
 * handshake taken from the input, and checks:
 *   - no read outside the buffers (ASan), every carry buffer returned;
 *   - the chunking never changes the verdict: the same events in the same
 *     modes, the same error, the same bytes forwarded;
 *   - a TLS refusal only ever happens on a connection's first frame;
 *   - raw tokens are counted exactly, and once opaque every byte passes;
 *   - a held frame's buffer receives exactly the frame's bytes, in order.
 *
 * Input: byte 0 flags (bit 0: the broker refuses handshakes), bytes 1-4 the
 * chunking seed, byte 5 the held buffer's first size in 16-byte units, then
 * the client's stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame_fixtures.h"
#include "ka_frame.h"
#include "ka_inflight.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define MAX_EVENTS 2048
#define MAX_FRAME  (1 << 16)

typedef struct run {
    int events;
    int32_t what[MAX_EVENTS]; /* mode << 24 | event type << 16 | api_key */
    int32_t corr[MAX_EVENTS];
    int err, refused_tls_at_frame;
    size_t fed, forwarded;
    uint8_t out[1 << 17]; /* the bytes passed on, held frames included */
    int raw_tokens, opaque;
} run_t;

static run_t whole, chunked;

/* The admission APIs the relay holds whole when a policy is loaded. */
static int held_api(int16_t key)
{
    return key == KA_API_CREATE_TOPICS || key == KA_API_CREATE_PARTITIONS ||
           key == KA_API_ALTER_PARTITION_REASSIGNMENTS || key == KA_API_METADATA;
}

static void note(run_t *r, int32_t what, int32_t corr)
{
    if (r->events < MAX_EVENTS) {
        r->what[r->events] = what;
        r->corr[r->events] = corr;
    }
    r->events++;
}

static void forward(run_t *r, const uint8_t *p, size_t n)
{
    CHECK(r->forwarded + n <= sizeof(r->out));
    memcpy(r->out + r->forwarded, p, n);
    r->forwarded += n;
}

static void replay(const uint8_t *stream, size_t len, const size_t *chunks, size_t nchunks,
                   int broker_refuses, size_t hold_first, run_t *r)
{
    ka_splitter_t s;
    ka_frame_event_t ev;
    uint8_t *hold = NULL;
    size_t hold_len = 0, hold_cap = 0, hold_total = 0;
    int holding = 0, handshake = 0, tokens = 0, tokens_left = 0;
    size_t off = 0, ci = 0;

    memset(r, 0, sizeof(*r));
    r->refused_tls_at_frame = -1;
    ka_frame_init(&s, KA_FRAME_REQUEST, MAX_FRAME, &fx_alloc);
    while (off < len) {
        size_t n = nchunks ? chunks[ci++ % nchunks] : len - off;
        if (n == 0 || n > len - off)
            n = len - off;
        size_t end = off + n;
        while (off < end || (off == end && s.state == KA_FRAME_S_BODY && s.body_left == 0)) {
            size_t feed = end - off;
            if (holding) {
                if (hold_len == hold_cap && hold_cap < hold_total) {
                    size_t grown = hold_cap * 2 < hold_total ? hold_cap * 2 : hold_total;
                    uint8_t *p = realloc(hold, grown);
                    CHECK(p != NULL);
                    hold = p;
                    hold_cap = grown;
                }
                if (feed > hold_cap - hold_len)
                    feed = hold_cap - hold_len;
            }
            long got = ka_frame_feed(&s, stream + off, feed, &ev);
            if (got < 0) {
                r->err = (int)got;
                if (s.error == KA_FRAME_ETLS)
                    r->refused_tls_at_frame = (int)s.frames;
                goto done;
            }
            const uint8_t *bytes = stream + off;
            off += (size_t)got;
            r->fed += (size_t)got;
            if (ev.type == KA_FRAME_NOMEM) {
                CHECK(0); /* fx_alloc never fails here */
            } else if (ev.type == KA_FRAME_HEADER) {
                const uint8_t *first = ev.carried ? ev.carried : bytes;
                size_t first_len = ev.carried ? ev.carried_len : (size_t)got;
                note(r, (int32_t)s.mode << 24 | 1 << 16 | (uint16_t)ev.hdr.api_key,
                     ev.hdr.correlation_id);
                if (s.mode == KA_FRAME_REQUEST && ev.hdr.api_key == KA_API_SASL_HANDSHAKE &&
                    ev.hdr.api_version == 0) {
                    handshake = 1;
                    tokens = ka_sasl_mechanism_tokens(
                        ev.hdr.sasl_mechanism.ptr,
                        ev.hdr.sasl_mechanism.len > 0 ? (size_t)ev.hdr.sasl_mechanism.len : 0);
                }
                if (s.mode == KA_FRAME_REQUEST && held_api(ev.hdr.api_key)) {
                    holding = 1;
                    hold_total = 4 + (size_t)(uint32_t)ev.hdr.size;
                    hold_cap = hold_first > first_len ? hold_first : first_len;
                    if (hold_cap > hold_total)
                        hold_cap = hold_total;
                    hold = malloc(hold_cap);
                    CHECK(hold != NULL);
                    memcpy(hold, first, first_len);
                    hold_len = first_len;
                } else {
                    forward(r, first, first_len);
                }
                if (ev.carried)
                    fx_alloc.release(fx_alloc.ctx, ev.carried);
            } else {
                if (holding) {
                    CHECK(hold_len + (size_t)got <= hold_cap);
                    memcpy(hold + hold_len, bytes, (size_t)got);
                    hold_len += (size_t)got;
                } else if (ev.type == KA_FRAME_END || !ka_frame_awaiting_header(&s) ||
                           s.mode == KA_FRAME_OPAQUE) {
                    forward(r, bytes, (size_t)got);
                }
                if (ev.type != KA_FRAME_END)
                    continue;
                if (holding) {
                    CHECK(hold_len == hold_total);
                    forward(r, hold, hold_len);
                    free(hold);
                    hold = NULL;
                    holding = 0;
                    hold_len = hold_cap = 0;
                }
                note(r, (int32_t)s.mode << 24 | 2 << 16, 0);
                if (s.mode == KA_FRAME_RAW) {
                    r->raw_tokens++;
                    tokens_left--;
                }
                /* What sasl_handshake_answered and on_end decide. */
                if (handshake) {
                    handshake = 0;
                    if (!broker_refuses && tokens > 0)
                        tokens_left = tokens;
                    else if (!broker_refuses)
                        r->opaque = 1;
                }
                ka_frame_set_mode(&s,
                                  r->opaque         ? KA_FRAME_OPAQUE
                                  : tokens_left > 0 ? KA_FRAME_RAW
                                                    : KA_FRAME_REQUEST,
                                  0);
            }
        }
    }
done:
    /* A header still being carried at the end has not been forwarded. */
    CHECK(r->err != 0 || holding || r->forwarded + s.carry_len == r->fed);
    free(hold);
    ka_frame_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t chunks[64];

    if (size < 6 || size > 60000)
        return 0;
    int broker_refuses = data[0] & 1;
    uint32_t seed =
        (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
    size_t hold_first = (size_t)data[5] * 16 + 1;
    const uint8_t *stream = data + 6;
    size_t len = size - 6;
    for (size_t i = 0; i < 64; i++) {
        seed = seed * 1103515245u + 12345u;
        chunks[i] = (seed >> 16) % 8 == 0 ? (seed >> 8) % 300 + 1 : (seed >> 16) % 7 + 1;
    }

    replay(stream, len, NULL, 0, broker_refuses, hold_first, &whole);
    replay(stream, len, chunks, 64, broker_refuses, hold_first, &chunked);

    CHECK(whole.err == chunked.err);
    CHECK(whole.events == chunked.events);
    for (int i = 0; i < whole.events && i < MAX_EVENTS; i++)
        CHECK(whole.what[i] == chunked.what[i] && whole.corr[i] == chunked.corr[i]);
    CHECK(whole.raw_tokens == chunked.raw_tokens && whole.opaque == chunked.opaque);
    CHECK(whole.refused_tls_at_frame == chunked.refused_tls_at_frame);
    CHECK(whole.refused_tls_at_frame <= 0);
    /* Whatever was passed on is the stream itself, in order. */
    CHECK(memcmp(chunked.out, stream, chunked.forwarded) == 0);
    CHECK(memcmp(whole.out, stream, whole.forwarded) == 0);
    if (whole.err == 0 && chunked.err == 0)
        CHECK(whole.forwarded == chunked.forwarded || whole.opaque);
    if (chunked.opaque && chunked.err == 0)
        CHECK(chunked.fed == len);
    CHECK(fx_live_allocs == 0);
    return 0;
}
