/*
 * ka_gateway.c: gateway mode's broker table, listeners, routing and the
 * response rewrite (see ka_gateway.h and docs/gateway.md).
 *
 * The table: one entry per broker id kadmit has seen, with the broker's real
 * address (as its own responses and kadmit's metadata view carry it), the
 * socket address that address resolves to (numeric at once; a name through
 * uv_getaddrinfo, off the loop), and the listener of its gateway port. Entries
 * are allocated one by one, so a resolution in flight keeps its pointer.
 *
 * The rewrite wraps the response handler of each key that can carry
 * endpoints: the handler the control plane installed runs first (admission's
 * merge of a CreateTopics answer, for instance), then the endpoints of what
 * it forwards are mapped. A response whose endpoints are already kadmit's
 * (none, or changed=0) is forwarded from its held buffer without a copy.
 * The wrapper finds the gateway through a file-level pointer: there is one
 * server per process (ka_proxy.h), and the intercept entry's user pointer
 * stays the control plane's, for its other callbacks.
 */
#include "ka_gateway.h"

#include <netdb.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_endpoints.h"
#include "ka_protocol.h"

/* More broker ids than this are not served: the table stays bounded whatever
 * a response claims. */
#define KA_GW_MAX_BROKERS 4096
/* The highest API version the wrapper asks ka_endpoints_carried about. */
#define KA_GW_MAX_VERSION 32
/* A broker missing from this many consecutive lists of the view has left. */
#define KA_GW_LEFT_AFTER 2

typedef struct gw_listener gw_listener_t;

typedef struct gw_broker {
    int32_t node_id;
    char host[KA_CONFIG_HOST_MAX]; /* the broker's own advertised host */
    int32_t port;                  /* ... and port */
    struct sockaddr_storage addr;  /* where sessions connect; valid when resolved */
    int resolved;
    uv_getaddrinfo_t *resolving;       /* a name resolution in flight, or NULL */
    int serve_port;                    /* the gateway port (port mode), 0 when none */
    gw_listener_t *listener;           /* open on serve_port, or NULL */
    int missing;                       /* consecutive view lists without this broker */
    char sni_name[KA_CONFIG_HOST_MAX]; /* SNI mode: broker-<id>.DOMAIN */
} gw_broker_t;

struct gw_listener {
    uv_tcp_t tcp;
    ka_server_t *srv;
    int32_t node_id;
};

typedef struct ka_gateway {
    ka_server_t *srv;
    gw_broker_t **brokers; /* by insertion; at most KA_GW_MAX_BROKERS */
    size_t count, cap;
    /* The --upstream bootstrap brokers, for the bootstrap listener until a
     * live broker is known. */
    struct sockaddr_storage boot[KA_GW_MAX_UPSTREAMS];
    int boot_count;
    unsigned next; /* round robin over the live brokers */
    /* The response handlers the wrapper runs first, per key. */
    ka_response_handler_fn inner[KA_INTERCEPT_MAX_API];
    int draining;
    int warned_unmapped;
} ka_gateway_t;

static ka_gateway_t *the_gateway;

static gw_broker_t *find_broker(ka_gateway_t *gw, int32_t node_id)
{
    for (size_t i = 0; i < gw->count; i++)
        if (gw->brokers[i]->node_id == node_id)
            return gw->brokers[i];
    return NULL;
}

static void listener_closed_cb(uv_handle_t *h)
{
    free(h->data);
}

static void close_listener(ka_gateway_t *gw, gw_broker_t *b, const char *why)
{
    if (b->listener == NULL)
        return;
    ka_log(KA_LOG_INFO, "gateway: broker listener closed", KA_KI("broker", b->node_id),
           KA_KI("port", b->serve_port), KA_KS("reason", why));
    gw->srv->metrics.gw_listeners_closed++;
    uv_close((uv_handle_t *)&b->listener->tcp, listener_closed_cb);
    b->listener = NULL;
}

static void broker_connection_cb(uv_stream_t *listener, int status)
{
    gw_listener_t *l = listener->data;
    if (status < 0) {
        ka_log(KA_LOG_WARN, "gateway listener error", KA_KI("broker", l->node_id),
               KA_KS("error", uv_strerror(status)));
        return;
    }
    ka_server_accept_on(l->srv, listener, l->node_id);
}

/* Opens broker b's gateway port on the --listen host; a failure (the port is
 * taken) is logged and counted, and tried again on the next update. */
