/*
 * ka_metadata_client.c: the metadata client's refresh state machine (see
 * ka_metadata_client.h).
 *
 * One request is outstanding at a time, so the client is one state machine:
 * CONNECTING (TCP, then TLS in ka_mdc_conn.c) -> VERSIONS (ApiVersions) ->
 * [SASL_HANDSHAKE -> SASL_AUTH, once per SASL round, ka_mdc_sasl.c] ->
 * IDLE; a refresh runs METADATA -> DECODING -> [CLUSTER] -> [CONFIGS] ->
 * [LOGDIRS, every KA_LOGDIRS_INTERVAL_MS] -> BUILDING -> IDLE, keeping each answer, and hands them
 * to ka_view_build. The periodic refresh slows down while no request is judged (ka_mdc_idle.h). Any
 * error closes the connection, reports a failed attempt and reconnects after the backoff. Every
 * request is sent in enter(), so the waiting states can be read in one place. After a view that
 * shows a kadmit topic with too few replicas, IDLE -> REASSIGN -> IDLE raises it (ka_own_rf.h).
 *
 * Off the loop: the Metadata answer grows with the cluster (tens of MiB and
 * tens of milliseconds to decode at a few hundred thousand partitions), and
 * so does the view built from it. Both run on libuv's worker threads
 * (uv_queue_work) while the loop goes on forwarding: DECODING and BUILDING
 * are the states in which a worker holds the refresh. The refresh is then
 * the worker's alone, and the loop touches it again only in the work's
 * completion callback; the view handed over is immutable. A refresh that
 * fails or stops while a worker holds it is abandoned, not freed: the
 * completion callback frees it. Each loop callback's own time is charged to
 * the loop watch (ka_loop_watch.h), so /metrics shows whether the control
 * plane ever holds the loop.
 */
#include "ka_metadata_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_log.h"
#include "ka_loop_watch.h"
#include "ka_mdc_conn.h"
#include "ka_mdc_idle.h"
#include "ka_mdc_refresh.h"
#include "ka_mdc_sasl.h"
#include "ka_mdc_int.h"
#include "ka_own_rf.h"
#include "ka_protocol.h"
#include "ka_view_build.h"

#define BACKOFF_MIN_MS     100
#define BACKOFF_MAX_MS     5000
#define REQUEST_TIMEOUT_MS 30000
#define CLIENT_ID          "kadmit-metadata"
/* DescribeCluster v1 has endpoint_type, v2 include_fenced_brokers. */
#define DESCRIBE_CLUSTER_MIN_VERSION 1
#define DESCRIBE_CLUSTER_MAX_VERSION 2
#define ENDPOINT_TYPE_BROKERS        1

static void start_connect(ka_mdc_t *c);
static void start_refresh(ka_mdc_t *c);
static void refresh_timer_cb(uv_timer_t *t);

static int64_t now_ms(ka_mdc_t *c)
{
    return (int64_t)uv_now(c->loop);
}

static void free_refresh(ka_mdc_t *c, struct ka_mdc_refresh *f)
{
    ka_arena_destroy(&f->arena);
    for (int i = 0; i < f->frame_count; i++)
        ka_mdc_conn_release(&c->conn, f->frames[i]);
    ka_cluster_unref(f->view);
    free(f);
}

/* Ends the refresh in progress; one a worker holds is left to its completion. */
static void drop_refresh(ka_mdc_t *c)
{
    struct ka_mdc_refresh *f = c->refresh;

    if (f == NULL)
        return;
    c->refresh = NULL;
    if (f->busy)
        f->abandoned = 1;
    else
        free_refresh(c, f);
}

/* One of the client's handles (two timers, the socket) has closed. */
static void release_handle(ka_mdc_t *c)
{
    if (--c->handles == 0 && c->stopping) {
        ka_mdc_sasl_clear(&c->sasl);
        memset(&c->sec, 0, sizeof(c->sec));
        free(c);
    }
}

