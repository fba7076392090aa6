/*
 * ka_mdc_conn.h: the metadata client's connection to its broker: TCP, the
 * optional TLS engine, and the split of the byte stream into responses.
 *
 * Framing reuses the data path's frame splitter (ka_frame.h) in response
 * mode, and each response is assembled in a buffer of the memory pool
 * (ka_pool.h), so kadmit's own answers count against --buffer-memory like
 * every other buffered byte. The buffer grows as the bytes arrive (never by
 * the declared size up front) and draws on the pool's reserved share, as
 * the admission frames it serves do. A response declared larger than
 * KA_MDC_MAX_RESPONSE, or one the pool has no room for, is an error: the
 * owner hears it through error_cb and closes the connection.
 *
 * The owner sends whole request frames and receives whole response frames;
 * it never sees TLS records. One owner, one connection at a time: after
 * ka_mdc_conn_close, closed_cb says when it may be opened again.
 */
#ifndef KA_MDC_CONN_H
#define KA_MDC_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "ka_frame.h"
#include "ka_pool.h"
#include "ka_transport.h"

/* The largest response accepted: a Metadata answer for a few hundred
 * thousand partitions is a few tens of MiB. */
#define KA_MDC_MAX_RESPONSE ((size_t)256 * 1024 * 1024)

typedef struct ka_mdc_conn ka_mdc_conn_t;

typedef struct ka_mdc_conn_events {
    /* Connected and, over TLS, the handshake done: requests may be sent. */
    void (*ready_cb)(void *owner);
    /* One whole response: body is the frame after its size prefix, inside
     * buf. The callee owns the reference on buf (ka_mdc_conn_release). */
    void (*frame_cb)(void *owner, ka_pbuf_t *buf, const uint8_t *body, size_t len);
    /* The connection broke (step: "connect", "read", "tls", ...); the owner
     * closes it. No more frames arrive once an error has been reported. */
    void (*error_cb)(void *owner, const char *step, const char *detail);
    /* The socket is closed; the connection may be opened again. */
    void (*closed_cb)(void *owner);
} ka_mdc_conn_events_t;

struct ka_mdc_conn {
    uv_loop_t *loop;
    const ka_mdc_conn_events_t *events;
    void *owner;
    ka_pool_t *pool;        /* where response buffers are charged */
    ka_pool_t private_pool; /* the pool until the owner gives the server's */

    uv_tcp_t tcp;
    uv_check_t resume; /* restarts reading a turn after a full read */
    int handles_open;  /* while closing: handles not closed yet */
    uv_connect_t connect_req;
    int open;    /* the TCP handle exists (until closed_cb) */
    int closing; /* closed or broken: no more events but closed_cb */
    int ready;   /* ready_cb has been called on this connection */

    ka_transport_t *tls; /* this connection's TLS engine, or NULL for plaintext */
    ka_splitter_t splitter;
    ka_pbuf_t *frame;     /* the response being assembled, size prefix included */
    size_t frame_len;     /* bytes of it so far */
    size_t frame_total;   /* 4 + its declared size */
    size_t largest_frame; /* the largest response seen, any connection: sizes the first buffer */

    uint8_t input[64 * 1024];     /* one read from the socket (ciphertext over TLS) */
    uint8_t plaintext[16 * 1024]; /* decrypted bytes, TLS only */
};

void ka_mdc_conn_init(ka_mdc_conn_t *conn, uv_loop_t *loop, const ka_mdc_conn_events_t *events,
                      void *owner);
/* Charges response buffers to pool from the next response on. */
void ka_mdc_conn_set_pool(ka_mdc_conn_t *conn, ka_pool_t *pool);
/*
 * Connects to addr, over TLS from tls when it is not NULL. Returns 0 (then
 * ready_cb or error_cb follows) or a negative libuv error, after which the
 * owner closes the connection.
 */
int ka_mdc_conn_open(ka_mdc_conn_t *conn, const struct sockaddr *addr, ka_tls_source_t *tls);
/* Writes one whole request frame (size prefix included). 0 or a negative error. */
int ka_mdc_conn_send(ka_mdc_conn_t *conn, const uint8_t *frame, size_t len);
/* Closes the socket; closed_cb follows. A no-op when not open or already closing. */
void ka_mdc_conn_close(ka_mdc_conn_t *conn);
/* Drops a response buffer handed over by frame_cb. */
void ka_mdc_conn_release(ka_mdc_conn_t *conn, ka_pbuf_t *buf);

static inline int ka_mdc_conn_is_open(const ka_mdc_conn_t *conn)
{
    return conn->open;
}

static inline int ka_mdc_conn_is_tls(const ka_mdc_conn_t *conn)
{
    return conn->tls != NULL;
}

#endif
