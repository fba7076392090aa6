/*
 * ka_listener.c: the server: upstream resolution, the client listener,
 * accept pacing, signals and the drain on shutdown.
 *
 * Accepts are capped per loop turn: past the cap the connection callback
 * leaves the pending connection in the kernel; libuv then stops watching
 * the listener until uv_accept is called, which an idle handle does on the
 * next turn. Over --max-connections, connections are accepted and closed
 * at once with a log line, so clients fail fast instead of timing out.
 *
 * SIGTERM/SIGINT start a drain: the listener closes, every session stops
 * reading new requests at a frame boundary and closes once its in-flight
 * queue is empty and its writes are flushed. After --drain-timeout the rest
 * are cut. A second signal cuts at once.
 */
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ka_gateway.h"
#include "ka_proxy_internal.h"

static uint64_t now_ns(void)
{
    return uv_hrtime();
}

static int resolve(const ka_hostport_t *hp, int passive, struct sockaddr_storage *out,
                   const char *flag, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", hp->port);
    if (passive)
        hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(hp->host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(err, errlen, "%s %s:%u: cannot resolve: %s", flag, hp->host, hp->port,
                 rc != 0 ? gai_strerror(rc) : "no address");
        return KA_EINVALID;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static void drain_finish_if_done(ka_server_t *srv);
static void drain_timer_cb(uv_timer_t *t);
static void accept_idle_cb(uv_idle_t *idle);

static void signal_cb(uv_signal_t *h, int signum)
{
    ka_server_t *srv = h->data;
    ka_log(KA_LOG_INFO,
           srv->draining ? "second signal, cutting connections now"
                         : "signal received, draining connections",
           KA_KS("signal", signum == SIGTERM ? "SIGTERM" : "SIGINT"),
           KA_KI("connections", srv->metrics.connections_active));
    if (srv->draining) {
        uv_timer_stop(&srv->drain_timer);
        drain_timer_cb(&srv->drain_timer);
        return;
    }
    ka_server_drain(srv);
}

static void drain_timer_cb(uv_timer_t *t)
{
    ka_server_t *srv = t->data;
    long cut = 0;
    for (ka_session_t *s = srv->sessions; s; s = s->next) {
        if (s->state != KA_SESSION_CLOSING) {
            cut++;
            ka_session_close(s, KA_LOG_DEBUG, "cut by the drain timeout", NULL);
        }
    }
    srv->metrics.connections_cut += (uint64_t)cut;
    ka_log(KA_LOG_WARN, "drain timeout, connections cut", KA_KI("cut", cut),
           KA_KI("drain_timeout_s", srv->cfg->drain_timeout_s));
}

/* The session's handles have all closed: it leaves the list, and may have been the last. */
static void session_closed_cb(ka_session_t *s)
{
    ka_server_t *srv = s->server;
    if (s->prev)
        s->prev->next = s->next;
    else if (srv->sessions == s)
        srv->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    drain_finish_if_done(srv);
}

static void accept_from(ka_server_t *srv, uv_stream_t *listener, int32_t node_id)
{
    srv->accepts_this_turn++;
    ka_session_t *s = ka_session_new(srv, session_closed_cb);
    if (s == NULL)
        return;
    s->target_node = node_id;
    s->next = srv->sessions;
    if (srv->sessions)
        srv->sessions->prev = s;
    srv->sessions = s;
    ka_session_accept(s, listener);
}

static void accept_one(ka_server_t *srv)
{
    accept_from(srv, (uv_stream_t *)&srv->listener, KA_GW_ANY_BROKER);
}

/* A gateway broker listener: few connections (one per client and broker), so
 * no per-turn pacing; --max-connections still applies in the session. */
void ka_server_accept_on(ka_server_t *srv, uv_stream_t *listener, int32_t node_id)
{
    if (srv->draining)
        return;
    accept_from(srv, listener, node_id);
}

static void connection_cb(uv_stream_t *listener, int status)
{
    ka_server_t *srv = listener->data;
    if (status < 0) {
        ka_log(KA_LOG_WARN, "listener error", KA_KS("error", uv_strerror(status)));
        return;
    }
    if (srv->accepts_this_turn >= KA_ACCEPTS_PER_TURN) {
        srv->accept_deferred = 1;
        uv_idle_start(&srv->accept_idle, accept_idle_cb);
        return;
    }
    accept_one(srv);
}

static void accept_idle_cb(uv_idle_t *idle)
{
    ka_server_t *srv = idle->data;
    uv_idle_stop(idle);
    srv->accepts_this_turn = 0;
    if (srv->accept_deferred && srv->listening) {
        srv->accept_deferred = 0;
        accept_one(srv);
    }
}

static void accept_check_cb(uv_check_t *check)
{
    ka_server_t *srv = check->data;
    srv->accepts_this_turn = 0;
}

static int server_init(ka_server_t *srv, uv_loop_t *loop, const ka_config_t *cfg, char *err,
                       size_t errlen)
{
    srv->loop = loop;
    srv->cfg = cfg;
    srv->splice_state = cfg->splice_off ? -1 : 0;
    ka_pool_init(&srv->pool, cfg->buffer_memory,
                 cfg->buffer_memory * KA_POOL_RESERVED_PERCENT / 100, now_ns);
    ka_intercept_table_default(&srv->intercept);
    snprintf(srv->upstream_name, sizeof(srv->upstream_name), "%s:%u", cfg->upstream.host,
             cfg->upstream.port);
    int rc = resolve(&cfg->upstream, 0, &srv->upstream_addr, "--upstream", err, errlen);
    if (rc < 0)
        return rc;
    const ka_hostport_t *md = cfg->metadata_upstream.set ? &cfg->metadata_upstream : &cfg->upstream;
    snprintf(srv->metadata_name, sizeof(srv->metadata_name), "%s:%u", md->host, md->port);
    rc = resolve(md, 0, &srv->metadata_addr, "--metadata-upstream", err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = ka_server_tls_init(srv, err, errlen)) < 0)
        return rc;
    if (cfg->mode == KA_MODE_GATEWAY && (rc = ka_gateway_init(srv, err, errlen)) < 0)
        return rc;

    uv_idle_init(loop, &srv->resume_idle);
    srv->resume_idle.data = srv;
    uv_idle_init(loop, &srv->accept_idle);
    srv->accept_idle.data = srv;
    uv_check_init(loop, &srv->accept_check);
    srv->accept_check.data = srv;
    uv_check_start(&srv->accept_check, accept_check_cb);
    uv_unref((uv_handle_t *)&srv->accept_check);
    uv_timer_init(loop, &srv->drain_timer);
    srv->drain_timer.data = srv;
    ka_reclaim_init(srv);
    uv_signal_init(loop, &srv->sigterm);
    srv->sigterm.data = srv;
    uv_signal_start(&srv->sigterm, signal_cb, SIGTERM);
    uv_signal_init(loop, &srv->sigint);
    srv->sigint.data = srv;
    uv_signal_start(&srv->sigint, signal_cb, SIGINT);
    return 0;
}

int ka_server_new(uv_loop_t *loop, const ka_config_t *cfg, ka_server_t **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    ka_server_t *srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    int rc = server_init(srv, loop, cfg, err, errlen);
    if (rc < 0) {
        /* Before any handle exists (resolution, TLS files): nothing to close. */
        ka_server_tls_free(srv);
        ka_gateway_free(srv);
        free(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

int ka_server_listen(ka_server_t *srv, char *err, size_t errlen)
{
    const ka_hostport_t *hp = &srv->cfg->listen;
    struct sockaddr_storage addr;
    int rc = resolve(hp, 1, &addr, "--listen", err, errlen);
    if (rc < 0)
        return rc;
    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    srv->listening = 1;
    rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&srv->listener, 511, connection_cb);
    if (rc < 0) {
        snprintf(err, errlen, "--listen %s:%u: %s", hp->host, hp->port, uv_strerror(rc));
        return rc;
    }
    struct sockaddr_storage bound;
    int n = sizeof(bound);
    char host[64] = "?";
    int port = 0;
    if (uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &n) == 0) {
        if (bound.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&bound, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&bound, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        }
    }
    srv->listen_port = port;
    if (srv->gateway != NULL && (rc = ka_gateway_listen(srv, err, errlen)) < 0)
        return rc;
    ka_log(KA_LOG_INFO, "listening", KA_KS("address", host), KA_KI("port", port),
           KA_KS("upstream", srv->upstream_name), KA_KI("buffer_memory", srv->cfg->buffer_memory),
           KA_KI("max_frame_bytes", srv->cfg->max_frame_bytes),
           KA_KI("max_connections", srv->cfg->max_connections));
    return 0;
}

void ka_server_drain(ka_server_t *srv)
{
    if (!srv->draining && srv->on_drain != NULL)
        srv->on_drain(srv->on_drain_arg);
    if (!srv->draining)
        srv->drain_started_ms = uv_now(srv->loop);
    srv->draining = 1;
    if (srv->listening) {
        srv->listening = 0;
        uv_close((uv_handle_t *)&srv->listener, NULL);
    }
    ka_gateway_drain(srv);
    uv_idle_stop(&srv->accept_idle);
    for (ka_session_t *s = srv->sessions; s; s = s->next) {
        if (s->state != KA_SESSION_CLOSING)
            ka_session_drain(s);
    }
    uv_timer_start(&srv->drain_timer, drain_timer_cb, (uint64_t)srv->cfg->drain_timeout_s * 1000,
                   0);
    drain_finish_if_done(srv);
}

static void drain_finish_if_done(ka_server_t *srv)
{
    if (!srv->draining || srv->sessions != NULL || uv_is_closing((uv_handle_t *)&srv->drain_timer))
        return;
    ka_log(KA_LOG_INFO, "all connections closed, exiting",
           KA_KI("drain_ms", uv_now(srv->loop) - srv->drain_started_ms));
    /* The signal handlers stay installed (but no longer keep the loop
     * alive) until ka_server_close, so a late SIGTERM cannot kill a process
     * that is already exiting cleanly. */
    uv_unref((uv_handle_t *)&srv->sigterm);
    uv_unref((uv_handle_t *)&srv->sigint);
    uv_close((uv_handle_t *)&srv->drain_timer, NULL);
    uv_close((uv_handle_t *)&srv->accept_idle, NULL);
    uv_close((uv_handle_t *)&srv->accept_check, NULL);
    uv_close((uv_handle_t *)&srv->resume_idle, NULL);
    ka_reclaim_close(srv);
}

void ka_server_close(ka_server_t *srv)
{
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    uv_close((uv_handle_t *)&srv->sigterm, NULL);
    uv_close((uv_handle_t *)&srv->sigint, NULL);
    ka_server_tls_close(srv);
    uv_run(srv->loop, UV_RUN_NOWAIT);
    ka_server_tls_free(srv);
    ka_output_cache_free(srv);
    ka_splice_close(srv);
    ka_gateway_free(srv);
}

void ka_server_free(ka_server_t *srv)
{
    free(srv);
}

uv_loop_t *ka_server_loop(const ka_server_t *srv)
{
    return srv->loop;
}

const ka_config_t *ka_server_config(const ka_server_t *srv)
{
    return srv->cfg;
}

int ka_server_listen_port(const ka_server_t *srv)
{
    return srv->listen_port;
}

int ka_server_is_gateway(const ka_server_t *srv)
{
    return srv->gateway != NULL;
}

int ka_server_draining(const ka_server_t *srv)
{
    return srv->draining;
}

const struct sockaddr *ka_server_upstream_addr(const ka_server_t *srv)
{
    return (const struct sockaddr *)&srv->upstream_addr;
}

const char *ka_server_upstream_name(const ka_server_t *srv)
{
    return srv->upstream_name;
}

const struct sockaddr *ka_server_metadata_addr(const ka_server_t *srv)
{
    return (const struct sockaddr *)&srv->metadata_addr;
}

const char *ka_server_metadata_name(const ka_server_t *srv)
{
    return srv->metadata_name;
}

const ka_upstream_security_t *ka_server_upstream_security(const ka_server_t *srv)
{
    return &srv->mdc_security;
}

ka_pool_t *ka_server_pool(ka_server_t *srv)
{
    return &srv->pool;
}

ka_metrics_t *ka_server_metrics(ka_server_t *srv)
{
    return &srv->metrics;
}

ka_intercept_table_t *ka_server_intercept(ka_server_t *srv)
{
    return &srv->intercept;
}

void ka_server_set_admission(ka_server_t *srv, struct ka_admission *admission)
{
    srv->admission = admission;
}

struct ka_admission *ka_server_admission(const ka_server_t *srv)
{
    return srv->admission;
}

void ka_server_on_drain(ka_server_t *srv, void (*cb)(void *arg), void *arg)
{
    srv->on_drain = cb;
    srv->on_drain_arg = arg;
}
