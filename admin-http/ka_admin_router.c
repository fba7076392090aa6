/*
 * ka_admin_router.c: the route table, bearer-token checks, the small
 * endpoints (/healthz, /readyz, /v1/admission) and the response writer.
 *
 * Routing is a fixed table: a path either names a resource or is 404; a
 * known resource with the wrong method is 405 with Allow. Mutations are
 * authorised only after the route is known, so a typo in a path says 404
 * rather than 401, and the body has already been capped by the session.
 */
#include "ka_admin_router.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <llhttp.h>

#define DEFAULT_MAX_HEADER_BYTES   (8u * 1024)
#define DEFAULT_MAX_BODY_BYTES     (1024u * 1024)
#define DEFAULT_REQUEST_TIMEOUT_MS 10000u
#define DEFAULT_IDLE_TIMEOUT_MS    60000u
#define DEFAULT_MAX_CONNECTIONS    64u
#define DEFAULT_PROBE_RESERVE      8u
/* Longest host name (RFC 1035) plus brackets; a longer Host names nothing here. */
#define HOST_NAME_MAX_LEN 255

#define CONTENT_TYPE_JSON "application/json"

static const char BROKER_PREFIX[] = "/v1/limits/brokers/";

struct route_method {
    int method;
    bool mutating; /* needs the bearer token */
    ka_admin_handler_fn handler;
};

struct route {
    const char *path; /* exact path, or BROKER_PREFIX for the {id} route */
    bool has_id;
    const char *allow;
    struct route_method methods[2];
};

static void handle_healthz(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                           ka_admin_response_t *res);
static void handle_readyz(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                          ka_admin_response_t *res);
static void handle_admission(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                             const char *arg, ka_admin_response_t *res);
static void handle_pool(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                        ka_admin_response_t *res);

static const struct route ROUTES[] = {
    {"/v1/policy",
     false,
     "GET, PUT",
     {{HTTP_GET, false, ka_admin_handle_policy_get}, {HTTP_PUT, true, ka_admin_handle_policy_put}}},
    {"/v1/policy/overrides",
     false,
     "DELETE",
     {{HTTP_DELETE, true, ka_admin_handle_overrides_delete}}},
    {"/v1/limits/default", false, "PUT", {{HTTP_PUT, true, ka_admin_handle_default_limit_put}}},
    {BROKER_PREFIX,
     true,
     "PUT, DELETE",
     {{HTTP_PUT, true, ka_admin_handle_broker_limit_put},
      {HTTP_DELETE, true, ka_admin_handle_broker_limit_delete}}},
    {"/v1/brokers", false, "GET", {{HTTP_GET, false, ka_admin_handle_brokers_get}}},
    {"/metrics", false, "GET", {{HTTP_GET, false, ka_admin_handle_metrics_get}}},
    {"/healthz", false, "GET", {{HTTP_GET, false, handle_healthz}}},
    {"/readyz", false, "GET", {{HTTP_GET, false, handle_readyz}}},
    {"/v1/admission", false, "GET", {{HTTP_GET, false, handle_admission}}},
    {"/v1/pool", false, "GET", {{HTTP_GET, false, handle_pool}}},
    {"/v1/decisions", false, "GET", {{HTTP_GET, false, ka_admin_handle_decisions_get}}},
    /* Read-only, though a POST: it judges the body and changes nothing. */
    {"/v1/what-if", false, "POST", {{HTTP_POST, false, ka_admin_handle_whatif_post}}},
    /* The status page and its assets (ka_admin_status.c). */
    {"/", false, "GET", {{HTTP_GET, false, ka_admin_handle_asset_get}}},
    {"/status.js", false, "GET", {{HTTP_GET, false, ka_admin_handle_asset_get}}},
    {"/status.css", false, "GET", {{HTTP_GET, false, ka_admin_handle_asset_get}}},
};

/* Token files usually end in a newline; a token never does. */
static size_t trimmed_length(const char *s)
{
    size_t n = strlen(s);

    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return n;
}

