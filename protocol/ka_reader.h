/*
 * ka_reader.h: a bounded reader over one Kafka frame.
 *
 * Nothing in kadmit indexes a frame directly. Every field is read through
 * one of these calls, each of which checks what remains in the frame and
 * the cap for its type before it touches a byte. A failed read records the
 * error and the byte offset on the reader (the first failure wins) and
 * returns a negative ka_err, so decoders can use KA_TRY() and a single
 * `err_parse:` label.
 *
 * Strings and bytes are returned as slices into the frame, never copied:
 * they are valid only while the frame's buffer is.
 */
#ifndef KA_READER_H
#define KA_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"

/* The longest string Kafka's classic encoding can carry (int16 length). */
#define KA_MAX_STRING_LEN 32767
/* No array in any message kadmit decodes can hold more elements than this. */
#define KA_MAX_ARRAY_COUNT (4 * 1024 * 1024)
/* Tagged-field caps, after Envoy's Kafka codec: an attacker controls both. */
#define KA_MAX_TAGGED_FIELDS     64
#define KA_MAX_TAGGED_FIELD_SIZE (64 * 1024)

/* A view of bytes inside a frame. len == -1 means null. */
typedef struct ka_slice {
    const uint8_t *ptr; /* first byte, or NULL when the slice is null or empty */
    int32_t len;        /* byte count; -1 for a null string or bytes field */
} ka_slice_t;

typedef struct ka_reader {
    const uint8_t *buf; /* the frame (or part of it) being read */
    size_t len;         /* bytes in buf */
    size_t off;         /* next byte to read */
    int err;            /* first error seen, or 0 */
    size_t err_off;     /* offset at which err happened */
    /* Count of varints read in a longer-than-minimal encoding. Such frames
     * decode fine but cannot be re-encoded byte for byte, which is what the
     * fuzzers' round-trip check needs to know. */
    uint32_t noncanonical;
} ka_reader_t;

/* Evaluates a read; on failure jumps to the caller's `err_parse:` label. */
#define KA_TRY(expr)                                                                               \
    do {                                                                                           \
        if ((expr) < 0)                                                                            \
            goto err_parse;                                                                        \
    } while (0)

void ka_reader_init(ka_reader_t *r, const uint8_t *buf, size_t len);

static inline size_t ka_reader_remaining(const ka_reader_t *r)
{
    return r->len - r->off;
}

/* Records err at the current offset unless an earlier error is recorded. */
int ka_reader_fail(ka_reader_t *r, int err);

int ka_read_i8(ka_reader_t *r, int8_t *out);
int ka_read_bool(ka_reader_t *r, uint8_t *out);
int ka_read_i16(ka_reader_t *r, int16_t *out);
int ka_read_u16(ka_reader_t *r, uint16_t *out);
int ka_read_i32(ka_reader_t *r, int32_t *out);
int ka_read_u32(ka_reader_t *r, uint32_t *out);
int ka_read_i64(ka_reader_t *r, int64_t *out);
int ka_read_f64(ka_reader_t *r, double *out);
int ka_read_uuid(ka_reader_t *r, uint8_t out[16]);

/* Unsigned varint (at most 5 bytes) and zig-zag varint / varlong. */
int ka_read_uvarint(ka_reader_t *r, uint32_t *out);
int ka_read_varint(ka_reader_t *r, int32_t *out);
int ka_read_varlong(ka_reader_t *r, int64_t *out);

/*
 * Strings: classic (int16 length) or compact (uvarint length + 1). The
 * nullable forms accept length -1 (classic) or 0 (compact) as null; the
 * plain forms reject null as KA_EINVALID.
 */
int ka_read_string(ka_reader_t *r, ka_slice_t *out);
int ka_read_nullable_string(ka_reader_t *r, ka_slice_t *out);
int ka_read_compact_string(ka_reader_t *r, ka_slice_t *out);
int ka_read_compact_nullable_string(ka_reader_t *r, ka_slice_t *out);

/* Bytes: classic (int32 length) or compact (uvarint length + 1). */
int ka_read_bytes(ka_reader_t *r, ka_slice_t *out);
int ka_read_nullable_bytes(ka_reader_t *r, ka_slice_t *out);
int ka_read_compact_bytes(ka_reader_t *r, ka_slice_t *out);
int ka_read_compact_nullable_bytes(ka_reader_t *r, ka_slice_t *out);

/*
 * Array counts. `min_elem_size` is the fewest bytes one element can occupy;
 * the count is checked against remaining / min_elem_size and against `cap`
 * before the caller allocates anything. A null array yields -1 (allowed only
 * by the nullable forms).
 */
int ka_read_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out);
int ka_read_nullable_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out);
int ka_read_compact_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap, int32_t *out);
int ka_read_compact_nullable_array_count(ka_reader_t *r, size_t min_elem_size, int32_t cap,
                                         int32_t *out);

/* Takes n raw bytes as a slice. */
int ka_read_raw(ka_reader_t *r, size_t n, ka_slice_t *out);

/*
 * A tagged-field section (flexible versions only): the whole section, count
 * included, is returned as one slice so it can be written back verbatim.
 * Tag count, tag order and each tag's size are validated against the caps.
 */
int ka_read_tagged_fields(ka_reader_t *r, ka_slice_t *section);

#endif
