/*
 * admin_fixtures.c: the fake proxy, the loop thread and the HTTP client.
 */
#include "admin_fixtures.h"

#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the fake proxy ---- */

static ka_policy_t *fake_policy_get(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return ka_policy_ref(fake->policy);
}

static uint64_t fake_next_version(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return ++fake->last_version;
}

static int fake_apply(void *ctx, ka_policy_t *next, bool *persisted, char *err, size_t errlen)
{
    fake_proxy_t *fake = ctx;

    fake->apply_calls++;
    if (fake->apply_fails) {
        snprintf(err, errlen, "the fake proxy refuses every policy");
        return KA_EINVALID;
    }
    ka_policy_unref(fake->policy);
    fake->policy = ka_policy_ref(next);
    *persisted = fake->persist_ok;
    snprintf(err, errlen, "%s",
             fake->persist_ok ? "/etc/kadmit/state.json"
                              : "policy.json is read-only and no state file is configured");
    return 0;
}

static ka_policy_t *fake_file_policy_get(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return ka_policy_ref(fake->file_policy);
}

static void fake_reload_status(void *ctx, ka_admin_reload_status_t *out)
{
    fake_proxy_t *fake = ctx;
    *out = fake->reload;
}

static ka_cluster_t *fake_cluster_get(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return ka_cluster_ref(fake->cluster);
}

static const ka_reservations_t *fake_reservations_get(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return fake->ledger;
}

static int64_t fake_clock(void *ctx)
{
    fake_proxy_t *fake = ctx;
    return fake->now_ms;
}

static int fake_metrics(void *ctx, ka_admin_buf_t *out)
{
    (void)ctx;
    return ka_admin_buf_puts(out, "# HELP kadmit_connections_active Client connections.\n"
                                  "# TYPE kadmit_connections_active gauge\n"
                                  "kadmit_connections_active 3\n");
}

static bool fake_ready(void *ctx, char *why, size_t len)
{
    fake_proxy_t *fake = ctx;

    if (!fake->ready)
        snprintf(why, len, "the broker at 127.0.0.1:19092 does not accept connections");
    return fake->ready;
}

static int fake_admission_health(void *ctx, char *why, size_t len)
{
    fake_proxy_t *fake = ctx;

    if (fake->admission == KA_ADMIN_ADMISSION_UNHEALTHY)
        snprintf(why, len, "no cluster view from the broker at 127.0.0.1:19092 yet");
    return fake->admission;
}

static void fake_pool(void *ctx, ka_admin_pool_t *out)
{
    (void)ctx;
    *out = (ka_admin_pool_t){.capacity = 1024,
                             .free_bytes = 768,
                             .used_bytes = 256,
                             .avg_depleted_percent = 12.5,
                             .depleted_time_total_s = 1.5,
                             .waiting_streams = 2};
}

void fake_init(fake_proxy_t *fake)
{
    memset(fake, 0, sizeof(*fake));
    fake->last_version = 1;
    assert_int_equal(ka_policy_new_default(1, &fake->policy), 0);
    fake->persist_ok = true;
    fake->ready = true;
    fake->admission = KA_ADMIN_ADMISSION_HEALTHY;
    fake->now_ms = 1000000;
}

void fake_free(fake_proxy_t *fake)
{
    ka_policy_unref(fake->policy);
    ka_policy_unref(fake->file_policy);
    ka_cluster_unref(fake->cluster);
    ka_reservations_free(fake->ledger);
    memset(fake, 0, sizeof(*fake));
}