int ka_admin_context_init(ka_admin_context_t *ctx, const ka_admin_config_t *cfg,
                          const ka_admin_ops_t *ops)
{
    memset(ctx, 0, sizeof(*ctx));
    if (cfg != NULL)
        ctx->cfg = *cfg;
    ctx->cfg.token = NULL; /* only our own copy is kept */
    if (ctx->cfg.max_header_bytes == 0)
        ctx->cfg.max_header_bytes = DEFAULT_MAX_HEADER_BYTES;
    if (ctx->cfg.max_body_bytes == 0)
        ctx->cfg.max_body_bytes = DEFAULT_MAX_BODY_BYTES;
    if (ctx->cfg.request_timeout_ms == 0)
        ctx->cfg.request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    if (ctx->cfg.idle_timeout_ms == 0)
        ctx->cfg.idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
    if (ctx->cfg.max_connections == 0)
        ctx->cfg.max_connections = DEFAULT_MAX_CONNECTIONS;
    if (ctx->cfg.probe_reserve == 0)
        ctx->cfg.probe_reserve = DEFAULT_PROBE_RESERVE;
    ctx->cfg.allowed_hosts = NULL; /* only our own copy is kept */
    ctx->ops = ops;
    if (cfg != NULL && cfg->allowed_hosts != NULL && cfg->allowed_hosts[0] != '\0') {
        ctx->allowed_hosts = strdup(cfg->allowed_hosts);
        if (ctx->allowed_hosts == NULL)
            return KA_ENOMEM;
    }
    if (cfg != NULL && cfg->token != NULL && trimmed_length(cfg->token) > 0) {
        ctx->token_len = trimmed_length(cfg->token);
        ctx->token = malloc(ctx->token_len + 1);
        if (ctx->token == NULL)
            return KA_ENOMEM;
        memcpy(ctx->token, cfg->token, ctx->token_len);
        ctx->token[ctx->token_len] = '\0';
    }
    return 0;
}

void ka_admin_context_free(ka_admin_context_t *ctx)
{
    if (ctx->token != NULL) {
        /* The token is a secret: do not leave it in freed memory. */
        volatile char *p = ctx->token;
        for (size_t i = 0; i < ctx->token_len; i++)
            p[i] = 0;
        free(ctx->token);
    }
    ctx->token = NULL;
    free(ctx->allowed_hosts);
    ctx->allowed_hosts = NULL;
}

bool ka_admin_is_probe_path(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0;
}

/* name (len bytes) equals one entry of the comma-separated list, ignoring
 * case and the spaces around entries. */