static void handle_closed(uv_handle_t *h)
{
    release_handle(h->data);
}

static void reconnect_cb(uv_timer_t *t)
{
    start_connect(t->data);
}

static void conn_closed_cb(void *owner)
{
    ka_mdc_t *c = owner;
    if (!c->stopping) {
        /* Reconnect after the backoff. */
        uv_timer_start(&c->io_timer, reconnect_cb, c->backoff_ms, 0);
        c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    }
    release_handle(c);
}

/* Closes the connection after an error; a refresh in progress fails. */
static void fail(ka_mdc_t *c, const char *what, const char *detail)
{
    int was_refreshing = c->st >= ST_METADATA || c->refresh_wanted;
    ka_log(KA_LOG_WARN, "metadata client: connection failed, reconnecting",
           KA_KS("upstream", c->name), KA_KS("step", what), KA_KS("error", detail),
           KA_KI("retry_in_ms", c->backoff_ms));
    drop_refresh(c);
    c->st = ST_DOWN;
    ka_mdc_sasl_clear(&c->sasl);
    uv_timer_stop(&c->io_timer);
    ka_mdc_conn_close(&c->conn);
    if (was_refreshing) {
        c->metrics->metadata_refresh_failures++;
        c->cb(c->arg, NULL, what);
    }
}

static void conn_error_cb(void *owner, const char *step, const char *detail)
{
    fail(owner, step, detail);
}

static void timeout_cb(uv_timer_t *t)
{
    fail(t->data, "timeout", "no response within 30 s");
}

/* The API each waiting state expects an answer of, and at which version. */
static int16_t awaited_api(const ka_mdc_t *c, int16_t *version)
{
    switch (c->st) {
    case ST_VERSIONS:
        *version = 0;
        return KA_APIVERSIONS_REQUEST_API_KEY;
    case ST_SASL_HANDSHAKE:
        *version = KA_MDC_SASL_HANDSHAKE_VERSION;
        return KA_SASLHANDSHAKE_REQUEST_API_KEY;
    case ST_SASL_AUTH:
        *version = KA_MDC_SASL_AUTHENTICATE_VERSION;
        return KA_SASLAUTHENTICATE_REQUEST_API_KEY;
    case ST_METADATA:
        *version = c->metadata_version;
        return KA_METADATA_REQUEST_API_KEY;
    case ST_CLUSTER:
        *version = c->cluster_version;
        return KA_DESCRIBECLUSTER_REQUEST_API_KEY;
    case ST_CONFIGS:
        *version = c->configs_version;
        return KA_DESCRIBECONFIGS_REQUEST_API_KEY;
    case ST_LOGDIRS:
        *version = c->logdirs_version;
        return KA_DESCRIBELOGDIRS_REQUEST_API_KEY;
    case ST_REASSIGN:
        *version = 0; /* Kafka 2.4+ */
        return KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY;
    default:
        *version = -1;
        return -1;
    }
}

/*
 * Enters a waiting state by sending its request: header v1/v2 for the
 * state's API and version, then the body through the generated codec.
 */
static int enter(ka_mdc_t *c, enum state st, const void *body)
{
    ka_writer_t w;
    int16_t version;
    c->st = st;
    int16_t api_key = awaited_api(c, &version);
    const struct ka_codec *codec = ka_codec_find(api_key, KA_REQUEST);
    struct ka_request_header h = {.request_api_key = api_key,
                                  .request_api_version = version,
                                  .correlation_id = c->next_cid++,
                                  .client_id = KA_SLICE_LIT(CLIENT_ID),
                                  .tagged_fields = {NULL, 0}};
    if (c->next_cid < 0)
        c->next_cid = 0;
    if (codec == NULL)
        return KA_EUNSUPPORTED;
    ka_writer_init(&w, KA_MDC_MAX_RESPONSE);
    ka_write_i32(&w, 0);
    ka_request_header_encode(&w, ka_request_header_version(api_key, version), &h);
    codec->encode(&w, version, body);
    if (w.err == 0)
        ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    int rc = w.err != 0 ? KA_EOVERFLOW : ka_mdc_conn_send(&c->conn, w.buf, w.len);
    ka_writer_free(&w);
    if (rc < 0)
        return rc;
    c->expect_cid = h.correlation_id;
    uv_timer_start(&c->io_timer, timeout_cb, REQUEST_TIMEOUT_MS, 0);
    return 0;
}

