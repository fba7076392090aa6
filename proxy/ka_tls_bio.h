/*
 * ka_tls_bio.h: the one BIO between a TLS engine (ka_tls.c) and kadmit's
 * buffers, in place of OpenSSL's memory BIOs.
 *
 * A memory BIO zeroes the space of every write before copying into it
 * (BUF_MEM_grow_clean) and copies again on every read: measured with
 * callgrind on the TLS producer path, those memset and memcpy calls were
 * 40% of kadmit's instructions, more than AES-GCM itself. This BIO copies
 * nothing it does not have to:
 *
 * - input can be lent: OpenSSL reads ciphertext straight from the caller's
 *   socket buffer, and only what is left unread when the caller lets go of
 *   that buffer is copied (ka_tls_wire_settle);
 * - output (records) is appended to a plain buffer, never zeroed, and the
 *   caller copies it once into the buffers it writes to the socket.
 *
 * Not thread-safe: one wire belongs to one engine on one loop.
 */
#ifndef KA_TLS_BIO_H
#define KA_TLS_BIO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bio.h>

/* Bytes held at [off, off + len) of data (capacity cap). */
typedef struct ka_tls_bytes {
    uint8_t *data;
    size_t off, len, cap;
} ka_tls_bytes_t;

typedef struct ka_tls_wire {
    ka_tls_bytes_t in;   /* ciphertext copied in, not read by OpenSSL yet; older than lent */
    const uint8_t *lent; /* ciphertext lent by the caller, read after in; NULL when none */
    size_t lent_len;     /* what is left of it */
    ka_tls_bytes_t out;  /* records OpenSSL wrote, not taken yet */
} ka_tls_wire_t;

/* A BIO over w for both directions (SSL_set_bio(ssl, b, b)); NULL when out of memory. */
BIO *ka_tls_bio_new(ka_tls_wire_t *w);
/* Appends a copy of n bytes. Returns 0 or KA_ENOMEM. */
int ka_tls_bytes_append(ka_tls_bytes_t *b, const uint8_t *p, size_t n);
/* Moves up to cap bytes out; returns the count. */
size_t ka_tls_bytes_take(ka_tls_bytes_t *b, uint8_t *out, size_t cap);
void ka_tls_bytes_free(ka_tls_bytes_t *b);
/* Copies what is left of the lent input into w->in and forgets the loan. */
int ka_tls_wire_settle(ka_tls_wire_t *w);

#endif
