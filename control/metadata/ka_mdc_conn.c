/*
 * ka_mdc_conn.c: the metadata client's connection (see ka_mdc_conn.h).
 *
 * Reads land in one fixed buffer; over TLS they are ciphertext, decrypted
 * into a second fixed buffer. Either way the plaintext goes through the
 * frame splitter, which says where each response starts and ends, and the
 * response's bytes are copied into its pool buffer. Every request is one
 * uv_write (encrypted first over TLS).
 */
#include "ka_mdc_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_log.h"
#include "ka_proxy.h"

/* The first buffer of a response; it doubles as the bytes arrive. */
#define FIRST_FRAME_BUFFER ((size_t)64 * 1024)
/* Response buffers draw on the pool's reserved share, like admission frames. */
#define POOL_PRIORITY 1

static uint64_t private_pool_clock_ns(void)
{
    return uv_hrtime();
}

/* The splitter's carry buffer holds at most a response header's first bytes. */
static uint8_t *carry_alloc(void *ctx, size_t n)
{
    ka_mdc_conn_t *conn = ctx;
    ka_pbuf_t *pb = ka_pool_alloc(conn->pool, n, n, POOL_PRIORITY, NULL);
    return pb ? pb->data : NULL;
}

static void carry_release(void *ctx, uint8_t *p)
{
    ka_mdc_conn_t *conn = ctx;
    ka_pbuf_unref(conn->pool, ka_pbuf_of(p));
}

void ka_mdc_conn_init(ka_mdc_conn_t *conn, uv_loop_t *loop, const ka_mdc_conn_events_t *events,
                      void *owner)
{
    memset(conn, 0, sizeof(*conn));
    conn->loop = loop;
    conn->events = events;
    conn->owner = owner;
    /* Room for the largest response while its buffer doubles. */
    ka_pool_init(&conn->private_pool, 2 * KA_MDC_MAX_RESPONSE, 2 * KA_MDC_MAX_RESPONSE,
                 private_pool_clock_ns);
    conn->pool = &conn->private_pool;
}

void ka_mdc_conn_set_pool(ka_mdc_conn_t *conn, ka_pool_t *pool)
{
    conn->pool = pool != NULL ? pool : &conn->private_pool;
}

void ka_mdc_conn_release(ka_mdc_conn_t *conn, ka_pbuf_t *buf)
{
    if (buf != NULL)
        ka_pbuf_unref(conn->pool, buf);
}

/* Reports an error once; the owner closes the connection. */
static void broken(ka_mdc_conn_t *conn, const char *step, const char *detail)
{
    if (conn->closing)
        return;
    conn->closing = 1;
    uv_read_stop((uv_stream_t *)&conn->tcp);
    conn->events->error_cb(conn->owner, step, detail);
}

static void drop_frame(ka_mdc_conn_t *conn)
{
    ka_mdc_conn_release(conn, conn->frame);
    conn->frame = NULL;
    conn->frame_len = conn->frame_total = 0;
}

static void write_cb(uv_write_t *req, int status)
{
    ka_mdc_conn_t *conn = req->data;
    free(req);
    if (status < 0 && status != UV_ECANCELED)
        broken(conn, "write", uv_strerror(status));
}

/* Writes the len bytes that follow req (one allocation for both). */
static int submit(ka_mdc_conn_t *conn, uv_write_t *req, size_t len)
{
    uv_buf_t buf = uv_buf_init((char *)(req + 1), (unsigned)len);
    req->data = conn;
    int rc = uv_write(req, (uv_stream_t *)&conn->tcp, &buf, 1, write_cb);
    if (rc < 0)
        free(req);
    return rc;
}

/* Writes the TLS records the engine produced (handshake or requests). */
static int send_records(ka_mdc_conn_t *conn)
{
    size_t n;
    while ((n = ka_transport_pending(conn->tls)) > 0) {
        uv_write_t *req = malloc(sizeof(*req) + n);
        if (req == NULL)
            return KA_ENOMEM;
        int rc = submit(conn, req, ka_transport_take(conn->tls, (uint8_t *)(req + 1), n));
        if (rc < 0)
            return rc;
    }
    return 0;
}

int ka_mdc_conn_send(ka_mdc_conn_t *conn, const uint8_t *frame, size_t len)
{
    if (!conn->open || conn->closing)
        return KA_EINVALID;
    if (conn->tls == NULL) {
        uv_write_t *req = malloc(sizeof(*req) + len);
        if (req == NULL)
            return KA_ENOMEM;
        memcpy(req + 1, frame, len);
        return submit(conn, req, len);
    }
    int rc = ka_transport_write(conn->tls, frame, len);
    return rc < 0 ? rc : send_records(conn);
}

