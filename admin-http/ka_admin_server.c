/*
 * ka_admin_server.c: the admin API's sockets on the proxy's libuv loop.
 *
 * One listener and, per admin connection, a TCP handle and a timer. All
 * HTTP logic lives in the session (ka_admin_session.c); this file only
 * moves bytes and enforces the limits that need a clock or a socket:
 *   - reads stop while the session is paused or the socket's write queue is
 *     long, so a client that pipelines without reading cannot grow memory;
 *   - the timer gives a request request_timeout_ms from its first byte to
 *     its last (slow-loris clients get 408 and are cut), a new connection
 *     the same time to start talking, and an idle keep-alive connection
 *     idle_timeout_ms;
 *   - with max_connections open, a new connection takes the slot of the
 *     connection idle longest (between requests, nothing to send), which is
 *     closed: HTTP lets a server close an idle keep-alive connection at any
 *     time and clients open a new one, while a probe that finds no room
 *     makes a kubelet restart the sidecar. With none idle (every slot
 *     mid-request, each cut by request_timeout_ms at the latest), it goes
 *     to the probe reserve: probe_reserve more connections that may only
 *     ask /healthz, /readyz or /metrics, once each. Above both: 503, closed.
 * A connection that ends with an error (413, 431, 400) may still have
 * request bytes on the way; closing at once would make the kernel answer
 * them with a reset that can destroy our response before the client reads
 * it. So the last response is followed by a shutdown of our side, and the
 * rest of the input is read and dropped until the client closes or
 * LINGER_MS passes (what web servers call a lingering close).
 * A connection is freed only after both of its handles' close callbacks
 * have run, and the server only after its listener's and every connection's.
 */
#include "ka_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admin_router.h"
#include "ka_admin_session.h"

#define LISTEN_BACKLOG 128
#define READ_BUFFER    16384
#define LINGER_MS      1000

typedef struct ka_admin_conn ka_admin_conn_t;

struct ka_admin_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    ka_admin_context_t ctx; /* settings, ops and counters shared by all sessions */
    int port;
    bool closing;           /* ka_admin_server_close was called */
    unsigned open_handles;  /* the listener plus every connection not yet freed */
    ka_admin_conn_t *conns; /* open connections, to close them with the server */
};

struct ka_admin_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_shutdown_t shutdown_req;
    ka_admin_server_t *server;
    ka_admin_conn_t *prev, *next; /* in server->conns while not closing */
    ka_admin_session_t session;
    int handles_open;        /* tcp and timer: freed when both have closed */
    bool counted;            /* within max_connections (refused ones are not) */
    bool closing;            /* uv_close was called */
    bool reading;            /* uv_read_start is in effect */
    bool shutting_down;      /* uv_shutdown was called: the last response is queued */
    bool peer_eof;           /* the client closed its side */
    bool timing_request;     /* the timer runs the request timeout, not the idle one */
    bool reserve;            /* in the probe reserve, not within max_connections */
    uint64_t idle_since;     /* loop time it last became idle (accepted, or answered) */
    uint64_t completed_seen; /* session->completed when the timer was last set */
    unsigned writes_pending;
    char read_buffer[READ_BUFFER];
};

/* One response batch on its way out; owns its bytes. */
typedef struct ka_admin_write {
    uv_write_t req;
    ka_admin_conn_t *conn;
    char *data;
} ka_admin_write_t;

static void conn_after_input(ka_admin_conn_t *c);

static void server_release(ka_admin_server_t *server)
{
    if (--server->open_handles == 0) {
        ka_admin_context_free(&server->ctx);
        free(server);
    }
}

static void conn_handle_closed_cb(uv_handle_t *handle)
{
    ka_admin_conn_t *c = handle->data;
    ka_admin_server_t *server = c->server;

    if (--c->handles_open > 0)
        return;
    ka_admin_session_free(&c->session);
    free(c);
    server_release(server);
}

static void conn_close(ka_admin_conn_t *c)
{
    ka_admin_server_t *server = c->server;

    if (c->closing)
        return;
    c->closing = true;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        server->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    if (c->counted)
        server->ctx.stats.connections_active--;
    if (c->reserve)
        server->ctx.stats.reserve_active--;
    /* Pending writes and the shutdown are cancelled; their callbacks run
     * before ours. */
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed_cb);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed_cb);
}

