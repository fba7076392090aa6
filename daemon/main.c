/*
 * main.c: the kadmit binary.
 *
 * Exit codes: 0 after --help, --version or a drain; 2 for a bad flag or
 * value (an unreadable --admin-token-file included); 1 for a runtime
 * failure at startup (a port in use, the admin port too, an upstream that
 * does not resolve). Each failure is one line on stderr.
 *
 * The admin HTTP API (admin-http/) runs on the same loop; this file
 * implements its ka_admin_ops_t over the proxy's state. The policy file is
 * watched and reloaded (ka_policy_watch.c, ka_policy_store.c), and policy
 * changes made through the API are persisted by the store, or, with the
 * ledger on, written to the cluster's limits topic (ka_policy_reload.c).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admin.h"
#include "ka_admission.h"
#include "ka_admission_hook.h"
#include "ka_config.h"
#include "ka_configs_hook.h"
#include "ka_engine.h"
#include "ka_error.h"
#include "ka_gateway_feed.h"
#include "ka_log.h"
#include "ka_own_mac.h"
#include "ka_policy_file.h"
#include "ka_policy_reload.h"
#include "ka_proxy.h"
#include "ka_status_cli.h"
#include "ka_whatif_cli.h"

/* Readiness is about forwarding: a plain TCP connect to the upstream broker
 * this often says whether it accepts connections. The metadata client's
 * state is not used, since admission being unable to decide does not stop
 * forwarding (that is the kadmit_admission_healthy gauge). */
#define ADMIN_PROBE_INTERVAL_MS 1000
/* A connect still pending after this long counts as unreachable (a broker
 * whose host drops packets never refuses). */
#define ADMIN_PROBE_TIMEOUT_MS 3000
/* The admin server's start-up error sentence (bad address, port in use). */
#define ADMIN_WHY_MAX 400

static ka_policy_reload_t policy_reload;

typedef struct admin_state {
    ka_server_t *srv;
    ka_policy_reload_t *ps; /* NULL without --policy */
    ka_policy_t *fallback;  /* the default policy shown when admission is off */
    uint64_t last_version;  /* highest policy version handed out */
    ka_admin_server_t *server;
    uv_timer_t probe_timer;
    uv_tcp_t probe_tcp;
    uv_connect_t probe_req;
    int probe_started;         /* the timer is initialised */
    int probe_busy;            /* probe_tcp is open (connecting or closing) */
    uint64_t probe_started_ms; /* when the pending connect began */
    int reachable;             /* the last probe connected */
    int closed;
    int health_known; /* admission_healthy was set once */
} admin_state_t;

static ka_admission_t *admission_of(admin_state_t *st)
{
    return ka_server_admission(st->srv);
}

static ka_policy_t *op_policy_get(void *ctx)
{
    admin_state_t *st = ctx;
    ka_admission_t *a = admission_of(st);
    return ka_policy_ref(a != NULL ? ka_admission_policy(a) : st->fallback);
}

static uint64_t op_policy_next_version(void *ctx)
{
    admin_state_t *st = ctx;
    if (st->ps != NULL)
        return ka_policy_store_next_version(&st->ps->store);
    return ++st->last_version;
}

static int op_policy_apply(void *ctx, ka_policy_t *next, bool *persisted, char *err, size_t errlen)
{
    admin_state_t *st = ctx;
    ka_admission_t *a = admission_of(st);
    *persisted = false;
    if (a == NULL) {
        snprintf(err, errlen,
                 "admission is off: start kadmit with --policy FILE to enforce a policy");
        return KA_EINVALID;
    }
    /* One thread: the swap is atomic for every decision, and decisions in
     * progress keep the reference they took. */
    ka_admission_set_policy(a, ka_policy_ref(next));
    ka_policy_store_persist(&st->ps->store, next, persisted, err, errlen);
    ka_log(KA_LOG_INFO, "policy changed over the admin API",
           KA_KI("version", ka_policy_version(next)),
           KA_KI("max.broker.partitions", ka_policy_default_broker_limit(next)),
           KA_KI("broker_overrides", ka_policy_override_count(next)),
           KA_KS("persisted", *persisted ? "yes" : "no"), KA_KS(*persisted ? "to" : "why", err));
    return 0;
}