static void send_metadata(ka_mdc_t *c)
{
    struct ka_metadata_request req;
    ka_metadata_request_init(&req);
    req.topics.count = -1; /* null: every topic (versions 1+) */
    req.allow_auto_topic_creation = 0;
    drop_refresh(c);
    c->refresh = calloc(1, sizeof(*c->refresh));
    if (c->refresh == NULL) {
        c->st = ST_METADATA;
        fail(c, "metadata", "out of memory");
        return;
    }
    c->refresh->owner = c;
    c->refresh->work.data = c->refresh;
    c->refresh->taken_at_ms = now_ms(c);
    ka_arena_init(&c->refresh->arena, KA_ARENA_DEFAULT_CAP);
    if (enter(c, ST_METADATA, &req) < 0)
        fail(c, "metadata", "cannot send");
}

static void send_cluster(ka_mdc_t *c)
{
    struct ka_describecluster_request req;
    ka_describecluster_request_init(&req);
    req.include_cluster_authorized_operations = 0;
    req.endpoint_type = ENDPOINT_TYPE_BROKERS;
    req.include_fenced_brokers = 1; /* versions 2+; not written below */
    if (enter(c, ST_CLUSTER, &req) < 0)
        fail(c, "describe cluster", "cannot send");
}

/* Asks every broker Metadata lists for its defaults (ka_mdc_configs_request). */
static void send_configs(ka_mdc_t *c)
{
    struct ka_describeconfigs_request req;
    void *storage = NULL;

    if (ka_mdc_configs_request(&c->refresh->metadata, &req, &storage) < 0) {
        fail(c, "configs", "out of memory");
        return;
    }
    int rc = enter(c, ST_CONFIGS, &req);
    free(storage);
    if (rc < 0)
        fail(c, "configs", "cannot send");
}

/* Gives the refresh to a worker; done runs on the loop when it is back. */
static void hand_to_worker(ka_mdc_t *c, enum state st, uv_work_cb work, uv_after_work_cb done)
{
    struct ka_mdc_refresh *f = c->refresh;
    int rc;

    c->st = st;
    f->busy = 1;
    c->handles++; /* the client outlives the work, even when stopped */
    rc = uv_queue_work(c->loop, &f->work, work, done);
    if (rc < 0) {
        f->busy = 0;
        c->handles--;
        fail(c, "worker", uv_strerror(rc));
    }
}

/*
 * The start of every completion: the refresh is the loop's again. Returns
 * the client to go on with, or NULL when the refresh was abandoned (then
 * freed here).
 */
static ka_mdc_t *back_from_worker(struct ka_mdc_refresh *f)
{
    ka_mdc_t *c = f->owner;

    f->busy = 0;
    c->metrics->metadata_offloop_us_sum += f->work_ns / 1000;
    f->work_ns = 0;
    if (!f->abandoned)
        return c;
    free_refresh(c, f);
    release_handle(c);
    return NULL;
}

/* The end of every completion, with the loop time it took. */
static void done_on_loop(ka_mdc_t *c, uint64_t start_ns)
{
    ka_loop_watch_charge(c->watch, ka_loop_watch_now_ns() - start_ns);
    release_handle(c);
}

static int on_answer(ka_mdc_t *c, int16_t api, void *answer, char *why, size_t whylen);

