/*
 * ka_metadata_client.c: the metadata client (see ka_metadata_client.h).
 *
 * One request is outstanding at a time, so the connection is a simple state
 * machine: CONNECTING -> [TLS handshake] -> VERSIONS (ApiVersions) ->
 * [SASL_HANDSHAKE -> SASL_AUTH, once per SASL round] -> IDLE; a refresh
 * runs METADATA -> CONFIGS -> IDLE. Any error closes the connection,
 * reports a failed attempt and reconnects after the backoff.
 *
 * Over TLS, reads land in a fixed ciphertext buffer and are decrypted into
 * the frame buffer; every request is encrypted into its write request.
 */
#include "ka_metadata_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_log.h"
#include "ka_protocol.h"
#include "ka_scram.h"

#define BACKOFF_MIN_MS     100
#define BACKOFF_MAX_MS     5000
#define REQUEST_TIMEOUT_MS 30000
#define MAX_RESPONSE       ((size_t)256 * 1024 * 1024)
#define CLIENT_ID          "kadmit-metadata"

enum state {
    ST_DOWN = 0,
    ST_CONNECTING,
    ST_TLS,
    ST_VERSIONS,
    ST_SASL_HANDSHAKE,
    ST_SASL_AUTH,
    ST_IDLE,
    ST_METADATA,
    ST_CONFIGS
};
#define API_SASL_HANDSHAKE     17
#define API_SASL_AUTHENTICATE  36
#define SASL_HANDSHAKE_VERSION 1
#define SASL_AUTH_VERSION      1

struct ka_mdc {
    uv_loop_t *loop;
    struct sockaddr_storage addr;
    char name[300];
    ka_metrics_t *metrics;
    ka_mdc_cb cb;
    void *arg;

    uv_tcp_t tcp;
    int tcp_open;
    uv_connect_t connect_req;
    uv_timer_t refresh_timer; /* periodic refresh */
    uv_timer_t io_timer;      /* reconnect backoff, request timeout */
    int handles;              /* open handles; freed when 0 after stop */
    int stopping;

    enum state st;
    int refresh_wanted; /* a refresh should run once connected */
    int64_t interval_ms;
    uint64_t backoff_ms;
    int32_t next_cid;
    int32_t expect_cid;

    int16_t metadata_version;
    int16_t configs_version;

    uint8_t *rbuf; /* bytes read, not yet a whole frame */
    size_t rlen, rcap;

    /* The refresh in progress. */
    ka_cluster_builder_t *builder;
    int64_t taken_at_ms;
    int32_t *broker_ids;
    int32_t broker_count;
    ka_broker_defaults_t defaults; /* last known; kept across refreshes */
    int have_defaults;

    ka_mdc_security_t sec;
    ka_transport_t *tls;   /* this connection's TLS engine, when sec.tls is set */
    uint8_t cipher[16384]; /* ciphertext of one read */
    ka_scram_t scram;      /* the SCRAM exchange in progress */
    int sasl_step;         /* SaslAuthenticate round trips done */
};

static void start_connect(ka_mdc_t *c);
static void start_refresh(ka_mdc_t *c);
static int reserve(ka_mdc_t *c);
static int send_records(ka_mdc_t *c);
static int send_sasl_handshake(ka_mdc_t *c);

static int64_t now_ms(ka_mdc_t *c)
{
    return (int64_t)uv_now(c->loop);
}

static void drop_tls(ka_mdc_t *c)
{
    ka_transport_free(c->tls);
    c->tls = NULL;
    ka_scram_clear(&c->scram);
}

static void handle_closed(uv_handle_t *h)
{
    ka_mdc_t *c = h->data;
    if (--c->handles == 0 && c->stopping) {
        drop_tls(c);
        memset(&c->sec, 0, sizeof(c->sec));
        free(c->rbuf);
        free(c->broker_ids);
        ka_cluster_builder_free(c->builder);
        free(c);
    }
}

