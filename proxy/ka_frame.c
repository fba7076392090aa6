/*
 * ka_frame.c: the frame splitter (see ka_frame.h).
 *
 * The header peek is a pure function of the bytes seen so far: it either
 * completes, or says how many bytes it needs before it can make progress,
 * or refuses the stream. Because it reports the exact end of the field it
 * is missing, a header that arrives byte by byte is re-parsed once per
 * field, not once per byte.
 */
#include "ka_frame.h"

#include <limits.h>
#include <string.h>

#include "ka_error.h"

void ka_frame_init(ka_splitter_t *s, enum ka_frame_mode mode, uint64_t max_frame,
                   const ka_frame_alloc_t *alloc)
{
    memset(s, 0, sizeof(*s));
    s->mode = mode;
    s->max_frame = max_frame;
    s->peek_limit = KA_FRAME_PEEK_LIMIT;
    s->alloc = *alloc;
}

void ka_frame_free(ka_splitter_t *s)
{
    if (s->carry != NULL)
        s->alloc.release(s->alloc.ctx, s->carry);
    s->carry = NULL;
    s->carry_len = s->carry_cap = 0;
}

void ka_frame_set_mode(ka_splitter_t *s, enum ka_frame_mode mode, unsigned peek_flags)
{
    if (s->state == KA_FRAME_S_PEEK) {
        s->mode = mode;
        s->peek_flags = peek_flags;
    }
}

const char *ka_frame_strerror(enum ka_frame_error e)
{
    switch (e) {
    case KA_FRAME_OK:
        return "no error";
    case KA_FRAME_EOVERSIZE:
        return "frame size above the cap";
    case KA_FRAME_EUNDERSIZE:
        return "frame size below the smallest header";
    case KA_FRAME_ETLS:
        return "TLS handshake on a plaintext listener";
    case KA_FRAME_EPEEK:
        return "request header longer than the peek limit";
    case KA_FRAME_EMALFORMED:
        return "header field runs past the end of the frame";
    }
    return "unknown frame error";
}

static int refuse(ka_splitter_t *s, enum ka_frame_error e)
{
    s->error = e;
    return e == KA_FRAME_EOVERSIZE || e == KA_FRAME_EPEEK ? KA_ELIMIT : KA_EINVALID;
}

/* Needs n more bytes at the reader's offset; otherwise records how many. */
#define NEED(n)                                                                                    \
    do {                                                                                           \
        if (ka_reader_remaining(&r) < (size_t)(n)) {                                               \
            *need = 4 + r.off + (size_t)(n);                                                       \
            goto more;                                                                             \
        }                                                                                          \
    } while (0)

/* A uvarint that may be cut short: need one more byte, or refuse a bad one. */
#define NEED_UVARINT(out)                                                                          \
    do {                                                                                           \
        if (ka_read_uvarint(&r, (out)) < 0) {                                                      \
            if (r.err != KA_EUNDERFLOW || ka_reader_remaining(&r) >= 5)                            \
                return refuse(s, KA_FRAME_EMALFORMED);                                             \
            *need = 4 + r.len + 1;                                                                 \
            goto more;                                                                             \
        }                                                                                          \
    } while (0)

/* Skips a classic nullable string (int16 length). */
#define SKIP_STRING(slice_out)                                                                     \
    do {                                                                                           \
        int16_t len_;                                                                              \
        NEED(2);                                                                                   \
        (void)ka_read_i16(&r, &len_);                                                              \
        if (len_ < -1)                                                                             \
            return refuse(s, KA_FRAME_EMALFORMED);                                                 \
        if (len_ > 0) {                                                                            \
            NEED(len_);                                                                            \
            (void)ka_read_raw(&r, (size_t)len_, (slice_out));                                      \
        }                                                                                          \
    } while (0)

/*
 * Peeks the header of the frame starting at buf. Returns 1 with h filled,
 * 0 with *need set to the bytes required, or a negative ka_err.
 */
