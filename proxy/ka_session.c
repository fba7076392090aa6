/*
 * ka_session.c: one client connection and its own upstream connection.
 *
 * Life of a session: CONNECTING (the client is accepted but not read; the
 * kernel holds whatever it sends, bounded by the socket buffer, until the
 * upstream answers), RELAYING (both legs read and write through
 * ka_relay.c), CLOSING (all handles closed; freed once the last close
 * callback has fired, as in libuv's socks5 sample).
 *
 * When a leg reads is decided in ka_leg.c. Half-close is forwarded: a FIN
 * from one side is passed on with uv_shutdown once every byte read before
 * it has been written. The layers below (transport, relay, output) report
 * back through the session's events: close, or advance, after which
 * session_advance decides in one place whether a half-close is due and
 * whether the session is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_api_table.h"
#include "ka_gateway.h"
#include "ka_proxy_internal.h"

#define LEG_OF(handle) ((ka_leg_t *)(handle)->data)

static void session_advance(ka_session_t *s);
static void connect_upstream(ka_session_t *s);

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    ka_leg_t *leg = LEG_OF(stream);
    ka_session_t *s = leg->session;
    ka_pool_t *pool = &s->server->pool;
    ka_pbuf_t *pb = buf->base ? ka_pbuf_of((uint8_t *)buf->base) : NULL;

    if (nread > 0) {
        s->last_activity_ms = uv_now(s->server->loop);
        if (leg->tls != NULL)
            ka_leg_tls_input(leg, pb, (size_t)nread);
        else {
            leg->splice_cork_ok = (size_t)nread == buf->len;
            ka_relay_process(leg, pb, 0, (size_t)nread);
            leg->splice_cork_ok = 0;
        }
        ka_pbuf_unref(pool, pb);
        return;
    }
    if (pb != NULL)
        ka_pbuf_unref(pool, pb);
    if (nread == 0 || s->state == KA_SESSION_CLOSING)
        return;
    if (nread == UV_ENOBUFS) {
        if (leg->splice_due) {
            ka_splice_run(leg); /* alloc_cb chose a splice, not a read */
            return;
        }
        ka_leg_wait_memory(leg, KA_POOL_READ_MIN, 0);
        return;
    }
    if (nread == UV_EOF) {
        if (leg->is_client && leg->splitter.mode != KA_FRAME_OPAQUE &&
            !ka_frame_at_boundary(&leg->splitter)) {
            /* The frame can never complete; the broker would wait for it. */
            s->server->metrics.frames_truncated++;
            ka_log(KA_LOG_WARN, "client closed in the middle of a frame, closing",
                   KA_KI("session", s->id), KA_KS("peer", s->peer));
            ka_session_close(s, KA_LOG_DEBUG, "truncated frame", NULL);
            return;
        }
        leg->eof = 1;
        ka_leg_update_reading(leg);
        ka_log(KA_LOG_DEBUG, leg->is_client ? "client closed its side" : "upstream closed its side",
               KA_KI("session", s->id), KA_KI("in_flight", ka_inflight_count(&s->inflight)));
        session_advance(s);
        return;
    }
    ka_session_close(s, KA_LOG_INFO, leg->is_client ? "client read failed" : "upstream read failed",
                     uv_strerror((int)nread));
}

/* A pause cleared (from the server's resume idle handle): go on with the parked bytes. */
static void leg_resume_cb(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    if (ka_relay_resume(leg))
        return;
    if (leg->tls_more && leg->parked == NULL && leg->pause == 0 && s->state != KA_SESSION_CLOSING)
        ka_leg_tls_pump(leg);
    if (s->state == KA_SESSION_CLOSING)
        return;
    ka_leg_update_reading(leg);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    ka_leg_t *leg = req->data;
    ka_session_t *s = leg->session;
    if (s->state == KA_SESSION_CLOSING)
        return;
    if (status < 0) {
        ka_session_close(s, KA_LOG_DEBUG, "shutdown failed", uv_strerror(status));
        return;
    }
    leg->shut_done = 1;
    session_advance(s);
}

