/*
 * fuzz_endpoints.c: the gateway's endpoint rewrite (protocol/ka_endpoints.h).
 *
 * The first byte picks a response from the generated table
 * (ka_ep_messages, modulo its count), the second a version of it (modulo its
 * range); the rest is the body. The rewrite must never read past the body
 * (ASan), and:
 *  - with a map that gives back each broker's own endpoint, it changes
 *    nothing and succeeds exactly when the rewrite with a real map does;
 *  - what it writes, rewritten again with the same map, changes nothing
 *    (every endpoint is already kadmit's), and is read without error;
 *  - nothing changed means nothing written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_endpoint_table.h"
#include "ka_endpoints.h"

#define FUZZ_OUT_CAP ((size_t)64 * 1024 * 1024)

static void check(int ok)
{
    if (!ok)
        abort();
}

static int map_gw(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    static char hosts[16][40];
    (void)ctx, (void)host, (void)port;
    if (node_id < 0 || node_id >= 16)
        return -1;
    int n = snprintf(hosts[node_id], sizeof(hosts[node_id]), "broker-%d.gw.example", node_id);
    out->host = hosts[node_id];
    out->host_len = (size_t)n;
    out->port = 29000 + node_id;
    return 0;
}

static int map_same(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    (void)ctx, (void)node_id;
    if (host.len < 0)
        return -1;
    out->host = (const char *)host.ptr;
    out->host_len = (size_t)host.len;
    out->port = port;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const struct ka_ep_message *m = &ka_ep_messages[data[0] % ka_ep_messages_count];
    int16_t version = (int16_t)(m->min_version + data[1] % (m->max_version - m->min_version + 1));
    /* A copy of exactly the body, so that any read past it is caught. */
    size_t len = size - 2;
    uint8_t *body = malloc(len ? len : 1);
    check(body != NULL);
    memcpy(body, data + 2, len);

    ka_writer_t w, same, again;
    int changed = -1, changed_same = -1, changed_again = -1;
    ka_writer_init(&w, FUZZ_OUT_CAP);
    ka_writer_init(&same, FUZZ_OUT_CAP);
    int rc = ka_endpoints_rewrite(m->api_key, version, body, len, map_gw, NULL, &w, &changed);
    int rc_same =
        ka_endpoints_rewrite(m->api_key, version, body, len, map_same, NULL, &same, &changed_same);
    check((rc < 0) == (rc_same < 0));
    if (rc_same == 0)
        check(changed_same == 0 && same.len == 0);
    if (rc == 0 && !changed)
        check(w.len == 0);
    if (rc == 0 && changed) {
        ka_writer_init(&again, FUZZ_OUT_CAP);
        check(ka_endpoints_rewrite(m->api_key, version, w.buf, w.len, map_gw, NULL, &again,
                                   &changed_again) == 0);
        check(changed_again == 0 && again.len == 0);
        ka_writer_free(&again);
    }
    ka_writer_free(&w);
    ka_writer_free(&same);
    free(body);
    return 0;
}