static void open_listener(ka_gateway_t *gw, gw_broker_t *b)
{
    ka_server_t *srv = gw->srv;
    const ka_config_t *cfg = srv->cfg;
    if (b->listener != NULL || b->serve_port == 0 || gw->draining || cfg->gw_sni_domain[0])
        return;
    struct sockaddr_storage addr;
    char port[8];
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *res = NULL;
    snprintf(port, sizeof(port), "%d", b->serve_port);
    /* The listen host resolved at start (ka_server_listen), so this is fast. */
    if (getaddrinfo(cfg->listen.host, port, &hints, &res) != 0 || res == NULL) {
        srv->metrics.gw_listen_failures++;
        return;
    }
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    gw_listener_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return;
    l->srv = srv;
    l->node_id = b->node_id;
    uv_tcp_init(srv->loop, &l->tcp);
    l->tcp.data = l;
    int rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, 511, broker_connection_cb);
    if (rc < 0) {
        srv->metrics.gw_listen_failures++;
        ka_log(KA_LOG_ERROR, "gateway: cannot listen for a broker", KA_KI("broker", b->node_id),
               KA_KS("host", cfg->listen.host), KA_KI("port", b->serve_port),
               KA_KS("error", uv_strerror(rc)));
        uv_close((uv_handle_t *)&l->tcp, listener_closed_cb);
        return;
    }
    b->listener = l;
    srv->metrics.gw_listeners_opened++;
    ka_log(KA_LOG_INFO, "gateway: serving a broker", KA_KI("broker", b->node_id),
           KA_KS("listen", cfg->listen.host), KA_KI("port", b->serve_port),
           KA_KS("broker_host", b->host), KA_KI("broker_port", b->port));
}

static void resolved_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    gw_broker_t *b = req->data;
    if (b == NULL) { /* the broker left (or the server closed) meanwhile */
        uv_freeaddrinfo(res);
        free(req);
        return;
    }
    b->resolving = NULL;
    if (status == 0 && res != NULL) {
        memcpy(&b->addr, res->ai_addr, res->ai_addrlen);
        b->resolved = 1;
    } else {
        ka_log(KA_LOG_WARN, "gateway: cannot resolve a broker's address",
               KA_KI("broker", b->node_id), KA_KS("host", b->host),
               KA_KS("error", uv_strerror(status)));
    }
    uv_freeaddrinfo(res);
    free(req);
}

/* Sets b's real address; a numeric one is usable at once, a name once resolved. */
static void set_address(ka_gateway_t *gw, gw_broker_t *b, const char *host, size_t len,
                        int32_t port)
{
    if (len >= sizeof(b->host) || port <= 0 || port > 65535)
        return;
    if (b->port == port && strlen(b->host) == len && memcmp(b->host, host, len) == 0)
        return;
    memcpy(b->host, host, len);
    b->host[len] = '\0';
    b->port = port;
    b->resolved = 0;
    if (uv_ip4_addr(b->host, port, (struct sockaddr_in *)&b->addr) == 0 ||
        uv_ip6_addr(b->host, port, (struct sockaddr_in6 *)&b->addr) == 0) {
        b->resolved = 1;
        return;
    }
    if (b->resolving != NULL)
        b->resolving->data = NULL; /* its answer is for the old name */
    uv_getaddrinfo_t *req = calloc(1, sizeof(*req));
    if (req == NULL)
        return;
    req->data = b;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", (int)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (uv_getaddrinfo(gw->srv->loop, req, resolved_cb, b->host, ps, &hints) < 0) {
        free(req);
        return;
    }
    b->resolving = req;
}

/* The entry of node_id, created (with its listener) when new; NULL when the
 * table is full. */
static gw_broker_t *learn(ka_gateway_t *gw, int32_t node_id, const char *host, size_t len,
                          int32_t port)
{
    gw_broker_t *b = find_broker(gw, node_id);
    if (b == NULL) {
        if (node_id < 0 || gw->count >= KA_GW_MAX_BROKERS)
            return NULL;
        if (gw->count == gw->cap) {
            size_t cap = gw->cap ? gw->cap * 2 : 16;
            gw_broker_t **p = realloc(gw->brokers, cap * sizeof(*p));
            if (p == NULL)
                return NULL;
            gw->brokers = p;
            gw->cap = cap;
        }
        if ((b = calloc(1, sizeof(*b))) == NULL)
            return NULL;
        b->node_id = node_id;
        b->serve_port = ka_config_gateway_port(gw->srv->cfg, node_id);
        if (gw->srv->cfg->gw_sni_domain[0]) {
            snprintf(b->sni_name, sizeof(b->sni_name), "broker-%d.%s", (int)node_id,
                     gw->srv->cfg->gw_sni_domain);
            ka_log(KA_LOG_INFO, "gateway: serving a broker", KA_KI("broker", node_id),
                   KA_KS("sni", b->sni_name), KA_KI("port", gw->srv->listen_port));
        }
        gw->brokers[gw->count++] = b;
        gw->srv->metrics.gw_brokers = gw->count;
        ka_log(KA_LOG_INFO, "gateway: broker joined", KA_KI("broker", node_id),
               KA_KI("port", port));
    }
    b->missing = 0;
    set_address(gw, b, host, len, port);
    open_listener(gw, b);
    return b;
}

