/*
 * fuzz_frame.c: libFuzzer target for the frame splitter.
 *
 * Input: byte 0 picks the mode (request, response, raw), bytes 1-4 seed the
 * chunking, the rest is the stream. The stream is replayed twice, whole and
 * in pseudo-random chunks, and the invariants are checked:
 *   - no read outside the buffers (ASan);
 *   - the frames reported end where their sizes say, and sum to the bytes
 *     consumed up to the last end;
 *   - every consumed byte is forwarded exactly once and unchanged, except
 *     the carried bytes of a header still incomplete at the end;
 *   - the chunking never changes the verdict: same frames, same headers,
 *     same error;
 *   - every carry buffer is returned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame_fixtures.h"
#include "ka_frame.h"

static fx_seen_t whole, chunked;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum ka_frame_mode modes[] = {KA_FRAME_REQUEST, KA_FRAME_RESPONSE, KA_FRAME_RAW};
    size_t chunks[64];
    ka_splitter_t s;

    if (size < 5 || size > 60000)
        return 0;
    enum ka_frame_mode mode = modes[data[0] % 3];
    uint32_t seed =
        (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
    const uint8_t *stream = data + 5;
    size_t len = size - 5;
    for (size_t i = 0; i < 64; i++) {
        seed = seed * 1103515245u + 12345u;
        /* Mostly tiny chunks, so headers straddle boundaries often. */
        chunks[i] = (seed >> 16) % 8 == 0 ? (seed >> 8) % 300 + 1 : (seed >> 16) % 7 + 1;
    }

    ka_frame_init(&s, mode, 1 << 16, &fx_alloc);
    fx_replay(&s, stream, len, NULL, 0, &whole);
    ka_frame_free(&s);
    ka_frame_init(&s, mode, 1 << 16, &fx_alloc);
    fx_replay(&s, stream, len, chunks, 64, &chunked);

    CHECK(whole.err == chunked.err);
    CHECK(whole.headers == chunked.headers && whole.ends == chunked.ends);
    for (int i = 0; i < whole.headers && i < 4096; i++)
        CHECK(whole.corr[i] == chunked.corr[i] && whole.acks[i] == chunked.acks[i] &&
              whole.key[i] == chunked.key[i]);
    for (int i = 0; i < whole.ends && i < 4096; i++)
        CHECK(whole.end_at[i] == chunked.end_at[i]);

    /* Frames tile the stream: each end is 4 + size after the previous one. */
    uint64_t at = 0;
    for (int i = 0; i < chunked.ends && i < 4096; i++) {
        const uint8_t *p = stream + at;
        CHECK(at + 4 <= len);
        uint64_t fsize = (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
        at += 4 + fsize;
        CHECK(chunked.end_at[i] == at);
    }
    CHECK(s.frames == (uint64_t)chunked.ends);
    /* On an error the call that failed may have carried a few bytes it
     * never reported; the stream is closed then, so only <= holds. */
    CHECK(chunked.fed <= len && chunked.fed <= s.consumed);
    if (chunked.err == 0)
        CHECK(chunked.fed == len && s.consumed == len);

    /* Forwarded bytes are the consumed bytes, minus a header still carried. */
    CHECK(chunked.out_len + s.carry_len == chunked.fed || chunked.err != 0);
    CHECK(chunked.out_len <= chunked.fed);
    CHECK(memcmp(chunked.out, stream, chunked.out_len) == 0);
    CHECK(whole.out_len == chunked.out_len || chunked.err != 0);

    ka_frame_free(&s);
    CHECK(fx_live_allocs == 0);
    return 0;
}