static int op_policy_submit(void *ctx, ka_policy_t *next, bool reset, ka_admin_reply_t *reply,
                            char *err, size_t errlen)
{
    admin_state_t *st = ctx;
    return ka_policy_reload_submit(st->ps, next, reset, reply, err, errlen);
}

static void op_layers_get(void *ctx, ka_admin_layers_t *out)
{
    admin_state_t *st = ctx;
    ka_policy_reload_layers(st->ps, out);
}

static void op_reload_status(void *ctx, ka_admin_reload_status_t *out)
{
    admin_state_t *st = ctx;
    memset(out, 0, sizeof(*out));
    if (st->ps != NULL)
        ka_policy_reload_status(st->ps, out);
}

static ka_policy_t *op_file_policy_get(void *ctx)
{
    admin_state_t *st = ctx;
    if (st->ps == NULL)
        return NULL;
    return ka_policy_ref((ka_policy_t *)ka_policy_store_file_policy(&st->ps->store));
}

static ka_cluster_t *op_cluster_get(void *ctx)
{
    ka_admission_t *a = admission_of(ctx);
    return a != NULL ? ka_cluster_ref(ka_admission_view(a)) : NULL;
}

static const ka_reservations_t *op_reservations_get(void *ctx)
{
    ka_admission_t *a = admission_of(ctx);
    return a != NULL ? ka_admission_ledger(a) : NULL;
}

static int64_t op_clock_ms(void *ctx)
{
    admin_state_t *st = ctx;
    ka_admission_t *a = admission_of(st);
    if (a != NULL)
        return ka_admission_now_ms(a);
    uv_update_time(ka_server_loop(st->srv));
    return (int64_t)uv_now(ka_server_loop(st->srv));
}

static void admission_health_update(admin_state_t *st);

static int op_metrics_render(void *ctx, ka_admin_buf_t *out)
{
    admin_state_t *st = ctx;
    /* Admission health is judged when asked: each scrape sees it as of now. */
    admission_health_update(st);
    for (size_t cap = 64 * 1024; cap <= 16 * 1024 * 1024; cap *= 2) {
        char *p = ka_admin_buf_reserve(out, cap);
        if (p == NULL)
            return KA_ENOMEM;
        long n = ka_metrics_render(ka_server_metrics(st->srv), ka_server_pool(st->srv), p, cap);
        if (n >= 0) {
            ka_admin_buf_commit(out, (size_t)n);
            return 0;
        }
        if (n != KA_EOVERFLOW)
            return (int)n;
    }
    return KA_EOVERFLOW;
}

static void op_pool_get(void *ctx, ka_admin_pool_t *out)
{
    ka_pool_t *pool = ka_server_pool(((admin_state_t *)ctx)->srv);
    out->capacity = pool->capacity;
    out->free_bytes = ka_pool_free_bytes(pool);
    out->used_bytes = ka_pool_used_bytes(pool);
    out->avg_depleted_percent = ka_pool_avg_depleted_percent(pool);
    out->depleted_time_total_s = ka_pool_depleted_time_total_s(pool);
    out->waiting_streams = ka_pool_waiters(pool);
}

static void op_request_timed_out(void *ctx, uint64_t timeout_ms)
{
    (void)ctx;
    ka_log(KA_LOG_WARN, "admin request not complete within its timeout, closing",
           KA_KI("timeout_ms", timeout_ms));
}