/* Closes every connection to broker node_id. */
static void close_sessions_of(ka_gateway_t *gw, int32_t node_id)
{
    long closed = 0;
    for (ka_session_t *s = gw->srv->sessions; s; s = s->next) {
        if (s->target_node == node_id && s->state != KA_SESSION_CLOSING) {
            ka_session_close(s, KA_LOG_INFO, "gateway: the broker left the cluster, closing", NULL);
            closed++;
        }
    }
    gw->srv->metrics.gw_closed_left += (uint64_t)closed;
}

static void forget(ka_gateway_t *gw, size_t i)
{
    gw_broker_t *b = gw->brokers[i];
    ka_log(KA_LOG_INFO, "gateway: broker left", KA_KI("broker", b->node_id), KA_KS("host", b->host),
           KA_KI("port", b->port));
    close_listener(gw, b, "the broker left the cluster");
    close_sessions_of(gw, b->node_id);
    if (b->resolving != NULL)
        b->resolving->data = NULL;
    free(b);
    gw->brokers[i] = gw->brokers[--gw->count];
    gw->srv->metrics.gw_brokers = gw->count;
}

void ka_server_gateway_brokers(ka_server_t *srv, const ka_gw_broker_addr_t *list, size_t n)
{
    ka_gateway_t *gw = srv->gateway;
    if (gw == NULL || gw->draining)
        return;
    for (size_t i = 0; i < gw->count; i++)
        gw->brokers[i]->missing++;
    for (size_t i = 0; i < n; i++) {
        size_t len = list[i].host.len > 0 ? (size_t)list[i].host.len : 0;
        learn(gw, list[i].node_id, (const char *)list[i].host.ptr, len, list[i].port);
    }
    for (size_t i = gw->count; i-- > 0;)
        if (gw->brokers[i]->missing >= KA_GW_LEFT_AFTER)
            forget(gw, i);
}

/* ka_endpoint_map_fn: a broker's endpoint as kadmit serves it. */
static int map_endpoint(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                        ka_endpoint_t *out)
{
    ka_gateway_t *gw = ctx;
    const ka_config_t *cfg = gw->srv->cfg;
    size_t len = host.len > 0 ? (size_t)host.len : 0;
    out->host = (const char *)host.ptr;
    out->host_len = len;
    out->port = port;
    if (node_id < 0 || len == 0)
        return -1; /* no broker (a coordinator not found): nothing to rewrite */
    gw_broker_t *b = learn(gw, node_id, (const char *)host.ptr, len, port);
    if (b == NULL || (b->serve_port == 0 && b->sni_name[0] == '\0')) {
        gw->srv->metrics.gw_unmapped++;
        if (!gw->warned_unmapped)
            ka_log(KA_LOG_WARN,
                   "gateway: a broker id has no gateway port (add it to --gateway-port-map); its "
                   "address goes to the client unchanged",
                   KA_KI("broker", node_id));
        gw->warned_unmapped = 1;
        return -1;
    }
    if (b->sni_name[0]) {
        out->host = b->sni_name;
        out->host_len = strlen(b->sni_name);
        out->port = cfg->advertise_port ? cfg->advertise_port : gw->srv->listen_port;
    } else {
        out->host = cfg->advertise_host;
        out->host_len = strlen(cfg->advertise_host);
        out->port = b->serve_port;
    }
    return 0;
}

static void free_bytes(void *p)
{
    free(p);
}

/*
 * The wrapped response handler: the control plane's first, then the
 * endpoints of what it forwards. Bounded: the header is read with the
 * reader, the body rewritten under --max-frame-bytes.
 */