static int peek(ka_splitter_t *s, const uint8_t *buf, size_t have, ka_frame_header_t *h,
                size_t *need)
{
    ka_reader_t r;
    ka_slice_t skipped;

    if (have < 4) {
        *need = 4;
        return 0;
    }
    if (s->mode == KA_FRAME_REQUEST && s->frames == 0 && buf[0] == 0x16 && buf[1] == 0x03)
        return refuse(s, KA_FRAME_ETLS);

    uint32_t usize =
        (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
    uint64_t max = s->mode == KA_FRAME_RESPONSE ? INT32_MAX : s->max_frame;
    int32_t min = s->mode == KA_FRAME_REQUEST    ? KA_FRAME_REQUEST_MIN
                  : s->mode == KA_FRAME_RESPONSE ? KA_FRAME_RESPONSE_MIN
                                                 : 0;
    s->last_size = (int32_t)usize;
    if (usize > max)
        return refuse(s, KA_FRAME_EOVERSIZE);
    if ((int32_t)usize < min)
        return refuse(s, KA_FRAME_EUNDERSIZE);

    uint64_t total = 4 + (uint64_t)usize;
    memset(h, 0, sizeof(*h));
    h->size = (int32_t)usize;
    h->acks = KA_ACKS_NONE;
    h->peek_len = 4;
    if (s->mode == KA_FRAME_RAW)
        return 1;

    ka_reader_init(&r, buf + 4, (have < total ? have : (size_t)total) - 4);
    if (s->mode == KA_FRAME_RESPONSE) {
        NEED(4);
        (void)ka_read_i32(&r, &h->correlation_id);
        if ((s->peek_flags & KA_FRAME_PEEK_ERROR_CODE) && usize >= 6) {
            NEED(2);
            (void)ka_read_i16(&r, &h->error_code);
            h->has_error_code = 1;
        }
        goto done;
    }

    NEED(8);
    (void)ka_read_i16(&r, &h->api_key);
    (void)ka_read_i16(&r, &h->api_version);
    (void)ka_read_i32(&r, &h->correlation_id);
    h->client_id.len = -1;
    SKIP_STRING(&h->client_id);

    if (h->api_key == KA_API_PRODUCE) {
        /* Produce v9+ is flexible: request header v2 adds a tagged-field
         * section after client_id, and transactional_id becomes compact. */
        int flexible = h->api_version >= 9;
        if (flexible) {
            uint32_t count, tag, size;
            NEED_UVARINT(&count);
            if (count > KA_MAX_TAGGED_FIELDS)
                return refuse(s, KA_FRAME_EMALFORMED);
            for (uint32_t i = 0; i < count; i++) {
                NEED_UVARINT(&tag);
                NEED_UVARINT(&size);
                if (size > KA_MAX_TAGGED_FIELD_SIZE)
                    return refuse(s, KA_FRAME_EMALFORMED);
                NEED(size);
                (void)ka_read_raw(&r, size, &skipped);
            }
        }
        if (h->api_version >= 3) {
            if (flexible) {
                uint32_t len_plus_one;
                NEED_UVARINT(&len_plus_one);
                if (len_plus_one > KA_MAX_STRING_LEN + 1)
                    return refuse(s, KA_FRAME_EMALFORMED);
                if (len_plus_one > 1) {
                    NEED(len_plus_one - 1);
                    (void)ka_read_raw(&r, len_plus_one - 1, &skipped);
                }
            } else {
                SKIP_STRING(&skipped);
            }
        }
        NEED(2);
        (void)ka_read_i16(&r, &h->acks);
    } else if (h->api_key == KA_API_SASL_HANDSHAKE) {
        SKIP_STRING(&h->sasl_mechanism);
    }
done:
    h->peek_len = 4 + r.off;
    /* The same cap whether the header came in one chunk or many, so the
     * verdict never depends on how the network split the bytes. */
    if (h->peek_len > s->peek_limit)
        return refuse(s, KA_FRAME_EPEEK);
    return 1;
more:
    if (*need > total)
        return refuse(s, KA_FRAME_EMALFORMED);
    if (*need > s->peek_limit)
        return refuse(s, KA_FRAME_EPEEK);
    return 0;
}

/* Grows the carry buffer to hold n bytes; 0 or KA_ENOMEM. */
static int carry_reserve(ka_splitter_t *s, size_t n)
{
    if (n <= s->carry_cap)
        return 0;
    size_t cap = s->carry_cap * 2;
    if (cap < 256)
        cap = 256;
    if (cap < n)
        cap = n;
    if (cap > s->peek_limit && n <= s->peek_limit)
        cap = s->peek_limit;
    uint8_t *p = s->alloc.alloc(s->alloc.ctx, cap);
    if (p == NULL)
        return KA_ENOMEM;
    if (s->carry != NULL) {
        memcpy(p, s->carry, s->carry_len);
        s->alloc.release(s->alloc.ctx, s->carry);
    }
    s->carry = p;
    s->carry_cap = cap;
    return 0;
}

static void header_done(ka_splitter_t *s, const ka_frame_header_t *h, size_t taken)
{
    s->body_left = 4 + (uint64_t)(uint32_t)h->size - taken;
    s->state = KA_FRAME_S_BODY;
}

/* n bytes of the body went by (n <= body_left); at its end, the frame ends. */
static inline long body_advance(ka_splitter_t *s, uint64_t n, ka_frame_event_t *ev)
{
    s->body_left -= n;
    s->consumed += n;
    if (s->body_left == 0) {
        s->state = KA_FRAME_S_PEEK;
        s->frames++;
        ev->type = KA_FRAME_END;
    }
    return (long)n;
}

long ka_frame_skip(ka_splitter_t *s, uint64_t n, ka_frame_event_t *ev)
{
    ev->type = KA_FRAME_NONE;
    ev->carried = NULL;
    ev->carried_len = 0;
    if (s->error != KA_FRAME_OK || s->state != KA_FRAME_S_BODY || n > s->body_left ||
        n > (uint64_t)LONG_MAX)
        return KA_EINVALID;
    return body_advance(s, n, ev);
}

long ka_frame_feed(ka_splitter_t *s, const uint8_t *data, size_t len, ka_frame_event_t *ev)
{
    size_t need = 0, off = 0;
    int rc;

    ev->type = KA_FRAME_NONE;
    ev->carried = NULL;
    ev->carried_len = 0;
    if (s->error != KA_FRAME_OK)
        return KA_EINVALID;

    if (s->state == KA_FRAME_S_BODY)
        return body_advance(s, s->body_left < len ? s->body_left : (uint64_t)len, ev);

    if (s->carry_len == 0) {
        if (s->mode == KA_FRAME_OPAQUE) {
            s->consumed += len;
            return (long)len;
        }
        /* The common case: the whole header is in this chunk. */
        rc = peek(s, data, len, &ev->hdr, &need);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            header_done(s, &ev->hdr, ev->hdr.peek_len);
            s->consumed += ev->hdr.peek_len;
            ev->type = KA_FRAME_HEADER;
            return (long)ev->hdr.peek_len;
        }
        if (len == 0)
            return 0;
        if (carry_reserve(s, need) < 0) {
            ev->type = KA_FRAME_NOMEM;
            return 0;
        }
        memcpy(s->carry, data, len);
        s->carry_len = len;
        s->carry_need = need;
        s->consumed += len;
        return (long)len;
    }

    for (;;) {
        size_t take = s->carry_need - s->carry_len;
        if (take > len - off)
            take = len - off;
        memcpy(s->carry + s->carry_len, data + off, take);
        s->carry_len += take;
        s->consumed += take;
        off += take;
        if (s->carry_len < s->carry_need)
            return (long)off;
        rc = peek(s, s->carry, s->carry_len, &ev->hdr, &need);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            header_done(s, &ev->hdr, s->carry_len);
            ev->type = KA_FRAME_HEADER;
            ev->carried = s->carry;
            ev->carried_len = s->carry_len;
            s->carry = NULL;
            s->carry_len = s->carry_cap = 0;
            return (long)off;
        }
        if (carry_reserve(s, need) < 0) {
            s->carry_need = s->carry_len;
            ev->type = KA_FRAME_NOMEM;
            return (long)off;
        }
        s->carry_need = need;
    }
}