static void decode_done(uv_work_t *w, int status)
{
    uint64_t start = ka_loop_watch_now_ns();
    struct ka_mdc_refresh *f = w->data;
    ka_mdc_t *c = back_from_worker(f);

    (void)status; /* the work is never cancelled */
    if (c == NULL)
        return;
    if (f->rc < 0)
        fail(c, ka_api_name(KA_METADATA_REQUEST_API_KEY), f->err[0] ? f->err : ka_strerror(f->rc));
    else {
        if (c->brokers_cb != NULL)
            c->brokers_cb(c->brokers_arg, &f->metadata);
        on_answer(c, KA_METADATA_REQUEST_API_KEY, &f->metadata, NULL, 0);
    }
    done_on_loop(c, start);
}

static void build_done(uv_work_t *w, int status)
{
    uint64_t start = ka_loop_watch_now_ns();
    struct ka_mdc_refresh *f = w->data;
    ka_mdc_t *c = back_from_worker(f);
    ka_cluster_t *view;
    char err[sizeof(f->err)];
    int rc;

    (void)status;
    if (c == NULL)
        return;
    view = f->view;
    f->view = NULL;
    rc = f->rc;
    memcpy(err, f->err, sizeof(err));
    int have_logdirs = f->have_logdirs;
    ka_logdirs_check_t f_logdirs = f->logdirs;
    ka_own_rf_plan_t plan;
    int raise =
        view != NULL && ka_own_rf_due(&c->own_rf, view, ka_own_rf_is_own, now_ms(c),
                                      (int64_t)(uv_hrtime() / 1000 % KA_OWN_RF_JITTER_MS), &plan);
    drop_refresh(c);
    c->st = ST_IDLE;
    c->backoff_ms = BACKOFF_MIN_MS;
    if (rc < 0) {
        ka_log(KA_LOG_WARN, "metadata client: cannot build the view", KA_KS("upstream", c->name),
               KA_KS("error", err));
        c->metrics->metadata_refresh_failures++;
        c->cb(c->arg, NULL, "cannot build the view");
    } else {
        c->metrics->metadata_refreshes++;
        if (have_logdirs) /* the view is this thread's alone until c->cb */
            ka_logdirs_track(&c->logdirs, &f_logdirs, c->sec.username, c->name, c->metrics);
        if (c->logdirs.partial[0])
            ka_cluster_mark_partial(view, c->logdirs.partial);
        c->cb(c->arg, view, NULL);
        ka_own_rf_msg_t msg;
        ka_own_rf_request(&plan, &msg);
        if (raise && c->st == ST_IDLE && enter(c, ST_REASSIGN, &msg.req) < 0)
            fail(c, "alter partition reassignments", "cannot send");
        else if (!raise && c->refresh_wanted)
            start_refresh(c);
    }
    done_on_loop(c, start);
}

/* Every replica of every topic in the broker's log directories (topics null). */
static void send_logdirs(ka_mdc_t *c)
{
    struct ka_describelogdirs_request req;
    ka_describelogdirs_request_init(&req);
    req.topics.count = -1;
    c->refresh->asked_logdirs = 1;
    c->logdirs.last_ms = now_ms(c);
    if (enter(c, ST_LOGDIRS, &req) < 0)
        fail(c, "describe log dirs", "cannot send");
}

static void finish_refresh(ka_mdc_t *c)
{
    uv_timer_stop(&c->io_timer);
    if (c->logdirs_version >= 0 && !c->refresh->asked_logdirs &&
        ka_logdirs_due(&c->logdirs, now_ms(c))) {
        send_logdirs(c);
        return;
    }
    /* The view is built with the defaults known before this refresh's. */
    c->refresh->fallback = c->defaults;
    c->refresh->have_fallback = c->have_defaults;
    ka_mdc_refresh_note_defaults(c->refresh, &c->defaults, &c->have_defaults);
    hand_to_worker(c, ST_BUILDING, ka_mdc_refresh_build_work, build_done);
}

