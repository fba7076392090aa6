/*
 * ka_gw_endpoints_fallback.c: Metadata-only stand-in for protocol/'s
 * endpoint rewrite (ka_gw_endpoints_api.h), so the gateway runs end to end
 * before the full rewrite is merged. Decodes the body, maps each broker and
 * re-encodes when one changed.
 */
#include <string.h>

#include "ka_api_keys.h"
#include "ka_arena.h"
#include "ka_gw_endpoints_api.h"
#include "ka_metadata_response.h"
#include "ka_protocol.h"

#define FALLBACK_ARENA_CAP (64u * 1024 * 1024)

int ka_endpoints_carried(int16_t api_key, int16_t version)
{
    return api_key == KA_API_METADATA && version >= 0 && version <= 13;
}

int ka_endpoints_rewrite(int16_t api_key, int16_t version, const uint8_t *body, size_t len,
                         ka_endpoint_map_fn map, void *ctx, ka_writer_t *out, int *changed)
{
    struct ka_metadata_response md;
    ka_arena_t arena;
    ka_reader_t r;
    int rc;

    *changed = 0;
    if (!ka_endpoints_carried(api_key, version))
        return 0;
    ka_arena_init(&arena, FALLBACK_ARENA_CAP);
    ka_reader_init(&r, body, len);
    rc = ka_metadata_response_decode(&r, version, &arena, &md);
    if (rc < 0)
        goto done;
    for (int32_t i = 0; i < md.brokers.count; i++) {
        struct ka_metadata_response_metadata_response_broker *b = &md.brokers.items[i];
        ka_endpoint_t ep;
        rc = map(ctx, b->node_id, b->host, b->port, &ep);
        if (rc < 0)
            goto done;
        if (ep.port != b->port || ep.host_len != (size_t)(b->host.len < 0 ? 0 : b->host.len) ||
            (ep.host_len > 0 && memcmp(ep.host, b->host.ptr, ep.host_len) != 0)) {
            b->host = (ka_slice_t){(const uint8_t *)ep.host, (int32_t)ep.host_len};
            b->port = ep.port;
            *changed = 1;
        }
    }
    if (*changed)
        rc = ka_metadata_response_encode(out, version, &md);
done:
    ka_arena_destroy(&arena);
    return rc < 0 ? rc : 0;
}
