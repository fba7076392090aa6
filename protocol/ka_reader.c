/*
 * ka_reader.c: bounded reads over a Kafka frame (see ka_reader.h).
 *
 * Every function checks `remaining` before reading and never advances the
 * offset on failure, so a failed reader still points at the field that
 * could not be read; that offset is what decode errors report.
 */
#include "ka_reader.h"

#include <string.h>

void ka_reader_init(ka_reader_t *r, const uint8_t *buf, size_t len)
{
    r->buf = buf;
    r->len = len;
    r->off = 0;
    r->err = 0;
    r->err_off = 0;
    r->noncanonical = 0;
}

int ka_reader_fail(ka_reader_t *r, int err)
{
    if (r->err == 0) {
        r->err = err;
        r->err_off = r->off;
    }
    return err;
}

static int need(ka_reader_t *r, size_t n)
{
    if (r->err != 0)
        return r->err;
    if (ka_reader_remaining(r) < n)
        return ka_reader_fail(r, KA_EUNDERFLOW);
    return 0;
}

int ka_read_i8(ka_reader_t *r, int8_t *out)
{
    int rc = need(r, 1);
    if (rc < 0)
        return rc;
    *out = (int8_t)r->buf[r->off];
    r->off += 1;
    return 0;
}

int ka_read_bool(ka_reader_t *r, uint8_t *out)
{
    int rc = need(r, 1);
    if (rc < 0)
        return rc;
    /* Kafka treats any non-zero byte as true; keep the byte so a
     * re-encoded frame is identical to the original. */
    *out = r->buf[r->off];
    r->off += 1;
    return 0;
}

int ka_read_u16(ka_reader_t *r, uint16_t *out)
{
    int rc = need(r, 2);
    if (rc < 0)
        return rc;
    const uint8_t *p = r->buf + r->off;
    *out = (uint16_t)((uint16_t)p[0] << 8 | p[1]);
    r->off += 2;
    return 0;
}

int ka_read_i16(ka_reader_t *r, int16_t *out)
{
    uint16_t v;
    int rc = ka_read_u16(r, &v);
    if (rc < 0)
        return rc;
    *out = (int16_t)v;
    return 0;
}

int ka_read_u32(ka_reader_t *r, uint32_t *out)
{
    int rc = need(r, 4);
    if (rc < 0)
        return rc;
    const uint8_t *p = r->buf + r->off;
    *out = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    r->off += 4;
    return 0;
}

int ka_read_i32(ka_reader_t *r, int32_t *out)
{
    uint32_t v;
    int rc = ka_read_u32(r, &v);
    if (rc < 0)
        return rc;
    *out = (int32_t)v;
    return 0;
}

int ka_read_i64(ka_reader_t *r, int64_t *out)
{
    int rc = need(r, 8);
    if (rc < 0)
        return rc;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | r->buf[r->off + (size_t)i];
    *out = (int64_t)v;
    r->off += 8;
    return 0;
}

int ka_read_f64(ka_reader_t *r, double *out)
{
    int64_t bits;
    int rc = ka_read_i64(r, &bits);
    if (rc < 0)
        return rc;
    memcpy(out, &bits, sizeof(*out));
    return 0;
}

int ka_read_uuid(ka_reader_t *r, uint8_t out[16])
{
    int rc = need(r, 16);
    if (rc < 0)
        return rc;
    memcpy(out, r->buf + r->off, 16);
    r->off += 16;
    return 0;
}

/* Reads up to max_bytes 7-bit groups into a 64-bit value. */
static int read_varbits(ka_reader_t *r, int max_bytes, uint64_t *out)
{
    if (r->err != 0)
        return r->err;
    uint64_t v = 0;
    size_t off = r->off;
    for (int i = 0; i < max_bytes; i++) {
        if (off >= r->len)
            return ka_reader_fail(r, KA_EUNDERFLOW);
        uint8_t b = r->buf[off++];
        /* The tenth byte of a 64-bit varint carries only bit 63; anything
         * more would be silently shifted out and change the value. */
        if (i == 9 && b > 1)
            return ka_reader_fail(r, KA_EINVALID);
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            /* A zero final byte after the first adds nothing: the value
             * had a shorter encoding. */
            if (i > 0 && b == 0)
                r->noncanonical++;
            r->off = off;
            *out = v;
            return 0;
        }
    }
    /* Too many continuation bytes: the value does not fit its type. */
    return ka_reader_fail(r, KA_EINVALID);
}