/* Whether admission can decide now (a view, fresh, the ledger read); why not. */
static bool admission_health(admin_state_t *st, char *why, size_t len)
{
    ka_server_t *srv = st->srv;
    ka_admission_t *a = admission_of(st);
    if (a == NULL)
        return true;
    if (st->ps != NULL && ka_policy_reload_loading(st->ps)) {
        snprintf(why, len, "the cluster's limits are still being read from the topic %s",
                 st->ps->topic);
        return false;
    }
    if (!ka_admission_upstream_connected(a)) {
        snprintf(why, len, "the metadata client is not connected to the broker at %s",
                 ka_server_metadata_name(srv));
        return false;
    }
    ka_policy_t *policy = ka_admission_policy(a);
    ka_cluster_t *view = ka_admission_view(a);
    if (view == NULL) {
        snprintf(why, len, "no cluster view from the broker at %s yet",
                 ka_server_metadata_name(srv));
        return false;
    }
    int64_t now = ka_admission_now_ms(a);
    if (ka_engine_view_is_stale(policy, view, now)) {
        snprintf(why, len,
                 "the cluster view is %" PRId64
                 " ms old, older than metadata.max.staleness.ms (%" PRId64 ")",
                 now - ka_cluster_taken_at_ms(view), ka_policy_metadata_max_staleness_ms(policy));
        return false;
    }
    /* Audit mode judges on and flags its verdicts; enforce mode refuses. */
    if (ka_cluster_partial_reason(view) != NULL &&
        ka_policy_enforcement(policy) == KA_ENFORCEMENT_ENFORCE) {
        snprintf(why, len, "the cluster view may be partial: %s", ka_cluster_partial_reason(view));
        return false;
    }
    if (!ka_admission_ledger_usable(a)) {
        const char *state = ka_server_metrics(srv)->ledger_blocked_why;
        snprintf(why, len, "the admission ledger (topic %s) %s",
                 ka_server_config(srv)->ledger_topic, state[0] ? state : "is not being read yet");
        return false;
    }
    return true;
}

/* Ready means this sidecar can forward: it is not draining and its broker
 * accepts connections (the listener is bound before the admin API starts). */
static bool op_ready(void *ctx, char *why, size_t len)
{
    admin_state_t *st = ctx;
    ka_server_t *srv = st->srv;
    if (ka_server_draining(srv)) {
        snprintf(why, len, "draining connections before exit");
        return false;
    }
    if (!st->reachable) {
        snprintf(why, len, "the broker at %s does not accept connections",
                 ka_server_upstream_name(srv));
        return false;
    }
    return true;
}

/* GET /v1/admission: whether admission can decide now; off without --policy. */
static int op_admission_health(void *ctx, char *why, size_t len)
{
    admin_state_t *st = ctx;
    if (admission_of(st) == NULL)
        return KA_ADMIN_ADMISSION_OFF;
    return admission_health(st, why, len) ? KA_ADMIN_ADMISSION_HEALTHY
                                          : KA_ADMIN_ADMISSION_UNHEALTHY;
}

/* The kadmit_admission_healthy gauge, and a log line when it changes. */
static void admission_health_update(admin_state_t *st)
{
    char why[256] = "";
    uint64_t healthy = admission_health(st, why, sizeof(why));
    ka_metrics_t *m = ka_server_metrics(st->srv);
    if (m->admission_healthy == healthy && st->health_known)
        return;
    st->health_known = 1;
    m->admission_healthy = healthy;
    if (healthy)
        ka_log(KA_LOG_INFO, "admission healthy: decisions use a fresh cluster view");
    else
        ka_log(KA_LOG_WARN, "admission unhealthy: admission requests are refused until it recovers",
               KA_KS("reason", why));
}

static void probe_closed_cb(uv_handle_t *h)
{
    admin_state_t *st = h->data;
    st->probe_busy = 0;
}

static void probe_connect_cb(uv_connect_t *req, int status)
{
    admin_state_t *st = req->data;
    if (status == UV_ECANCELED)
        return; /* closed by admin_close */
    st->reachable = status == 0;
    uv_close((uv_handle_t *)&st->probe_tcp, probe_closed_cb);
}

static void probe_timer_cb(uv_timer_t *t)
{
    admin_state_t *st = t->data;
    uint64_t now = uv_now(t->loop);
    if (st->closed)
        return;
    if (st->probe_busy) {
        if (now - st->probe_started_ms >= ADMIN_PROBE_TIMEOUT_MS)
            st->reachable = 0;
        return;
    }
    if (uv_tcp_init(ka_server_loop(st->srv), &st->probe_tcp) < 0)
        return;
    st->probe_busy = 1;
    st->probe_started_ms = now;
    st->probe_tcp.data = st;
    st->probe_req.data = st;
    if (uv_tcp_connect(&st->probe_req, &st->probe_tcp, ka_server_upstream_addr(st->srv),
                       probe_connect_cb) < 0) {
        st->reachable = 0;
        uv_close((uv_handle_t *)&st->probe_tcp, probe_closed_cb);
    }
}