static void drop_refresh(ka_mdc_t *c)
{
    ka_cluster_builder_free(c->builder);
    c->builder = NULL;
    free(c->broker_ids);
    c->broker_ids = NULL;
    c->broker_count = 0;
}

static void reconnect_cb(uv_timer_t *t)
{
    start_connect(t->data);
}

static void tcp_closed(uv_handle_t *h)
{
    ka_mdc_t *c = h->data;
    c->tcp_open = 0;
    if (!c->stopping) {
        /* Reconnect after the backoff. */
        uv_timer_start(&c->io_timer, reconnect_cb, c->backoff_ms, 0);
        c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    }
    handle_closed(h);
}

static bool slice_is(ka_slice_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == (int32_t)n && memcmp(s.ptr, lit, n) == 0;
}

/* Closes the connection after an error; a refresh in progress fails. */
static void fail(ka_mdc_t *c, const char *what, const char *detail)
{
    int was_refreshing = c->st == ST_METADATA || c->st == ST_CONFIGS || c->refresh_wanted;
    ka_log(KA_LOG_WARN, "metadata client: connection failed, reconnecting",
           KA_KS("upstream", c->name), KA_KS("step", what), KA_KS("error", detail),
           KA_KI("retry_in_ms", c->backoff_ms));
    drop_refresh(c);
    c->st = ST_DOWN;
    c->rlen = 0;
    drop_tls(c);
    uv_timer_stop(&c->io_timer);
    if (c->tcp_open && !uv_is_closing((uv_handle_t *)&c->tcp)) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        uv_close((uv_handle_t *)&c->tcp, tcp_closed);
    }
    if (was_refreshing) {
        c->metrics->metadata_refresh_failures++;
        c->cb(c->arg, NULL, what);
    }
}

static void write_cb(uv_write_t *req, int status)
{
    ka_mdc_t *c = req->data;
    free(req);
    if (status < 0 && !c->stopping && c->st != ST_DOWN)
        fail(c, "write", uv_strerror(status));
}

static void timeout_cb(uv_timer_t *t)
{
    ka_mdc_t *c = t->data;
    fail(c, "timeout", "no response within 30 s");
}

/* Writes the TLS records the engine produced (handshake or requests). */
static int send_records(ka_mdc_t *c)
{
    size_t n;
    while ((n = ka_transport_pending(c->tls)) > 0) {
        uv_write_t *req = malloc(sizeof(*req) + n);
        if (req == NULL)
            return KA_ENOMEM;
        uint8_t *bytes = (uint8_t *)(req + 1);
        uv_buf_t buf = uv_buf_init((char *)bytes, (unsigned)ka_transport_take(c->tls, bytes, n));
        req->data = c;
        int rc = uv_write(req, (uv_stream_t *)&c->tcp, &buf, 1, write_cb);
        if (rc < 0) {
            free(req);
            return rc;
        }
    }
    return 0;
}

/* Sends one request: header v1/v2 for (api_key, version), then body. */
static int send_request(ka_mdc_t *c, int16_t api_key, int16_t version,
                        int (*enc)(ka_writer_t *, int16_t, const void *), const void *body)
{
    ka_writer_t w;
    struct ka_request_header h = {.request_api_key = api_key,
                                  .request_api_version = version,
                                  .correlation_id = c->next_cid++,
                                  .client_id = KA_SLICE_LIT(CLIENT_ID),
                                  .tagged_fields = {NULL, 0}};
    if (c->next_cid < 0)
        c->next_cid = 0;
    ka_writer_init(&w, MAX_RESPONSE);
    ka_write_i32(&w, 0);
    ka_request_header_encode(&w, ka_request_header_version(api_key, version), &h);
    if (enc != NULL)
        enc(&w, version, body);
    if (w.err == 0)
        ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    if (w.err != 0) {
        ka_writer_free(&w);
        return KA_EOVERFLOW;
    }
    /* One allocation: the write request, then the bytes. */
    uv_write_t *req = malloc(sizeof(*req) + w.len);
    if (req == NULL) {
        ka_writer_free(&w);
        return KA_ENOMEM;
    }
    uint8_t *bytes = (uint8_t *)(req + 1);
    memcpy(bytes, w.buf, w.len);
    size_t len = w.len;
    ka_writer_free(&w);
    c->expect_cid = h.correlation_id;
    if (c->tls != NULL) {
        int rc = ka_transport_write(c->tls, bytes, len);
        free(req);
        if (rc < 0)
            return rc;
        if ((rc = send_records(c)) < 0)
            return rc;
    } else {
        uv_buf_t buf = uv_buf_init((char *)bytes, (unsigned)len);
        req->data = c;
        int rc = uv_write(req, (uv_stream_t *)&c->tcp, &buf, 1, write_cb);
        if (rc < 0) {
            free(req);
            return rc;
        }
    }
    uv_timer_start(&c->io_timer, timeout_cb, REQUEST_TIMEOUT_MS, 0);
    return 0;
}

