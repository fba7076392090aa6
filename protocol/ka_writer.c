/*
 * ka_writer.c: bounded writes (see ka_writer.h).
 *
 * A write either lands whole or not at all: space is checked, and grown if
 * the writer may grow, before the first byte is copied.
 */
#include "ka_writer.h"

#include <stdlib.h>
#include <string.h>

/* The first allocation of a growable writer; doubling takes it from here. */
#define KA_WRITER_INITIAL_ALLOC 256

void ka_writer_init(ka_writer_t *w, size_t max)
{
    memset(w, 0, sizeof(*w));
    w->max = max;
}

void ka_writer_init_fixed(ka_writer_t *w, uint8_t *buf, size_t len)
{
    memset(w, 0, sizeof(*w));
    w->buf = buf;
    w->alloc = len;
    w->max = len;
    w->fixed = 1;
}

void ka_writer_free(ka_writer_t *w)
{
    if (!w->fixed)
        free(w->buf);
    w->buf = NULL;
    w->alloc = 0;
    w->len = 0;
}

void ka_writer_reset(ka_writer_t *w)
{
    w->len = 0;
    w->err = 0;
}

static int fail(ka_writer_t *w, int err)
{
    if (w->err == 0)
        w->err = err;
    return err;
}

/* Makes room for n more bytes, growing a growable writer up to its cap. */
static int reserve(ka_writer_t *w, size_t n)
{
    if (w->err != 0)
        return w->err;
    if (n > w->max || w->len > w->max - n)
        return fail(w, KA_EOVERFLOW);
    size_t need = w->len + n;
    if (need <= w->alloc)
        return 0;
    if (w->fixed)
        return fail(w, KA_EOVERFLOW);
    size_t alloc = w->alloc ? w->alloc : KA_WRITER_INITIAL_ALLOC;
    while (alloc < need)
        alloc = alloc > SIZE_MAX / 2 ? SIZE_MAX : alloc * 2;
    if (alloc > w->max)
        alloc = w->max;
    uint8_t *p = realloc(w->buf, alloc);
    if (p == NULL)
        return fail(w, KA_ENOMEM);
    w->buf = p;
    w->alloc = alloc;
    return 0;
}

int ka_writer_reserve(ka_writer_t *w, size_t n)
{
    if (w->fixed)
        return w->err;
    return reserve(w, n);
}

int ka_write_raw(ka_writer_t *w, const void *src, size_t n)
{
    int rc = reserve(w, n);
    if (rc < 0)
        return rc;
    if (n > 0)
        memcpy(w->buf + w->len, src, n);
    w->len += n;
    return 0;
}