/* On drain: stop serving the admin API and probing. */
static void admin_close(void *arg)
{
    admin_state_t *st = arg;
    if (st->closed)
        return;
    st->closed = 1;
    ka_admin_server_close(st->server);
    st->server = NULL;
    if (st->probe_started)
        uv_close((uv_handle_t *)&st->probe_timer, NULL);
    if (st->probe_busy && !uv_is_closing((uv_handle_t *)&st->probe_tcp))
        uv_close((uv_handle_t *)&st->probe_tcp, probe_closed_cb);
}

static const struct ka_metrics *op_metrics_get(void *ctx)
{
    admin_state_t *st = ctx;
    return ka_server_metrics(st->srv);
}

static const ka_admin_ops_t admin_ops = {
    .policy_get = op_policy_get,
    .policy_next_version = op_policy_next_version,
    .policy_apply = op_policy_apply,
    .reload_status = op_reload_status,
    .file_policy_get = op_file_policy_get,
    .cluster_get = op_cluster_get,
    .reservations_get = op_reservations_get,
    .clock_ms = op_clock_ms,
    .metrics_render = op_metrics_render,
    .metrics_get = op_metrics_get,
    .ready = op_ready,
    .admission_health = op_admission_health,
    .pool_get = op_pool_get,
    .request_timed_out = op_request_timed_out,
};

static int admin_start(admin_state_t *st, ka_admin_ops_t *ops, const ka_config_t *cfg,
                       const char *token, char *err, size_t errlen)
{
    char addr[KA_CONFIG_HOST_MAX + 16];
    ka_admin_config_t acfg = {.token = token, .allowed_hosts = cfg->admin_allowed_hosts};
    *ops = admin_ops;
    ops->ctx = st;
    if (st->ps != NULL) {
        ops->layers_get = op_layers_get;
        /* With the ledger on, changes go through the cluster's limits topic. */
        if (st->ps->cluster)
            ops->policy_submit = op_policy_submit;
    }
    if (ka_server_admission(st->srv) == NULL && ka_policy_new_default(0, &st->fallback) < 0) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    uv_timer_init(ka_server_loop(st->srv), &st->probe_timer);
    st->probe_timer.data = st;
    st->probe_started = 1;
    uv_timer_start(&st->probe_timer, probe_timer_cb, 0, ADMIN_PROBE_INTERVAL_MS);
    uv_unref((uv_handle_t *)&st->probe_timer);
    ka_config_admin_address(cfg, addr, sizeof(addr));
    char why[ADMIN_WHY_MAX] = "";
    int rc = ka_admin_server_start(ka_server_loop(st->srv), addr, &acfg, ops, &st->server, why,
                                   sizeof(why));
    if (rc < 0) {
        snprintf(err, errlen, "--admin %s: %s", addr, why);
        return rc;
    }
    ka_server_on_drain(st->srv, admin_close, st);
    ka_log(KA_LOG_INFO, "admin API listening", KA_KS("address", cfg->admin.host),
           KA_KI("port", ka_admin_server_port(st->server)),
           KA_KS("mutations", token[0] ? "token required" : "refused: no token configured"));
    return 0;
}

