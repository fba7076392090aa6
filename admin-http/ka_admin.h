/*
 * ka_admin.h: the admin HTTP API server, the public face of admin-http/.
 *
 * The server runs on the proxy's own libuv loop and never blocks it: every
 * request is answered synchronously from the snapshots the proxy hands out
 * through ka_admin_ops_t, a small vtable the proxy implements. admin-http
 * builds every JSON body and the policy/broker part of /metrics itself, so
 * the whole API is testable with a fake vtable and synthetic snapshots.
 *
 * Every callback is called on the loop thread, one at a time, and only while
 * a request is being answered. docs/admin-api.md describes the endpoints.
 */
#ifndef KA_ADMIN_H
#define KA_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ka_admin_buf.h"
#include "ka_cluster.h"
#include "ka_error.h"
#include "ka_policy.h"
#include "ka_reservations.h"

/* The address the proxy passes when --admin is not given. */
#define KA_ADMIN_DEFAULT_ADDRESS "127.0.0.1:9644"

/*
 * Limits of the server. A zero field takes the default in brackets, so a
 * zeroed struct is a sensible configuration (with mutations refused).
 */
typedef struct ka_admin_config {
    /* Bearer token that mutating calls must present (copied at start; trailing
     * whitespace and newlines are trimmed, as token files usually end in one).
     * NULL or empty: every mutation is refused with 403 (fail closed). */
    const char *token;
    size_t max_header_bytes;     /* request line plus headers [8 KiB]; above: 431 */
    size_t max_body_bytes;       /* request body [1 MiB]; above: 413 */
    uint64_t request_timeout_ms; /* from a request's first byte to its last [10 s]; then 408 */
    uint64_t idle_timeout_ms;    /* keep-alive connection without a request [60 s] */
    /* Open admin connections [64]. When all are in use, a new one first
     * takes the slot of the connection idle longest (closed); when none is
     * idle it goes to the probe reserve. */
    unsigned max_connections;
    /* Connections beyond max_connections that may only ask /healthz, /readyz
     * or /metrics, one request each [8]; above both: 503 and close. So a
     * liveness probe is answered while clients hold every slot. */
    unsigned probe_reserve;
    /* Host header names accepted besides the loopback ones, comma-separated
     * (copied at start; NULL: none). Checked only when the API is bound to a
     * loopback address, against DNS rebinding: a request with another Host
     * gets 403. A request without Host (HTTP/1.0) is answered. */
    const char *allowed_hosts;
} ka_admin_config_t;

/* Outcome of the most recent policy-file reload, for GET /v1/policy and /metrics. */
typedef struct ka_admin_reload_status {
    bool attempted;     /* false until the file was (re)loaded at least once */
    bool ok;            /* the last attempt succeeded */
    int64_t at_unix_ms; /* wall-clock time of the last attempt */
    uint64_t failures;  /* failed reloads since start */
    char error[512];    /* !ok: the loader's sentence (file, field, problem) */
    /* Reloads by result since start (the failures above are invalid + missing). */
    uint64_t reloads_ok, reloads_unchanged, reloads_invalid, reloads_missing;
    char file_hash[17];      /* FNV-1a 64 of the policy file in force, hex; "" when none */
    const char *persistence; /* "policy-file", "state-file" or "none" (static string) */
    char persist_path[512];  /* the file API changes go to, or why they are not saved */
    bool overrides;          /* API changes are layered over the file's policy */
} ka_admin_reload_status_t;

/*
 * The policy's layers, for GET /v1/policy: the policy file, the cluster's
 * layer from the limits topic (with the ledger on) and, by difference, the
 * policy in force. Strings are borrowed for the duration of the call.
 */
typedef struct ka_admin_layers {
    const char *file_path;  /* --policy */
    uint64_t file_version;  /* the version the file's own policy was loaded with */
    bool cluster;           /* the limits topic is on (--ledger on) */
    const char *topic;      /* its name */
    bool loading;           /* it has not been read to its end since start */
    int64_t offset;         /* offset of the record in force; -1 before any */
    const char *written_by; /* that record's writer, or "" */
    int64_t written_at_ms;  /* and when it wrote it (wall clock), or 0 */
    const char *overrides;  /* the layer over the file (JSON merge patch), NULL when none */
    const char *error;      /* why the last record or connection failed, or "" */
} ka_admin_layers_t;

/*
 * A mutation that the proxy answers later. With policy_submit the proxy
 * first writes the change where the cluster keeps its limits, and calls
 * ka_admin_reply_finish once that write is confirmed or has failed.
 */
typedef struct ka_admin_reply ka_admin_reply_t;

/*
 * Ends a submitted mutation, exactly once, on the loop thread. rc 0: the
 * change was written; `policy` (borrowed) is in force now, `persisted_to`
 * says where it went, `warning` (or NULL) what the caller should know. A
 * negative rc: nothing changed, and the caller gets 503 with `detail`. The
 * reply is freed; when its connection has closed meanwhile, nothing is sent.
 */
void ka_admin_reply_finish(ka_admin_reply_t *reply, int rc, const ka_policy_t *policy,
                           const char *persisted_to, const char *warning, const char *detail);

/*
 * What the proxy provides. Required: policy_get, policy_next_version,
 * policy_apply. The rest may be NULL (the endpoint then says what is missing
 * or, for /metrics, leaves the proxy's part out).
 */