static void write_cb(uv_write_t *req, int status)
{
    ka_admin_write_t *w = (ka_admin_write_t *)req;
    ka_admin_conn_t *c = w->conn;

    free(w->data);
    free(w);
    c->writes_pending--;
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->writes_pending == 0 && c->session.paused) {
        if (ka_admin_session_resume(&c->session) < 0) {
            conn_close(c);
            return;
        }
    }
    conn_after_input(c);
}

/* Hands the session's output to libuv; 0 or a libuv error. */
static int conn_flush(ka_admin_conn_t *c)
{
    ka_admin_write_t *w;
    uv_buf_t buf;
    size_t len;
    int rc;

    if (c->session.out.len == 0)
        return 0;
    w = malloc(sizeof(*w));
    if (w == NULL)
        return UV_ENOMEM;
    w->conn = c;
    w->data = ka_admin_buf_take(&c->session.out, &len);
    buf = uv_buf_init(w->data, (unsigned int)len);
    rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, write_cb);
    if (rc < 0) {
        free(w->data);
        free(w);
        return rc;
    }
    c->writes_pending++;
    return 0;
}

static void timer_cb(uv_timer_t *timer)
{
    ka_admin_conn_t *c = timer->data;
    const ka_admin_ops_t *ops = c->session.ctx->ops;
    uint64_t timeouts = c->session.ctx->stats.request_timeouts;
    uv_buf_t buf;

    ka_admin_session_timeout(&c->session);
    if (c->session.ctx->stats.request_timeouts != timeouts && ops->request_timed_out != NULL)
        ops->request_timed_out(ops->ctx, c->session.ctx->cfg.request_timeout_ms);
    /* The client may not be reading either: try once, never wait. */
    if (c->session.out.len > 0 && c->writes_pending == 0 && !c->shutting_down) {
        buf = uv_buf_init(c->session.out.data, (unsigned int)c->session.out.len);
        uv_try_write((uv_stream_t *)&c->tcp, &buf, 1);
    }
    conn_close(c);
}

/* Restarts the timer when a request began or completed since it was set. */
static void conn_update_timer(ka_admin_conn_t *c)
{
    const ka_admin_context_t *ctx = &c->server->ctx;
    bool request = c->session.in_request;

    if (c->shutting_down ||
        (request == c->timing_request && c->session.completed == c->completed_seen))
        return;
    c->timing_request = request;
    c->completed_seen = c->session.completed;
    if (!request)
        c->idle_since = uv_now(c->server->loop);
    uv_timer_start(&c->timer, timer_cb,
                   request ? ctx->cfg.request_timeout_ms : ctx->cfg.idle_timeout_ms, 0);
}

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    ka_admin_conn_t *c = handle->data;

    (void)suggested;
    *buf = uv_buf_init(c->read_buffer, sizeof(c->read_buffer));
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    ka_admin_conn_t *c = stream->data;

    (void)buf;
    if (nread == 0)
        return;
    if (nread == UV_EOF) {
        /* A half-close still gets the answers to what it sent. libuv has
         * stopped reading by itself. */
        c->peer_eof = true;
        c->reading = false;
        ka_admin_session_end_input(&c->session);
        if (c->shutting_down)
            conn_close(c);
        else
            conn_after_input(c);
        return;
    }
    if (nread < 0) {
        conn_close(c);
        return;
    }
    /* While lingering, the session drops the bytes. */
    if (ka_admin_session_feed(&c->session, c->read_buffer, (size_t)nread) < 0) {
        conn_close(c);
        return;
    }
    conn_after_input(c);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    ka_admin_conn_t *c = req->data;

    if (c->closing)
        return;
    if (status < 0 || c->peer_eof) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, timer_cb, LINGER_MS, 0);
}

/* After the session consumed input: send, then decide to read, wait or close. */
static void conn_after_input(ka_admin_conn_t *c)
{
    bool want_read;

    if (c->closing)
        return;
    conn_update_timer(c);
    if (!c->shutting_down && conn_flush(c) < 0) {
        conn_close(c);
        return;
    }
    if (c->session.closing && c->writes_pending == 0 && !c->shutting_down) {
        c->shutting_down = true;
        if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, shutdown_cb) < 0) {
            conn_close(c);
            return;
        }
    }
    /* While closing, reading goes on only to drop what the client still sends. */
    if (c->session.closing)
        want_read = !c->peer_eof;
    else
        want_read = !c->session.paused && c->tcp.write_queue_size < KA_ADMIN_SESSION_OUTPUT_HIGH;
    if (want_read && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0) {
            conn_close(c);
            return;
        }
    } else if (!want_read && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
    c->reading = want_read;
}

