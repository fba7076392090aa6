/*
 * ka_output.c: writes toward one leg, assembled from slices of pool
 * buffers.
 *
 * A leg's pending output is one write request of up to KA_WREQ_BUFS
 * slices; consecutive bytes of the same read buffer merge into one slice,
 * so a read full of small pass-through frames becomes a single uv_write
 * with a single slice. Each slice holds a reference on its buffer, dropped
 * in the write callback, which also lifts backpressure on the other leg.
 * Write requests are recycled through a per-server cache.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ka_proxy_internal.h"

static ka_wreq_t *wreq_get(ka_server_t *srv)
{
    ka_wreq_t *w = srv->wreq_cache;
    if (w != NULL) {
        srv->wreq_cache = w->next_free;
        srv->wreq_cached--;
    } else if ((w = malloc(sizeof(*w))) == NULL) {
        return NULL;
    }
    w->nbufs = 0;
    w->bytes = 0;
    return w;
}

static void wreq_put(ka_server_t *srv, ka_wreq_t *w)
{
    if (srv->wreq_cached >= KA_WREQ_CACHE) {
        free(w);
        return;
    }
    w->next_free = srv->wreq_cache;
    srv->wreq_cache = w;
    srv->wreq_cached++;
}

void ka_output_release(ka_server_t *srv, ka_wreq_t *w)
{
    for (uint32_t i = 0; i < w->nbufs; i++)
        ka_pbuf_unref(&srv->pool, w->pbufs[i]);
    wreq_put(srv, w);
}

static void write_cb(uv_write_t *req, int status)
{
    ka_wreq_t *w = (ka_wreq_t *)(void *)req;
    ka_leg_t *leg = w->leg;
    ka_session_t *s = leg->session;

    leg->write_pending -= w->bytes;
    ka_output_release(s->server, w);
    if (s->state == KA_SESSION_CLOSING)
        return;
    if (status < 0) {
        s->events->close(s, KA_LOG_INFO,
                         leg->is_client ? "write to client failed" : "write to upstream failed",
                         uv_strerror(status));
        return;
    }
    ka_leg_t *src = leg->peer;
    if ((src->pause & KA_PAUSE_BACKPRESSURE) && leg->write_pending <= KA_WRITE_LOW_WATERMARK) {
        src->pause &= ~KA_PAUSE_BACKPRESSURE;
        ka_leg_update_reading(src);
    }
    s->events->advance(s);
}

/* Hands w to libuv; returns nonzero when the session closed instead. */
static int submit(ka_leg_t *dst, ka_wreq_t *w)
{
    ka_session_t *s = dst->session;
    w->leg = dst;
    int rc = uv_write(&w->req, (uv_stream_t *)&dst->tcp, w->bufs, w->nbufs, write_cb);
    if (rc < 0) {
        ka_output_release(s->server, w);
        s->events->close(s, KA_LOG_INFO, "write failed", uv_strerror(rc));
        return 1;
    }
    dst->write_pending += w->bytes;
    dst->write_queued += w->bytes;
    return 0;
}

void ka_output_send_raw(ka_leg_t *dst, ka_pbuf_t *pb, size_t len)
{
    ka_session_t *s = dst->session;
    ka_wreq_t *w;
    if (len == 0 || !dst->open || s->state == KA_SESSION_CLOSING)
        return;
    if ((w = wreq_get(s->server)) == NULL) {
        s->events->close(s, KA_LOG_ERROR, "out of memory for a write request", NULL);
        return;
    }
    ka_pbuf_ref(pb);
    w->pbufs[0] = pb;
    w->bufs[0] = uv_buf_init((char *)pb->data, (unsigned)len);
    w->nbufs = 1;
    w->bytes = len;
    submit(dst, w);
}

/*
 * Writes what the socket takes at once and queues only the rest. uv_try_write
 * writes nothing while earlier writes are queued, so order is kept; a write that
 * completes here costs no write request, no callback and no change to the poll
 * set. Returns nonzero when the session closed instead.
 */
