/*
 * ka_splice.c: the bodies of large pass-through frames go socket to socket
 * through a pipe with splice(2), never through a user buffer.
 *
 * When: both legs are plaintext (no TLS transport), the leg is reading a
 * frame the relay passes through unchanged (route PASS: not held for a
 * handler, not a response buffered for a rewrite, not a SASL token kadmit
 * reads), its header was read and forwarded, at least KA_SPLICE_MIN body
 * bytes are still to come, and nothing is queued toward the destination,
 * so no byte is overtaken. alloc_cb (ka_leg.c) then hands libuv an empty
 * buffer, libuv reports UV_ENOBUFS without reading, and the read callback
 * calls ka_splice_run.
 *
 * ka_splice_run moves a read buffer's worth at a time, source -> pipe, then
 * pipe -> destination, until the body ends, the source has nothing more, or
 * KA_SPLICE_ROUNDS. What the destination does not take at once (its socket
 * buffer is full) is read back from the pipe into a pool buffer taken for
 * the purpose before the splice, and queued as a normal write, behind which
 * the usual backpressure holds. So memory is bounded as for a normal read
 * (one pool buffer; none to be had, the leg waits as a read would), the
 * pipe is empty whenever the loop is outside this file, and one pipe,
 * made on first use, serves every session: an idle or small-frame
 * connection costs no file descriptor and no byte.
 *
 * The relay then counts the bytes as the frame's body (ka_frame_skip); when
 * they were its last, it goes on as after any frame. When they were its
 * last and the last splice took all it asked for (the source likely has
 * more), the next header is read there and then (a small read into a pool
 * buffer, through ka_relay_process, as read_cb would), and if that frame's
 * body is to be spliced too, it is: up to KA_SPLICE_CHAIN frames per call,
 * saving a loop turn per frame. That read happens only when the leg could
 * read anyway (reading, not paused, nothing parked), so backpressure, the
 * pool's bound and the relay's routing and in-flight tracking are those of
 * any read. A kernel that refuses
 * (no pipe, a socket that cannot splice) turns splicing off for the process
 * or the leg, once, at debug level; --splice off never tries.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ka_proxy_internal.h"

/* Chunks per call, so one session's large frame does not hold up the loop. */
#define KA_SPLICE_ROUNDS 16
/* Frames spliced per call, their headers read in between (ka_splice_run). */
#define KA_SPLICE_CHAIN 4
/* The pipe's capacity: more slots than a chunk's pages, whatever the skb layout. */
#define KA_SPLICE_PIPE_SIZE (256 * 1024)

static int leg_fd(ka_leg_t *leg)
{
    uv_os_fd_t fd;
    return uv_fileno((uv_handle_t *)&leg->tcp, &fd) == 0 ? (int)fd : -1;
}

int ka_splice_possible(const ka_leg_t *leg)
{
    return leg->session->server->splice_state >= 0 && !leg->splice_off && leg->tls == NULL &&
           leg->peer->tls == NULL && leg->peer->flush_cb == NULL;
}

int ka_splice_wanted(ka_leg_t *leg)
{
    const ka_leg_t *dst = leg->peer;
    const ka_splitter_t *sp = &leg->splitter;
    return !leg->splice_skip && ka_splice_possible(leg) && leg->route == KA_ROUTE_PASS &&
           sp->state == KA_FRAME_S_BODY && sp->body_left >= KA_SPLICE_MIN &&
           leg->session->state == KA_SESSION_RELAYING && dst->open && !dst->shut &&
           (dst->out == NULL || leg->splice_corked) && dst->write_pending == 0;
}

