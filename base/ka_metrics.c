/*
 * ka_metrics.c: Prometheus rendering of ka_metrics_t.
 *
 * The metric table maps each field to its exposed name, type and help, so
 * adding a counter is one field and one row.
 */
#include "ka_metrics.h"

#include <stdarg.h>
#include <stdio.h>

#include "ka_error.h"

typedef struct metric_row {
    const char *name;
    const char *type; /* "counter" or "gauge" */
    size_t offset;
    const char *help;
} metric_row_t;

#define ROW(field, type, help)                                                                     \
    {                                                                                              \
        "kadmit_" #field, type, offsetof(ka_metrics_t, field), help                                \
    }

static const metric_row_t rows[] = {
    ROW(connections_accepted, "counter", "Client connections accepted."),
    ROW(connections_rejected, "counter",
        "Client connections closed at once over --max-connections."),
    ROW(connections_active, "gauge", "Client connections open now."),
    ROW(connections_cut, "counter", "Connections closed by the drain timeout."),
    ROW(idle_timeouts, "counter", "Connections closed after --idle-timeout."),
    ROW(upstream_connect_failures, "counter", "Failed connections to the broker."),
    ROW(bytes_client_to_broker, "counter", "Bytes forwarded from clients to the broker."),
    ROW(bytes_broker_to_client, "counter", "Bytes forwarded from the broker to clients."),
    ROW(frames_client_to_broker, "counter", "Request frames seen."),
    ROW(frames_broker_to_client, "counter", "Response frames seen."),
    ROW(frames_oversize, "counter", "Request frames above --max-frame-bytes."),
    ROW(frames_undersize, "counter", "Frames smaller than their header."),
    ROW(tls_on_plaintext, "counter", "TLS handshakes refused on a plaintext listener."),
    ROW(protocol_errors, "counter", "Other framing errors that closed a connection."),
    ROW(tls_handshakes, "counter", "TLS handshakes completed (client and upstream legs)."),
    ROW(tls_handshake_failures, "counter", "TLS handshakes or records that failed."),
    ROW(tls_plaintext_refused, "counter", "Plaintext clients closed on the TLS listener."),
    ROW(tls_reloads, "counter", "Certificate reloads after a file change."),
    ROW(tls_reload_failures, "counter", "Certificate reloads refused; the old files stay in use."),
    ROW(produce_acks0, "counter", "Produce requests with acks=0 (no response)."),
    ROW(unexpected_responses, "counter", "Responses that arrived with no request in flight."),
    ROW(sasl_raw_tokens, "counter", "Raw SASL tokens after SaslHandshake v0."),
    ROW(sasl_opaque_connections, "counter", "Connections passed through unframed (e.g. GSSAPI)."),
    ROW(sasl_v0_refused, "counter",
        "SaslHandshake v0 refused: a mechanism kadmit cannot follow, with a policy on."),
    ROW(frames_intercepted, "counter", "Frames buffered whole for inspection."),
    ROW(local_answers, "counter", "Responses written by kadmit itself."),
    ROW(backpressure_pauses, "counter", "Reads paused because the other side was slow."),
    ROW(pool_waits, "counter", "Reads paused because the memory pool was depleted."),
    ROW(inflight_pauses, "counter", "Client reads paused at --max-inflight requests in flight."),
    ROW(frames_truncated, "counter", "Clients that closed their side in the middle of a frame."),
    ROW(frames_stalled, "counter", "Connections closed by --idle-timeout with a frame half sent."),
    ROW(unknown_api_keys, "counter",
        "Requests with an API key kadmit does not know, passed through."),
    ROW(adm_auto_create_denials, "counter",
        "Metadata requests forwarded with allow_auto_topic_creation cleared."),
    ROW(adm_deferred, "counter", "Admission decisions that waited for a metadata refresh."),
    ROW(adm_reservations_released, "counter",
        "Reservations released because the broker reported an error."),
    /* The cluster-wide ledger. */
    ROW(ledger_appends, "counter", "Records appended to the ledger (intents and outcomes)."),
    ROW(ledger_round_trip_ms_sum, "counter",
        "Milliseconds from appending an intent to reading it back, summed."),
    ROW(ledger_round_trips, "counter", "Intents read back from the ledger."),
    ROW(ledger_failures, "counter", "Intents not written or not read back within the timeout."),
    ROW(ledger_records_malformed, "counter", "Ledger records refused when read back."),
    ROW(ledger_connected, "gauge", "1 while ledger appends and reads succeed."),
    ROW(admission_healthy, "gauge",
        "1 while admission can decide (a fresh cluster view; the ledger read when on); "
        "while 0, enforce mode refuses admission requests and other traffic flows."),
    ROW(ledger_intents_live, "gauge", "Ledger intents of all sidecars that still count."),
    ROW(metadata_refreshes, "counter", "Cluster views built by the metadata client."),
    ROW(metadata_refresh_failures, "counter", "Metadata refresh attempts that failed."),
};

const char *ka_adm_api_name(enum ka_adm_api api)
{
    static const char *names[] = {"CreateTopics", "CreatePartitions", "AlterPartitionReassignments",
                                  "Metadata", "StreamsGroupHeartbeat"};
    return (unsigned)api < KA_ADM_API_COUNT ? names[api] : "?";
}

const char *ka_adm_decision_name(enum ka_adm_decision d)
{
    static const char *names[] = {"admit", "rewrite", "partial", "reject", "audit"};
    return (unsigned)d < KA_ADM_D_COUNT ? names[d] : "?";
}