/* A deferred answer is in the session's output. */
static void conn_wake(void *arg)
{
    conn_after_input(arg);
}

/* The connection idle longest: no request under way or waiting for its
 * answer, nothing left to send. NULL when every one is busy. */
static ka_admin_conn_t *idlest_conn(ka_admin_server_t *server)
{
    ka_admin_conn_t *best = NULL;

    for (ka_admin_conn_t *c = server->conns; c != NULL; c = c->next) {
        const ka_admin_session_t *s = &c->session;

        if (!c->counted || c->closing || c->shutting_down || s->in_request || s->closing ||
            s->waiting != NULL || s->paused || s->out.len > 0 || s->pending.len > 0 ||
            c->writes_pending > 0)
            continue;
        /* The list is newest first: on a tie the older one goes. */
        if (best == NULL || c->idle_since <= best->idle_since)
            best = c;
    }
    return best;
}

static void connection_cb(uv_stream_t *listener, int status)
{
    ka_admin_server_t *server = listener->data;
    ka_admin_conn_t *c;

    if (status < 0 || server->closing)
        return;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->server = server;
    ka_admin_session_init(&c->session, &server->ctx);
    c->session.wake = conn_wake;
    c->session.wake_arg = c;
    uv_tcp_init(server->loop, &c->tcp);
    uv_timer_init(server->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->shutdown_req.data = c;
    c->handles_open = 2;
    server->open_handles++;
    c->next = server->conns;
    if (server->conns != NULL)
        server->conns->prev = c;
    server->conns = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    c->idle_since = uv_now(server->loop);
    if (server->ctx.stats.connections_active >= server->ctx.cfg.max_connections) {
        ka_admin_conn_t *idle = idlest_conn(server);

        if (idle != NULL) {
            server->ctx.stats.connections_evicted++;
            conn_close(idle);
        } else if (server->ctx.stats.reserve_active < server->ctx.cfg.probe_reserve) {
            c->reserve = true;
            c->session.probe_only = true;
            server->ctx.stats.reserve_accepted++;
            server->ctx.stats.reserve_active++;
        } else {
            server->ctx.stats.connections_rejected++;
            ka_admin_write_error(&server->ctx, 503, true, &c->session.out,
                                 "too many admin connections are open (the limit is %u, and %u "
                                 "more for probes); retry later",
                                 server->ctx.cfg.max_connections, server->ctx.cfg.probe_reserve);
            c->session.closing = true;
            timer_cb(&c->timer);
            return;
        }
    }
    if (!c->reserve) {
        c->counted = true;
        server->ctx.stats.connections_active++;
    }
    server->ctx.stats.connections_accepted++;
    uv_tcp_nodelay(&c->tcp, 1);
    conn_after_input(c);
    /* A new connection has the request timeout to start talking, not the
     * idle one: a client that opens connections and stays silent is cut as
     * soon as one that sends slowly. */
    if (!c->closing)
        uv_timer_start(&c->timer, timer_cb, server->ctx.cfg.request_timeout_ms, 0);
}

/* Splits "host:port", "[v6]:port"; fills addr (resolving names once, at start). */
static int resolve(uv_loop_t *loop, const char *host_port, struct sockaddr_storage *addr, char *err,
                   size_t errlen)
{
    char host[256];
    const char *colon = strrchr(host_port, ':');
    const char *h = host_port;
    size_t hlen;
    long port = 0;
    uv_getaddrinfo_t req;
    struct addrinfo hints;
    int rc;

    if (colon == NULL || colon[1] == '\0')
        goto bad;
    for (const char *p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || port > 65535)
            goto bad;
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        goto bad;
    hlen = (size_t)(colon - host_port);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host))
        goto bad;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) == 0 ||
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) == 0)
        return 0;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    /* Without a callback uv_getaddrinfo runs synchronously: fine at start-up. */
    rc = uv_getaddrinfo(loop, &req, NULL, host, NULL, &hints);
    if (rc < 0) {
        snprintf(err, errlen, "admin address %s: cannot resolve %s: %s", host_port, host,
                 uv_strerror(rc));
        return KA_EINVALID;
    }
    memcpy(addr, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
    uv_freeaddrinfo(req.addrinfo);
    if (addr->ss_family == AF_INET)
        ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
    return 0;
bad:
    snprintf(err, errlen,
             "admin address \"%s\" must be HOST:PORT (e.g. 127.0.0.1:9644 or [::1]:9644) with a "
             "port between 0 and 65535",
             host_port);
    return KA_EINVALID;
}