/* Pushes what MSG_MORE held back when no body follows it after all. */
static void uncork(ka_leg_t *dst)
{
    int fd = leg_fd(dst), on = 1;
    if (fd >= 0)
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

static int refused(int e)
{
    return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF;
}

/* The process's pipe: 0, or -1 when this splice must not run. */
static int open_pipe(ka_server_t *srv)
{
    if (srv->splice_state > 0)
        return 0;
    if (srv->splice_state < 0)
        return -1;
    if (pipe2(srv->splice_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        int e = errno;
        if (e == EMFILE || e == ENFILE)
            return -1; /* out of descriptors for now: read this chunk, try again later */
        srv->splice_state = -1;
        srv->metrics.splice_fallbacks++;
        ka_log(KA_LOG_DEBUG, "splice: no pipe, large frames are read and written",
               KA_KS("error", strerror(e)));
        return -1;
    }
    /* Best effort: a smaller pipe only moves less per call. */
    (void)fcntl(srv->splice_pipe[1], F_SETPIPE_SZ, KA_SPLICE_PIPE_SIZE);
    srv->splice_state = 1;
    return 0;
}

void ka_splice_close(ka_server_t *srv)
{
    if (srv->splice_state > 0) {
        close(srv->splice_pipe[0]);
        close(srv->splice_pipe[1]);
        srv->splice_state = 0;
    }
}

/* Reads what the destination did not take back out of the pipe; 0 or -1. */
static int drain_pipe(ka_server_t *srv, uint8_t *to, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(srv->splice_pipe[0], to + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            return -1;
    }
    return 0;
}

/* One frame's body as far as it goes now. 1 when it was spliced to its end
 * and the last splice took all it asked for: the source likely has more. */
static int splice_once(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    ka_server_t *srv = s->server;
    ka_leg_t *dst = leg->peer;
    int wanted = ka_splice_wanted(leg), corked = leg->splice_corked;
    leg->splice_due = 0;
    leg->splice_corked = 0;
    if (!wanted) {
        if (corked)
            ka_output_flush(dst);
        return 0;
    }
    /* The frame's head first, held back for its body (MSG_MORE); if some
     * of it must wait for the socket, so does the body: a plain read next. */
    if (corked && !ka_output_flush_more(dst))
        return 0;
    ka_pbuf_t *pb = ka_pool_alloc(&srv->pool, KA_POOL_READ_SIZE, KA_POOL_READ_MIN, 0, &leg->waiter);
    if (pb == NULL) {
        if (corked)
            uncork(dst);
        ka_leg_wait_memory(leg, KA_POOL_READ_MIN, 0);
        return 0;
    }
    if (open_pipe(srv) < 0) {
        if (corked)
            uncork(dst);
        leg->splice_skip = 1; /* the next read is a plain one */
        ka_pbuf_unref(&srv->pool, pb);
        return 0;
    }
    int in_fd = leg_fd(leg), out_fd = leg_fd(dst), no = 0;
    uint64_t moved = 0;
    size_t residue = 0;
    int full = 0;
    for (int round = 0; round < KA_SPLICE_ROUNDS && residue == 0; round++) {
        uint64_t left = leg->splitter.body_left - moved;
        if (left == 0)
            break;
        size_t want = left < pb->cap ? (size_t)left : pb->cap;
        ssize_t in =
            splice(in_fd, NULL, srv->splice_pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (in <= 0) {
            /* EOF, EAGAIN or an error: a plain read sees it the usual way. */
            no = in < 0 && refused(errno);
            break;
        }
        size_t out = 0;
        while (out < (size_t)in) {
            ssize_t w = splice(srv->splice_pipe[0], NULL, out_fd, NULL, (size_t)in - out,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (w > 0) {
                out += (size_t)w;
                continue;
            }
            if (w < 0 && errno == EINTR)
                continue;
            /* EAGAIN (the socket buffer is full), or an error the queued write reports. */
            no = w < 0 && refused(errno);
            break;
        }
        moved += (uint64_t)in;
        residue = (size_t)in - out;
        full = (size_t)in == want;
        if ((size_t)in < want)
            break; /* the source had no more */
    }
    if (residue > 0)
        srv->metrics.splice_short_writes++;
    if (residue > 0 && drain_pipe(srv, pb->data, residue) < 0) {
        /* Cannot happen (the pipe holds exactly these bytes); if it does, the
         * stream is broken and the pipe may hold stale bytes: never again. */
        ka_splice_close(srv);
        srv->splice_state = -1;
        ka_pbuf_unref(&srv->pool, pb);
        s->events->close(s, KA_LOG_ERROR, "splice: bytes could not be read back from the pipe",
                         strerror(errno));
        return 0;
    }
    if (no) {
        leg->splice_off = 1;
        srv->metrics.splice_fallbacks++;
        ka_log(KA_LOG_DEBUG, "splice: refused on this connection, its frames are read and written",
               KA_KI("session", s->id), KA_KS("leg", leg->is_client ? "client" : "upstream"));
    }
    if (moved == 0) {
        if (corked)
            uncork(dst);
        leg->splice_skip = 1;
        ka_pbuf_unref(&srv->pool, pb);
        return 0;
    }
    uint64_t direct = moved - residue;
    if (dst->is_client) {
        srv->metrics.bytes_broker_to_client += direct;
        srv->metrics.spliced_broker_to_client += direct;
    } else {
        srv->metrics.bytes_client_to_broker += direct;
        srv->metrics.spliced_client_to_broker += direct;
    }
    s->last_activity_ms = uv_now(srv->loop);
    ka_relay_spliced(leg, pb, residue, moved);
    ka_pbuf_unref(&srv->pool, pb);
    return full && residue == 0 && ka_frame_at_boundary(&leg->splitter);
}

/* After a spliced body, the next frame's header read here and now, as
 * alloc_cb and read_cb would have on the next loop turn (a small read into
 * a pool buffer, through the relay). 1 when bytes were read; 0 when the leg
 * must not read now, there is no memory, or the socket has nothing (EOF
 * included, which stays for libuv to report). */
static int read_next(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    ka_server_t *srv = s->server;
    if (s->state != KA_SESSION_RELAYING || !leg->open || leg->eof || !leg->reading ||
        leg->pause != 0 || leg->parked != NULL || leg->splice_corked || !leg->splice_hint ||
        !ka_frame_at_boundary(&leg->splitter))
        return 0;
    int fd = leg_fd(leg);
    ka_pbuf_t *pb = fd < 0 ? NULL
                           : ka_pool_alloc(&srv->pool, KA_SPLICE_HEADER_READ, KA_SPLICE_HEADER_READ,
                                           0, &leg->waiter);
    if (pb == NULL)
        return 0; /* alloc_cb tries again, and waits for memory the usual way */
    ssize_t n;
    do
        n = recv(fd, pb->data, pb->cap, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        int e = errno;
        ka_pbuf_unref(&srv->pool, pb);
        if (n < 0 && e != EAGAIN && e != EWOULDBLOCK)
            s->events->close(s, KA_LOG_INFO,
                             leg->is_client ? "client read failed" : "upstream read failed",
                             strerror(e));
        return 0;
    }
    leg->splice_hint = 0;
    leg->splice_skip = 0;
    srv->metrics.splice_chained_reads++;
    s->last_activity_ms = uv_now(srv->loop);
    leg->splice_cork_ok = (size_t)n == pb->cap;
    ka_relay_process(leg, pb, 0, (size_t)n);
    leg->splice_cork_ok = 0;
    ka_pbuf_unref(&srv->pool, pb);
    return 1;
}

void ka_splice_run(ka_leg_t *leg)
{
    /* While bodies splice to their end with more behind them, the next
     * header is read at once rather than on the next loop turn (one
     * epoll_wait and one libuv pass less per frame). Bounded, so that one
     * connection does not hold the loop; the bound is checked before a
     * read, so a head corked for its body is always followed by its splice. */
    for (int frames = 1; splice_once(leg) && frames < KA_SPLICE_CHAIN; frames++)
        if (!read_next(leg) || !leg->splice_corked)
            break;
}