/* After Metadata and DescribeCluster: the configs, if the broker has them. */
static void after_cluster(ka_mdc_t *c)
{
    if (c->configs_version >= 0 && c->refresh->metadata.brokers.count > 0)
        send_configs(c);
    else
        finish_refresh(c);
}

static void connected(ka_mdc_t *c)
{
    ka_log(KA_LOG_INFO, "metadata client connected", KA_KS("upstream", c->name),
           KA_KI("metadata_version", c->metadata_version),
           KA_KI("describe_cluster_version", c->cluster_version),
           KA_KI("describe_configs_version", c->configs_version),
           KA_KS("tls", ka_mdc_conn_is_tls(&c->conn) ? "on" : "off"),
           KA_KS("sasl", c->sec.mechanism[0] ? c->sec.mechanism : "none"));
    uv_timer_stop(&c->io_timer);
    c->st = ST_IDLE;
    if (c->refresh_wanted)
        start_refresh(c);
}

static int16_t negotiate(const struct ka_apiversions_response_api_version *a, int16_t mine)
{
    int16_t v = a->max_version < mine ? a->max_version : mine;
    return v < a->min_version ? -1 : v;
}

static int on_versions(ka_mdc_t *c, const struct ka_apiversions_response *resp)
{
    if (resp->error_code != 0)
        return KA_EINVALID;
    c->metadata_version = c->cluster_version = c->configs_version = c->logdirs_version = -1;
    for (int32_t i = 0; i < resp->api_keys.count; i++) {
        const struct ka_apiversions_response_api_version *a = &resp->api_keys.items[i];
        if (a->api_key == KA_METADATA_REQUEST_API_KEY)
            c->metadata_version = negotiate(a, ka_decoded_max_version(a->api_key));
        else if (a->api_key == KA_DESCRIBECONFIGS_REQUEST_API_KEY)
            c->configs_version = negotiate(a, ka_decoded_max_version(a->api_key));
        else if (a->api_key == KA_DESCRIBECLUSTER_REQUEST_API_KEY)
            c->cluster_version = negotiate(a, DESCRIBE_CLUSTER_MAX_VERSION);
        else if (a->api_key == KA_DESCRIBELOGDIRS_REQUEST_API_KEY)
            c->logdirs_version = negotiate(a, KA_DESCRIBELOGDIRS_REQUEST_MAX_VERSION);
    }
    if (c->cluster_version < DESCRIBE_CLUSTER_MIN_VERSION)
        c->cluster_version = -1; /* v0 cannot ask for brokers: Metadata's list stands */
    if (c->metadata_version < 1)
        return KA_EUNSUPPORTED;
    if (c->sec.mechanism[0] != '\0') {
        struct ka_saslhandshake_request req;
        ka_mdc_sasl_begin(&c->sasl, &c->sec, &req);
        return enter(c, ST_SASL_HANDSHAKE, &req);
    }
    connected(c);
    return 0;
}

static int on_sasl_handshake(ka_mdc_t *c, const struct ka_saslhandshake_response *resp, char *why,
                             size_t whylen)
{
    struct ka_saslauthenticate_request next;
    int rc = ka_mdc_sasl_on_handshake(&c->sasl, resp, &next, why, whylen);
    return rc < 0 ? rc : enter(c, ST_SASL_AUTH, &next);
}

static int on_sasl_authenticate(ka_mdc_t *c, const struct ka_saslauthenticate_response *resp,
                                char *why, size_t whylen)
{
    struct ka_saslauthenticate_request next;
    int rc = ka_mdc_sasl_on_authenticate(&c->sasl, resp, &next, why, whylen);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return enter(c, ST_SASL_AUTH, &next);
    connected(c);
    return 0;
}