/* Passes a FIN on toward dst once every byte read before it has been written. */
static void leg_maybe_shutdown(ka_leg_t *dst)
{
    ka_leg_t *src = dst->peer;
    if (!src->eof || dst->shut || !dst->open || dst->out != NULL || dst->write_pending > 0 ||
        src->parked != NULL || src->deferred != NULL || src->tls_more ||
        dst->session->state != KA_SESSION_RELAYING)
        return;
    dst->shut = 1;
    dst->shutdown_req.data = dst;
    int rc = uv_shutdown(&dst->shutdown_req, (uv_stream_t *)&dst->tcp, shutdown_cb);
    if (rc < 0)
        ka_session_close(dst->session, KA_LOG_DEBUG, "shutdown failed", uv_strerror(rc));
}

static void close_cb(uv_handle_t *handle)
{
    ka_session_t *s = handle->data;
    if (--s->pending_closes > 0)
        return;
    if (s->state == KA_SESSION_CLOSING && s->id != 0)
        s->server->metrics.connections_active--;
    s->closed_cb(s);
    ka_session_auth_free(s);
    free(s);
}

static void close_handle(ka_session_t *s, uv_handle_t *h)
{
    h->data = s;
    s->pending_closes++;
    uv_close(h, close_cb);
}

void ka_session_close(ka_session_t *s, enum ka_log_level level, const char *why, const char *detail)
{
    ka_pool_t *pool = &s->server->pool;
    ka_inflight_entry_t e;

    if (s->state == KA_SESSION_CLOSING)
        return;
    ka_log(level, why, KA_KI("session", s->id), KA_KS("peer", s->peer),
           KA_KS("detail", detail ? detail : ""),
           KA_KI("in_flight", ka_inflight_count(&s->inflight)));
    s->state = KA_SESSION_CLOSING;
    ka_leg_t *legs[2] = {&s->client, &s->upstream};
    for (int i = 0; i < 2; i++) {
        ka_leg_t *leg = legs[i];
        ka_pool_cancel(pool, &leg->waiter);
        ka_leg_cancel_resume(leg);
        ka_relay_release(leg);
        ka_transport_free(leg->tls);
        leg->tls = NULL;
        leg->flush_cb = NULL;
        if (leg->open) {
            leg->open = 0;
            close_handle(s, (uv_handle_t *)&leg->tcp);
        }
    }
    while (ka_inflight_pop(&s->inflight, &e) == 0) {
        if (e.flags & KA_INFLIGHT_LOCAL)
            ka_pbuf_unref(pool, e.answer);
        ka_relay_free_state(s->server, &e);
    }
    ka_inflight_free(&s->inflight);
    close_handle(s, (uv_handle_t *)&s->timer);
}

/* Milliseconds until the client's held request times out, or UINT64_MAX
 * when none is arriving (a whole frame waiting for its handler is not). */
static uint64_t held_left_ms(ka_session_t *s, uint64_t now)
{
    const ka_leg_t *c = &s->client;
    if (c->route != KA_ROUTE_HOLD)
        return UINT64_MAX;
    uint64_t due = c->hold_started_ms + s->server->cfg->held_request_timeout_ms;
    return due > now ? due - now : 0;
}