static int apiversions_encode(ka_writer_t *w, int16_t v, const void *b)
{
    (void)w;
    (void)v;
    (void)b;
    return 0; /* v0 has an empty body */
}

static void send_metadata(ka_mdc_t *c)
{
    struct ka_metadata_request req;
    ka_metadata_request_init(&req);
    req.topics.count = c->metadata_version >= 1 ? -1 : 0; /* null: every topic */
    req.allow_auto_topic_creation = 0;
    c->taken_at_ms = now_ms(c);
    c->st = ST_METADATA;
    if (send_request(c, KA_METADATA_REQUEST_API_KEY, c->metadata_version,
                     (int (*)(ka_writer_t *, int16_t, const void *))ka_metadata_request_encode,
                     &req) < 0)
        fail(c, "metadata", "cannot send");
}

static void send_configs(ka_mdc_t *c)
{
    static ka_slice_t keys[] = {KA_SLICE_LIT("num.partitions"),
                                KA_SLICE_LIT("default.replication.factor"),
                                KA_SLICE_LIT("auto.create.topics.enable")};
    struct ka_describeconfigs_request req;
    ka_describeconfigs_request_init(&req);
    struct ka_describeconfigs_request_describe_configs_resource *res =
        calloc((size_t)c->broker_count, sizeof(*res));
    char(*names)[16] = calloc((size_t)c->broker_count, sizeof(*names));
    if (res == NULL || names == NULL) {
        free(res);
        free(names);
        fail(c, "configs", "out of memory");
        return;
    }
    for (int32_t i = 0; i < c->broker_count; i++) {
        ka_describeconfigs_request_describe_configs_resource_init(&res[i]);
        int n = snprintf(names[i], sizeof(names[i]), "%d", c->broker_ids[i]);
        res[i].resource_type = 4; /* BROKER */
        res[i].resource_name = (ka_slice_t){(const uint8_t *)names[i], n};
        res[i].configuration_keys.count = 3;
        res[i].configuration_keys.items = keys;
    }
    req.resources.count = c->broker_count;
    req.resources.items = res;
    c->st = ST_CONFIGS;
    int rc = send_request(
        c, KA_DESCRIBECONFIGS_REQUEST_API_KEY, c->configs_version,
        (int (*)(ka_writer_t *, int16_t, const void *))ka_describeconfigs_request_encode, &req);
    free(res);
    free(names);
    if (rc < 0)
        fail(c, "configs", "cannot send");
}

static void finish_refresh(ka_mdc_t *c)
{
    ka_cluster_t *view = NULL;
    if (c->have_defaults)
        ka_cluster_builder_set_defaults(c->builder, &c->defaults);
    int rc = ka_cluster_builder_finish(c->builder, &view);
    c->builder = NULL;
    free(c->broker_ids);
    c->broker_ids = NULL;
    c->broker_count = 0;
    c->st = ST_IDLE;
    c->backoff_ms = BACKOFF_MIN_MS;
    if (rc < 0) {
        c->metrics->metadata_refresh_failures++;
        c->cb(c->arg, NULL, "cannot build the view");
        return;
    }
    c->metrics->metadata_refreshes++;
    c->cb(c->arg, view, NULL);
    if (c->refresh_wanted)
        start_refresh(c);
}

