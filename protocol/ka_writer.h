/*
 * ka_writer.h: a bounded writer that mirrors ka_reader.h.
 *
 * Every encoder writes through these calls. The writer either owns a
 * growable buffer with a hard cap (ka_writer_init) or fills a buffer the
 * caller supplies (ka_writer_init_fixed). Running past the cap or the fixed
 * buffer fails with KA_EOVERFLOW; like the reader, the first failure sticks,
 * so an encoder can issue a run of writes and check once, or use KA_WTRY.
 */
#ifndef KA_WRITER_H
#define KA_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"
#include "ka_reader.h"

typedef struct ka_writer {
    uint8_t *buf; /* output bytes; owned by the writer unless fixed */
    size_t len;   /* bytes written so far */
    size_t alloc; /* bytes allocated (or the fixed buffer's size) */
    size_t max;   /* hard cap on len: a writer never grows beyond it */
    int fixed;    /* 1 when buf belongs to the caller and never grows */
    int err;      /* first error seen, or 0 */
} ka_writer_t;

/* Evaluates a write; on failure jumps to the caller's `err_write:` label. */
#define KA_WTRY(expr)                                                                              \
    do {                                                                                           \
        if ((expr) < 0)                                                                            \
            goto err_write;                                                                        \
    } while (0)

/* A growable writer that allocates lazily and never holds more than max bytes. */
void ka_writer_init(ka_writer_t *w, size_t max);
/* A writer over the caller's buffer; it never allocates. */
void ka_writer_init_fixed(ka_writer_t *w, uint8_t *buf, size_t len);
/* Frees a growable writer's buffer (a no-op for fixed writers). */
void ka_writer_free(ka_writer_t *w);
/* Forgets what was written and any error, keeping the buffer. */
void ka_writer_reset(ka_writer_t *w);

/*
 * Grows a growable writer's buffer to hold n more bytes (never past its cap)
 * without writing, so a caller that knows its output size grows it once.
 * Returns 0 or the writer's error; a fixed writer is left as it is.
 */
int ka_writer_reserve(ka_writer_t *w, size_t n);

int ka_write_raw(ka_writer_t *w, const void *src, size_t n);
int ka_write_i8(ka_writer_t *w, int8_t v);
int ka_write_bool(ka_writer_t *w, uint8_t v);
int ka_write_i16(ka_writer_t *w, int16_t v);
int ka_write_u16(ka_writer_t *w, uint16_t v);
int ka_write_i32(ka_writer_t *w, int32_t v);
int ka_write_u32(ka_writer_t *w, uint32_t v);
int ka_write_i64(ka_writer_t *w, int64_t v);
int ka_write_f64(ka_writer_t *w, double v);
int ka_write_uuid(ka_writer_t *w, const uint8_t v[16]);

/* Varints in their minimal encoding, so a canonical frame round-trips. */
int ka_write_uvarint(ka_writer_t *w, uint32_t v);
int ka_write_varint(ka_writer_t *w, int32_t v);
int ka_write_varlong(ka_writer_t *w, int64_t v);

/*
 * Strings and bytes. A slice with len -1 is null: the nullable forms write
 * it as null, the plain forms refuse it with KA_EINVALID. Strings longer
 * than KA_MAX_STRING_LEN fail with KA_ELIMIT, as they would on read.
 */
int ka_write_string(ka_writer_t *w, ka_slice_t s);
int ka_write_nullable_string(ka_writer_t *w, ka_slice_t s);
int ka_write_compact_string(ka_writer_t *w, ka_slice_t s);
int ka_write_compact_nullable_string(ka_writer_t *w, ka_slice_t s);
int ka_write_bytes(ka_writer_t *w, ka_slice_t b);
int ka_write_nullable_bytes(ka_writer_t *w, ka_slice_t b);
int ka_write_compact_bytes(ka_writer_t *w, ka_slice_t b);
int ka_write_compact_nullable_bytes(ka_writer_t *w, ka_slice_t b);

/* Array counts; -1 is null and only the nullable forms accept it. */
int ka_write_array_count(ka_writer_t *w, int32_t count);
int ka_write_nullable_array_count(ka_writer_t *w, int32_t count);
int ka_write_compact_array_count(ka_writer_t *w, int32_t count);
int ka_write_compact_nullable_array_count(ka_writer_t *w, int32_t count);

/*
 * Writes a tagged-field section as read by ka_read_tagged_fields, verbatim.
 * An empty slice (len <= 0, as in a zeroed struct) writes the empty section,
 * a single zero byte, so structs built in code encode correctly.
 */
int ka_write_tagged_fields(ka_writer_t *w, ka_slice_t section);

/* Overwrites 4 bytes at off, e.g. a size prefix reserved before the body. */
int ka_writer_patch_i32(ka_writer_t *w, size_t off, int32_t v);

#endif