static void timer_cb(uv_timer_t *timer)
{
    ka_session_t *s = timer->data;
    ka_server_t *srv = s->server;
    uint64_t now = uv_now(srv->loop), next = UINT64_MAX;

    if (s->state == KA_SESSION_CONNECTING && s->sni_wait) {
        ka_log(KA_LOG_WARN, "gateway: no TLS handshake from the client in time, closing",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
        ka_session_close(s, KA_LOG_DEBUG, "closing client", NULL);
        return;
    }
    if (s->state == KA_SESSION_CONNECTING) {
        srv->metrics.upstream_connect_failures++;
        ka_log(KA_LOG_WARN, "upstream connect failed", KA_KI("session", s->id),
               KA_KS("upstream", s->upstream_name), KA_KS("error", "connection timed out"));
        ka_session_close(s, KA_LOG_DEBUG, "closing client", NULL);
        return;
    }
    /* A held request pins pool memory; one that stops arriving gives it
     * back after --held-request-timeout-ms, however the idle timeout is set. */
    uint64_t held = held_left_ms(s, now);
    if (held == 0) {
        const ka_leg_t *c = &s->client;
        srv->metrics.held_timeouts++;
        ka_log(KA_LOG_WARN, "held request did not arrive in time, closing", KA_KI("session", s->id),
               KA_KS("peer", s->peer), KA_KS("api", ka_api_name(c->hold_hdr.api_key)),
               KA_KI("correlation_id", c->hold_hdr.correlation_id),
               KA_KI("received", c->hold ? c->hold_len : c->hold_prefix_len),
               KA_KI("size", c->hold_total),
               KA_KI("timeout_ms", srv->cfg->held_request_timeout_ms));
        ka_session_close(s, KA_LOG_INFO, "held request timed out, closing", NULL);
        return;
    }
    if (srv->cfg->idle_timeout_s > 0) {
        uint64_t idle_ms = (uint64_t)srv->cfg->idle_timeout_s * 1000;
        uint64_t quiet = now - s->last_activity_ms;
        /* A request the broker is still working on is not idleness, unless
         * the client went silent in the middle of sending one (a half-open
         * peer). */
        ka_leg_t *c = &s->client;
        int stalled = c->reading && c->splitter.mode != KA_FRAME_OPAQUE &&
                      !ka_frame_at_boundary(&c->splitter);
        if (ka_inflight_count(&s->inflight) > 0 && !stalled)
            quiet = 0;
        if (quiet >= idle_ms) {
            srv->metrics.idle_timeouts++;
            if (stalled) {
                srv->metrics.frames_stalled++;
                ka_log(KA_LOG_WARN, "client silent in the middle of a frame, closing",
                       KA_KI("session", s->id), KA_KS("peer", s->peer),
                       KA_KI("idle_timeout_s", srv->cfg->idle_timeout_s));
            }
            ka_session_close(s, KA_LOG_INFO, "idle timeout, closing", NULL);
            return;
        }
        next = idle_ms - quiet;
    }
    /* Reads only stamp last_activity_ms; the timer re-arms for the rest. */
    if (held < next)
        next = held;
    if (next != UINT64_MAX)
        uv_timer_start(timer, timer_cb, next, 0);
}

void ka_session_watch_held(ka_session_t *s)
{
    uint64_t t = s->server->cfg->held_request_timeout_ms;
    if (s->state != KA_SESSION_RELAYING)
        return;
    if (!uv_is_active((uv_handle_t *)&s->timer) || uv_timer_get_due_in(&s->timer) > t)
        uv_timer_start(&s->timer, timer_cb, t, 0);
}

static void connect_cb(uv_connect_t *req, int status)
{
    ka_session_t *s = req->data;
    ka_server_t *srv = s->server;

    if (s->state == KA_SESSION_CLOSING)
        return;
    if (status < 0) {
        srv->metrics.upstream_connect_failures++;
        ka_log(KA_LOG_WARN, "upstream connect failed", KA_KI("session", s->id),
               KA_KS("upstream", s->upstream_name), KA_KS("error", uv_strerror(status)));
        ka_session_close(s, KA_LOG_DEBUG, "closing client", NULL);
        return;
    }
    s->state = KA_SESSION_RELAYING;
    uv_tcp_nodelay(&s->upstream.tcp, 1);
    if (s->client.pause & KA_PAUSE_ROUTE) {
        s->client.pause &= ~KA_PAUSE_ROUTE; /* the parked first request can go now */
        ka_leg_schedule_resume(&s->client);
    }
    if (srv->tls_upstream != NULL) {
        if (ka_leg_tls_open(&s->upstream) < 0) {
            ka_session_close(s, KA_LOG_ERROR, "out of memory for TLS", NULL);
            return;
        }
        s->client.pause |= KA_PAUSE_TLS; /* until the broker's handshake is done */
        ka_leg_tls_pump(&s->upstream);   /* sends the ClientHello */
        if (s->state == KA_SESSION_CLOSING)
            return;
    }
    s->last_activity_ms = uv_now(srv->loop);
    uv_timer_stop(&s->timer);
    if (srv->cfg->idle_timeout_s > 0)
        uv_timer_start(&s->timer, timer_cb, (uint64_t)srv->cfg->idle_timeout_s * 1000, 0);
    ka_leg_update_reading(&s->client);
    ka_leg_update_reading(&s->upstream);
    if (s->draining)
        ka_session_drain(s);
}

static const ka_session_events_t session_events = {.close = ka_session_close,
                                                   .advance = session_advance};

static void leg_init(ka_session_t *s, ka_leg_t *leg, ka_leg_t *peer, int is_client)
{
    ka_frame_alloc_t alloc = {ka_relay_carry_alloc, ka_relay_carry_release, leg};
    ka_leg_init(leg, s, peer, is_client, read_cb, leg_resume_cb);
    ka_frame_init(&leg->splitter, is_client ? KA_FRAME_REQUEST : KA_FRAME_RESPONSE,
                  s->server->cfg->max_frame_bytes, &alloc);
}

static void peer_name(uv_tcp_t *tcp, char *out, size_t len)
{
    struct sockaddr_storage ss;
    int n = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?"; /* with ":65535", fits the 64 of s->peer */
    int port = 0;
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &n) == 0) {
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        }
    }
    snprintf(out, len, "%s:%d", host, port);
}