static void connected(ka_mdc_t *c)
{
    ka_log(KA_LOG_INFO, "metadata client connected", KA_KS("upstream", c->name),
           KA_KI("metadata_version", c->metadata_version),
           KA_KI("describe_configs_version", c->configs_version),
           KA_KS("tls", c->tls ? "on" : "off"),
           KA_KS("sasl", c->sec.mechanism[0] ? c->sec.mechanism : "none"));
    c->st = ST_IDLE;
    if (c->refresh_wanted)
        start_refresh(c);
}

static int sasl_handshake_encode(ka_writer_t *w, int16_t v, const void *b)
{
    (void)v;
    const ka_mdc_t *c = b;
    return ka_write_string(
        w, (ka_slice_t){(const uint8_t *)c->sec.mechanism, (int32_t)strlen(c->sec.mechanism)});
}

static int sasl_auth_encode(ka_writer_t *w, int16_t v, const void *b)
{
    (void)v;
    return ka_write_bytes(w, *(const ka_slice_t *)b);
}

static int send_sasl_handshake(ka_mdc_t *c)
{
    c->st = ST_SASL_HANDSHAKE;
    return send_request(c, API_SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, sasl_handshake_encode, c);
}

static int send_sasl_token(ka_mdc_t *c, const void *token, size_t len)
{
    ka_slice_t bytes = {(const uint8_t *)token, (int32_t)len};
    c->st = ST_SASL_AUTH;
    return send_request(c, API_SASL_AUTHENTICATE, SASL_AUTH_VERSION, sasl_auth_encode, &bytes);
}

/* SaslHandshake answered: send the mechanism's first message. */
static int on_sasl_handshake(ka_mdc_t *c, ka_reader_t *r, char *why, size_t whylen)
{
    int16_t error_code;
    if (ka_read_i16(r, &error_code) < 0)
        return KA_EINVALID;
    if (error_code != 0) {
        snprintf(why, whylen, "the broker does not enable SASL mechanism %s (error %d)",
                 c->sec.mechanism, error_code);
        return KA_EUNSUPPORTED;
    }
    r->off = r->len; /* the enabled mechanisms are not needed */
    c->sasl_step = 0;
    if (strcmp(c->sec.mechanism, "PLAIN") == 0) {
        char msg[2 + sizeof(c->sec.username) + sizeof(c->sec.password)];
        size_t ul = strlen(c->sec.username), pl = strlen(c->sec.password);
        msg[0] = '\0';
        memcpy(msg + 1, c->sec.username, ul);
        msg[1 + ul] = '\0';
        memcpy(msg + 2 + ul, c->sec.password, pl);
        int rc = send_sasl_token(c, msg, 2 + ul + pl);
        memset(msg, 0, sizeof(msg));
        return rc;
    }
    char first[KA_SCRAM_MAX_MESSAGE];
    long n;
    if (ka_scram_init(&c->scram, c->sec.mechanism, c->sec.username, c->sec.password, NULL) < 0 ||
        (n = ka_scram_client_first(&c->scram, first, sizeof(first))) < 0) {
        snprintf(why, whylen, "cannot start %s for this user name", c->sec.mechanism);
        return KA_EINVALID;
    }
    return send_sasl_token(c, first, (size_t)n);
}

