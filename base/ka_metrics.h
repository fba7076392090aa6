/*
 * ka_metrics.h: the process's counters and gauges, and their Prometheus text.
 *
 * A plain struct that the data path and the control plane bump directly
 * (one event loop thread, so no atomics). The admin HTTP server renders it
 * with ka_metrics_render(); nothing else reads it but tests.
 */
#ifndef KA_METRICS_H
#define KA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_adm_kinds.h"
#include "ka_pool.h"

/* Admission counters are labelled by API, decision and reason (ka_adm_kinds.h). */
#define KA_ADM_VERSION_SLOTS 16 /* decode errors of versions >= 15 share the last slot */

const char *ka_adm_api_name(enum ka_adm_api api);
const char *ka_adm_decision_name(enum ka_adm_decision d);
const char *ka_adm_reason_name(enum ka_reason r);

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
    uint64_t tls_handshakes;          /* TLS handshakes completed, both legs */
    uint64_t tls_handshake_failures;  /* TLS handshakes or records that failed, both legs */
    uint64_t tls_plaintext_refused;   /* plaintext clients closed on a TLS listener */
    uint64_t tls_reloads;             /* certificate reloads after a file change */
    uint64_t tls_reload_failures;     /* reloads refused (the old files stay in use) */
    uint64_t produce_acks0;           /* Produce requests that get no response */
    uint64_t unexpected_responses;    /* responses with nothing in flight */
    uint64_t sasl_raw_tokens;         /* raw SASL tokens after SaslHandshake v0 */
    uint64_t sasl_opaque_connections; /* connections passed through unframed */
    uint64_t sasl_v0_refused;         /* SaslHandshake v0, unfollowed mechanism, policy on */
    uint64_t frames_intercepted;      /* frames buffered whole for a handler */
    uint64_t local_answers;           /* answers kadmit wrote itself */
    uint64_t backpressure_pauses;     /* reads stopped for a slow peer */
    uint64_t pool_waits;              /* reads stopped for lack of pool memory */
    uint64_t inflight_pauses;         /* client reads stopped at --max-inflight */
    uint64_t frames_truncated;        /* clients that closed in the middle of a frame */
    uint64_t frames_stalled;          /* idle timeouts with a request frame half sent */
    uint64_t unknown_api_keys;        /* requests with an API key not in the specs */
    /* Admission (only with --policy). */
    uint64_t adm_decisions[KA_ADM_API_COUNT][KA_ADM_D_COUNT][KA_REASON_COUNT];
    uint64_t adm_decode_errors[KA_ADM_API_COUNT][KA_ADM_VERSION_SLOTS];
    uint64_t adm_version_refused[KA_ADM_API_COUNT]; /* above what kadmit decodes: closed */
    uint64_t adm_auto_create_denials;   /* Metadata forwarded with auto-creation cleared */
    uint64_t adm_deferred;              /* decisions that waited for a metadata refresh */
    uint64_t adm_reservations_released; /* released because the broker reported an error */
    /* The cluster-wide ledger (only with --ledger on). */
    uint64_t ledger_appends;            /* records appended (intents and outcomes) */
    uint64_t ledger_round_trip_ms_sum;  /* from appending an intent to reading it back */
    uint64_t ledger_round_trips;        /* intents read back */
    uint64_t ledger_failures;           /* intents not written or not read back in time */
    uint64_t ledger_records_malformed;  /* records read back and refused */
    uint64_t ledger_connected;          /* gauge: 1 while appends and reads succeed */
    uint64_t admission_healthy;         /* gauge: 1 while admission can decide */
    uint64_t ledger_intents_live;       /* gauge: intents that still count */
    uint64_t metadata_refreshes;        /* cluster views built */
    uint64_t metadata_refresh_failures; /* refresh attempts that failed */
} ka_metrics_t;

/*
 * Renders the Prometheus text exposition format into buf. Returns the
 * length written, or KA_EOVERFLOW when buf is too small.
 */
long ka_metrics_render(const ka_metrics_t *m, ka_pool_t *pool, char *buf, size_t cap);

#endif
