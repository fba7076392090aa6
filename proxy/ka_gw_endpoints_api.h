/*
 * ka_gw_endpoints_api.h: the response rewrite the gateway calls, as agreed
 * with protocol/ (which implements it for every API that carries broker
 * endpoints). Until that lands, ka_gw_endpoints_fallback.c implements it for
 * Metadata only.
 */
#ifndef KA_GW_ENDPOINTS_API_H
#define KA_GW_ENDPOINTS_API_H

#include <stddef.h>
#include <stdint.h>

#include "ka_reader.h"
#include "ka_writer.h"

typedef struct {
    const char *host;
    size_t host_len;
    int32_t port;
} ka_endpoint_t;
typedef int (*ka_endpoint_map_fn)(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                                  ka_endpoint_t *out);
int ka_endpoints_carried(int16_t api_key, int16_t version);
int ka_endpoints_rewrite(int16_t api_key, int16_t version, const uint8_t *body, size_t len,
                         ka_endpoint_map_fn map, void *ctx, ka_writer_t *out, int *changed);

#endif