/* A new response: checks its size against the cap and takes its first buffer. */
static int frame_begin(ka_mdc_conn_t *conn, const ka_frame_header_t *hdr)
{
    char detail[160];
    size_t total = 4 + (size_t)(uint32_t)hdr->size;
    /* Up to twice the largest answer this broker gave so far at once: a
     * steady refresh then never copies a growing buffer (a 9 MiB Metadata
     * answer cost a few ms of copying on the loop), and a size the broker
     * has not earned still grows only as the bytes arrive. */
    size_t earned =
        conn->largest_frame * 2 > FIRST_FRAME_BUFFER ? conn->largest_frame * 2 : FIRST_FRAME_BUFFER;
    size_t first = total < earned ? total : earned;

    if (total > KA_MDC_MAX_RESPONSE) {
        snprintf(detail, sizeof(detail), "a response of %zu bytes is above the cap of %zu bytes",
                 total, KA_MDC_MAX_RESPONSE);
        broken(conn, "read", detail);
        return KA_ELIMIT;
    }
    conn->frame = ka_pool_alloc(conn->pool, first, first, POOL_PRIORITY, NULL);
    if (conn->frame == NULL) {
        snprintf(detail, sizeof(detail),
                 "the memory pool has no room for a %zu-byte response (%llu bytes free)", total,
                 (unsigned long long)ka_pool_free_bytes(conn->pool));
        broken(conn, "read", detail);
        return KA_ENOMEM;
    }
    conn->frame_len = 0;
    conn->frame_total = total;
    return 0;
}

/* Copies bytes of the current response into its buffer, doubling it when full. */
static int frame_append(ka_mdc_conn_t *conn, const uint8_t *p, size_t n)
{
    size_t need = conn->frame_len + n;

    if (need > conn->frame_total) {
        broken(conn, "read", "the frame splitter and the response disagree on its size");
        return KA_EINVALID;
    }
    if (need > conn->frame->cap) {
        size_t cap = (size_t)conn->frame->cap * 2;
        if (cap < need)
            cap = need;
        if (cap > conn->frame_total)
            cap = conn->frame_total;
        ka_pbuf_t *bigger = ka_pool_alloc(conn->pool, cap, cap, POOL_PRIORITY, NULL);
        if (bigger == NULL) {
            char detail[160];
            snprintf(detail, sizeof(detail),
                     "the memory pool has no room for a %zu-byte response (%llu bytes free)",
                     conn->frame_total, (unsigned long long)ka_pool_free_bytes(conn->pool));
            broken(conn, "read", detail);
            return KA_ENOMEM;
        }
        memcpy(bigger->data, conn->frame->data, conn->frame_len);
        ka_mdc_conn_release(conn, conn->frame);
        conn->frame = bigger;
    }
    memcpy(conn->frame->data + conn->frame_len, p, n);
    conn->frame_len = need;
    if (need > conn->largest_frame)
        conn->largest_frame = need;
    return 0;
}

static void frame_deliver(ka_mdc_conn_t *conn)
{
    ka_pbuf_t *buf = conn->frame;
    size_t len = conn->frame_total - 4;

    conn->frame = NULL;
    conn->frame_len = conn->frame_total = 0;
    conn->events->frame_cb(conn->owner, buf, buf->data + 4, len);
}

/* Feeds plaintext to the splitter and hands over every whole response. */
static void split(ka_mdc_conn_t *conn, const uint8_t *data, size_t len)
{
    while (!conn->closing) {
        ka_frame_event_t ev;
        long n = ka_frame_feed(&conn->splitter, data, len, &ev);
        int rc = 0;

        if (n < 0) {
            broken(conn, "read", ka_frame_strerror(conn->splitter.error));
            return;
        }
        if (ev.type == KA_FRAME_NOMEM) {
            broken(conn, "read", "the memory pool has no room for a response header");
            return;
        }
        if (ev.type == KA_FRAME_HEADER) {
            rc = frame_begin(conn, &ev.hdr);
            if (rc == 0)
                rc = ev.carried ? frame_append(conn, ev.carried, ev.carried_len)
                                : frame_append(conn, data, (size_t)n);
            if (ev.carried != NULL)
                carry_release(conn, ev.carried);
        } else if (n > 0) {
            rc = frame_append(conn, data, (size_t)n);
        }
        if (rc < 0)
            return;
        data += n;
        len -= (size_t)n;
        if (ev.type == KA_FRAME_END)
            frame_deliver(conn);
        else if (ev.type == KA_FRAME_NONE)
            return;
    }
}

static void became_ready(ka_mdc_conn_t *conn)
{
    conn->ready = 1;
    conn->events->ready_cb(conn->owner);
}

/* The engine's error names the certificate check that failed, if one did. */
static void tls_broken(ka_mdc_conn_t *conn)
{
    char why[256];
    snprintf(why, sizeof(why), "%s", ka_transport_error(conn->tls));
    broken(conn, conn->ready ? "tls" : "tls handshake", why);
}

