/*
 * ka_metrics.h: the proxy's counters and gauges, and their Prometheus text.
 *
 * A plain struct that the data path bumps directly (one event loop thread,
 * so no atomics). The admin HTTP server renders it with
 * ka_metrics_render(); nothing else reads it.
 */
#ifndef KA_METRICS_H
#define KA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_pool.h"

typedef struct ka_metrics {
    uint64_t connections_accepted; /* client connections taken by the listener */
    uint64_t connections_rejected; /* closed at once because of --max-connections */
    uint64_t connections_active;   /* sessions open now (gauge) */
    uint64_t connections_cut;      /* closed by the drain timeout */
    uint64_t idle_timeouts;        /* closed by --idle-timeout */
    uint64_t upstream_connect_failures;
    uint64_t bytes_client_to_broker;
    uint64_t bytes_broker_to_client;
    uint64_t frames_client_to_broker;
    uint64_t frames_broker_to_client;
    uint64_t frames_oversize;         /* request frames above --max-frame-bytes */
    uint64_t frames_undersize;        /* frames smaller than any header */
    uint64_t tls_on_plaintext;        /* TLS ClientHellos refused */
    uint64_t protocol_errors;         /* every other framing error */
    uint64_t produce_acks0;           /* Produce requests that get no response */
    uint64_t unexpected_responses;    /* responses with nothing in flight */
    uint64_t sasl_raw_tokens;         /* raw SASL tokens after SaslHandshake v0 */
    uint64_t sasl_opaque_connections; /* connections passed through unframed */
    uint64_t frames_intercepted;      /* frames buffered whole for a handler */
    uint64_t local_answers;           /* answers kadmit wrote itself */
    uint64_t backpressure_pauses;     /* reads stopped for a slow peer */
    uint64_t pool_waits;              /* reads stopped for lack of pool memory */
} ka_metrics_t;

/*
 * Renders the Prometheus text exposition format into buf. Returns the
 * length written, or KA_EOVERFLOW when buf is too small.
 */
long ka_metrics_render(const ka_metrics_t *m, ka_pool_t *pool, char *buf, size_t cap);

#endif
