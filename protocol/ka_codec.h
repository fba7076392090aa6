/*
 * ka_codec.h: what every generated codec shares.
 *
 * The generated files in protocol/generated/ include only this header. It
 * brings in the reader, writer and arena, and defines the array types for
 * arrays of primitives (arrays of structs are declared next to their
 * struct). Every array is {count, items}: count is -1 for a null array, and
 * items points into the decode arena (or, when encoding, wherever the
 * caller keeps them).
 */
#ifndef KA_CODEC_H
#define KA_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ka_arena.h"
#include "ka_error.h"
#include "ka_reader.h"
#include "ka_writer.h"

typedef struct ka_i8_array {
    int32_t count; /* -1 for null */
    int8_t *items;
} ka_i8_array_t;

typedef struct ka_i16_array {
    int32_t count; /* -1 for null */
    int16_t *items;
} ka_i16_array_t;

typedef struct ka_i32_array {
    int32_t count; /* -1 for null */
    int32_t *items;
} ka_i32_array_t;

typedef struct ka_i64_array {
    int32_t count; /* -1 for null */
    int64_t *items;
} ka_i64_array_t;

typedef struct ka_uuid_array {
    int32_t count; /* -1 for null */
    uint8_t (*items)[16];
} ka_uuid_array_t;

typedef struct ka_slice_array {
    int32_t count; /* -1 for null */
    ka_slice_t *items;
} ka_slice_array_t;

/* Which way a message travels; error messages and codec tables use it. */
enum ka_direction {
    KA_REQUEST = 0,
    KA_RESPONSE = 1,
};

/* A slice over a C string literal, for building messages in code. */
#define KA_SLICE_LIT(s) ((ka_slice_t){(const uint8_t *)(s), (int32_t)(sizeof(s) - 1)})
#define KA_SLICE_NULL   ((ka_slice_t){NULL, -1})

/*
 * Allocates the items of an array being decoded. A failure is recorded on
 * the reader, at the array's position, so that decode errors report it
 * like any other: the arena's cap is part of the frame's bounds.
 */
static inline int ka_codec_alloc(ka_reader_t *r, ka_arena_t *arena, int32_t count, size_t size,
                                 void **out)
{
    *out = NULL;
    if (count <= 0)
        return 0;
    int rc = ka_arena_alloc_array(arena, (size_t)count, size, out);
    if (rc < 0)
        return ka_reader_fail(r, rc);
    return 0;
}

/* The error a failed decoder returns: the reader's, or KA_EINVALID if none was recorded. */
static inline int ka_codec_error(const ka_reader_t *r)
{
    return r->err != 0 ? r->err : KA_EINVALID;
}

#endif