/* Where the decoded answer of the awaited API goes: the refresh keeps its own. */
static void *answer_slot(ka_mdc_t *c, int16_t api, void *scratch)
{
    if (api == KA_METADATA_REQUEST_API_KEY)
        return &c->refresh->metadata;
    if (api == KA_DESCRIBECLUSTER_REQUEST_API_KEY)
        return &c->refresh->cluster;
    if (api == KA_DESCRIBECONFIGS_REQUEST_API_KEY)
        return &c->refresh->configs;
    return scratch;
}

/* Dispatches a decoded answer; 0, or a negative ka_err with why filled where it helps. */
static int on_answer(ka_mdc_t *c, int16_t api, void *answer, char *why, size_t whylen)
{
    switch (api) {
    case KA_APIVERSIONS_REQUEST_API_KEY:
        return on_versions(c, answer);
    case KA_SASLHANDSHAKE_REQUEST_API_KEY:
        return on_sasl_handshake(c, answer, why, whylen);
    case KA_SASLAUTHENTICATE_REQUEST_API_KEY:
        return on_sasl_authenticate(c, answer, why, whylen);
    case KA_METADATA_REQUEST_API_KEY:
        if (c->cluster_version >= 0)
            send_cluster(c);
        else
            after_cluster(c);
        return 0;
    case KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY:
        ka_own_rf_answer(&c->own_rf.sent, answer, c->metrics);
        c->st = ST_IDLE;
        if (c->refresh_wanted)
            start_refresh(c);
        return 0;
    case KA_DESCRIBECLUSTER_REQUEST_API_KEY:
        c->refresh->have_cluster = 1;
        c->refresh->cluster_version = c->cluster_version;
        if (c->refresh->cluster.error_code != 0)
            ka_log(KA_LOG_DEBUG, "DescribeCluster refused; brokers from Metadata",
                   KA_KS("upstream", c->name), KA_KI("error_code", c->refresh->cluster.error_code));
        after_cluster(c);
        return 0;
    default:
        c->refresh->have_configs = 1;
        finish_refresh(c);
        return 0;
    }
}

/* One whole response frame (size prefix stripped), in buf. */
static void conn_frame_cb(void *owner, ka_pbuf_t *buf, const uint8_t *body, size_t len)
{
    ka_mdc_t *c = owner;
    uint64_t start = ka_loop_watch_now_ns();
    union {
        struct ka_apiversions_response versions;
        struct ka_saslhandshake_response handshake;
        struct ka_saslauthenticate_response authenticate;
        struct ka_alterpartitionreassignments_response reassign;
    } scratch;
    ka_reader_t r;
    ka_arena_t frame_arena;
    struct ka_response_header rh;
    int16_t ver;
    int16_t api = awaited_api(c, &ver);
    char why[300] = "";

    if (api < 0) {
        ka_mdc_conn_release(&c->conn, buf);
        fail(c, "read", "unexpected response");
        ka_loop_watch_charge(c->watch, ka_loop_watch_now_ns() - start);
        return;
    }
    uv_timer_stop(&c->io_timer);
    /* Answers a refresh keeps live in its arena, and their frame with them. */
    int kept = c->st >= ST_METADATA && c->refresh->frame_count < KA_MDC_REFRESH_FRAMES;
    ka_arena_t *arena = kept ? &c->refresh->arena : &frame_arena;
    if (kept)
        c->refresh->frames[c->refresh->frame_count++] = buf;
    else
        ka_arena_init(&frame_arena, KA_ARENA_DEFAULT_CAP);
    ka_reader_init(&r, body, len);
    int rc = ka_response_header_decode(&r, ka_response_header_version(api, ver), &rh);
    if (rc == 0 && rh.correlation_id != c->expect_cid)
        rc = KA_EINVALID;
    void *answer = answer_slot(c, api, &scratch);
    if (rc == 0 && kept && api == KA_METADATA_REQUEST_API_KEY) {
        /* Its read is after its arrival, and before any change a later callback makes. */
        uv_update_time(c->loop);
        c->refresh->answered_at_ms = now_ms(c);
        /* The one answer that grows with the cluster is decoded off the loop. */
        c->refresh->metadata_reader = r;
        c->refresh->metadata_version = ver;
        hand_to_worker(c, ST_DECODING, ka_mdc_refresh_decode_work, decode_done);
        ka_loop_watch_charge(c->watch, ka_loop_watch_now_ns() - start);
        return;
    }
    if (rc == 0 && kept && api == KA_DESCRIBELOGDIRS_REQUEST_API_KEY) {
        /* It grows with the broker's replicas: decoded on the worker that builds the view. */
        c->refresh->logdirs_reader = r;
        c->refresh->logdirs_version = ver;
        c->refresh->have_logdirs = 1;
        finish_refresh(c);
        ka_loop_watch_charge(c->watch, ka_loop_watch_now_ns() - start);
        return;
    }
    if (rc == 0)
        rc = ka_codec_find(api, KA_RESPONSE)->decode(&r, ver, arena, answer);
    /* Said now: a failed refresh drops the frame the reader points into. */
    if (rc < 0 && r.err)
        ka_decode_error_format_dir(why, sizeof(why), api, ver, KA_RESPONSE, &r);
    /* The decoded answer may still point into buf until on_answer returns. */
    if (rc == 0)
        rc = on_answer(c, api, answer, why, sizeof(why));
    if (!kept) {
        ka_arena_destroy(&frame_arena);
        ka_mdc_conn_release(&c->conn, buf);
    }
    if (rc < 0)
        fail(c, ka_api_name(api), why[0] ? why : ka_strerror(rc));
    ka_loop_watch_charge(c->watch, ka_loop_watch_now_ns() - start);
}

