/*
 * ka_tls_bio.c: see ka_tls_bio.h.
 *
 * The BIO method is created once per process (pthread_once): the metadata
 * client and the sessions may build engines from different threads.
 */
#include "ka_tls_bio.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"

/*
 * An emptied buffer is kept for the next bytes (as a memory BIO keeps its
 * BUF_MEM), unless it grew past this: freeing and regrowing one on every
 * flush costs fresh pages (page faults, zeroed by the kernel) each time,
 * which is what the memory BIO's memset cost, moved into the kernel. A flush's
 * records seldom pass a few hundred KiB; a pathological burst is not kept.
 */
#define KEEP_CAP (1024 * 1024)

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

int ka_tls_bytes_append(ka_tls_bytes_t *b, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    if (b->off > 0 && b->off + b->len + n > b->cap) { /* slide what is held to the front */
        memmove(b->data, b->data + b->off, b->len);
        b->off = 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 16 * 1024;
        while (cap < b->len + n) {
            if (cap > SIZE_MAX / 2)
                return KA_ENOMEM;
            cap *= 2;
        }
        uint8_t *d = realloc(b->data, cap);
        if (d == NULL)
            return KA_ENOMEM;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->off + b->len, p, n);
    b->len += n;
    return 0;
}

/* Drops n bytes from the front; an emptied buffer starts over (or is freed when large). */
static void bytes_drop(ka_tls_bytes_t *b, size_t n)
{
    b->off += n;
    b->len -= n;
    if (b->len == 0) {
        b->off = 0;
        if (b->cap > KEEP_CAP)
            ka_tls_bytes_free(b);
    }
}

size_t ka_tls_bytes_take(ka_tls_bytes_t *b, uint8_t *out, size_t cap)
{
    size_t n = b->len < cap ? b->len : cap;
    if (n > 0) {
        memcpy(out, b->data + b->off, n);
        bytes_drop(b, n);
    }
    return n;
}

void ka_tls_bytes_free(ka_tls_bytes_t *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

int ka_tls_wire_settle(ka_tls_wire_t *w)
{
    int rc = ka_tls_bytes_append(&w->in, w->lent, w->lent_len);
    w->lent = NULL;
    w->lent_len = 0;
    return rc;
}

static int wire_read(BIO *b, char *out, int outl)
{
    ka_tls_wire_t *w = BIO_get_data(b);
    size_t cap = outl > 0 ? (size_t)outl : 0, got = 0;
    BIO_clear_retry_flags(b);
    if (w->in.len > 0)
        got = ka_tls_bytes_take(&w->in, (uint8_t *)out, cap);
    if (got < cap && w->lent_len > 0) {
        size_t n = w->lent_len < cap - got ? w->lent_len : cap - got;
        memcpy(out + got, w->lent, n);
        w->lent += n;
        w->lent_len -= n;
        got += n;
    }
    if (got == 0) {
        BIO_set_retry_read(b); /* "more to come", not end of file */
        return -1;
    }
    return (int)got;
}

static int wire_write(BIO *b, const char *in, int inl)
{
    ka_tls_wire_t *w = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (inl <= 0)
        return 0;
    return ka_tls_bytes_append(&w->out, (const uint8_t *)in, (size_t)inl) < 0 ? -1 : inl;
}

static long wire_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    ka_tls_wire_t *w = BIO_get_data(b);
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1; /* records wait in out until taken */
    case BIO_CTRL_PENDING: {
        size_t n = w->in.len + w->lent_len;
        return n > LONG_MAX ? LONG_MAX : (long)n;
    }
    case BIO_CTRL_WPENDING:
        return w->out.len > LONG_MAX ? LONG_MAX : (long)w->out.len;
    default:
        return 0; /* kTLS, dup, push/pop and the rest: not supported */
    }
}

static int wire_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void make_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kadmit wire");
    if (m != NULL &&
        (BIO_meth_set_read(m, wire_read) != 1 || BIO_meth_set_write(m, wire_write) != 1 ||
         BIO_meth_set_ctrl(m, wire_ctrl) != 1 || BIO_meth_set_create(m, wire_create) != 1)) {
        BIO_meth_free(m);
        m = NULL;
    }
    method = m;
}

BIO *ka_tls_bio_new(ka_tls_wire_t *w)
{
    pthread_once(&method_once, make_method);
    if (method == NULL)
        return NULL;
    BIO *b = BIO_new(method);
    if (b != NULL)
        BIO_set_data(b, w);
    return b;
}