/*
 * On a loopback address the Host check is on (DNS rebinding: a web page may
 * point its own name at 127.0.0.1 and read the API from the browser). Any
 * other address is already reachable by name from the network, where the
 * check would only refuse Kubernetes probes (Host: the pod's IP).
 */
static void set_host_check(ka_admin_context_t *ctx, const struct sockaddr_storage *addr)
{
    char name[INET6_ADDRSTRLEN] = "";

    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

        if ((ntohl(in->sin_addr.s_addr) >> 24) != 127)
            return;
        uv_ip4_name(in, name, sizeof(name));
        snprintf(ctx->bound_host, sizeof(ctx->bound_host), "%s", name);
    } else if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;

        if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return;
        uv_ip6_name(in6, name, sizeof(name));
        snprintf(ctx->bound_host, sizeof(ctx->bound_host), "[%s]", name);
    } else {
        return;
    }
    ctx->host_check = true;
}

static void listener_closed_cb(uv_handle_t *handle)
{
    server_release(handle->data);
}

int ka_admin_server_start(uv_loop_t *loop, const char *host_port, const ka_admin_config_t *cfg,
                          const ka_admin_ops_t *ops, ka_admin_server_t **out, char *err,
                          size_t errlen)
{
    struct sockaddr_storage addr;
    ka_admin_server_t *server;
    int namelen = sizeof(addr);
    int rc;

    *out = NULL;
    if (ops == NULL || ops->policy_get == NULL || ops->policy_next_version == NULL ||
        ops->policy_apply == NULL) {
        snprintf(err, errlen,
                 "admin API: policy_get, policy_next_version and policy_apply are "
                 "required operations");
        return KA_EINVALID;
    }
    if (host_port == NULL)
        host_port = KA_ADMIN_DEFAULT_ADDRESS;
    rc = resolve(loop, host_port, &addr, err, errlen);
    if (rc < 0)
        return rc;
    server = calloc(1, sizeof(*server));
    if (server == NULL || ka_admin_context_init(&server->ctx, cfg, ops) < 0) {
        if (server != NULL)
            ka_admin_context_free(&server->ctx);
        free(server);
        snprintf(err, errlen, "admin API: out of memory");
        return KA_ENOMEM;
    }
    server->loop = loop;
    server->open_handles = 1;
    uv_tcp_init(loop, &server->listener);
    server->listener.data = server;
    rc = uv_tcp_bind(&server->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server->listener, LISTEN_BACKLOG, connection_cb);
    if (rc == 0)
        rc = uv_tcp_getsockname(&server->listener, (struct sockaddr *)&addr, &namelen);
    if (rc < 0) {
        snprintf(err, errlen, "admin API: cannot listen on %s: %s", host_port, uv_strerror(rc));
        /* The handle exists now: it is released through the loop like any other. */
        server->closing = true;
        uv_close((uv_handle_t *)&server->listener, listener_closed_cb);
        return KA_EINVALID;
    }
    server->port = ntohs(addr.ss_family == AF_INET ? ((struct sockaddr_in *)&addr)->sin_port
                                                   : ((struct sockaddr_in6 *)&addr)->sin6_port);
    set_host_check(&server->ctx, &addr);
    *out = server;
    return 0;
}

int ka_admin_server_port(const ka_admin_server_t *server)
{
    return server->port;
}

void ka_admin_server_close(ka_admin_server_t *server)
{
    if (server == NULL || server->closing)
        return;
    server->closing = true;
    while (server->conns != NULL)
        conn_close(server->conns);
    uv_close((uv_handle_t *)&server->listener, listener_closed_cb);
}