int main(int argc, char **argv)
{
    ka_config_t cfg;
    /* Large enough for the longest sentence a start-up step writes: "--admin
     * ADDRESS: " before the admin server's own (admin_start). */
    char err[KA_CONFIG_HOST_MAX + 16 + ADMIN_WHY_MAX + 16] = "";

    if (argc >= 2 && strcmp(argv[1], "status") == 0)
        return ka_status_cli_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "what-if") == 0)
        return ka_whatif_cli_main(argc - 1, argv + 1);

    int rc = ka_config_parse(&cfg, argc, argv, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 2;
    }
    if (rc == KA_CONFIG_HELP) {
        ka_config_usage(stdout);
        return 0;
    }
    if (rc == KA_CONFIG_VERSION) {
        printf("kadmit %s\n", KADMIT_VERSION);
        return 0;
    }
    if (rc == KA_CONFIG_CHECK_POLICY) {
        ka_policy_t *p = NULL;
        if (ka_policy_file_load(cfg.check_policy, 1, &p, err, sizeof(err)) < 0) {
            fprintf(stderr, "kadmit: %s\n", err);
            return 2;
        }
        ka_policy_unref(p);
        printf("kadmit: %s: policy is valid\n", cfg.check_policy);
        return 0;
    }
    /* kadmit's own topics, under the names this sidecar uses: no client may
     * delete, trim, widen or reconfigure them through kadmit. */
    if (ka_adm_own_topics_setup(cfg.ledger_topic, cfg.limits_topic) < 0) {
        fprintf(stderr, "kadmit: --ledger-topic and --limits-topic must be Kafka topic names\n");
        return 2;
    }
    /* A bad policy file (or state file) is a bad argument: one line naming
     * the file and the field, exit 2. */
    ka_policy_t *policy = NULL;
    ka_policy_reload_t *ps = &policy_reload;
    if (ka_policy_reload_open(ps, &cfg, &policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: --policy %s\n", err);
        return 2;
    }
    /* An unreadable token file is a bad argument too. */
    static char token[4096];
    if (ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        ka_policy_unref(policy);
        ka_policy_reload_free(ps);
        return 2;
    }
    /* So is a cluster secret that cannot be read or is too short. */
    if (ka_config_load_cluster_secret(&cfg, KA_OWN_SECRET_MIN, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        ka_policy_unref(policy);
        ka_policy_reload_free(ps);
        return 2;
    }
    ka_log_setup(cfg.log_level, cfg.log_format);
    /* A peer that vanishes mid-write is an error code, not a signal. */
    signal(SIGPIPE, SIG_IGN);

    uv_loop_t *loop = uv_default_loop();
    ka_server_t *srv = NULL;
    if (ka_server_new(loop, &cfg, &srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        ka_policy_unref(policy);
        return 1;
    }
    ka_server_metrics(srv)->cluster_secret_configured = cfg.cluster_secret_len > 0;
    if (cfg.ledger > 0 && cfg.cluster_secret_len == 0)
        ka_log(KA_LOG_WARN,
               "NO CLUSTER SECRET: kadmit's own records are not signed, and any client that can "
               "produce to the ledger or limits topic changes every sidecar's decisions; set "
               "--cluster-secret-file (the same secret on every sidecar)",
               KA_KS("ledger_topic", cfg.ledger_topic), KA_KS("limits_topic", cfg.limits_topic));
    else if (cfg.cluster_secret_len > 0)
        ka_log(KA_LOG_INFO, "kadmit's own records are signed and checked",
               KA_KS("mac", "HMAC-SHA256"), KA_KS("header", KA_OWN_MAC_HEADER),
               KA_KI("secret_bytes", cfg.cluster_secret_len));
    /* Without --policy nothing but ApiVersions is intercepted (the fast path). */
    if (policy != NULL && ka_admission_start(srv, policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    ka_policy_reload_start(ps, srv, &cfg);
    /* kafka-configs sets and shows the limits admission enforces (KIP-578). */
    ka_configs_t *configs = NULL;
    if (policy != NULL && ps->open && ka_configs_start(srv, ps, &configs, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    if (ka_server_listen(srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    /* Gateway mode: the broker list that opens and closes broker ports. */
    ka_gateway_feed_t *feed = NULL;
    if (ka_gateway_feed_start(srv, &feed, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    admin_state_t admin = {.srv = srv, .ps = ps->open ? ps : NULL};
    ka_admin_ops_t ops;
    int exit_code = 0;
    if (!cfg.admin_off && admin_start(&admin, &ops, &cfg, token, err, sizeof(err)) < 0) {
        /* Shut down as after a drain, so every handle and byte is released. */
        fprintf(stderr, "kadmit: %s\n", err);
        exit_code = 1;
        ka_server_drain(srv);
    }
    uv_run(loop, UV_RUN_DEFAULT);
    admin_close(&admin);
    ka_gateway_feed_stop(feed);
    ka_policy_reload_close(ps);
    uv_run(loop, UV_RUN_DEFAULT);
    ka_configs_stop(configs);
    ka_policy_reload_free(ps);
    ka_policy_unref(admin.fallback);
    ka_admission_stop(ka_server_admission(srv));
    ka_server_close(srv);
    uv_loop_close(loop);
    ka_server_free(srv);
    return exit_code;
}