const char *ka_adm_reason_name(enum ka_reason r)
{
    /* "limit" and "stale" keep the label values dashboards already use. */
    static const char *names[KA_REASON_COUNT] = {
        [KA_REASON_NONE] = "none",
        [KA_REASON_BROKER_LIMIT] = "limit",
        [KA_REASON_STALE_VIEW] = "stale",
        [KA_REASON_NO_VIEW] = "no_view",
        [KA_REASON_MAX_PARTITIONS] = "max_partitions",
        [KA_REASON_UNKNOWN_TOPIC] = "unknown_topic",
        [KA_REASON_UNKNOWN_BROKER] = "unknown_broker",
        [KA_REASON_LEDGER_UNAVAILABLE] = "ledger_unavailable",
        [KA_REASON_CONCURRENT] = "concurrent",
    };
    return (unsigned)r < KA_REASON_COUNT ? names[r] : "?";
}

typedef struct out {
    char *buf;
    size_t cap, len;
    int overflow;
} out_t;

__attribute__((format(printf, 2, 3))) static void emit(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->cap - o->len)
        o->overflow = 1;
    else
        o->len += (size_t)n;
}

static void emit_metric(out_t *o, const char *name, const char *type, const char *help,
                        const char *value)
{
    emit(o, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, type, name, value);
}

long ka_metrics_render(const ka_metrics_t *m, ka_pool_t *pool, char *buf, size_t cap)
{
    out_t o = {.buf = buf, .cap = cap};
    char v[64];

    if (cap == 0)
        return KA_EOVERFLOW;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && !o.overflow; i++) {
        uint64_t x = *(const uint64_t *)((const char *)m + rows[i].offset);
        snprintf(v, sizeof(v), "%llu", (unsigned long long)x);
        emit_metric(&o, rows[i].name, rows[i].type, rows[i].help, v);
    }
    /* Each labelled family is one block under its HELP and TYPE lines, as the
     * exposition format requires; a family with no sample is left out. */
    int header = 0;
    for (int a = 0; a < KA_ADM_API_COUNT && !o.overflow; a++) {
        for (int d = 0; d < KA_ADM_D_COUNT; d++) {
            for (int r = 0; r < KA_REASON_COUNT; r++) {
                uint64_t x = m->adm_decisions[a][d][r];
                if (x == 0)
                    continue;
                if (!header++)
                    emit(&o, "# HELP kadmit_admission_decisions_total Admission decisions by API, "
                             "decision and reason.\n"
                             "# TYPE kadmit_admission_decisions_total counter\n");
                emit(&o,
                     "kadmit_admission_decisions_total{api=\"%s\",decision=\"%s\",reason=\"%s\"} "
                     "%llu\n",
                     ka_adm_api_name(a), ka_adm_decision_name(d), ka_adm_reason_name(r),
                     (unsigned long long)x);
            }
        }
    }
    header = 0;
    for (int a = 0; a < KA_ADM_API_COUNT && !o.overflow; a++) {
        for (int ver = 0; ver < KA_ADM_VERSION_SLOTS; ver++) {
            if (m->adm_decode_errors[a][ver] == 0)
                continue;
            if (!header++)
                emit(&o, "# HELP kadmit_admission_decode_errors_total Admission requests that did "
                         "not decode, by API and version.\n"
                         "# TYPE kadmit_admission_decode_errors_total counter\n");
            emit(&o, "kadmit_admission_decode_errors_total{api=\"%s\",version=\"%d\"} %llu\n",
                 ka_adm_api_name(a), ver, (unsigned long long)m->adm_decode_errors[a][ver]);
        }
    }
    header = 0;
    for (int a = 0; a < KA_ADM_API_COUNT && !o.overflow; a++) {
        if (m->adm_version_refused[a] == 0)
            continue;
        if (!header++)
            emit(&o, "# HELP kadmit_admission_version_refused_total Admission requests above the "
                     "versions kadmit decodes, closed.\n"
                     "# TYPE kadmit_admission_version_refused_total counter\n");
        emit(&o, "kadmit_admission_version_refused_total{api=\"%s\"} %llu\n", ka_adm_api_name(a),
             (unsigned long long)m->adm_version_refused[a]);
    }
    if (pool != NULL) {
        /* KIP-81's names, in Prometheus spelling. */
        snprintf(v, sizeof(v), "%llu", (unsigned long long)ka_pool_free_bytes(pool));
        emit_metric(&o, "kadmit_memory_pool_free_bytes", "gauge",
                    "memory-pool-free: bytes the pool can still hand out.", v);
        snprintf(v, sizeof(v), "%llu", (unsigned long long)ka_pool_used_bytes(pool));
        emit_metric(&o, "kadmit_memory_pool_used_bytes", "gauge",
                    "memory-pool-used: bytes held in buffers.", v);
        snprintf(v, sizeof(v), "%.3f", ka_pool_avg_depleted_percent(pool));
        emit_metric(&o, "kadmit_memory_pool_avg_depleted_percent", "gauge",
                    "memory-pool-avg-depleted-percent: share of recent time the pool was full.", v);
        snprintf(v, sizeof(v), "%.6f", ka_pool_depleted_time_total_s(pool));
        emit_metric(&o, "kadmit_memory_pool_depleted_time_seconds_total", "counter",
                    "memory-pool-depleted-time-total: time the pool was full.", v);
        snprintf(v, sizeof(v), "%zu", ka_pool_waiters(pool));
        emit_metric(&o, "kadmit_memory_pool_waiting_streams", "gauge",
                    "Streams waiting for pool memory.", v);
    }
    return o.overflow ? KA_EOVERFLOW : (long)o.len;
}