static int write_be(ka_writer_t *w, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = bytes - 1; i >= 0; i--) {
        b[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
    return ka_write_raw(w, b, (size_t)bytes);
}

int ka_write_i8(ka_writer_t *w, int8_t v)
{
    return write_be(w, (uint8_t)v, 1);
}

int ka_write_bool(ka_writer_t *w, uint8_t v)
{
    /* The byte is written as given: a decoded frame keeps its own byte. */
    return write_be(w, v, 1);
}

int ka_write_i16(ka_writer_t *w, int16_t v)
{
    return write_be(w, (uint16_t)v, 2);
}

int ka_write_u16(ka_writer_t *w, uint16_t v)
{
    return write_be(w, v, 2);
}

int ka_write_i32(ka_writer_t *w, int32_t v)
{
    return write_be(w, (uint32_t)v, 4);
}

int ka_write_u32(ka_writer_t *w, uint32_t v)
{
    return write_be(w, v, 4);
}

int ka_write_i64(ka_writer_t *w, int64_t v)
{
    return write_be(w, (uint64_t)v, 8);
}

int ka_write_f64(ka_writer_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return write_be(w, bits, 8);
}

int ka_write_uuid(ka_writer_t *w, const uint8_t v[16])
{
    return ka_write_raw(w, v, 16);
}

static int write_varbits(ka_writer_t *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return ka_write_raw(w, b, n);
}

int ka_write_uvarint(ka_writer_t *w, uint32_t v)
{
    return write_varbits(w, v);
}

int ka_write_varint(ka_writer_t *w, int32_t v)
{
    uint32_t u = (uint32_t)v;
    return write_varbits(w, (u << 1) ^ (0u - (u >> 31)));
}

int ka_write_varlong(ka_writer_t *w, int64_t v)
{
    uint64_t u = (uint64_t)v;
    return write_varbits(w, (u << 1) ^ (0u - (u >> 63)));
}

/* Checks a slice's length against null-ness and the cap of its type. */
static int check_slice(ka_writer_t *w, ka_slice_t s, int nullable, int64_t cap)
{
    if (w->err != 0)
        return w->err;
    if (s.len == -1)
        return nullable ? 1 : fail(w, KA_EINVALID);
    if (s.len < 0)
        return fail(w, KA_EINVALID);
    if (s.len > cap)
        return fail(w, KA_ELIMIT);
    return 0;
}

static int write_classic(ka_writer_t *w, ka_slice_t s, int nullable, int is_string)
{
    int rc = check_slice(w, s, nullable, is_string ? KA_MAX_STRING_LEN : INT32_MAX);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return is_string ? ka_write_i16(w, -1) : ka_write_i32(w, -1);
    rc = is_string ? ka_write_i16(w, (int16_t)s.len) : ka_write_i32(w, s.len);
    if (rc < 0)
        return rc;
    return ka_write_raw(w, s.ptr, (size_t)s.len);
}

static int write_compact(ka_writer_t *w, ka_slice_t s, int nullable, int is_string)
{
    int rc = check_slice(w, s, nullable, is_string ? KA_MAX_STRING_LEN : INT32_MAX);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return ka_write_uvarint(w, 0);
    rc = ka_write_uvarint(w, (uint32_t)s.len + 1);
    if (rc < 0)
        return rc;
    return ka_write_raw(w, s.ptr, (size_t)s.len);
}

int ka_write_string(ka_writer_t *w, ka_slice_t s)
{
    return write_classic(w, s, 0, 1);
}

int ka_write_nullable_string(ka_writer_t *w, ka_slice_t s)
{
    return write_classic(w, s, 1, 1);
}

int ka_write_compact_string(ka_writer_t *w, ka_slice_t s)
{
    return write_compact(w, s, 0, 1);
}

int ka_write_compact_nullable_string(ka_writer_t *w, ka_slice_t s)
{
    return write_compact(w, s, 1, 1);
}

int ka_write_bytes(ka_writer_t *w, ka_slice_t b)
{
    return write_classic(w, b, 0, 0);
}

int ka_write_nullable_bytes(ka_writer_t *w, ka_slice_t b)
{
    return write_classic(w, b, 1, 0);
}

int ka_write_compact_bytes(ka_writer_t *w, ka_slice_t b)
{
    return write_compact(w, b, 0, 0);
}

int ka_write_compact_nullable_bytes(ka_writer_t *w, ka_slice_t b)
{
    return write_compact(w, b, 1, 0);
}

static int check_count(ka_writer_t *w, int32_t count, int nullable)
{
    if (w->err != 0)
        return w->err;
    if (count == -1)
        return nullable ? 1 : fail(w, KA_EINVALID);
    if (count < 0)
        return fail(w, KA_EINVALID);
    if (count > KA_MAX_ARRAY_COUNT)
        return fail(w, KA_ELIMIT);
    return 0;
}

int ka_write_array_count(ka_writer_t *w, int32_t count)
{
    int rc = check_count(w, count, 0);
    return rc < 0 ? rc : ka_write_i32(w, count);
}

int ka_write_nullable_array_count(ka_writer_t *w, int32_t count)
{
    int rc = check_count(w, count, 1);
    return rc < 0 ? rc : ka_write_i32(w, count);
}

int ka_write_compact_array_count(ka_writer_t *w, int32_t count)
{
    int rc = check_count(w, count, 0);
    return rc < 0 ? rc : ka_write_uvarint(w, (uint32_t)count + 1);
}

int ka_write_compact_nullable_array_count(ka_writer_t *w, int32_t count)
{
    int rc = check_count(w, count, 1);
    if (rc < 0)
        return rc;
    return ka_write_uvarint(w, rc == 1 ? 0 : (uint32_t)count + 1);
}

int ka_write_tagged_fields(ka_writer_t *w, ka_slice_t section)
{
    if (section.len <= 0 || section.ptr == NULL)
        return ka_write_uvarint(w, 0);
    return ka_write_raw(w, section.ptr, (size_t)section.len);
}

int ka_writer_patch_i32(ka_writer_t *w, size_t off, int32_t v)
{
    if (w->err != 0)
        return w->err;
    if (off > w->len || w->len - off < 4)
        return fail(w, KA_EINVALID);
    uint32_t u = (uint32_t)v;
    w->buf[off] = (uint8_t)(u >> 24);
    w->buf[off + 1] = (uint8_t)(u >> 16);
    w->buf[off + 2] = (uint8_t)(u >> 8);
    w->buf[off + 3] = (uint8_t)u;
    return 0;
}
