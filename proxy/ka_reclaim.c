/*
 * ka_reclaim.c: memory pinned by clients that stop reading.
 *
 * A client leg's queued answers hold pool buffers until the client reads
 * them; its upstream leg stops reading at KA_WRITE_HIGH_WATERMARK, so one
 * such client pins about that much. Enough of them pin the whole share of
 * streamed reads, and then every other connection of the sidecar waits for
 * memory that never comes back. So while the pool is starved (a streamed
 * read or a priority caller waits), a timer looks at each client leg with
 * answers queued: one that has written none of them to its socket for
 * --stalled-reader-timeout-ms is closed, with a log line and
 * kadmit_connections_closed_total{reason="stalled_reader"}. A client that
 * reads at all, however slowly, is never closed here, and nothing is closed
 * while memory is not short.
 *
 * Progress is bytes written, not completed writes: libuv's write queue
 * shrinks as a partial write goes out, so a large write that drains slowly
 * still counts as moving. The timer runs only while the pool is starved.
 */
#include "ka_proxy_internal.h"

#define KA_RECLAIM_TICK_MS 100

/* Bytes of the leg's queued writes that have reached its socket. */
static uint64_t written(ka_leg_t *leg)
{
    size_t queued = uv_stream_get_write_queue_size((uv_stream_t *)&leg->tcp);
    return leg->write_queued - queued;
}

/* 1 when the client leg has had answers queued, none of them written, since
 * at least `timeout` ms before now in this starved spell. */
static int reader_stalled(ka_server_t *srv, ka_leg_t *leg, uint64_t now, uint64_t timeout)
{
    uint64_t w = written(leg);
    if (leg->stall_spell != srv->starved_spell || leg->write_pending == 0 ||
        w != leg->stall_written) {
        leg->stall_spell = srv->starved_spell;
        leg->stall_written = w;
        leg->stall_since_ms = now;
        return 0;
    }
    return now - leg->stall_since_ms >= timeout;
}

static void tick_cb(uv_timer_t *t)
{
    ka_server_t *srv = t->data;
    if (!ka_pool_starved(&srv->pool)) {
        uv_timer_stop(t);
        return;
    }
    uint64_t now = uv_now(srv->loop), timeout = srv->cfg->stalled_reader_timeout_ms;
    for (ka_session_t *s = srv->sessions; s; s = s->next) {
        ka_leg_t *c = &s->client;
        if (s->state != KA_SESSION_RELAYING || !c->open || !reader_stalled(srv, c, now, timeout))
            continue;
        srv->metrics.stalled_readers++;
        ka_log(
            KA_LOG_WARN, "client reads none of its answers while others wait for memory, closing",
            KA_KI("session", s->id), KA_KS("peer", s->peer),
            KA_KI("queued_bytes", c->write_pending), KA_KI("stalled_ms", now - c->stall_since_ms),
            KA_KI("pool_used", ka_pool_used_bytes(&srv->pool)),
            KA_KI("pool_waiters", ka_pool_waiters(&srv->pool)));
        ka_session_close(s, KA_LOG_INFO, "stalled reader, closing", NULL);
    }
}

/* A leg started waiting for memory: watch the client legs from now on. */
static void on_starved(ka_server_t *srv)
{
    if (uv_is_active((uv_handle_t *)&srv->reclaim_timer) ||
        uv_is_closing((uv_handle_t *)&srv->reclaim_timer))
        return;
    srv->starved_spell++; /* samples from an earlier spell start over */
    uv_timer_start(&srv->reclaim_timer, tick_cb, KA_RECLAIM_TICK_MS, KA_RECLAIM_TICK_MS);
}

void ka_reclaim_init(ka_server_t *srv)
{
    uv_timer_init(srv->loop, &srv->reclaim_timer);
    srv->reclaim_timer.data = srv;
    uv_unref((uv_handle_t *)&srv->reclaim_timer);
    srv->on_starved = on_starved;
}

void ka_reclaim_close(ka_server_t *srv)
{
    srv->on_starved = NULL;
    if (!uv_is_closing((uv_handle_t *)&srv->reclaim_timer))
        uv_close((uv_handle_t *)&srv->reclaim_timer, NULL);
}
