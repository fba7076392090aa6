/*
 * ka_admin_buf.h: a growable byte buffer for HTTP responses and metrics.
 *
 * Responses are built in memory and handed to libuv whole, so one type
 * serves the response writer, the JSON bodies and the metrics renderers
 * (the proxy's ops->metrics_render appends to one). A buffer that fails to
 * grow remembers it: later appends are no-ops and ka_admin_buf_failed()
 * reports it once, so renderers need not check every append.
 */
#ifndef KA_ADMIN_BUF_H
#define KA_ADMIN_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ka_admin_buf {
    char *data;  /* NUL-terminated when len > 0; owned */
    size_t len;  /* bytes used, not counting the NUL */
    size_t cap;  /* bytes allocated */
    bool failed; /* an allocation failed; contents are incomplete */
} ka_admin_buf_t;

/* A zeroed struct is an empty buffer; this is the same. */
void ka_admin_buf_init(ka_admin_buf_t *buf);
void ka_admin_buf_free(ka_admin_buf_t *buf);
/* Empties the buffer but keeps its memory. */
void ka_admin_buf_reset(ka_admin_buf_t *buf);

int ka_admin_buf_append(ka_admin_buf_t *buf, const void *data, size_t len);
int ka_admin_buf_puts(ka_admin_buf_t *buf, const char *s);
int ka_admin_buf_printf(ka_admin_buf_t *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * For renderers that write into a char array: returns room for at least n
 * more bytes (plus a NUL) at the end, or NULL; then ka_admin_buf_commit(buf,
 * written) adds the bytes actually written.
 */
char *ka_admin_buf_reserve(ka_admin_buf_t *buf, size_t n);
void ka_admin_buf_commit(ka_admin_buf_t *buf, size_t n);

/* Moves the contents out (to free()), leaving the buffer empty. */
char *ka_admin_buf_take(ka_admin_buf_t *buf, size_t *len);

/* 0, or KA_ENOMEM when any append has failed. */
int ka_admin_buf_failed(const ka_admin_buf_t *buf);

#endif