ka_session_t *ka_session_new(ka_server_t *srv, ka_session_closed_cb closed_cb)
{
    ka_session_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        ka_log(KA_LOG_ERROR, "out of memory for a session");
        return NULL;
    }
    s->server = srv;
    s->target_node = KA_GW_ANY_BROKER;
    s->events = &session_events;
    s->closed_cb = closed_cb;
    ka_inflight_init(&s->inflight);
    leg_init(s, &s->client, &s->upstream, 1);
    leg_init(s, &s->upstream, &s->client, 0);
    uv_timer_init(srv->loop, &s->timer);
    s->timer.data = s;
    return s;
}

int ka_session_accept(ka_session_t *s, uv_stream_t *listener)
{
    ka_server_t *srv = s->server;
    int rc = uv_accept(listener, (uv_stream_t *)&s->client.tcp);
    if (rc < 0) {
        ka_log(KA_LOG_WARN, "accept failed", KA_KS("error", uv_strerror(rc)));
        ka_session_close(s, KA_LOG_DEBUG, "accept failed", NULL);
        return rc;
    }
    srv->metrics.connections_accepted++;
    peer_name(&s->client.tcp, s->peer, sizeof(s->peer));
    if (srv->metrics.connections_active >= srv->cfg->max_connections) {
        srv->metrics.connections_rejected++;
        ka_log(KA_LOG_WARN, "connection limit reached, closing new connection",
               KA_KS("peer", s->peer), KA_KI("max_connections", srv->cfg->max_connections));
        ka_session_close(s, KA_LOG_DEBUG, "rejected", NULL);
        return 0;
    }
    s->id = ++srv->next_session_id;
    srv->metrics.connections_active++;
    if (ka_leg_tls_open(&s->client) < 0) {
        ka_session_close(s, KA_LOG_ERROR, "out of memory for TLS", NULL);
        return 0;
    }
    uv_tcp_nodelay(&s->client.tcp, 1);
    uv_tcp_nodelay(&s->upstream.tcp, 1);
    ka_log(KA_LOG_DEBUG, "connection accepted", KA_KI("session", s->id), KA_KS("peer", s->peer));
    if (srv->gateway != NULL && srv->cfg->gw_sni_domain[0] && s->client.tls != NULL) {
        /* SNI mode: the client's TLS hello names the broker; read it first. */
        s->sni_wait = 1;
        ka_leg_update_reading(&s->client);
        uv_timer_start(&s->timer, timer_cb, KA_CONNECT_TIMEOUT_MS, 0);
        return 0;
    }
    connect_upstream(s);
    return 0;
}

