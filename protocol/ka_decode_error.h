/*
 * ka_decode_error.h: turns a failed decode into a sentence for the log.
 *
 * A reader remembers the first error and the byte offset where it happened;
 * together with the API and version that is enough to tell an operator
 * which frame was refused and why, e.g.
 * "CreateTopics v5 request: frame ended before the field did at byte 37".
 */
#ifndef KA_DECODE_ERROR_H
#define KA_DECODE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "ka_codec.h"

/*
 * Formats the reader's error for a request of api_key at version into buf
 * (always NUL-terminated when len > 0). Returns 0, or KA_EOVERFLOW when the
 * text had to be cut short.
 */
int ka_decode_error_format(char *buf, size_t len, int16_t api_key, int16_t version,
                           const ka_reader_t *r);

/* The same for either direction. */
int ka_decode_error_format_dir(char *buf, size_t len, int16_t api_key, int16_t version,
                               enum ka_direction direction, const ka_reader_t *r);

#endif
