/*
 * ka_admin_router.h: requests, responses and routing, without sockets.
 *
 * The session (ka_admin_session.h) parses bytes into a ka_admin_request_t
 * and asks ka_admin_route() for a response; the handlers for each endpoint
 * live in ka_admin_handlers.c and ka_admin_metrics.c. Nothing here touches
 * libuv, so the fuzz target drives the whole request path in memory.
 */
#ifndef KA_ADMIN_ROUTER_H
#define KA_ADMIN_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ka_admin.h"
#include "ka_admin_buf.h"

/* Status codes are counted per code in this range for /metrics. */
#define KA_ADMIN_STATUS_MIN 100
#define KA_ADMIN_STATUS_MAX 599

/* The server's own counters, rendered as kadmit_admin_* metrics. */
typedef struct ka_admin_stats {
    uint64_t responses[KA_ADMIN_STATUS_MAX - KA_ADMIN_STATUS_MIN + 1]; /* by status code */
    uint64_t connections_accepted;
    uint64_t connections_rejected; /* refused: every slot and the probe reserve in use */
    uint64_t connections_active;
    uint64_t connections_evicted; /* idle keep-alive connections closed to make room */
    uint64_t reserve_accepted;    /* connections taken into the probe reserve */
    uint64_t reserve_active;      /* open connections in the probe reserve */
    uint64_t reserve_refused;     /* reserve requests for other paths (503) */
    uint64_t host_rejected;       /* refused with 403 for their Host header */
    uint64_t request_timeouts;    /* connections cut mid-request by request_timeout_ms */
    uint64_t parse_errors;        /* malformed HTTP, answered with 400 and closed */
    uint64_t policy_changes;      /* mutations that put a new policy in force */
} ka_admin_stats_t;

/* What the router and every session share: settings, the vtable, counters. */
typedef struct ka_admin_context {
    ka_admin_config_t cfg; /* with every default filled in */
    char *token;           /* owned, trimmed copy; NULL when mutations are refused */
    size_t token_len;
    const ka_admin_ops_t *ops; /* the proxy's, borrowed */
    ka_admin_stats_t stats;
    /* The Host check (DNS rebinding): on when the server is bound to a
     * loopback address (set by the server after binding). */
    bool host_check;
    char bound_host[64]; /* the bound address as a Host names it: 127.0.0.1, [::1] */
    char *allowed_hosts; /* owned copy of cfg.allowed_hosts, or NULL */
} ka_admin_context_t;

/* One complete request, valid only during ka_admin_route(). */
typedef struct ka_admin_request {
    int method;                /* an llhttp_method_t */
    const char *path;          /* NUL-terminated; the query string is cut off */
    const char *authorization; /* the Authorization header, or NULL */
    const char *host;          /* the Host header, or NULL (HTTP/1.0 may send none) */
    const char *body;          /* not NUL-terminated; may be NULL when body_len is 0 */
    size_t body_len;
} ka_admin_request_t;

typedef struct ka_admin_response {
    int status;
    const char *content_type; /* a static string */
    const char *allow;        /* 405: the value of the Allow header */
    const char *authenticate; /* 401: the value of WWW-Authenticate */
    ka_admin_buf_t body;
    /* Set by a handler that answers later (ka_admin_reply_finish): the
     * session then sends nothing now and waits for the reply. */
    ka_admin_reply_t *deferred;
} ka_admin_response_t;

/* Copies cfg (NULL: defaults) and the token; KA_ENOMEM or 0. */
int ka_admin_context_init(ka_admin_context_t *ctx, const ka_admin_config_t *cfg,
                          const ka_admin_ops_t *ops);
void ka_admin_context_free(ka_admin_context_t *ctx);

/* The probe paths a reserve connection may ask: /healthz, /readyz, /metrics. */
bool ka_admin_is_probe_path(const char *path);
/* True when a Host header value names this API: see ka_admin_config_t. */
bool ka_admin_host_allowed(const ka_admin_context_t *ctx, const char *host);

/* Fills res (initialised by the caller with ka_admin_response_init). */
void ka_admin_route(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                    ka_admin_response_t *res);

void ka_admin_response_init(ka_admin_response_t *res);
void ka_admin_response_free(ka_admin_response_t *res);
/* Sets an error status and the body {"error": "<sentence>"}. */
void ka_admin_response_error(ka_admin_response_t *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets status and a JSON body, consuming a reference to `body`. */
void ka_admin_response_json(ka_admin_response_t *res, int status, json_t *body);
/*
 * Appends the status line, headers and body to out and counts the status.
 * close adds "Connection: close". Returns 0 or KA_ENOMEM.
 */
int ka_admin_response_write(ka_admin_context_t *ctx, const ka_admin_response_t *res, bool close,
                            ka_admin_buf_t *out);
/* A complete error response in one call (timeouts, refusals, parse errors). */
int ka_admin_write_error(ka_admin_context_t *ctx, int status, bool close, ka_admin_buf_t *out,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Ties a deferred reply to the session that waits for it (NULL: gone). */
struct ka_admin_session;
void ka_admin_reply_bind(ka_admin_reply_t *reply, struct ka_admin_session *session);

/* Endpoint handlers (ka_admin_handlers.c, ka_admin_metrics.c). `arg` is the
 * path's {id} for /v1/limits/brokers/{id}, NULL elsewhere. */
typedef void (*ka_admin_handler_fn)(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                    const char *arg, ka_admin_response_t *res);
void ka_admin_handle_policy_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                const char *arg, ka_admin_response_t *res);
void ka_admin_handle_policy_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                const char *arg, ka_admin_response_t *res);
void ka_admin_handle_default_limit_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                       const char *arg, ka_admin_response_t *res);
void ka_admin_handle_broker_limit_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                      const char *arg, ka_admin_response_t *res);
void ka_admin_handle_broker_limit_delete(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                         const char *arg, ka_admin_response_t *res);
void ka_admin_handle_overrides_delete(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                      const char *arg, ka_admin_response_t *res);
void ka_admin_handle_brokers_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res);
void ka_admin_handle_asset_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                               const char *arg, ka_admin_response_t *res);
/* The ledger client's health for GET /v1/admission (ka_admin_status.c), or NULL without one. */
json_t *ka_admin_ledger_health_json(const struct ka_metrics *m);
void ka_admin_handle_decisions_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                   const char *arg, ka_admin_response_t *res);
void ka_admin_handle_metrics_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res);
/* POST /v1/what-if (ka_admin_whatif_http.c): judges a body, changes nothing. */
void ka_admin_handle_whatif_post(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res);
/* {"rules": [{rule, used, budget}], "principals": [{principal, used, budget}]}: each tenant
 * budget's use now, for GET /v1/brokers (ka_admin_whatif_http.c). */
json_t *ka_admin_budgets_json(const ka_admin_ops_t *ops, const ka_policy_t *policy,
                              const ka_cluster_t *view);

#endif
