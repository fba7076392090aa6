/*
 * ka_leg.c: when one side of a session reads from its socket.
 *
 * A leg reads only while nothing pauses it (ka_leg_pause): its peer's
 * writes backed up, the pool out of memory, a SASL answer pending, a
 * drain, a deferred request, the upstream TLS handshake, --max-inflight.
 * ka_leg_update_reading is the one place that turns those reasons into
 * uv_read_start/uv_read_stop.
 *
 * A pause that clears inside another callback (memory returned to the
 * pool, a SASL answer read on the other leg) does not resume the leg there
 * and then: the leg is queued on the server's resume list, and an idle
 * handle calls its resume_cb on the next loop turn, in FIFO order.
 *
 * alloc_cb also chooses between a read and a splice (ka_splice.c) for the
 * body of a large pass-through frame.
 */
#include "ka_proxy_internal.h"

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    ka_leg_t *leg = handle->data;
    size_t want = KA_POOL_READ_SIZE, min = KA_POOL_READ_MIN;
    (void)suggested;
    if (leg->splice_corked || ka_splice_wanted(leg)) {
        /* libuv reports UV_ENOBUFS without reading; read_cb then splices. */
        leg->splice_due = 1;
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    leg->splice_skip = 0;
    if (leg->splice_hint && ka_frame_at_boundary(&leg->splitter)) {
        /* After a large pass-through frame, read only the next header: if
         * that frame is large too, its body is then spliced almost whole. */
        leg->splice_hint = 0;
        want = min = KA_SPLICE_HEADER_READ;
    }
    ka_pbuf_t *pb = ka_pool_alloc(&leg->session->server->pool, want, min, 0, &leg->waiter);
    /* An empty buffer makes libuv report UV_ENOBUFS: the leg then waits. */
    *buf = pb ? uv_buf_init((char *)pb->data, pb->cap) : uv_buf_init(NULL, 0);
}

static void pool_resume_cb(ka_pool_waiter_t *w)
{
    ka_leg_t *leg = (ka_leg_t *)(void *)((char *)w - offsetof(ka_leg_t, waiter));
    leg->pause &= ~KA_PAUSE_POOL;
    ka_leg_schedule_resume(leg);
}

void ka_leg_init(ka_leg_t *leg, ka_session_t *s, ka_leg_t *peer, int is_client, uv_read_cb read_cb,
                 void (*resume_cb)(ka_leg_t *leg))
{
    leg->session = s;
    leg->peer = peer;
    leg->is_client = is_client;
    leg->read_cb = read_cb;
    leg->resume_cb = resume_cb;
    leg->waiter.resume_cb = pool_resume_cb;
    uv_tcp_init(s->server->loop, &leg->tcp);
    leg->tcp.data = leg;
    leg->open = 1;
}

void ka_leg_wait_memory(ka_leg_t *leg, size_t need, int priority)
{
    ka_server_t *srv = leg->session->server;
    leg->pause |= KA_PAUSE_POOL;
    srv->metrics.pool_waits++;
    ka_log(KA_LOG_DEBUG, "reading paused, memory pool depleted", KA_KI("session", leg->session->id),
           KA_KS("leg", leg->is_client ? "client" : "upstream"), KA_KI("need", need),
           KA_KI("pool_used", ka_pool_used_bytes(&srv->pool)));
    ka_leg_update_reading(leg);
    ka_pool_wait(&srv->pool, &leg->waiter, need, priority);
    if (srv->on_starved != NULL && ka_pool_starved(&srv->pool))
        srv->on_starved(srv);
}

static void resume_idle_cb(uv_idle_t *idle)
{
    ka_server_t *srv = idle->data;
    while (srv->resume_head != NULL) {
        ka_leg_t *leg = srv->resume_head;
        ka_leg_cancel_resume(leg);
        leg->resume_cb(leg);
    }
    uv_idle_stop(idle);
}

void ka_leg_schedule_resume(ka_leg_t *leg)
{
    ka_server_t *srv = leg->session->server;
    if (leg->resume_queued || leg->session->state == KA_SESSION_CLOSING)
        return;
    leg->resume_queued = 1;
    leg->resume_next = NULL;
    leg->resume_prev = srv->resume_tail;
    if (srv->resume_tail)
        srv->resume_tail->resume_next = leg;
    else
        srv->resume_head = leg;
    srv->resume_tail = leg;
    uv_idle_start(&srv->resume_idle, resume_idle_cb);
}

void ka_leg_cancel_resume(ka_leg_t *leg)
{
    ka_server_t *srv = leg->session->server;
    if (!leg->resume_queued)
        return;
    if (leg->resume_prev)
        leg->resume_prev->resume_next = leg->resume_next;
    else
        srv->resume_head = leg->resume_next;
    if (leg->resume_next)
        leg->resume_next->resume_prev = leg->resume_prev;
    else
        srv->resume_tail = leg->resume_prev;
    leg->resume_queued = 0;
}

void ka_leg_update_reading(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    int want = leg->open && !leg->eof && leg->pause == 0 && leg->parked == NULL &&
               (s->state == KA_SESSION_RELAYING || (leg->is_client && s->sni_wait));
    if (want && leg->tls_more) {
        /* Records already read wait in the TLS engine: drain them first. */
        ka_leg_schedule_resume(leg);
        want = 0;
    }
    if (want && !leg->reading) {
        if (uv_read_start((uv_stream_t *)&leg->tcp, alloc_cb, leg->read_cb) == 0)
            leg->reading = 1;
    } else if (!want && leg->reading) {
        uv_read_stop((uv_stream_t *)&leg->tcp);
        leg->reading = 0;
        if (leg->splice_corked) {
            /* No splice will follow for now: the head goes out alone. */
            leg->splice_corked = 0;
            if (s->state != KA_SESSION_CLOSING)
                ka_output_flush(leg->peer);
        }
    }
}
