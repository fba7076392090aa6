/*
 * ka_endpoints.h: rewrites the broker endpoints a Kafka response carries
 * (gateway mode).
 *
 * In gateway mode clients reach every broker through kadmit, so each
 * broker's host and port in a response (Metadata's brokers, the coordinators
 * FindCoordinator names, DescribeCluster's brokers, the NodeEndpoints of
 * Produce, Fetch, ShareFetch and ShareAcknowledge) must become kadmit's own.
 * Nothing else may change: node ids, racks, the controller id, cluster id,
 * topics, partitions, records and unknown tagged fields stay byte for byte.
 *
 * Which responses carry endpoints, and where, is generated from Kafka's specs
 * (protocol/generated/ka_endpoint_table.h, listed in words in
 * protocol/generated/ENDPOINTS.md). The rewrite walks a response with those
 * tables, descending only into what may hold endpoints and skipping the rest
 * by length; the untouched spans are copied verbatim, once, and a response
 * with nothing to change is not copied at all. Pure C, no I/O.
 */
#ifndef KA_ENDPOINTS_H
#define KA_ENDPOINTS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_reader.h"
#include "ka_writer.h"

/* What a client should see for one broker. host is not NUL-terminated. */
typedef struct {
    const char *host; /* the host to advertise; at most KA_MAX_STRING_LEN bytes */
    size_t host_len;  /* its length in bytes */
    int32_t port;     /* the port to advertise */
} ka_endpoint_t;

/*
 * Maps a broker's node id (and its real host and port) to kadmit's; returns
 * 0 with *out filled, or a negative value to leave that endpoint unchanged.
 * host is a slice of the response (len -1 if the broker sent a null host).
 * node_id may be -1 with an empty host and port -1 (FindCoordinator when no
 * coordinator is available): a map should decline it. Called once per
 * endpoint, in wire order; out->host must stay valid until ka_endpoints_rewrite
 * returns.
 */
typedef int (*ka_endpoint_map_fn)(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                                  ka_endpoint_t *out);

/* 1 when responses of (api_key, version) may carry broker endpoints (from the generated table). */
int ka_endpoints_carried(int16_t api_key, int16_t version);

/*
 * body/len: a response after its response header (the caller knows the
 * header version). On success returns 0; *changed = 0 means nothing to
 * rewrite (forward the original bytes: no copy), else the new body is in out
 * (a ka_writer_t the caller initialised with a cap; the rewrite appends to
 * it). A response of an (api_key, version) that carries no endpoints is
 * answered 0 with *changed = 0 at once.
 *
 * Malformed input: a negative KA_E* error (KA_EUNDERFLOW, KA_ELIMIT,
 * KA_EINVALID, KA_ETRAILING); never reads past len; every count is bounded
 * before use. Only the part of a response up to its last field that may hold
 * an endpoint is checked: after Metadata's brokers, say, the rest is copied
 * as it came, and is the client's to judge, as without a gateway. A mapped
 * endpoint that does not fit its field (a host over KA_MAX_STRING_LEN bytes,
 * a port outside a uint16 field's range) fails with KA_ELIMIT; out past its
 * cap, KA_EOVERFLOW. On failure out may hold a partial body: discard it.
 */
int ka_endpoints_rewrite(int16_t api_key, int16_t version, const uint8_t *body, size_t len,
                         ka_endpoint_map_fn map, void *ctx, ka_writer_t *out, int *changed);

#endif
