/*
 * fuzz_codec.c: the fuzz target of one generated decoder, chosen at build
 * time by KA_FUZZ_API_KEY and KA_FUZZ_DIRECTION.
 *
 * The input's first two bytes pick the version (modulo the codec's range, so
 * every input exercises a real version); the rest is the body. A decode
 * must either fail with the error recorded on the reader, or consume the
 * body exactly; and a body decoded successfully must re-encode to the same
 * bytes. The one legitimate exception is a varint written longer than
 * necessary, which decodes to a value whose canonical encoding is shorter;
 * the reader counts those, and for such frames the target checks instead
 * that encoding is stable (decode(encode(x)) encodes to encode(x)).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_codecs.h"

#define FUZZ_ARENA_CAP ((size_t)64 * 1024 * 1024)

static void check(int ok)
{
    if (!ok)
        abort();
}

/* memcmp that accepts the NULL buffer of a writer that wrote nothing. */
static int same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Encodes msg; returns the writer (caller frees) after asserting success. */
static void encode(const struct ka_codec *c, int16_t version, const void *msg, size_t max,
                   ka_writer_t *w)
{
    ka_writer_init(w, max);
    check(c->encode(w, version, msg) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct ka_codec *c = ka_codec_find(KA_FUZZ_API_KEY, KA_FUZZ_DIRECTION);
    if (c == NULL || size < 2)
        return 0;
    uint16_t sel = (uint16_t)(data[0] << 8 | data[1]);
    int16_t version = (int16_t)(c->min_version + sel % (c->max_version - c->min_version + 1));
    const uint8_t *body = data + 2;
    size_t len = size - 2;

    ka_arena_t arena;
    ka_arena_init(&arena, FUZZ_ARENA_CAP);
    void *msg = calloc(1, c->struct_size);
    void *again = calloc(1, c->struct_size);
    if (msg == NULL || again == NULL)
        goto done;
    ka_reader_t r;
    ka_reader_init(&r, body, len);
    int rc = c->decode(&r, version, &arena, msg);
    if (rc < 0) {
        check(rc == r.err && r.err_off <= len);
        goto done;
    }
    check(rc == 0 && r.off == len);
    ka_writer_t w;
    /* Re-encoding is never longer than the input: only varints can shrink. */
    encode(c, version, msg, len, &w);
    if (r.noncanonical == 0) {
        check(same(w.buf, w.len, body, len));
    } else {
        check(w.len < len);
        ka_reader_t r2;
        ka_reader_init(&r2, w.buf, w.len);
        check(c->decode(&r2, version, &arena, again) == 0);
        check(r2.noncanonical == 0);
        ka_writer_t w2;
        encode(c, version, again, w.len, &w2);
        check(same(w2.buf, w2.len, w.buf, w.len));
        ka_writer_free(&w2);
    }
    ka_writer_free(&w);
done:
    free(msg);
    free(again);
    ka_arena_destroy(&arena);
    return 0;
}