static void conn_ready_cb(void *owner)
{
    ka_mdc_t *c = owner;
    struct ka_apiversions_request req;
    ka_apiversions_request_init(&req);
    if (enter(c, ST_VERSIONS, &req) < 0)
        fail(c, "versions", "cannot send");
}

static const ka_mdc_conn_events_t conn_events = {
    .ready_cb = conn_ready_cb,
    .frame_cb = conn_frame_cb,
    .error_cb = conn_error_cb,
    .closed_cb = conn_closed_cb,
};

void ka_mdc_set_security(ka_mdc_t *c, const ka_mdc_security_t *sec)
{
    c->sec = *sec;
}

void ka_mdc_set_pool(ka_mdc_t *c, ka_pool_t *pool)
{
    ka_mdc_conn_set_pool(&c->conn, pool);
}

static void start_connect(ka_mdc_t *c)
{
    if (c->stopping || ka_mdc_conn_is_open(&c->conn))
        return;
    c->handles++;
    c->st = ST_CONNECTING;
    int rc = ka_mdc_conn_open(&c->conn, (const struct sockaddr *)&c->addr, c->sec.tls);
    if (rc < 0) {
        fail(c, "connect", uv_strerror(rc));
        return;
    }
    /* The TLS handshake has the same time as any answer. */
    if (c->sec.tls != NULL)
        uv_timer_start(&c->io_timer, timeout_cb, REQUEST_TIMEOUT_MS, 0);
}

static void start_refresh(ka_mdc_t *c)
{
    if (c->st == ST_IDLE) {
        c->refresh_wanted = 0;
        send_metadata(c);
    } else {
        c->refresh_wanted = 1;
        if (c->st == ST_DOWN && !ka_mdc_conn_is_open(&c->conn) &&
            !uv_is_active((uv_handle_t *)&c->io_timer))
            start_connect(c);
    }
}

/* The periodic refresh at the mode's period; quiet_ms >= 0: the mode changed, say so. */
static void arm_refresh(ka_mdc_t *c, int64_t quiet_ms)
{
    uint64_t period = (uint64_t)ka_mdc_idle_period(&c->idle);
    uv_timer_start(&c->refresh_timer, refresh_timer_cb, period, period);
    if (quiet_ms >= 0)
        ka_mdc_idle_announce(&c->idle, c->name, quiet_ms, c->metrics);
}