static int gw_on_response(void *user, const ka_inflight_entry_t *request, uint8_t *frame,
                          size_t *len, ka_hook_verdict_t *v)
{
    ka_gateway_t *gw = the_gateway;
    int16_t key = request->api_key;
    int rc = 0;

    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (key >= 0 && key < KA_INTERCEPT_MAX_API && gw->inner[key] != NULL) {
        rc = gw->inner[key](user, request, frame, len, v);
        if (rc < 0 || v->kind == KA_HOOK_CLOSE || v->kind == KA_HOOK_DEFER)
            return rc;
    }
    if (!ka_endpoints_carried(key, request->api_version))
        return rc;
    const uint8_t *f = v->bytes != NULL ? v->bytes : frame;
    size_t flen = v->bytes != NULL ? v->len : *len;
    int16_t hv = ka_response_header_version(key, request->api_version);
    struct ka_response_header rh;
    ka_reader_t r;
    if (flen < 4 || hv < 0)
        return rc;
    ka_reader_init(&r, f + 4, flen - 4);
    if (ka_response_header_decode(&r, hv, &rh) < 0) {
        gw->srv->metrics.gw_rewrite_errors++;
        return rc;
    }
    size_t body_off = 4 + r.off;
    ka_writer_t w;
    ka_writer_init(&w, gw->srv->cfg->max_frame_bytes);
    KA_WTRY(ka_write_raw(&w, f, body_off)); /* size (patched below) and header, verbatim */
    int changed = 0;
    int wrc = ka_endpoints_rewrite(key, request->api_version, f + body_off, flen - body_off,
                                   map_endpoint, gw, &w, &changed);
    if (wrc < 0) {
        /* The client would fail on it too; it goes on as the broker sent it. */
        gw->srv->metrics.gw_rewrite_errors++;
        ka_log(KA_LOG_WARN, "gateway: response does not parse, forwarded unchanged",
               KA_KS("api", ka_api_name(key)), KA_KI("version", request->api_version),
               KA_KS("error", ka_strerror(wrc)));
        ka_writer_free(&w);
        return rc;
    }
    if (!changed) {
        gw->srv->metrics.gw_unchanged++;
        ka_writer_free(&w);
        return rc;
    }
    if (w.err < 0 || w.len - 4 > INT32_MAX)
        goto err_write;
    KA_WTRY(ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4)));
    if (v->bytes != NULL && v->free_bytes != NULL)
        v->free_bytes(v->bytes);
    v->bytes = w.buf; /* the writer's buffer is the verdict's now */
    v->len = w.len;
    v->free_bytes = free_bytes;
    gw->srv->metrics.gw_rewritten++;
    return rc;
err_write:
    gw->srv->metrics.gw_rewrite_errors++;
    ka_log(KA_LOG_WARN, "gateway: rewritten response does not fit, closing",
           KA_KS("api", ka_api_name(key)), KA_KI("max_frame_bytes", gw->srv->cfg->max_frame_bytes));
    ka_writer_free(&w);
    if (v->bytes != NULL && v->free_bytes != NULL)
        v->free_bytes(v->bytes);
    v->bytes = NULL;
    v->kind = KA_HOOK_CLOSE;
    v->reason = "rewritten response too large";
    return 0;
}

/* Only the versions that carry endpoints are held for the rewrite. */
static int gw_response_wanted(int16_t api_key, int16_t api_version)
{
    return ka_endpoints_carried(api_key, api_version);
}

