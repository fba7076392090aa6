/*
 * fuzz_frames.h: what the admission fuzz targets check of every frame kadmit
 * writes, and how they frame their input.
 */
#ifndef FUZZ_FRAMES_H
#define FUZZ_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_protocol.h"

/* A frame kadmit wrote: its prefix is its length, and its body decodes. */
static inline void check_frame(const uint8_t *frame, size_t len, int16_t api_key, int16_t version,
                               enum ka_direction direction)
{
    const struct ka_codec *codec = ka_codec_find(api_key, direction);
    ka_arena_t arena;
    ka_reader_t r;
    void *msg;
    int rc;

    if (len < 8 || ((uint32_t)frame[0] << 24 | (uint32_t)frame[1] << 16 | (uint32_t)frame[2] << 8 |
                    frame[3]) != len - 4)
        abort();
    ka_reader_init(&r, frame + 4, len - 4);
    if (direction == KA_REQUEST) {
        struct ka_request_header h;
        rc = ka_request_header_read(&r, &h, NULL);
    } else {
        struct ka_response_header h;
        rc = ka_response_header_decode(&r, ka_response_header_version(api_key, version), &h);
    }
    if (rc < 0)
        abort();
    ka_arena_init(&arena, (size_t)64 << 20);
    msg = ka_arena_alloc(&arena, codec->struct_size);
    if (msg == NULL || codec->decode(&r, version, &arena, msg) < 0)
        abort();
    ka_arena_destroy(&arena);
}

/* A frame: a size prefix, then a copy of the n bytes at body. */
static inline uint8_t *framed(const uint8_t *body, size_t n)
{
    uint8_t *frame = malloc(n + 4);

    if (frame == NULL)
        abort();
    frame[0] = (uint8_t)(n >> 24);
    frame[1] = (uint8_t)(n >> 16);
    frame[2] = (uint8_t)(n >> 8);
    frame[3] = (uint8_t)n;
    memcpy(frame + 4, body, n);
    return frame;
}

#endif
