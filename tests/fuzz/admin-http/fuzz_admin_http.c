/*
 * fuzz_admin_http.c: raw bytes into the admin API's HTTP session and router.
 *
 * The first input byte chooses how the rest is cut into reads (1..64 bytes
 * at a time, or all at once), whether a token is configured and whether the
 * Host check and the probe reserve apply; the rest is
 * what a client sends. Everything behind the session is real (llhttp, the
 * router, the handlers, JSON, policy derivations, metrics) except the
 * proxy, which is a small in-memory fake, so this reaches every handler
 * without sockets. Output is taken whenever the session pauses, as the
 * server does; at the end the connection times out.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admin_router.h"
#include "ka_admin_session.h"

#define FUZZ_TOKEN "fuzz-token"

typedef struct fuzz_proxy {
    ka_policy_t *policy;
    uint64_t version;
    ka_cluster_t *cluster;
    ka_reservations_t *ledger;
    int calls;
} fuzz_proxy_t;

static ka_policy_t *policy_get(void *ctx)
{
    return ka_policy_ref(((fuzz_proxy_t *)ctx)->policy);
}

static uint64_t next_version(void *ctx)
{
    return ++((fuzz_proxy_t *)ctx)->version;
}

static int apply(void *ctx, ka_policy_t *next, bool *persisted, char *err, size_t errlen)
{
    fuzz_proxy_t *p = ctx;

    /* Alternate outcomes so every branch of the answer is reached. */
    p->calls++;
    if (p->calls % 5 == 0) {
        snprintf(err, errlen, "refused");
        return KA_EINVALID;
    }
    ka_policy_unref(p->policy);
    p->policy = ka_policy_ref(next);
    *persisted = p->calls % 2 == 0;
    return 0;
}

static void reload_status(void *ctx, ka_admin_reload_status_t *out)
{
    (void)ctx;
    memset(out, 0, sizeof(*out));
    out->attempted = true;
    out->at_unix_ms = 1700000000000;
    out->failures = 1;
    snprintf(out->error, sizeof(out->error), "policy.json: not valid JSON");
}

static ka_cluster_t *cluster_get(void *ctx)
{
    return ka_cluster_ref(((fuzz_proxy_t *)ctx)->cluster);
}

static const ka_reservations_t *reservations_get(void *ctx)
{
    return ((fuzz_proxy_t *)ctx)->ledger;
}

static int64_t clock_ms(void *ctx)
{
    (void)ctx;
    return 5000;
}

static bool ready(void *ctx, char *why, size_t len)
{
    snprintf(why, len, "not yet");
    return ((fuzz_proxy_t *)ctx)->calls % 2 == 0;
}

static ka_cluster_t *build_cluster(void)
{
    ka_cluster_builder_t *b;
    ka_cluster_t *view = NULL;
    int32_t replicas[2] = {1, 2};

    if (ka_cluster_builder_new(1000, &b) < 0)
        abort();
    ka_cluster_builder_add_broker(b, 1, (ka_slice_t){(const uint8_t *)"r1", 2}, false);
    ka_cluster_builder_add_broker(b, 2, (ka_slice_t){NULL, -1}, false);
    for (int32_t p = 0; p < 4; p++)
        ka_cluster_builder_add_partition(b, (ka_slice_t){(const uint8_t *)"t", 1}, p, replicas, 2);
    if (ka_cluster_builder_finish(b, &view) < 0)
        abort();
    return view;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ka_cluster_t *cluster;
    fuzz_proxy_t proxy = {0};
    ka_admin_ops_t ops = {
        .ctx = &proxy,
        .policy_get = policy_get,
        .policy_next_version = next_version,
        .policy_apply = apply,
        .reload_status = reload_status,
        .cluster_get = cluster_get,
        .reservations_get = reservations_get,
        .clock_ms = clock_ms,
        .ready = ready,
    };
    ka_admin_config_t cfg = {.max_header_bytes = 2048, .max_body_bytes = 4096};
    ka_admin_context_t ctx;
    ka_admin_session_t session;
    size_t chunk, off = 1;

    if (size == 0)
        return 0;
    if (cluster == NULL)
        cluster = build_cluster();
    proxy.cluster = cluster;
    if (ka_reservations_new(&proxy.ledger) < 0 || ka_policy_new_default(1, &proxy.policy) < 0)
        abort();
    proxy.version = 1;
    if (data[0] & 0x80)
        cfg.token = FUZZ_TOKEN;
    /* 0x40: the Host check, as on a loopback bind with operator names; with 0x01 as
     * well, a probe-reserve connection. */
    if (data[0] & 0x40)
        cfg.allowed_hosts = "kadmit.internal, admin.example:9644,[fd00::1]";
    chunk = (data[0] & 0x3f) == 0 ? size : (size_t)(data[0] & 0x3f);
    if (ka_admin_context_init(&ctx, &cfg, &ops) < 0)
        abort();
    if (data[0] & 0x40) {
        ctx.host_check = true;
        snprintf(ctx.bound_host, sizeof(ctx.bound_host), "127.0.0.2");
    }
    ka_admin_session_init(&session, &ctx);
    session.probe_only = (data[0] & 0x41) == 0x41;
    while (off < size && !session.closing) {
        size_t n = size - off < chunk ? size - off : chunk;

        if (ka_admin_session_feed(&session, (const char *)data + off, n) < 0)
            break;
        off += n;
        /* Take the output as the server would, and resume while paused. */
        while (session.paused) {
            ka_admin_buf_reset(&session.out);
            if (ka_admin_session_resume(&session) < 0)
                break;
        }
        ka_admin_buf_reset(&session.out);
    }
    ka_admin_session_timeout(&session);
    ka_admin_session_free(&session);
    ka_admin_context_free(&ctx);
    ka_policy_unref(proxy.policy);
    ka_reservations_free(proxy.ledger);
    return 0;
}