/* SaslAuthenticate answered: the next SCRAM message, or done. */
static int on_sasl_auth(ka_mdc_t *c, ka_reader_t *r, char *why, size_t whylen)
{
    int16_t error_code;
    ka_slice_t message, token;
    int64_t lifetime;
    if (ka_read_i16(r, &error_code) < 0 || ka_read_nullable_string(r, &message) < 0 ||
        ka_read_bytes(r, &token) < 0 || ka_read_i64(r, &lifetime) < 0)
        return KA_EINVALID;
    if (error_code != 0) {
        snprintf(why, whylen, "authentication as %s failed: %.*s (error %d)", c->sec.username,
                 message.len > 0 ? (int)message.len : 0,
                 message.ptr ? (const char *)message.ptr : "", error_code);
        return KA_EINVALID;
    }
    c->sasl_step++;
    if (strcmp(c->sec.mechanism, "PLAIN") == 0 || c->sasl_step == 2) {
        if (c->sasl_step == 2 &&
            ka_scram_verify_server(&c->scram, token.ptr, token.len > 0 ? (size_t)token.len : 0, why,
                                   whylen) < 0)
            return KA_EINVALID;
        ka_scram_clear(&c->scram);
        connected(c);
        return 0;
    }
    char final[KA_SCRAM_MAX_MESSAGE];
    long n = ka_scram_client_final(&c->scram, token.ptr, token.len > 0 ? (size_t)token.len : 0,
                                   final, sizeof(final), why, whylen);
    if (n < 0)
        return (int)n;
    return send_sasl_token(c, final, (size_t)n);
}

static int on_versions(ka_mdc_t *c, ka_reader_t *r, ka_arena_t *arena)
{
    struct ka_apiversions_response resp;
    if (ka_apiversions_response_decode(r, 0, arena, &resp) < 0 || resp.error_code != 0)
        return KA_EINVALID;
    c->metadata_version = -1;
    c->configs_version = -1;
    for (int32_t i = 0; i < resp.api_keys.count; i++) {
        const struct ka_apiversions_response_api_version *a = &resp.api_keys.items[i];
        int16_t mine = ka_decoded_max_version(a->api_key);
        int16_t v = a->max_version < mine ? a->max_version : mine;
        if (v < a->min_version)
            continue;
        if (a->api_key == KA_METADATA_REQUEST_API_KEY)
            c->metadata_version = v;
        else if (a->api_key == KA_DESCRIBECONFIGS_REQUEST_API_KEY)
            c->configs_version = v;
    }
    if (c->metadata_version < 1)
        return KA_EUNSUPPORTED;
    if (c->sec.mechanism[0] != '\0')
        return send_sasl_handshake(c);
    connected(c);
    return 0;
}

static int on_metadata(ka_mdc_t *c, ka_reader_t *r, ka_arena_t *arena)
{
    struct ka_metadata_response resp;
    int rc = ka_metadata_response_decode(r, c->metadata_version, arena, &resp);
    if (rc < 0)
        return rc;
    drop_refresh(c);
    if ((rc = ka_cluster_builder_new(c->taken_at_ms, &c->builder)) < 0)
        return rc;
    c->broker_ids =
        calloc(resp.brokers.count > 0 ? (size_t)resp.brokers.count : 1, sizeof(int32_t));
    if (c->broker_ids == NULL)
        return KA_ENOMEM;
    for (int32_t i = 0; i < resp.brokers.count; i++) {
        const struct ka_metadata_response_metadata_response_broker *b = &resp.brokers.items[i];
        if ((rc = ka_cluster_builder_add_broker(c->builder, b->node_id, b->rack, false)) < 0)
            return rc;
        c->broker_ids[c->broker_count++] = b->node_id;
    }
    for (int32_t i = 0; i < resp.topics.count; i++) {
        const struct ka_metadata_response_metadata_response_topic *t = &resp.topics.items[i];
        if (t->name.len < 0)
            continue;
        if ((rc = ka_cluster_builder_add_topic(c->builder, t->name)) < 0)
            return rc;
        for (int32_t p = 0; p < t->partitions.count; p++) {
            const struct ka_metadata_response_metadata_response_partition *pp =
                &t->partitions.items[p];
            rc = ka_cluster_builder_add_partition(
                c->builder, t->name, pp->partition_index, pp->replica_nodes.items,
                pp->replica_nodes.count > 0 ? pp->replica_nodes.count : 0);
            if (rc < 0)
                return rc;
        }
    }
    if (c->configs_version >= 0 && c->broker_count > 0)
        send_configs(c);
    else
        finish_refresh(c);
    return 0;
}