static bool in_list(const char *list, const char *name, size_t len)
{
    const char *p = list;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

        while (n > 0 && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == len && strncasecmp(p, name, len) == 0)
            return true;
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

/*
 * The Host value is split into its name and an optional ":port" (any port:
 * kubectl port-forward and SSH tunnels reach the API on another one, and a
 * rebinding page cannot choose the name, which is what is checked). An IPv6
 * literal must be in brackets; anything else malformed is refused.
 */
bool ka_admin_host_allowed(const ka_admin_context_t *ctx, const char *host)
{
    size_t len = strlen(host), name_len;
    const char *rest;

    while (len > 0 && (host[len - 1] == ' ' || host[len - 1] == '\t'))
        len--;
    if (host[0] == '[') {
        const char *close = memchr(host, ']', len);

        if (close == NULL)
            return false;
        name_len = (size_t)(close - host) + 1;
    } else {
        const char *colon = memchr(host, ':', len);

        name_len = colon != NULL ? (size_t)(colon - host) : len;
    }
    rest = host + name_len;
    if (name_len == 0 || name_len > HOST_NAME_MAX_LEN)
        return false;
    if (name_len < len) {
        size_t digits = len - name_len - 1;

        if (rest[0] != ':' || digits == 0 || digits > 5)
            return false;
        for (size_t i = 1; i <= digits; i++)
            if (rest[i] < '0' || rest[i] > '9')
                return false;
    }
    if (in_list("localhost,127.0.0.1,[::1]", host, name_len) ||
        (ctx->bound_host[0] != '\0' && in_list(ctx->bound_host, host, name_len)))
        return true;
    /* An operator's entry names a host, or a host and port exactly. */
    return ctx->allowed_hosts != NULL &&
           (in_list(ctx->allowed_hosts, host, name_len) || in_list(ctx->allowed_hosts, host, len));
}

/*
 * Compares in time that depends only on the presented token's length, never
 * on where the first difference is or on the configured token's length.
 */
static bool token_matches(const ka_admin_context_t *ctx, const char *given, size_t given_len)
{
    volatile unsigned char diff = (unsigned char)(given_len != ctx->token_len);

    for (size_t i = 0; i < given_len; i++)
        diff |= (unsigned char)given[i] ^ (unsigned char)ctx->token[i % ctx->token_len];
    return diff == 0;
}

/* 0 when the request may mutate; otherwise fills res with 401 or 403. */
static int authorize(const ka_admin_context_t *ctx, const ka_admin_request_t *req,
                     ka_admin_response_t *res)
{
    const char *auth = req->authorization, *token;
    size_t len;

    if (ctx->token == NULL) {
        ka_admin_response_error(res, 403,
                                "changes over the admin API are disabled because no admin token "
                                "is configured; start kadmit with --admin-token-file FILE or set "
                                "KADMIT_ADMIN_TOKEN");
        return -1;
    }
    if (auth == NULL) {
        ka_admin_response_error(res, 401,
                                "this call changes the policy and needs an Authorization: Bearer "
                                "<token> header");
        res->authenticate = "Bearer realm=\"kadmit\"";
        return -1;
    }
    if (strncasecmp(auth, "Bearer ", 7) != 0) {
        ka_admin_response_error(res, 401,
                                "the Authorization header must use the Bearer scheme: "
                                "\"Authorization: Bearer <token>\"");
        res->authenticate = "Bearer realm=\"kadmit\"";
        return -1;
    }
    token = auth + 7;
    while (*token == ' ')
        token++;
    len = strlen(token);
    while (len > 0 && (token[len - 1] == ' ' || token[len - 1] == '\t'))
        len--;
    if (!token_matches(ctx, token, len)) {
        ka_admin_response_error(res, 401, "the bearer token is not valid");
        res->authenticate = "Bearer realm=\"kadmit\", error=\"invalid_token\"";
        return -1;
    }
    return 0;
}

static const struct route *find_route(const char *path, const char **arg)
{
    size_t prefix = sizeof(BROKER_PREFIX) - 1;

    *arg = NULL;
    for (size_t i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
        const struct route *r = &ROUTES[i];

        if (!r->has_id && strcmp(path, r->path) == 0)
            return r;
        /* {id} is one non-empty path segment; the handler validates it. */
        if (r->has_id && strncmp(path, r->path, prefix) == 0 && path[prefix] != '\0' &&
            strchr(path + prefix, '/') == NULL) {
            *arg = path + prefix;
            return r;
        }
    }
    return NULL;
}

void ka_admin_route(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                    ka_admin_response_t *res)
{
    const char *arg;
    const struct route *r;

    /* Before anything else: a page that rebound its own name to our
     * loopback address must learn nothing, not even which paths exist. An
     * empty Host (allowed for a request target without an authority) names
     * no other site, so it is answered like a missing one. */
    if (ctx->host_check && req->host != NULL && req->host[0] != '\0' &&
        !ka_admin_host_allowed(ctx, req->host)) {
        ctx->stats.host_rejected++;
        ka_admin_response_error(res, 403,
                                "the Host header \"%.100s\" does not name this admin API, which "
                                "listens on a loopback address: use localhost, 127.0.0.1 or "
                                "[::1], or allow the name with --admin-allowed-hosts",
                                req->host);
        return;
    }
    r = find_route(req->path, &arg);
    if (r == NULL) {
        ka_admin_response_error(res, 404, "there is no resource at %.200s; see docs/admin-api.md",
                                req->path);
        return;
    }
    for (size_t i = 0; i < sizeof(r->methods) / sizeof(r->methods[0]); i++) {
        const struct route_method *m = &r->methods[i];

        if (m->handler == NULL || m->method != req->method)
            continue;
        if (m->mutating && authorize(ctx, req, res) < 0)
            return;
        m->handler(ctx, req, arg, res);
        return;
    }
    ka_admin_response_error(res, 405, "%s is not allowed on %.200s; allowed: %s",
                            llhttp_method_name((llhttp_method_t)req->method), req->path, r->allow);
    res->allow = r->allow;
}

static void handle_healthz(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                           ka_admin_response_t *res)
{
    (void)ctx, (void)req, (void)arg;
    /* Answering at all proves the loop runs, which is all liveness means. */
    ka_admin_response_json(res, 200, json_pack("{s:s}", "status", "ok"));
}

static void handle_readyz(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                          ka_admin_response_t *res)
{
    char why[256] = "";

    (void)req, (void)arg;
    if (ctx->ops->ready != NULL && !ctx->ops->ready(ctx->ops->ctx, why, sizeof(why))) {
        ka_admin_response_error(res, 503, "not ready: %s",
                                why[0] ? why : "the proxy gave no reason");
        return;
    }
    ka_admin_response_json(res, 200, json_pack("{s:s}", "status", "ready"));
}

/* 200 while admission can decide (or is off), 503 with the reason when its
 * requests are refused: what "the cluster view is ready" means to a test or
 * an operator, kept apart from readiness so that pods stay in the Service. */
static void handle_admission(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                             const char *arg, ka_admin_response_t *res)
{
    char why[256] = "";
    int state = KA_ADMIN_ADMISSION_OFF;

    (void)req, (void)arg;
    if (ctx->ops->admission_health != NULL)
        state = ctx->ops->admission_health(ctx->ops->ctx, why, sizeof(why));
    if (state == KA_ADMIN_ADMISSION_UNHEALTHY) {
        ka_admin_response_error(res, 503, "admission unhealthy: %s",
                                why[0] ? why : "the proxy gave no reason");
    }
    /* The ledger's figures ride along, healthy or not (a warning such as an under-replicated
     * topic does not make admission unhealthy). */
    const struct ka_metrics *m =
        ctx->ops->metrics_get ? ctx->ops->metrics_get(ctx->ops->ctx) : NULL;
    json_t *ledger = state != KA_ADMIN_ADMISSION_OFF ? ka_admin_ledger_health_json(m) : NULL;
    if (state == KA_ADMIN_ADMISSION_UNHEALTHY) {
        if (ledger == NULL)
            return;
        char message[600];
        snprintf(message, sizeof(message), "admission unhealthy: %s",
                 why[0] ? why : "the proxy gave no reason");
        ka_admin_response_json(
            res, 503,
            json_pack("{s:s,s:s,s:o}", "error", message, "status", "unhealthy", "ledger", ledger));
        return;
    }
    json_t *body =
        json_pack("{s:s}", "status", state == KA_ADMIN_ADMISSION_HEALTHY ? "healthy" : "off");
    if (body != NULL && ledger != NULL)
        json_object_set_new(body, "ledger", ledger);
    else
        json_decref(ledger);
    ka_admin_response_json(res, 200, body);
}

static void handle_pool(ka_admin_context_t *ctx, const ka_admin_request_t *req, const char *arg,
                        ka_admin_response_t *res)
{
    ka_admin_pool_t p = {0};

    (void)req, (void)arg;
    if (ctx->ops->pool_get == NULL) {
        ka_admin_response_error(res, 503, "the proxy has no memory pool");
        return;
    }
    ctx->ops->pool_get(ctx->ops->ctx, &p);
    ka_admin_response_json(
        res, 200,
        json_pack("{s:I,s:I,s:I,s:f,s:f,s:I}", "capacity_bytes", (json_int_t)p.capacity,
                  "memory_pool_free_bytes", (json_int_t)p.free_bytes, "memory_pool_used_bytes",
                  (json_int_t)p.used_bytes, "memory_pool_avg_depleted_percent",
                  p.avg_depleted_percent, "memory_pool_depleted_time_total_seconds",
                  p.depleted_time_total_s, "waiting_streams", (json_int_t)p.waiting_streams));
}

void ka_admin_response_init(ka_admin_response_t *res)
{
    memset(res, 0, sizeof(*res));
    res->status = 500;
    res->content_type = CONTENT_TYPE_JSON;
}

void ka_admin_response_free(ka_admin_response_t *res)
{
    ka_admin_buf_free(&res->body);
}

static void error_body(ka_admin_buf_t *body, const char *message)
{
    json_t *doc = json_pack("{s:s}", "error", message);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

    ka_admin_buf_reset(body);
    if (text != NULL) {
        ka_admin_buf_puts(body, text);
        ka_admin_buf_puts(body, "\n");
    } else {
        /* json_pack fails only on allocation or invalid UTF-8 in message. */
        ka_admin_buf_puts(body, "{\"error\":\"the error message could not be encoded\"}\n");
    }
    free(text);
    json_decref(doc);
}

static void vset_error(ka_admin_response_t *res, int status, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void vset_error(ka_admin_response_t *res, int status, const char *fmt, va_list ap)
{
    char message[768];

    vsnprintf(message, sizeof(message), fmt, ap);
    /* Messages quote client input (paths, JSON values) cut at byte counts,
     * which can leave control bytes or half a UTF-8 sequence; JSON strings
     * must be valid UTF-8, so anything outside printable ASCII becomes '?'. */
    for (char *c = message; *c != '\0'; c++) {
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    }
    res->status = status;
    res->content_type = CONTENT_TYPE_JSON;
    error_body(&res->body, message);
}

void ka_admin_response_error(ka_admin_response_t *res, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vset_error(res, status, fmt, ap);
    va_end(ap);
}

void ka_admin_response_json(ka_admin_response_t *res, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

    json_decref(body);
    if (text == NULL) {
        ka_admin_response_error(res, 500, "the response could not be built (out of memory)");
        return;
    }
    res->status = status;
    res->content_type = CONTENT_TYPE_JSON;
    ka_admin_buf_reset(&res->body);
    ka_admin_buf_puts(&res->body, text);
    ka_admin_buf_puts(&res->body, "\n");
    free(text);
}

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

int ka_admin_response_write(ka_admin_context_t *ctx, const ka_admin_response_t *res, bool close,
                            ka_admin_buf_t *out)
{
    const ka_admin_buf_t *body = &res->body;

    if (ka_admin_buf_failed(body) < 0) {
        /* A half-built body must not be sent as if it were whole. */
        ka_admin_response_t oom;
        int rc;

        ka_admin_response_init(&oom);
        ka_admin_response_error(&oom, 500, "the response could not be built (out of memory)");
        rc = ka_admin_buf_failed(&oom.body) < 0 ? KA_ENOMEM
                                                : ka_admin_response_write(ctx, &oom, close, out);
        ka_admin_response_free(&oom);
        return rc;
    }
    if (res->status >= KA_ADMIN_STATUS_MIN && res->status <= KA_ADMIN_STATUS_MAX)
        ctx->stats.responses[res->status - KA_ADMIN_STATUS_MIN]++;
    ka_admin_buf_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n",
                        res->status, reason_phrase(res->status), res->content_type, body->len);
    ka_admin_buf_puts(out, "Cache-Control: no-store\r\n");
    if (res->allow != NULL)
        ka_admin_buf_printf(out, "Allow: %s\r\n", res->allow);
    if (res->authenticate != NULL)
        ka_admin_buf_printf(out, "WWW-Authenticate: %s\r\n", res->authenticate);
    if (close)
        ka_admin_buf_puts(out, "Connection: close\r\n");
    ka_admin_buf_puts(out, "\r\n");
    if (body->len > 0)
        ka_admin_buf_append(out, body->data, body->len);
    return ka_admin_buf_failed(out);
}

int ka_admin_write_error(ka_admin_context_t *ctx, int status, bool close, ka_admin_buf_t *out,
                         const char *fmt, ...)
{
    ka_admin_response_t res;
    va_list ap;
    int rc;

    ka_admin_response_init(&res);
    va_start(ap, fmt);
    vset_error(&res, status, fmt, ap);
    va_end(ap);
    rc = ka_admin_response_write(ctx, &res, close, out);
    ka_admin_response_free(&res);
    return rc;
}
