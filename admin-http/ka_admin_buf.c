/*
 * ka_admin_buf.c: the growable response buffer. Growth doubles, so building
 * a body of n bytes costs O(n) copies in total.
 */
#include "ka_admin_buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"

void ka_admin_buf_init(ka_admin_buf_t *buf)
{
    memset(buf, 0, sizeof(*buf));
}

void ka_admin_buf_free(ka_admin_buf_t *buf)
{
    free(buf->data);
    ka_admin_buf_init(buf);
}

void ka_admin_buf_reset(ka_admin_buf_t *buf)
{
    buf->len = 0;
    buf->failed = false;
    if (buf->data != NULL)
        buf->data[0] = '\0';
}

char *ka_admin_buf_reserve(ka_admin_buf_t *buf, size_t n)
{
    size_t need, cap;
    char *grown;

    if (buf->failed)
        return NULL;
    if (n > SIZE_MAX / 2 - buf->len - 1)
        goto fail;
    need = buf->len + n + 1;
    if (need <= buf->cap)
        return buf->data + buf->len;
    cap = buf->cap ? buf->cap : 256;
    while (cap < need)
        cap *= 2;
    grown = realloc(buf->data, cap);
    if (grown == NULL)
        goto fail;
    buf->data = grown;
    buf->cap = cap;
    return buf->data + buf->len;
fail:
    buf->failed = true;
    return NULL;
}

void ka_admin_buf_commit(ka_admin_buf_t *buf, size_t n)
{
    if (buf->failed || buf->data == NULL)
        return;
    buf->len += n;
    buf->data[buf->len] = '\0';
}

int ka_admin_buf_append(ka_admin_buf_t *buf, const void *data, size_t len)
{
    char *dst = ka_admin_buf_reserve(buf, len);

    if (dst == NULL)
        return KA_ENOMEM;
    if (len > 0)
        memcpy(dst, data, len);
    ka_admin_buf_commit(buf, len);
    return 0;
}

int ka_admin_buf_puts(ka_admin_buf_t *buf, const char *s)
{
    return ka_admin_buf_append(buf, s, strlen(s));
}

int ka_admin_buf_printf(ka_admin_buf_t *buf, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *dst;

    /* Most lines fit in 128 bytes: try once, and retry with the exact size. */
    dst = ka_admin_buf_reserve(buf, 128);
    if (dst == NULL)
        return KA_ENOMEM;
    va_start(ap, fmt);
    n = vsnprintf(dst, 129, fmt, ap);
    va_end(ap);
    if (n < 0) {
        buf->data[buf->len] = '\0';
        return KA_EINVALID;
    }
    if ((size_t)n > 128) {
        dst = ka_admin_buf_reserve(buf, (size_t)n);
        if (dst == NULL)
            return KA_ENOMEM;
        va_start(ap, fmt);
        vsnprintf(dst, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    ka_admin_buf_commit(buf, (size_t)n);
    return 0;
}

char *ka_admin_buf_take(ka_admin_buf_t *buf, size_t *len)
{
    char *data = buf->data;

    *len = buf->len;
    ka_admin_buf_init(buf);
    return data;
}

int ka_admin_buf_failed(const ka_admin_buf_t *buf)
{
    return buf->failed ? KA_ENOMEM : 0;
}