static int parse_int(ka_slice_t v, long *out)
{
    char buf[32];
    if (v.len <= 0 || v.len >= (int32_t)sizeof(buf))
        return -1;
    memcpy(buf, v.ptr, (size_t)v.len);
    buf[v.len] = '\0';
    char *end;
    *out = strtol(buf, &end, 10);
    return *end == '\0' ? 0 : -1;
}

static int on_configs(ka_mdc_t *c, ka_reader_t *r, ka_arena_t *arena)
{
    struct ka_describeconfigs_response resp;
    int rc = ka_describeconfigs_response_decode(r, c->configs_version, arena, &resp);
    if (rc < 0)
        return rc;
    for (int32_t i = 0; i < resp.results.count; i++) {
        const struct ka_describeconfigs_response_describe_configs_result *res =
            &resp.results.items[i];
        if (res->error_code != 0)
            continue;
        ka_broker_defaults_t d = {.num_partitions = 1,
                                  .default_replication_factor = 1,
                                  .auto_create_topics_enable = true};
        for (int32_t k = 0; k < res->configs.count; k++) {
            const struct ka_describeconfigs_response_describe_configs_resource_result *cf =
                &res->configs.items[k];
            long x;
            if (slice_is(cf->name, "num.partitions") && parse_int(cf->value, &x) == 0 && x > 0 &&
                x <= INT32_MAX)
                d.num_partitions = (int32_t)x;
            else if (slice_is(cf->name, "default.replication.factor") &&
                     parse_int(cf->value, &x) == 0 && x > 0 && x <= INT16_MAX)
                d.default_replication_factor = (int16_t)x;
            else if (slice_is(cf->name, "auto.create.topics.enable"))
                d.auto_create_topics_enable =
                    cf->value.len == 4 && memcmp(cf->value.ptr, "true", 4) == 0;
        }
        if (!c->have_defaults || memcmp(&d, &c->defaults, sizeof(d)) != 0)
            ka_log(
                KA_LOG_INFO, "broker defaults", KA_KS("broker", ""),
                KA_KI("num.partitions", d.num_partitions),
                KA_KI("default.replication.factor", d.default_replication_factor),
                KA_KS("auto.create.topics.enable", d.auto_create_topics_enable ? "true" : "false"));
        c->defaults = d;
        c->have_defaults = 1;
        break;
    }
    finish_refresh(c);
    return 0;
}