static ka_slice_t slice(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

void fake_add_cluster(fake_proxy_t *fake)
{
    static const char *racks[] = {"a", "b", "c"};
    ka_cluster_builder_t *b;
    ka_broker_delta_t delta = {1, 2};
    ka_reservation_spec_t spec = {0};
    uint64_t id;

    assert_int_equal(ka_cluster_builder_new(fake->now_ms - 1500, &b), 0);
    for (int32_t broker = 1; broker <= 3; broker++) {
        char topic[32];

        assert_int_equal(ka_cluster_builder_add_broker(b, broker, slice(racks[broker - 1]), false),
                         0);
        snprintf(topic, sizeof(topic), "load-%d", (int)broker);
        for (int32_t p = 0; p < broker * 10; p++)
            assert_int_equal(ka_cluster_builder_add_partition(b, slice(topic), p, &broker, 1), 0);
    }
    assert_int_equal(ka_cluster_builder_finish(b, &fake->cluster), 0);
    assert_int_equal(ka_reservations_new(&fake->ledger), 0);
    spec.kind = KA_RESERVATION_PARTITIONS;
    spec.topic = slice("new-topic");
    spec.partition_count = 2;
    spec.new_partitions = 2;
    spec.deltas = &delta;
    spec.delta_count = 1;
    spec.expires_at_ms = fake->now_ms + 60000;
    assert_int_equal(ka_reservations_add(fake->ledger, &spec, &id), 0);
}

static const struct ka_metrics *fake_metrics_get(void *ctx)
{
    return &((fake_proxy_t *)ctx)->metrics;
}

ka_admin_ops_t fake_ops(fake_proxy_t *fake)
{
    ka_admin_ops_t ops = {
        .ctx = fake,
        .policy_get = fake_policy_get,
        .policy_next_version = fake_next_version,
        .policy_apply = fake_apply,
        .reload_status = fake_reload_status,
        .file_policy_get = fake_file_policy_get,
        .cluster_get = fake_cluster_get,
        .reservations_get = fake_reservations_get,
        .clock_ms = fake_clock,
        .metrics_render = fake_metrics,
        .metrics_get = fake_metrics_get,
        .ready = fake_ready,
        .admission_health = fake_admission_health,
        .pool_get = fake_pool,
    };
    return ops;
}

/* ---- the loop thread ---- */

static void stop_cb(uv_async_t *async)
{
    admin_harness_t *h = async->data;

    ka_admin_server_close(h->server);
    uv_close((uv_handle_t *)async, NULL);
}

static void loop_thread(void *arg)
{
    admin_harness_t *h = arg;
    uv_run(&h->loop, UV_RUN_DEFAULT);
}

void harness_start(admin_harness_t *h, const ka_admin_config_t *cfg)
{
    harness_start_on(h, cfg, "127.0.0.1:0");
}

void harness_start_on(admin_harness_t *h, const ka_admin_config_t *cfg, const char *address)
{
    ka_admin_config_t defaults = {
        .token = TEST_TOKEN "\n", /* as read from a token file */
        .request_timeout_ms = 300,
        .idle_timeout_ms = 2000,
    };
    char err[256] = "";

    memset(h, 0, sizeof(*h));
    fake_init(&h->fake);
    h->ops = fake_ops(&h->fake);
    assert_int_equal(uv_loop_init(&h->loop), 0);
    assert_int_equal(uv_async_init(&h->loop, &h->stop, stop_cb), 0);
    h->stop.data = h;
    if (ka_admin_server_start(&h->loop, address, cfg ? cfg : &defaults, &h->ops, &h->server, err,
                              sizeof(err)) != 0)
        fail_msg("ka_admin_server_start: %s", err);
    h->port = ka_admin_server_port(h->server);
    assert_true(h->port > 0);
    assert_int_equal(uv_thread_create(&h->thread, loop_thread, h), 0);
}

void harness_stop(admin_harness_t *h)
{
    uv_async_send(&h->stop);
    uv_thread_join(&h->thread);
    /* Every handle closed and freed: the loop has nothing left. */
    assert_int_equal(uv_loop_close(&h->loop), 0);
    fake_free(&h->fake);
}

/* ---- the client ---- */

client_t *client_connect(int port)
{
    struct sockaddr_in addr;
    client_t *c = calloc(1, sizeof(*c));

    assert_non_null(c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c->fd >= 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    return c;
}

void client_send(client_t *c, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        assert_true(n > 0);
        data += n;
        len -= (size_t)n;
    }
}

void client_sends(client_t *c, const char *s)
{
    client_send(c, s, strlen(s));
}

/* Reads more bytes; 0 on EOF, -1 on timeout. */
static ssize_t fill(client_t *c, int timeout_ms)
{
    struct pollfd pfd = {c->fd, POLLIN, 0};
    ssize_t n;

    if (poll(&pfd, 1, timeout_ms) <= 0)
        return -1;
    n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
    if (n < 0)
        return 0; /* a reset counts as closed */
    c->len += (size_t)n;
    return n;
}

static void consume(client_t *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

int client_read(client_t *c, reply_t *r)
{
    char *end, value[64];
    size_t head_len, body_len = 0;

    memset(r, 0, sizeof(*r));
    r->status = -1;
    for (;;) {
        end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (end != NULL) {
            head_len = (size_t)(end - c->buf) + 4;
            assert_true(head_len < sizeof(r->head));
            memcpy(r->head, c->buf, head_len);
            r->head[head_len] = '\0';
            if (reply_header(r, "Content-Length", value, sizeof(value)) != NULL)
                body_len = strtoul(value, NULL, 10);
            if (c->len >= head_len + body_len)
                break;
        }
        if (fill(c, 5000) <= 0)
            return -1;
    }
    sscanf(r->head, "HTTP/1.1 %d", &r->status);
    r->body = malloc(body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, c->buf + head_len, body_len);
    r->body[body_len] = '\0';
    r->body_len = body_len;
    consume(c, head_len + body_len);
    return r->status;
}

bool client_closed(client_t *c, int timeout_ms)
{
    size_t before = c->len;
    ssize_t n = fill(c, timeout_ms);

    if (n > 0)
        c->len = before + (size_t)n; /* unexpected data stays readable */
    return n == 0;
}

void client_close(client_t *c)
{
    close(c->fd);
    free(c);
}

void reply_free(reply_t *r)
{
    free(r->body);
    r->body = NULL;
}

const char *reply_header(const reply_t *r, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);

    for (const char *line = strstr(r->head, "\r\n"); line != NULL;
         line = strstr(line + 2, "\r\n")) {
        const char *start = line + 2, *eol;

        if (strncasecmp(start, name, n) != 0 || start[n] != ':')
            continue;
        start += n + 1;
        while (*start == ' ')
            start++;
        eol = strstr(start, "\r\n");
        snprintf(buf, len, "%.*s", (int)(eol - start), start);
        return buf;
    }
    return NULL;
}

int http_call(int port, const char *method, const char *path, const char *token, const char *body,
              reply_t *r)
{
    client_t *c = client_connect(port);
    char head[1024];
    size_t body_len = body ? strlen(body) : 0;
    int status;

    snprintf(head, sizeof(head),
             "%s %s HTTP/1.1\r\nHost: localhost\r\n%s%s%sContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             method, path, token ? "Authorization: Bearer " : "", token ? token : "",
             token ? "\r\n" : "", body_len);
    client_sends(c, head);
    if (body_len > 0)
        client_send(c, body, body_len);
    status = client_read(c, r);
    assert_true(client_closed(c, 2000));
    client_close(c);
    return status;
}