int ka_read_uvarint(ka_reader_t *r, uint32_t *out)
{
    uint64_t v = 0;
    int rc = read_varbits(r, 5, &v);
    if (rc < 0)
        return rc;
    if (v > UINT32_MAX)
        return ka_reader_fail(r, KA_EINVALID);
    *out = (uint32_t)v;
    return 0;
}

int ka_read_varint(ka_reader_t *r, int32_t *out)
{
    uint32_t u;
    int rc = ka_read_uvarint(r, &u);
    if (rc < 0)
        return rc;
    *out = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
    return 0;
}

int ka_read_varlong(ka_reader_t *r, int64_t *out)
{
    uint64_t u = 0;
    int rc = read_varbits(r, 10, &u);
    if (rc < 0)
        return rc;
    *out = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
    return 0;
}

int ka_read_raw(ka_reader_t *r, size_t n, ka_slice_t *out)
{
    int rc = need(r, n);
    if (rc < 0)
        return rc;
    if (n > INT32_MAX)
        return ka_reader_fail(r, KA_ELIMIT);
    out->ptr = n ? r->buf + r->off : NULL;
    out->len = (int32_t)n;
    r->off += n;
    return 0;
}

/*
 * Shared tail of every string and bytes read: `len` is the decoded length
 * (-1 for null), `start` the offset of the length prefix, so that a
 * rejected field leaves the reader where the field began.
 */
static int take_slice(ka_reader_t *r, size_t start, int64_t len, int nullable, int64_t cap,
                      ka_slice_t *out)
{
    if (len == -1 && nullable) {
        out->ptr = NULL;
        out->len = -1;
        return 0;
    }
    if (len < 0) {
        r->off = start;
        return ka_reader_fail(r, KA_EINVALID);
    }
    if (len > cap) {
        r->off = start;
        return ka_reader_fail(r, KA_ELIMIT);
    }
    if ((uint64_t)len > ka_reader_remaining(r)) {
        r->off = start;
        return ka_reader_fail(r, KA_EUNDERFLOW);
    }
    return ka_read_raw(r, (size_t)len, out);
}

static int read_classic_string(ka_reader_t *r, int nullable, ka_slice_t *out)
{
    size_t start = r->off;
    int16_t len;
    int rc = ka_read_i16(r, &len);
    if (rc < 0)
        return rc;
    return take_slice(r, start, len, nullable, KA_MAX_STRING_LEN, out);
}

static int read_compact_length(ka_reader_t *r, int64_t *len)
{
    uint32_t n;
    int rc = ka_read_uvarint(r, &n);
    if (rc < 0)
        return rc;
    *len = (int64_t)n - 1; /* 0 encodes null, N+1 encodes length N */
    return 0;
}

static int read_compact_string(ka_reader_t *r, int nullable, ka_slice_t *out)
{
    size_t start = r->off;
    int64_t len;
    int rc = read_compact_length(r, &len);
    if (rc < 0)
        return rc;
    return take_slice(r, start, len, nullable, KA_MAX_STRING_LEN, out);
}

int ka_read_string(ka_reader_t *r, ka_slice_t *out)
{
    return read_classic_string(r, 0, out);
}

int ka_read_nullable_string(ka_reader_t *r, ka_slice_t *out)
{
    return read_classic_string(r, 1, out);
}

int ka_read_compact_string(ka_reader_t *r, ka_slice_t *out)
{
    return read_compact_string(r, 0, out);
}

int ka_read_compact_nullable_string(ka_reader_t *r, ka_slice_t *out)
{
    return read_compact_string(r, 1, out);
}

static int read_classic_bytes(ka_reader_t *r, int nullable, ka_slice_t *out)
{
    size_t start = r->off;
    int32_t len;
    int rc = ka_read_i32(r, &len);
    if (rc < 0)
        return rc;
    return take_slice(r, start, len, nullable, INT32_MAX, out);
}