static void refresh_timer_cb(uv_timer_t *t)
{
    ka_mdc_t *c = t->data;
    int64_t quiet = ka_mdc_idle_tick(&c->idle, now_ms(c));
    if (quiet >= 0)
        arm_refresh(c, quiet);
    if (c->st == ST_IDLE)
        start_refresh(c);
    else if (c->st == ST_DOWN)
        c->refresh_wanted = 1;
}

void ka_mdc_refresh(ka_mdc_t *c)
{
    if (c->st >= ST_METADATA)
        return;
    start_refresh(c);
}

int ka_mdc_down(const ka_mdc_t *c)
{
    return c->st == ST_DOWN;
}

int ka_mdc_connected(const ka_mdc_t *c)
{
    return c->st >= ST_IDLE;
}

void ka_mdc_note_request(ka_mdc_t *c)
{
    int64_t quiet = ka_mdc_idle_activity(&c->idle, now_ms(c));
    if (quiet >= 0) /* else the timer runs on: steady requests must not postpone it */
        arm_refresh(c, quiet);
}

void ka_mdc_set_interval(ka_mdc_t *c, int64_t interval_ms, int64_t idle_interval_ms)
{
    arm_refresh(c, ka_mdc_idle_set(&c->idle, interval_ms, idle_interval_ms, now_ms(c)));
}

int ka_mdc_start(uv_loop_t *loop, const struct sockaddr *upstream, const char *upstream_name,
                 int64_t interval_ms, ka_metrics_t *metrics, ka_mdc_cb cb, void *arg,
                 ka_mdc_t **out)
{
    ka_mdc_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return KA_ENOMEM;
    c->loop = loop;
    memcpy(&c->addr, upstream,
           upstream->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                           : sizeof(struct sockaddr_in));
    snprintf(c->name, sizeof(c->name), "%s", upstream_name);
    c->metrics = metrics;
    c->cb = cb;
    c->arg = arg;
    c->backoff_ms = BACKOFF_MIN_MS;
    c->next_cid = 1;
    ka_mdc_conn_init(&c->conn, loop, &conn_events, c);
    uv_timer_init(loop, &c->refresh_timer);
    c->refresh_timer.data = c;
    uv_timer_init(loop, &c->io_timer);
    c->io_timer.data = c;
    uv_unref((uv_handle_t *)&c->refresh_timer);
    uv_unref((uv_handle_t *)&c->io_timer);
    c->handles = 2;
    if (ka_loop_watch_start(loop, metrics, &c->watch) < 0)
        c->watch = NULL; /* the client works without it */
    ka_mdc_idle_init(&c->idle, interval_ms, now_ms(c));
    ka_mdc_set_interval(c, interval_ms, interval_ms);
    c->refresh_wanted = 1;
    /* The first connection waits a loop turn, so that ka_mdc_set_security
     * and ka_mdc_set_pool, called right after start, cover it; meanwhile
     * the client counts as connecting, not down. */
    c->st = ST_CONNECTING;
    uv_timer_start(&c->io_timer, reconnect_cb, 0, 0);
    *out = c;
    return 0;
}

void ka_mdc_set_brokers_cb(ka_mdc_t *c, ka_mdc_brokers_cb cb, void *arg)
{
    c->brokers_cb = cb;
    c->brokers_arg = arg;
}

void ka_mdc_stop(ka_mdc_t *c)
{
    if (c == NULL || c->stopping)
        return;
    c->stopping = 1;
    drop_refresh(c);
    ka_loop_watch_stop(c->watch);
    uv_close((uv_handle_t *)&c->refresh_timer, handle_closed);
    uv_close((uv_handle_t *)&c->io_timer, handle_closed);
    ka_mdc_conn_close(&c->conn);
}