static int submit_now(ka_leg_t *dst, ka_wreq_t *w, int more)
{
    ka_session_t *s = dst->session;
    int n;
    if (more) {
        /* uv_buf_t is struct iovec's layout on Unix (libuv says so). */
        uv_os_fd_t fd;
        struct msghdr msg = {.msg_iov = (struct iovec *)(void *)w->bufs, .msg_iovlen = w->nbufs};
        ssize_t r = -1;
        if (dst->write_pending == 0 && uv_fileno((uv_handle_t *)&dst->tcp, &fd) == 0)
            r = sendmsg(fd, &msg, MSG_MORE | MSG_DONTWAIT | MSG_NOSIGNAL);
        n = r > 0 ? (int)r : 0;
    } else {
        n = uv_try_write((uv_stream_t *)&dst->tcp, w->bufs, w->nbufs);
    }
    if (n <= 0) /* UV_EAGAIN, or an error uv_write reports the usual way */
        return submit(dst, w);
    size_t done = (size_t)n;
    if (done == w->bytes) {
        ka_output_release(s->server, w);
        /* What write_cb would do. Not while the relay is still adding output
         * (the session checks): the relay advances itself when it is done. */
        s->events->advance(s);
        return 0;
    }
    uint32_t i = 0;
    while (done >= w->bufs[i].len) { /* done < w->bytes: stops inside the slices */
        done -= w->bufs[i].len;
        ka_pbuf_unref(&s->server->pool, w->pbufs[i]);
        i++;
    }
    w->bufs[i].base += done;
    w->bufs[i].len -= done;
    memmove(w->bufs, w->bufs + i, (w->nbufs - i) * sizeof(w->bufs[0]));
    memmove(w->pbufs, w->pbufs + i, (w->nbufs - i) * sizeof(w->pbufs[0]));
    w->nbufs -= i;
    w->bytes -= (size_t)n;
    return submit(dst, w);
}

static int flush(ka_leg_t *dst, int more)
{
    ka_wreq_t *w = dst->out;
    ka_session_t *s = dst->session;
    if (w == NULL)
        return 0;
    if (dst->flush_cb != NULL) {
        dst->flush_cb(dst);
        return 0;
    }
    dst->out = NULL;
    size_t bytes = w->bytes;
    if (submit_now(dst, w, more))
        return -1;
    if (dst->is_client)
        s->server->metrics.bytes_broker_to_client += bytes;
    else
        s->server->metrics.bytes_client_to_broker += bytes;
    return 0;
}

void ka_output_flush(ka_leg_t *dst)
{
    (void)flush(dst, 0);
}

int ka_output_flush_more(ka_leg_t *dst)
{
    return flush(dst, 1) == 0 && dst->session->state != KA_SESSION_CLOSING &&
           dst->write_pending == 0;
}

/* Queues bytes [a, b) of pb for writing to dst, merging with the last slice. */
void ka_output_add(ka_leg_t *dst, ka_pbuf_t *pb, size_t a, size_t b)
{
    ka_session_t *s = dst->session;
    if (b <= a || !dst->open || dst->shut || s->state == KA_SESSION_CLOSING)
        return;
    ka_wreq_t *w = dst->out;
    if (w != NULL && w->nbufs > 0) {
        uv_buf_t *last = &w->bufs[w->nbufs - 1];
        if (w->pbufs[w->nbufs - 1] == pb && (uint8_t *)last->base + last->len == pb->data + a) {
            last->len += b - a;
            w->bytes += b - a;
            return;
        }
    }
    if (w != NULL && w->nbufs == KA_WREQ_BUFS) {
        ka_output_flush(dst);
        w = NULL;
    }
    if (w == NULL) {
        if ((w = wreq_get(s->server)) == NULL) {
            s->events->close(s, KA_LOG_ERROR, "out of memory for a write request", NULL);
            return;
        }
        dst->out = w;
    }
    ka_pbuf_ref(pb);
    w->pbufs[w->nbufs] = pb;
    w->bufs[w->nbufs] = uv_buf_init((char *)pb->data + a, (unsigned)(b - a));
    w->nbufs++;
    w->bytes += b - a;
}

void ka_output_cache_free(ka_server_t *srv)
{
    while (srv->wreq_cache) {
        ka_wreq_t *w = srv->wreq_cache;
        srv->wreq_cache = w->next_free;
        free(w);
    }
    srv->wreq_cached = 0;
}