static int read_compact_bytes(ka_reader_t *r, int nullable, ka_slice_t *out)
{
    size_t start = r->off;
    int64_t len;
    int rc = read_compact_length(r, &len);
    if (rc < 0)
        return rc;
    return take_slice(r, start, len, nullable, INT32_MAX, out);
}

int ka_read_bytes(ka_reader_t *r, ka_slice_t *out)
{
    return read_classic_bytes(r, 0, out);
}

int ka_read_nullable_bytes(ka_reader_t *r, ka_slice_t *out)
{
    return read_classic_bytes(r, 1, out);
}

int ka_read_compact_bytes(ka_reader_t *r, ka_slice_t *out)
{
    return read_compact_bytes(r, 0, out);
}

int ka_read_compact_nullable_bytes(ka_reader_t *r, ka_slice_t *out)
{
    return read_compact_bytes(r, 1, out);
}

static int check_count(ka_reader_t *r, size_t start, int64_t count, int nullable,
                       size_t min_elem_size, int32_t cap, int32_t *out)
{
    if (count == -1 && nullable) {
        *out = -1;
        return 0;
    }
    if (count < 0) {
        r->off = start;
        return ka_reader_fail(r, KA_EINVALID);
    }
    if (count > cap || count > KA_MAX_ARRAY_COUNT) {
        r->off = start;
        return ka_reader_fail(r, KA_ELIMIT);
    }
    /* Each element needs at least min_elem_size bytes, so a count larger
     * than the rest of the frame can hold is a lie we can detect before
     * allocating anything. */
    if (min_elem_size > 0 && (uint64_t)count > ka_reader_remaining(r) / min_elem_size) {
        r->off = start;
        return ka_reader_fail(r, KA_EUNDERFLOW);
    }
    *out = (int32_t)count;
    return 0;
}

int ka_read_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out)
{
    size_t start = r->off;
    int32_t n;
    int rc = ka_read_i32(r, &n);
    if (rc < 0)
        return rc;
    return check_count(r, start, n, 0, min_elem_size, cap, out);
}

int ka_read_nullable_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out)
{
    size_t start = r->off;
    int32_t n;
    int rc = ka_read_i32(r, &n);
    if (rc < 0)
        return rc;
    return check_count(r, start, n, 1, min_elem_size, cap, out);
}

int ka_read_compact_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out)
{
    size_t start = r->off;
    int64_t n;
    int rc = read_compact_length(r, &n);
    if (rc < 0)
        return rc;
    return check_count(r, start, n, 0, min_elem_size, cap, out);
}

int ka_read_compact_nullable_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap,
                                         int32_t *out)
{
    size_t start = r->off;
    int64_t n;
    int rc = read_compact_length(r, &n);
    if (rc < 0)
        return rc;
    return check_count(r, start, n, 1, min_elem_size, cap, out);
}

int ka_read_tagged_fields(ka_reader_t *r, ka_slice_t *section)
{
    size_t start = r->off;
    /* The section is kept verbatim, so its varints round-trip whatever
     * their encoding: they do not make the frame non-canonical. */
    uint32_t noncanonical = r->noncanonical;
    uint32_t count;
    int rc = ka_read_uvarint(r, &count);
    if (rc < 0)
        return rc;
    if (count > KA_MAX_TAGGED_FIELDS) {
        r->off = start;
        return ka_reader_fail(r, KA_ELIMIT);
    }
    int64_t prev_tag = -1;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t tag, size;
        if ((rc = ka_read_uvarint(r, &tag)) < 0)
            return rc;
        /* Tags must be strictly increasing: Kafka rejects anything else. */
        if ((int64_t)tag <= prev_tag)
            return ka_reader_fail(r, KA_EINVALID);
        prev_tag = tag;
        if ((rc = ka_read_uvarint(r, &size)) < 0)
            return rc;
        if (size > KA_MAX_TAGGED_FIELD_SIZE)
            return ka_reader_fail(r, KA_ELIMIT);
        ka_slice_t ignored;
        if ((rc = ka_read_raw(r, size, &ignored)) < 0)
            return rc;
    }
    r->noncanonical = noncanonical;
    section->ptr = r->buf + start;
    section->len = (int32_t)(r->off - start);
    return 0;
}