int ka_gateway_init(ka_server_t *srv, char *err, size_t errlen)
{
    const ka_config_t *cfg = srv->cfg;
    ka_gateway_t *gw = calloc(1, sizeof(*gw));
    if (gw == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    gw->srv = srv;
    for (int i = 0; i < cfg->upstream_count; i++) {
        const ka_hostport_t *hp = &cfg->upstreams[i];
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
        char port[8];
        snprintf(port, sizeof(port), "%u", hp->port);
        if (getaddrinfo(hp->host, port, &hints, &res) != 0 || res == NULL) {
            snprintf(err, errlen, "--upstream %s:%u: cannot resolve", hp->host, hp->port);
            free(gw);
            return KA_EINVALID;
        }
        memcpy(&gw->boot[gw->boot_count++], res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
    }
    srv->gateway = gw;
    the_gateway = gw;
    return 0;
}

int ka_gateway_listen(ka_server_t *srv, char *err, size_t errlen)
{
    ka_gateway_t *gw = srv->gateway;
    const ka_config_t *cfg = srv->cfg;
    (void)err;
    (void)errlen;
    ka_apiversions_clamp_endpoints(1);
    for (int key = 0; key < KA_INTERCEPT_MAX_API; key++) {
        int carried = 0;
        for (int v = 0; v <= KA_GW_MAX_VERSION && !carried; v++)
            carried = ka_endpoints_carried((int16_t)key, (int16_t)v);
        if (!carried)
            continue;
        ka_intercept_entry_t *e = &srv->intercept.api[key];
        gw->inner[key] = e->on_response;
        /* Held before for the control plane's handler: every version still is. */
        if (!(e->buffer_response && e->on_response))
            e->response_wanted = gw_response_wanted;
        e->buffer_response = 1;
        e->on_response = gw_on_response;
    }
    /* Explicit ports are known up front: serve them now. A broker's address
     * comes with the first view or response; a connection made before that
     * is closed at once (the client retries). */
    for (int i = 0; i < cfg->gw_port_map_count; i++) {
        gw_broker_t *b = learn(gw, cfg->gw_port_map[i].node_id, "", 0, 0);
        if (b != NULL)
            b->missing = -KA_GW_LEFT_AFTER; /* not in any list yet: do not count it gone */
    }
    ka_log(KA_LOG_INFO, "gateway mode", KA_KS("advertise_host", cfg->advertise_host),
           KA_KI("port_base", cfg->gw_port_base), KA_KI("port_map", cfg->gw_port_map_count),
           KA_KS("sni_domain", cfg->gw_sni_domain), KA_KI("bootstrap_brokers", gw->boot_count));
    return 0;
}

void ka_gateway_drain(ka_server_t *srv)
{
    ka_gateway_t *gw = srv->gateway;
    if (gw == NULL || gw->draining)
        return;
    gw->draining = 1;
    for (size_t i = 0; i < gw->count; i++)
        close_listener(gw, gw->brokers[i], "draining");
}

void ka_gateway_free(ka_server_t *srv)
{
    ka_gateway_t *gw = srv->gateway;
    if (gw == NULL)
        return;
    for (size_t i = 0; i < gw->count; i++) {
        if (gw->brokers[i]->resolving != NULL)
            gw->brokers[i]->resolving->data = NULL;
        free(gw->brokers[i]);
    }
    free(gw->brokers);
    free(gw);
    srv->gateway = NULL;
    the_gateway = NULL;
}

static void name_of(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port;
    if (ss->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)ss, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
        snprintf(out, cap, "[%s]:%d", host, port);
    } else {
        uv_ip4_name((const struct sockaddr_in *)ss, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
        snprintf(out, cap, "%s:%d", host, port);
    }
}

int ka_gateway_route(ka_session_t *s)
{
    ka_gateway_t *gw = s->server->gateway;
    const gw_broker_t *b = NULL;
    if (s->target_node == KA_GW_ANY_BROKER) {
        /* Any live broker answers a bootstrap's Metadata; round robin. */
        for (size_t i = 0; i < gw->count && b == NULL; i++) {
            const gw_broker_t *c = gw->brokers[(gw->next + i) % gw->count];
            if (c->resolved && c->missing <= 0)
                b = c;
        }
        gw->next++;
        if (b == NULL) {
            if (gw->boot_count == 0)
                return KA_EINVALID;
            s->target_addr = gw->boot[gw->next % (unsigned)gw->boot_count];
            name_of(&s->target_addr, s->upstream_name, sizeof(s->upstream_name));
            const ka_hostport_t *hp =
                &s->server->cfg->upstreams[gw->next % (unsigned)gw->boot_count];
            snprintf(s->tls_name, sizeof(s->tls_name), "%s", hp->host);
            return 0;
        }
    } else {
        b = find_broker(gw, s->target_node);
        if (b == NULL || !b->resolved)
            return KA_EINVALID;
    }
    s->target_addr = b->addr;
    snprintf(s->upstream_name, sizeof(s->upstream_name), "%s:%d (broker %d)", b->host, (int)b->port,
             (int)b->node_id);
    snprintf(s->tls_name, sizeof(s->tls_name), "%s", b->host);
    return 0;
}

int32_t ka_gateway_sni_target(const ka_server_t *srv, const char *name)
{
    const char *domain = srv->cfg->gw_sni_domain;
    size_t dl = strlen(domain), nl = name ? strlen(name) : 0;
    /* broker-<digits>.<domain>, case-insensitively (names are ASCII) */
    if (dl == 0 || nl < 7 + 1 + 1 + dl || strncasecmp(name, "broker-", 7) != 0 ||
        name[nl - dl - 1] != '.' || strcasecmp(name + nl - dl, domain) != 0)
        return KA_GW_ANY_BROKER;
    int64_t id = 0;
    for (size_t i = 7; i < nl - dl - 1; i++) {
        if (name[i] < '0' || name[i] > '9' || id > INT32_MAX / 10)
            return KA_GW_ANY_BROKER;
        id = id * 10 + (name[i] - '0');
    }
    return id <= INT32_MAX ? (int32_t)id : KA_GW_ANY_BROKER;
}