/* Decrypts what was read and splits the plaintext. */
static void tls_input(ka_mdc_conn_t *conn, size_t nread)
{
    if (ka_transport_feed(conn->tls, conn->input, nread) < 0) {
        broken(conn, "tls", "out of memory");
        return;
    }
    while (!conn->closing) {
        long n = ka_transport_read(conn->tls, conn->plaintext, sizeof(conn->plaintext));
        if (n < 0 || send_records(conn) < 0) {
            tls_broken(conn);
            return;
        }
        if (!conn->ready && ka_transport_established(conn->tls)) {
            became_ready(conn);
            if (conn->closing)
                return;
        }
        if (n == 0)
            return;
        split(conn, conn->plaintext, (size_t)n);
    }
}

/* Every read lands in the one input buffer; split() copies what it keeps at once. */
static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    ka_mdc_conn_t *conn = h->data;
    buf->base = (char *)conn->input;
    buf->len = sizeof(conn->input);
    (void)suggested;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* After the turn that stopped reading: read again from the next poll on. */
static void resume_cb(uv_check_t *h)
{
    ka_mdc_conn_t *conn = h->data;

    uv_check_stop(h);
    if (!conn->closing)
        uv_read_start((uv_stream_t *)&conn->tcp, alloc_cb, read_cb);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ka_mdc_conn_t *conn = s->data;
    const uint8_t *bytes = (const uint8_t *)buf->base; /* conn->input, when nread > 0 */
    if (nread < 0)
        broken(conn, "read",
               nread == UV_EOF ? "broker closed the connection" : uv_strerror((int)nread));
    else if (nread > 0 && !conn->closing && conn->tls != NULL)
        tls_input(conn, (size_t)nread);
    else if (nread > 0 && !conn->closing)
        split(conn, bytes, (size_t)nread);
    /* A full read means more is waiting (a large Metadata answer): one read per
     * loop turn, so that clients' bytes go between, instead of libuv's dozens
     * of reads (megabytes copied) in one turn. */
    if (nread == (ssize_t)sizeof(conn->input) && !conn->closing) {
        uv_read_stop(s);
        uv_check_start(&conn->resume, resume_cb);
    }
}

static void connect_cb(uv_connect_t *req, int status)
{
    ka_mdc_conn_t *conn = req->data;
    if (conn->closing)
        return;
    if (status < 0) {
        broken(conn, "connect", uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&conn->tcp, 1);
    uv_read_start((uv_stream_t *)&conn->tcp, alloc_cb, read_cb);
    if (conn->tls == NULL) {
        became_ready(conn);
        return;
    }
    /* Nothing read yet: this only produces the ClientHello. */
    uint8_t none[1];
    if (ka_transport_read(conn->tls, none, 0) < 0 || send_records(conn) < 0)
        tls_broken(conn);
}

int ka_mdc_conn_open(ka_mdc_conn_t *conn, const struct sockaddr *addr, ka_tls_source_t *tls)
{
    ka_frame_alloc_t alloc = {carry_alloc, carry_release, conn};

    if (conn->open)
        return KA_EINVALID;
    uv_tcp_init(conn->loop, &conn->tcp);
    uv_unref((uv_handle_t *)&conn->tcp); /* never keeps the loop alive: a drain can end */
    conn->tcp.data = conn;
    uv_check_init(conn->loop, &conn->resume);
    uv_unref((uv_handle_t *)&conn->resume);
    conn->resume.data = conn;
    conn->open = 1;
    conn->closing = 0;
    conn->ready = 0;
    ka_frame_init(&conn->splitter, KA_FRAME_RESPONSE, KA_MDC_MAX_RESPONSE, &alloc);
    if (tls != NULL && (conn->tls = ka_transport_new(tls)) == NULL)
        return UV_ENOMEM;
    conn->connect_req.data = conn;
    return uv_tcp_connect(&conn->connect_req, &conn->tcp, addr, connect_cb);
}

static void closed_cb(uv_handle_t *h)
{
    ka_mdc_conn_t *conn = h->data;
    if (--conn->handles_open > 0)
        return; /* the socket and the resume check both close */
    conn->open = 0;
    conn->closing = 0;
    conn->events->closed_cb(conn->owner);
}

void ka_mdc_conn_close(ka_mdc_conn_t *conn)
{
    if (!conn->open || uv_is_closing((uv_handle_t *)&conn->tcp))
        return;
    conn->closing = 1;
    drop_frame(conn);
    ka_frame_free(&conn->splitter);
    ka_transport_free(conn->tls);
    conn->tls = NULL;
    uv_read_stop((uv_stream_t *)&conn->tcp);
    conn->handles_open = 2;
    uv_close((uv_handle_t *)&conn->resume, closed_cb);
    uv_close((uv_handle_t *)&conn->tcp, closed_cb);
}