/* The memory pool (--buffer-memory), with KIP-81's four figures. */
typedef struct ka_admin_pool {
    uint64_t capacity;
    uint64_t free_bytes;          /* memory-pool-free */
    uint64_t used_bytes;          /* memory-pool-used */
    double avg_depleted_percent;  /* memory-pool-avg-depleted-percent */
    double depleted_time_total_s; /* memory-pool-depleted-time-total */
    uint64_t waiting_streams;     /* sockets paused until memory comes back */
} ka_admin_pool_t;

typedef struct ka_admin_ops {
    void *ctx; /* passed to every callback */

    /* The policy in force: a new reference (never NULL; the proxy starts
     * with ka_policy_new_default). */
    ka_policy_t *(*policy_get)(void *ctx);
    /* A version number greater than every one handed out before. */
    uint64_t (*policy_next_version)(void *ctx);
    /* Puts `next` in force (take a reference to keep it; admin-http drops
     * its own afterwards) and persists it: to the policy file by atomic
     * write, or to the state file when the policy file is read-only. Sets
     * *persisted to say whether it reached disk, and writes to err the file
     * it went to (persisted) or why not. Returns 0 once the policy is
     * in force, even if persisting failed; a negative ka_err with a sentence
     * in err when it did not take effect. */
    int (*policy_apply)(void *ctx, ka_policy_t *next, bool *persisted, char *err, size_t errlen);
    /* Optional; when set, every mutation goes through it instead of
     * policy_apply. Takes `next` (validated; keep a reference to use it) and
     * answers through ka_admin_reply_finish later. `reset` is true for
     * DELETE /v1/policy/overrides: the API's layer is dropped. Returns 0 once
     * it owns the reply, or a negative ka_err with a sentence in err (the
     * caller is answered 503 at once and nothing changes). */
    int (*policy_submit)(void *ctx, ka_policy_t *next, bool reset, ka_admin_reply_t *reply,
                         char *err, size_t errlen);
    /* Optional: the policy's layers, for GET /v1/policy. */
    void (*layers_get)(void *ctx, ka_admin_layers_t *out);
    /* The last policy-file reload. */
    void (*reload_status)(void *ctx, ka_admin_reload_status_t *out);
    /* The policy file's own policy without the API's overrides: a new
     * reference, or NULL when there is no policy file. DELETE
     * /v1/policy/overrides puts it in force again. */
    ka_policy_t *(*file_policy_get)(void *ctx);

    /* The current cluster view: a new reference, or NULL before the first. */
    ka_cluster_t *(*cluster_get)(void *ctx);
    /* The reservation ledger, borrowed for the duration of the call, or NULL. */
    const ka_reservations_t *(*reservations_get)(void *ctx);
    /* Now, on the clock the cluster view's taken_at_ms uses. */
    int64_t (*clock_ms)(void *ctx);

    /* Optional: the proxy's counters, borrowed for the call (the latest
     * decisions of GET /v1/decisions and the status page). */
    const struct ka_metrics *(*metrics_get)(void *ctx);
    /* Appends the proxy's own metrics in Prometheus text format 0.0.4. */
    int (*metrics_render)(void *ctx, ka_admin_buf_t *out);
    /* True when kadmit can forward (GET /readyz); otherwise a sentence in why. */
    bool (*ready)(void *ctx, char *why, size_t len);
    /* Optional: whether admission can decide now (GET /v1/admission), a
     * ka_admin_admission_t; when unhealthy, a sentence in why. */
    int (*admission_health)(void *ctx, char *why, size_t len);
    /* The memory pool's KIP-81 figures, for GET /v1/pool. */
    void (*pool_get)(void *ctx, ka_admin_pool_t *out);
    /* Optional: a request did not arrive whole within its timeout (for a log line). */
    void (*request_timed_out)(void *ctx, uint64_t timeout_ms);
} ka_admin_ops_t;

/* What GET /v1/admission reports; readiness (/readyz) is about forwarding only. */
typedef enum ka_admin_admission {
    KA_ADMIN_ADMISSION_OFF = 0, /* no --policy: nothing is judged */
    KA_ADMIN_ADMISSION_HEALTHY = 1,
    KA_ADMIN_ADMISSION_UNHEALTHY = 2, /* admission requests are refused */
} ka_admin_admission_t;

typedef struct ka_admin_server ka_admin_server_t;

/*
 * Binds host_port ("127.0.0.1:9644", "[::1]:9644", "localhost:0"; port 0
 * picks a free port) on `loop` and starts accepting. `cfg` (NULL for the
 * defaults) is copied; `ops` must outlive the server. Returns 0, or a
 * negative ka_err with a sentence in err (bad address, port in use). When
 * binding fails the listener handle already exists and is closed through
 * the loop: running the loop (as at shutdown) releases its memory.
 */
int ka_admin_server_start(uv_loop_t *loop, const char *host_port, const ka_admin_config_t *cfg,
                          const ka_admin_ops_t *ops, ka_admin_server_t **out, char *err,
                          size_t errlen);

/* The bound port, useful after binding port 0. */
int ka_admin_server_port(const ka_admin_server_t *server);

/*
 * Stops listening and closes every admin connection at once. The server
 * frees itself after the last uv_close callback, so the loop must run on
 * (uv_run until it returns) before it is closed. Accepts NULL.
 */
void ka_admin_server_close(ka_admin_server_t *server);

#endif