/* One whole response frame (size prefix stripped). */
static void on_frame(ka_mdc_t *c, const uint8_t *p, size_t n)
{
    ka_reader_t r;
    ka_arena_t arena;
    struct ka_response_header rh;
    int16_t api = c->st == ST_VERSIONS         ? KA_APIVERSIONS_REQUEST_API_KEY
                  : c->st == ST_METADATA       ? KA_METADATA_REQUEST_API_KEY
                  : c->st == ST_CONFIGS        ? KA_DESCRIBECONFIGS_REQUEST_API_KEY
                  : c->st == ST_SASL_HANDSHAKE ? API_SASL_HANDSHAKE
                  : c->st == ST_SASL_AUTH      ? API_SASL_AUTHENTICATE
                                               : -1;
    int16_t ver = c->st == ST_VERSIONS         ? 0
                  : c->st == ST_METADATA       ? c->metadata_version
                  : c->st == ST_SASL_HANDSHAKE ? SASL_HANDSHAKE_VERSION
                  : c->st == ST_SASL_AUTH      ? SASL_AUTH_VERSION
                                               : c->configs_version;
    char why[300] = "";
    if (api < 0) {
        fail(c, "read", "unexpected response");
        return;
    }
    uv_timer_stop(&c->io_timer);
    ka_reader_init(&r, p, n);
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    int rc = ka_response_header_decode(&r, ka_response_header_version(api, ver), &rh);
    if (rc == 0 && rh.correlation_id != c->expect_cid)
        rc = KA_EINVALID;
    if (rc == 0) {
        if (api == KA_APIVERSIONS_REQUEST_API_KEY)
            rc = on_versions(c, &r, &arena);
        else if (api == API_SASL_HANDSHAKE)
            rc = on_sasl_handshake(c, &r, why, sizeof(why));
        else if (api == API_SASL_AUTHENTICATE)
            rc = on_sasl_auth(c, &r, why, sizeof(why));
        else if (api == KA_METADATA_REQUEST_API_KEY)
            rc = on_metadata(c, &r, &arena);
        else
            rc = on_configs(c, &r, &arena);
    }
    ka_arena_destroy(&arena);
    if (rc < 0) {
        char text[256];
        ka_decode_error_format_dir(text, sizeof(text), api, ver, KA_RESPONSE, &r);
        fail(c, ka_api_name(api), r.err ? text : why[0] ? why : ka_strerror(rc));
    }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    ka_mdc_t *c = h->data;
    (void)suggested;
    if (c->tls != NULL) {
        *buf = uv_buf_init((char *)c->cipher, sizeof(c->cipher));
        return;
    }
    if (reserve(c) < 0) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

/* At least 64 KiB free at the end of the frame buffer. */
static int reserve(ka_mdc_t *c)
{
    if (c->rcap - c->rlen < 65536) {
        size_t cap = c->rcap ? c->rcap * 2 : 131072;
        uint8_t *nb = realloc(c->rbuf, cap);
        if (nb == NULL)
            return KA_ENOMEM;
        c->rbuf = nb;
        c->rcap = cap;
    }
    return 0;
}

static void send_versions(ka_mdc_t *c)
{
    c->st = ST_VERSIONS;
    if (send_request(c, KA_APIVERSIONS_REQUEST_API_KEY, 0, apiversions_encode, NULL) < 0)
        fail(c, "versions", "cannot send");
}

/* The engine's error outlives the engine, which fail() frees. */
static void tls_fail(ka_mdc_t *c)
{
    char why[256];
    snprintf(why, sizeof(why), "%s", ka_transport_error(c->tls));
    fail(c, c->st == ST_TLS ? "tls handshake" : "tls", why);
}

/* Decrypts what was read into the frame buffer; 0, or the connection failed. */
static int tls_input(ka_mdc_t *c, size_t nread)
{
    if (ka_transport_feed(c->tls, c->cipher, nread) < 0) {
        fail(c, "tls", "out of memory");
        return -1;
    }
    for (;;) {
        if (reserve(c) < 0) {
            fail(c, "read", "out of memory");
            return -1;
        }
        long n = ka_transport_read(c->tls, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (n < 0 || send_records(c) < 0) {
            tls_fail(c);
            return -1;
        }
        if (c->st == ST_TLS && ka_transport_established(c->tls)) {
            send_versions(c);
            if (c->st == ST_DOWN)
                return -1;
        }
        if (n == 0)
            return 0;
        c->rlen += (size_t)n;
    }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ka_mdc_t *c = s->data;
    (void)buf;
    if (nread < 0) {
        fail(c, "read", nread == UV_EOF ? "broker closed the connection" : uv_strerror((int)nread));
        return;
    }
    if (c->tls != NULL) {
        if (tls_input(c, (size_t)nread) < 0)
            return;
    } else {
        c->rlen += (size_t)nread;
    }
    while (c->rlen >= 4 && c->st != ST_DOWN) {
        uint32_t size = (uint32_t)c->rbuf[0] << 24 | (uint32_t)c->rbuf[1] << 16 |
                        (uint32_t)c->rbuf[2] << 8 | c->rbuf[3];
        if (size > MAX_RESPONSE) {
            fail(c, "read", "response too large");
            return;
        }
        if (c->rlen < 4 + (size_t)size) {
            if (c->rcap < 4 + (size_t)size) {
                uint8_t *nb = realloc(c->rbuf, 4 + (size_t)size + 65536);
                if (nb == NULL) {
                    fail(c, "read", "out of memory");
                    return;
                }
                c->rbuf = nb;
                c->rcap = 4 + (size_t)size + 65536;
            }
            return;
        }
        on_frame(c, c->rbuf + 4, size);
        if (c->st == ST_DOWN)
            return;
        memmove(c->rbuf, c->rbuf + 4 + size, c->rlen - 4 - size);
        c->rlen -= 4 + size;
    }
}

static void connect_cb(uv_connect_t *req, int status)
{
    ka_mdc_t *c = req->data;
    if (c->stopping)
        return;
    if (status < 0) {
        fail(c, "connect", uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    if (c->sec.tls == NULL) {
        send_versions(c);
        return;
    }
    c->st = ST_TLS;
    if ((c->tls = ka_transport_new(c->sec.tls)) == NULL) {
        fail(c, "tls", "out of memory");
        return;
    }
    uv_timer_start(&c->io_timer, timeout_cb, REQUEST_TIMEOUT_MS, 0);
    /* Nothing read yet: this only produces the ClientHello. */
    uint8_t none[1];
    if (ka_transport_read(c->tls, none, 0) < 0 || send_records(c) < 0)
        tls_fail(c);
}

void ka_mdc_set_security(ka_mdc_t *c, const ka_mdc_security_t *sec)
{
    c->sec = *sec;
}

static void start_connect(ka_mdc_t *c)
{
    if (c->stopping || c->tcp_open)
        return;
    uv_tcp_init(c->loop, &c->tcp);
    uv_unref((uv_handle_t *)&c->tcp); /* never keeps the loop alive: a drain can end */
    c->tcp.data = c;
    c->tcp_open = 1;
    c->handles++;
    c->st = ST_CONNECTING;
    c->rlen = 0;
    c->connect_req.data = c;
    int rc =
        uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&c->addr, connect_cb);
    if (rc < 0)
        fail(c, "connect", uv_strerror(rc));
}

static void start_refresh(ka_mdc_t *c)
{
    if (c->st == ST_IDLE) {
        c->refresh_wanted = 0;
        send_metadata(c);
    } else {
        c->refresh_wanted = 1;
        if (c->st == ST_DOWN && !c->tcp_open && !uv_is_active((uv_handle_t *)&c->io_timer))
            start_connect(c);
    }
}

static void refresh_timer_cb(uv_timer_t *t)
{
    ka_mdc_t *c = t->data;
    if (c->st == ST_IDLE)
        start_refresh(c);
    else if (c->st == ST_DOWN)
        c->refresh_wanted = 1;
}

void ka_mdc_refresh(ka_mdc_t *c)
{
    if (c->st == ST_METADATA || c->st == ST_CONFIGS)
        return;
    start_refresh(c);
}

int ka_mdc_busy(const ka_mdc_t *c)
{
    return c->st != ST_IDLE || c->refresh_wanted;
}

int ka_mdc_down(const ka_mdc_t *c)
{
    return c->st == ST_DOWN;
}

int ka_mdc_connected(const ka_mdc_t *c)
{
    return c->st >= ST_IDLE;
}

void ka_mdc_set_interval(ka_mdc_t *c, int64_t interval_ms)
{
    if (interval_ms < 100)
        interval_ms = 100;
    c->interval_ms = interval_ms;
    uv_timer_start(&c->refresh_timer, refresh_timer_cb, (uint64_t)interval_ms,
                   (uint64_t)interval_ms);
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
    uv_timer_init(loop, &c->refresh_timer);
    c->refresh_timer.data = c;
    uv_timer_init(loop, &c->io_timer);
    c->io_timer.data = c;
    uv_unref((uv_handle_t *)&c->refresh_timer);
    uv_unref((uv_handle_t *)&c->io_timer);
    c->handles = 2;
    ka_mdc_set_interval(c, interval_ms);
    c->refresh_wanted = 1;
    start_connect(c);
    *out = c;
    return 0;
}

void ka_mdc_stop(ka_mdc_t *c)
{
    if (c == NULL || c->stopping)
        return;
    c->stopping = 1;
    drop_refresh(c);
    uv_close((uv_handle_t *)&c->refresh_timer, handle_closed);
    uv_close((uv_handle_t *)&c->io_timer, handle_closed);
    if (c->tcp_open && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, handle_closed);
}