void ka_session_sni_routed(ka_session_t *s)
{
    const char *name = ka_transport_sni(s->client.tls);
    s->sni_wait = 0;
    s->target_node = ka_gateway_sni_target(s->server, name);
    ka_log(KA_LOG_DEBUG, "gateway: routed by SNI", KA_KI("session", s->id),
           KA_KS("sni", name ? name : ""), KA_KI("broker", s->target_node));
    uv_timer_stop(&s->timer);
    connect_upstream(s);
}

/* Connects the upstream leg to the session's broker (ka_session_accept, or
 * once SNI has named it); a failure closes the session. */
static void connect_upstream(ka_session_t *s)
{
    ka_server_t *srv = s->server;
    int rc;
    if (srv->gateway == NULL) {
        s->target_addr = srv->upstream_addr;
        snprintf(s->upstream_name, sizeof(s->upstream_name), "%s", srv->upstream_name);
    } else if (ka_gateway_route(s) < 0) {
        srv->metrics.gw_route_failures++;
        ka_log(KA_LOG_WARN, "gateway: no address known for the broker, closing",
               KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KI("broker", s->target_node));
        ka_session_close(s, KA_LOG_DEBUG, "closing client", NULL);
        return;
    }
    s->connect_req.data = s;
    rc = uv_tcp_connect(&s->connect_req, &s->upstream.tcp, (const struct sockaddr *)&s->target_addr,
                        connect_cb);
    if (rc < 0) {
        srv->metrics.upstream_connect_failures++;
        ka_log(KA_LOG_WARN, "upstream connect failed", KA_KI("session", s->id),
               KA_KS("upstream", s->upstream_name), KA_KS("error", uv_strerror(rc)));
        ka_session_close(s, KA_LOG_DEBUG, "closing client", NULL);
        return;
    }
    uv_timer_start(&s->timer, timer_cb, KA_CONNECT_TIMEOUT_MS, 0);
}

void ka_session_drain(ka_session_t *s)
{
    s->draining = 1;
    if (s->state == KA_SESSION_CONNECTING) {
        ka_session_close(s, KA_LOG_DEBUG, "closed while connecting: shutting down", NULL);
        return;
    }
    if (s->state != KA_SESSION_RELAYING)
        return;
    /* Stop at a frame boundary; a frame half read finishes first and the
     * relay pauses the client after it. */
    if (ka_frame_at_boundary(&s->client.splitter) && s->client.route == KA_ROUTE_PASS) {
        s->client.pause |= KA_PAUSE_DRAIN;
        ka_leg_update_reading(&s->client);
    }
    session_advance(s);
}

/*
 * Every state change that follows an event, in one place: a FIN passed on
 * toward either side once its bytes are written, and the session closed
 * when both sides are done, when the upstream's close has been passed on,
 * or when a drain has nothing left in flight. Nothing changes while the
 * relay is inside a read (processing): it advances when it is done.
 */
static void session_advance(ka_session_t *s)
{
    if (s->state != KA_SESSION_RELAYING || s->processing)
        return;
    leg_maybe_shutdown(&s->upstream);
    leg_maybe_shutdown(&s->client);
    if (s->state != KA_SESSION_RELAYING)
        return;
    ka_leg_t *c = &s->client, *u = &s->upstream;
    int flushed = c->out == NULL && u->out == NULL && c->write_pending == 0 &&
                  u->write_pending == 0 && c->parked == NULL && u->parked == NULL &&
                  c->deferred == NULL && u->deferred == NULL;
    if (c->eof && u->eof && flushed) {
        ka_session_close(s, KA_LOG_DEBUG, "connection closed by both sides", NULL);
        return;
    }
    if (u->eof && c->shut_done && flushed) {
        ka_session_close(s, KA_LOG_DEBUG, "upstream closed the connection", NULL);
        return;
    }
    if (s->draining && (c->pause & KA_PAUSE_DRAIN || c->eof) && c->deferred == NULL &&
        ka_inflight_count(&s->inflight) == 0 && c->out == NULL && c->write_pending == 0 &&
        u->out == NULL && u->write_pending == 0 && u->route == KA_ROUTE_PASS &&
        ka_frame_at_boundary(&u->splitter))
        ka_session_close(s, KA_LOG_DEBUG, "drained", NULL);
}
