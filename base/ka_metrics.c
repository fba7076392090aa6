/*
 * ka_metrics.c: Prometheus rendering of ka_metrics_t.
 *
 * The metric table maps each field to its exposed name, labels, type and
 * help, so adding a counter is one field and one row. Names follow the
 * Prometheus conventions: counters end in _total, values are in base units,
 * and variants of one quantity (a direction, a cause) are labels of one
 * family rather than names of their own.
 */
#include "ka_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"

typedef struct metric_row {
    const char *name;
    const char *type;   /* "counter" or "gauge" */
    const char *labels; /* NULL, or the sample's label set without braces */
    size_t offset;
    const char *help; /* the family's, read from its first row */
} metric_row_t;

/* A family of one sample, or one labelled sample of a family: consecutive
 * rows with the same name share the family's HELP and TYPE lines. */
#define ROW(name, field, type, help)                                                               \
    {                                                                                              \
        "kadmit_" name, type, NULL, offsetof(ka_metrics_t, field), help                            \
    }
#define LROW(name, labels, field, type, help)                                                      \
    {                                                                                              \
        "kadmit_" name, type, labels, offsetof(ka_metrics_t, field), help                          \
    }

static const metric_row_t rows[] = {
    ROW("connections_accepted_total", connections_accepted, "counter",
        "Client connections accepted."),
    ROW("connections_rejected_total", connections_rejected, "counter",
        "Client connections closed at once over --max-connections."),
    ROW("connections_active", connections_active, "gauge", "Client connections open now."),
    LROW("connections_closed_total", "reason=\"drain_timeout\"", connections_cut, "counter",
         "Client connections kadmit closed itself, by reason: the drain timeout at shutdown, "
         "--idle-timeout, or a client that read none of its answers for "
         "--stalled-reader-timeout-ms while others waited for memory."),
    LROW("connections_closed_total", "reason=\"idle_timeout\"", idle_timeouts, "counter", NULL),
    LROW("connections_closed_total", "reason=\"stalled_reader\"", stalled_readers, "counter", NULL),
    ROW("upstream_connect_failures_total", upstream_connect_failures, "counter",
        "Failed connections to the broker."),
    ROW("gateway_brokers", gw_brokers, "gauge", "Gateway mode: brokers the gateway serves."),
    LROW("gateway_listeners_total", "event=\"opened\"", gw_listeners_opened, "counter",
         "Gateway mode: broker listeners opened, closed (the broker left, a drain), or that "
         "could not be bound."),
    LROW("gateway_listeners_total", "event=\"closed\"", gw_listeners_closed, "counter", NULL),
    LROW("gateway_listeners_total", "event=\"failed\"", gw_listen_failures, "counter", NULL),
    LROW("gateway_responses_total", "result=\"rewritten\"", gw_rewritten, "counter",
         "Gateway mode: responses held for their broker endpoints, by result: rewritten, "
         "unchanged (forwarded from the held buffer), error (did not parse: forwarded as sent)."),
    LROW("gateway_responses_total", "result=\"unchanged\"", gw_unchanged, "counter", NULL),
    LROW("gateway_responses_total", "result=\"error\"", gw_rewrite_errors, "counter", NULL),
    ROW("gateway_unmapped_endpoints_total", gw_unmapped, "counter",
        "Gateway mode: endpoints of broker ids without a gateway port, sent unchanged."),
    LROW("gateway_connections_closed_total", "reason=\"broker_left\"", gw_closed_left, "counter",
         "Gateway mode: client connections closed because their broker left the cluster, or "
         "because no address was known for it."),
    LROW("gateway_connections_closed_total", "reason=\"no_route\"", gw_route_failures, "counter",
         NULL),
    LROW("forwarded_bytes_total", "direction=\"client_to_broker\"", bytes_client_to_broker,
         "counter", "Bytes forwarded, by direction."),
    LROW("forwarded_bytes_total", "direction=\"broker_to_client\"", bytes_broker_to_client,
         "counter", NULL),
    LROW("spliced_bytes_total", "direction=\"client_to_broker\"", spliced_client_to_broker,
         "counter",
         "Of the forwarded bytes, those moved socket to socket by splice(2) (bodies of large "
         "pass-through frames on plaintext connections), by direction."),
    LROW("spliced_bytes_total", "direction=\"broker_to_client\"", spliced_broker_to_client,
         "counter", NULL),
    ROW("splice_fallbacks_total", splice_fallbacks, "counter",
        "Times splice(2) was refused by the kernel (a pipe could not be made, or a socket "
        "cannot splice): that connection, or the process, reads into user space instead."),
    ROW("splice_short_writes_total", splice_short_writes, "counter",
        "Splices whose destination took only part of the bytes (its socket buffer was full): the "
        "rest was read back from the pipe and queued as a normal write."),
    ROW("splice_chained_reads_total", splice_chained_reads, "counter",
        "Frame headers read in the same callback as the spliced body before them, instead of "
        "on the next loop turn (the source likely had more: the last splice took all it asked)."),
    LROW("frames_total", "direction=\"client_to_broker\"", frames_client_to_broker, "counter",
         "Kafka frames seen, by direction (requests: client_to_broker)."),
    LROW("frames_total", "direction=\"broker_to_client\"", frames_broker_to_client, "counter",
         NULL),
    LROW("frame_errors_total", "kind=\"oversize\"", frames_oversize, "counter",
         "Framing errors, by kind: oversize (above --max-frame-bytes), undersize (smaller than a "
         "header), truncated (the client closed mid-frame), stalled (--idle-timeout mid-frame), "
         "other (every other framing error that closed a connection)."),
    LROW("frame_errors_total", "kind=\"undersize\"", frames_undersize, "counter", NULL),
    LROW("frame_errors_total", "kind=\"truncated\"", frames_truncated, "counter", NULL),
    LROW("frame_errors_total", "kind=\"stalled\"", frames_stalled, "counter", NULL),
    LROW("frame_errors_total", "kind=\"other\"", protocol_errors, "counter", NULL),
    ROW("tls_on_plaintext_total", tls_on_plaintext, "counter",
        "TLS handshakes refused on a plaintext listener."),
    ROW("tls_handshakes_total", tls_handshakes, "counter",
        "TLS handshakes completed (client and upstream legs)."),
    ROW("tls_handshake_failures_total", tls_handshake_failures, "counter",
        "TLS handshakes or records that failed."),
    ROW("tls_plaintext_refused_total", tls_plaintext_refused, "counter",
        "Plaintext clients closed on the TLS listener."),
    LROW("tls_reloads_total", "result=\"ok\"", tls_reloads, "counter",
         "Certificate reloads after a file change, by result (refused: the old files stay in "
         "use)."),
    LROW("tls_reloads_total", "result=\"refused\"", tls_reload_failures, "counter", NULL),
    ROW("tls_ktls_available", tls_ktls_available, "gauge",
        "1 when the kernel offered kernel TLS (the tls module) at start, else 0."),
    LROW("tls_ktls_sessions_total", "direction=\"send\"", tls_ktls_send, "counter",
         "TLS legs established on kernel TLS, by direction: send (the kernel encrypts), recv "
         "(the kernel decrypts)."),
    LROW("tls_ktls_sessions_total", "direction=\"recv\"", tls_ktls_recv, "counter", NULL),
    ROW("produce_acks0_total", produce_acks0, "counter",
        "Produce requests with acks=0 (no response)."),
    ROW("unexpected_responses_total", unexpected_responses, "counter",
        "Responses that arrived with no request in flight."),
    ROW("sasl_raw_tokens_total", sasl_raw_tokens, "counter",
        "Raw SASL tokens after SaslHandshake v0."),
    ROW("sasl_opaque_connections_total", sasl_opaque_connections, "counter",
        "Connections passed through unframed (e.g. GSSAPI)."),
    LROW("sasl_authentications_total", "result=\"accepted\"", sasl_principals, "counter",
         "Client SASL exchanges kadmit followed, by the broker's answer."),
    LROW("sasl_authentications_total", "result=\"refused\"", sasl_auth_failures, "counter", NULL),
    LROW("sasl_authentications_total", "result=\"ignored\"", sasl_auth_ignored, "counter", NULL),
    ROW("sasl_v0_refused_total", sasl_v0_refused, "counter",
        "SaslHandshake v0 refused: a mechanism kadmit cannot follow, with a policy on."),
    ROW("frames_intercepted_total", frames_intercepted, "counter",
        "Frames buffered whole for inspection."),
    ROW("local_answers_total", local_answers, "counter", "Responses written by kadmit itself."),
    LROW("read_pauses_total", "cause=\"backpressure\"", backpressure_pauses, "counter",
         "Reads paused, by cause: backpressure (the other side was slow), pool (the memory pool "
         "was depleted), inflight (--max-inflight requests in flight)."),
    LROW("read_pauses_total", "cause=\"pool\"", pool_waits, "counter", NULL),
    LROW("read_pauses_total", "cause=\"inflight\"", inflight_pauses, "counter", NULL),
    LROW("held_requests_closed_total", "reason=\"oversize\"", held_oversize, "counter",
         "Held requests refused, by reason: oversize (above --max-held-request: closed, or "
         "answered with an error where one top-level error can say it), timeout (not whole "
         "within --held-request-timeout-ms: closed)."),
    LROW("held_requests_closed_total", "reason=\"timeout\"", held_timeouts, "counter", NULL),
    ROW("unknown_api_keys_total", unknown_api_keys, "counter",
        "Requests with an API key kadmit does not know, passed through."),
    ROW("admission_auto_create_denials_total", adm_auto_create_denials, "counter",
        "Metadata requests forwarded with allow_auto_topic_creation cleared."),
    ROW("admission_unauthenticated_total", adm_unauthenticated, "counter",
        "Admission requests on a connection that has not authenticated (or whose login failed), "
        "which the broker refuses: forwarded unjudged, reserving nothing."),
    ROW("admission_deferred_total", adm_deferred, "counter",
        "Admission decisions that waited for a metadata refresh."),
    ROW("admission_reservations_released_total", adm_reservations_released, "counter",
        "Reservations released because the broker's error means nothing was created."),
    ROW("admission_reservations_kept_total", adm_reservations_kept, "counter",
        "Reservations kept after a broker error that may still create (a timeout, an unknown "
        "code), until a view shows the result or they expire."),
    LROW("protected_refused_total", "api=\"DeleteTopics\"", protected_refused_delete_topics,
         "counter", "Deletes of protected topics refused, one per topic."),
    LROW("protected_refused_total", "api=\"DeleteRecords\"", protected_refused_delete_records,
         "counter", NULL),
    LROW("protected_refused_total", "api=\"AlterConfigs\"", protected_refused_alter_configs,
         "counter", NULL),
    LROW("protected_refused_total", "api=\"IncrementalAlterConfigs\"",
         protected_refused_incremental_alter_configs, "counter", NULL),
    /* The cluster-wide ledger. */
    ROW("ledger_appends_total", ledger_appends, "counter",
        "Records appended to the ledger (intents and outcomes)."),
    ROW("ledger_failures_total", ledger_failures, "counter",
        "Intents not written or not read back within the timeout."),
    ROW("ledger_records_malformed_total", ledger_records_malformed, "counter",
        "Ledger records refused when read back."),
    ROW("ledger_connected", ledger_connected, "gauge", "1 while ledger appends and reads succeed."),
    ROW("admission_healthy", admission_healthy, "gauge",
        "1 while admission can decide (a fresh cluster view; the ledger read when on); while 0, "
        "enforce mode refuses admission requests and other traffic flows."),
    ROW("ledger_intents_live", ledger_intents_live, "gauge",
        "Ledger intents of all sidecars that still count."),
    ROW("ledger_usable", ledger_usable, "gauge",
        "1 while the ledger can order decisions: read, its producer delivering, its consumer "
        "without error and not lagging past --ledger-timeout-ms, its topic with a leader and "
        "enough in-sync replicas. 0 (with --ledger on): admission requests are refused."),
    ROW("ledger_consumer_lag_records", ledger_consumer_lag_records, "gauge",
        "Ledger records between the consumer's last read and the partition's high watermark."),
    ROW("ledger_consumer_error", ledger_consumer_error, "gauge",
        "1 while the ledger consumer's last fetch failed and no record was read since."),
    ROW("ledger_consumer_errors_total", ledger_consumer_errors, "counter",
        "Fetch errors of the ledger consumer."),
    ROW("ledger_producer_error", ledger_producer_error, "gauge",
        "1 while the last ledger append failed and none succeeded since."),
    ROW("ledger_producer_fatal", ledger_producer_fatal, "gauge",
        "1 from a fatal librdkafka error of the ledger producer until its recreated client "
        "delivers."),
    ROW("ledger_client_recreated_total", ledger_client_recreated, "counter",
        "Ledger producers recreated after a fatal librdkafka error."),
    ROW("ledger_topic_replicas", ledger_topic_replicas, "gauge",
        "Replicas of the ledger topic's partition (the fewest, if several)."),
    ROW("ledger_topic_isr", ledger_topic_isr, "gauge",
        "In-sync replicas of the ledger topic's partition (the fewest, if several)."),
    ROW("ledger_topic_under_replicated", ledger_topic_under_replicated, "gauge",
        "1 while the ledger topic has fewer in-sync replicas than replicas, or fewer replicas "
        "than min(3, brokers): a warning, decisions still work."),
    ROW("ledger_topic_unavailable", ledger_topic_unavailable, "gauge",
        "1 while the ledger topic has no leader, or fewer in-sync replicas than min(2, "
        "replicas): appends cannot be acknowledged, decisions are refused."),
    ROW("limits_topic_replicas", limits_topic_replicas, "gauge",
        "Replicas of the limits topic's partitions (the fewest)."),
    ROW("limits_topic_isr", limits_topic_isr, "gauge",
        "In-sync replicas of the limits topic's partitions (the fewest)."),
    ROW("limits_topic_under_replicated", limits_topic_under_replicated, "gauge",
        "1 while the limits topic is under-replicated (as for the ledger topic)."),
    ROW("limits_topic_unavailable", limits_topic_unavailable, "gauge",
        "1 while a partition of the limits topic has no leader or too few in-sync replicas: "
        "limits changes cannot be written."),
    ROW("own_topic_reassignments_total", own_topic_reassignments, "counter",
        "Reassignments this sidecar sent to raise a kadmit topic's replication to min(3, "
        "brokers)."),
    LROW("own_records_refused_total", "topic=\"ledger\",reason=\"unsigned\"",
         own_refused_ledger_unsigned, "counter",
         "Records of kadmit's own topics read back and refused, changing nothing: unsigned or "
         "bad_mac (not written by a sidecar holding this cluster's secret), replayed (a ledger "
         "intent whose seq its sidecar already used), out_of_place (a limits record not at the "
         "offset it was written for: a concurrent change, or a copy of an old record)."),
    LROW("own_records_refused_total", "topic=\"ledger\",reason=\"bad_mac\"",
         own_refused_ledger_bad_mac, "counter", NULL),
    LROW("own_records_refused_total", "topic=\"ledger\",reason=\"replayed\"",
         own_refused_ledger_replayed, "counter", NULL),
    LROW("own_records_refused_total", "topic=\"limits\",reason=\"unsigned\"",
         own_refused_limits_unsigned, "counter", NULL),
    LROW("own_records_refused_total", "topic=\"limits\",reason=\"bad_mac\"",
         own_refused_limits_bad_mac, "counter", NULL),
    LROW("own_records_refused_total", "topic=\"limits\",reason=\"out_of_place\"",
         own_refused_limits_out_of_place, "counter", NULL),
    ROW("limits_conflicts_total", limits_conflicts, "counter",
        "Limits changes through this sidecar not made because another change reached the "
        "limits topic first (answered 409)."),
    ROW("limits_repairs_total", limits_repairs, "counter",
        "Times this sidecar wrote the limits in force again because the topic's newest record "
        "was refused (so compaction keeps a valid one)."),
    ROW("limits_loaded", limits_loaded, "gauge",
        "1 once the cluster's limits topic was read to its end since start (1 without the "
        "ledger); until then decisions that admit wait."),
    ROW("cluster_secret_configured", cluster_secret_configured, "gauge",
        "1 when a cluster secret signs and checks kadmit's own records; 0: unsigned records are "
        "accepted, and anyone who can produce to kadmit's topics changes its decisions."),
    LROW("metadata_refreshes_total", "result=\"ok\"", metadata_refreshes, "counter",
         "Cluster-view refreshes by the metadata client, by result (ok: a view was built)."),
    LROW("metadata_refreshes_total", "result=\"failed\"", metadata_refresh_failures, "counter",
         NULL),
    ROW("metadata_refresh_idle", metadata_refresh_idle, "gauge",
        "1 while no admission request came for metadata.refresh.idle.interval.ms and the view "
        "is refreshed at that interval."),
    ROW("cluster_view_partial", view_partial, "gauge",
        "1 while the cluster view may be partial (the broker hosts replicas the view lacks, or "
        "the check is refused); enforce mode then refuses admission requests."),
    LROW("cluster_view_checks_total", "result=\"complete\"", view_checks_complete, "counter",
         "Checks of the cluster view against the broker's log directories, by result."),
    LROW("cluster_view_checks_total", "result=\"missing\"", view_checks_missing, "counter", NULL),
    LROW("cluster_view_checks_total", "result=\"unauthorized\"", view_checks_unauthorized,
         "counter", NULL),
    LROW("cluster_view_checks_total", "result=\"failed\"", view_checks_failed, "counter", NULL),
    ROW("loop_turns_over_1ms_total", loop_turns_over_1ms, "counter",
        "Turns of the forwarding loop that ran over 1 ms."),
    ROW("loop_control_turns_over_1ms_total", control_turns_over_1ms, "counter",
        "Loop turns in which control-plane work ran over 1 ms."),
};

const double ka_metrics_latency_bounds[KA_METRICS_LATENCY_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

void ka_metrics_record_decision(ka_metrics_t *m, const ka_metrics_decision_t *d,
                                const char *message)
{
    ka_metrics_decision_t *slot = &m->recent[m->recent_total % KA_METRICS_RECENT_DECISIONS];
    size_t n = message ? strnlen(message, sizeof(slot->message) - 1) : 0;
    struct timespec ts;

    *slot = *d;
    memcpy(slot->message, message ? message : "", n);
    slot->message[n] = '\0';
    if (slot->at_unix_ms == 0 && clock_gettime(CLOCK_REALTIME, &ts) == 0)
        slot->at_unix_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    m->recent_total++;
}

const char *ka_rule_verdict_name(enum ka_rule_verdict v)
{
    static const char *names[] = {"admit", "reject", "audit", "defer"};
    return (unsigned)v < KA_RULE_VERDICT_COUNT ? names[v] : "?";
}

void ka_metrics_count_rule(ka_metrics_t *m, const char *rule, enum ka_rule_verdict verdict)
{
    char name[KA_METRICS_RULE_NAME];
    size_t i;

    if ((unsigned)verdict >= KA_RULE_VERDICT_COUNT)
        return;
    snprintf(name, sizeof(name), "%s", rule ? rule : "");
    for (i = 0; i < m->rule_slots; i++)
        if (strcmp(m->rules[i].rule, name) == 0)
            break;
    if (i == m->rule_slots && m->rule_slots < KA_METRICS_RULES) {
        memcpy(m->rules[i].rule, name, sizeof(name));
        m->rule_slots++;
    } else if (i == m->rule_slots) {
        i = KA_METRICS_RULES; /* past the cap: "other" */
    }
    m->rules[i].count[verdict]++;
}

const ka_metrics_decision_t *ka_metrics_recent(const ka_metrics_t *m, size_t i)
{
    if (i >= KA_METRICS_RECENT_DECISIONS || i >= m->recent_total)
        return NULL;
    return &m->recent[(m->recent_total - 1 - i) % KA_METRICS_RECENT_DECISIONS];
}

void ka_metrics_observe_decision(ka_metrics_t *m, enum ka_adm_api api, uint64_t ns)
{
    double s = (double)ns / 1e9;

    if ((unsigned)api >= KA_ADM_API_COUNT)
        return;
    /* Buckets are stored per bucket, not cumulatively: the renderer sums them. */
    for (int i = 0; i < KA_METRICS_LATENCY_BUCKETS; i++) {
        if (s <= ka_metrics_latency_bounds[i]) {
            m->adm_latency_buckets[api][i]++;
            break;
        }
    }
    m->adm_latency_count[api]++;
    m->adm_latency_sum_ns[api] += ns;
}

const char *ka_adm_api_name(enum ka_adm_api api)
{
    static const char *names[] = {
        "CreateTopics", "CreatePartitions",      "AlterPartitionReassignments",
        "Metadata",     "StreamsGroupHeartbeat", "DeleteTopics",
        "DeleteRecords"};
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
        [KA_REASON_TOPIC_NAME] = "topic_name",
        [KA_REASON_PRINCIPAL_TOPICS] = "principal_topics",
        [KA_REASON_RULE_REPLICATION] = "rule_replication",
        [KA_REASON_RULE_PARTITIONS] = "rule_partitions",
        [KA_REASON_RULE_CONFIG] = "rule_config",
        [KA_REASON_RULE_BUDGET] = "rule_budget",
        [KA_REASON_PRINCIPAL_BUDGET] = "principal_budget",
        [KA_REASON_PROTECTED_TOPIC] = "protected_topic",
        [KA_REASON_PARTIAL_VIEW] = "partial_view",
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

/* A summary without quantiles: the ledger's round trips as a sum and a count. */
static void render_ledger_round_trips(out_t *o, const ka_metrics_t *m)
{
    emit(o,
         "# HELP kadmit_ledger_round_trip_seconds From appending an intent to the ledger to "
         "reading it back.\n"
         "# TYPE kadmit_ledger_round_trip_seconds summary\n"
         "kadmit_ledger_round_trip_seconds_sum %.3f\n"
         "kadmit_ledger_round_trip_seconds_count %llu\n",
         (double)m->ledger_round_trip_ms_sum / 1000.0, (unsigned long long)m->ledger_round_trips);
}

/* The loop's own timings, in seconds: the longest recent turn, and the worker
 * time spent off the loop decoding Metadata and building views. */
static void render_loop(out_t *o, const ka_metrics_t *m)
{
    emit(o,
         "# HELP kadmit_loop_turn_max_seconds The longest turn of the forwarding loop in the last "
         "~10 s.\n"
         "# TYPE kadmit_loop_turn_max_seconds gauge\n"
         "kadmit_loop_turn_max_seconds %.6f\n"
         "# HELP kadmit_metadata_offloop_seconds_total Worker-thread time decoding Metadata and "
         "building cluster views.\n"
         "# TYPE kadmit_metadata_offloop_seconds_total counter\n"
         "kadmit_metadata_offloop_seconds_total %.6f\n",
         (double)m->loop_turn_max_us / 1e6, (double)m->metadata_offloop_us_sum / 1e6);
    /* The ledger's times, kept in ms, shown in the base unit. */
    emit(o,
         "# HELP kadmit_ledger_consumer_lag_seconds How long the ledger consumer has been behind "
         "the high watermark (0: caught up).\n"
         "# TYPE kadmit_ledger_consumer_lag_seconds gauge\n"
         "kadmit_ledger_consumer_lag_seconds %.3f\n"
         "# HELP kadmit_ledger_ready_seconds From the ledger client's start to reading the ledger "
         "(0 until it does): how long a starting sidecar made creates wait.\n"
         "# TYPE kadmit_ledger_ready_seconds gauge\n"
         "kadmit_ledger_ready_seconds %.3f\n",
         (double)m->ledger_consumer_lag_ms / 1000.0, (double)m->ledger_ready_ms / 1000.0);
}

/* A label value as the exposition format wants it: backslash, quote and newline escaped. */
static void emit_label_value(out_t *o, const char *v)
{
    for (; *v != '\0' && !o->overflow; v++) {
        if (*v == '\\' || *v == '"')
            emit(o, "\\%c", *v);
        else if (*v == '\n')
            emit(o, "\\n");
        else
            emit(o, "%c", *v);
    }
}

/* kadmit_rule_decisions_total: left out until an item was judged. */
static void render_rules(out_t *o, const ka_metrics_t *m)
{
    int header = 0;
    for (size_t i = 0; i <= KA_METRICS_RULES && !o->overflow; i++) {
        if (i >= m->rule_slots && i < KA_METRICS_RULES)
            continue;
        for (int v = 0; v < KA_RULE_VERDICT_COUNT; v++) {
            if (m->rules[i].count[v] == 0)
                continue;
            if (!header++)
                emit(o, "# HELP kadmit_rule_decisions_total Judged items by the rule that decided "
                        "(\"\" when none) and verdict.\n"
                        "# TYPE kadmit_rule_decisions_total counter\n");
            emit(o, "kadmit_rule_decisions_total{rule=\"");
            emit_label_value(o, i == KA_METRICS_RULES ? "other" : m->rules[i].rule);
            emit(o, "\",verdict=\"%s\"} %llu\n", ka_rule_verdict_name(v),
                 (unsigned long long)m->rules[i].count[v]);
        }
    }
}

/* The decision-latency histogram; an API with no decision yet is left out. */
static void render_latency(out_t *o, const ka_metrics_t *m)
{
    emit(o, "# HELP kadmit_admission_decision_duration_seconds Time from an admission request's "
            "judgement to its verdict, the ledger round trip included, by API.\n"
            "# TYPE kadmit_admission_decision_duration_seconds histogram\n");
    for (int a = 0; a < KA_ADM_API_COUNT && !o->overflow; a++) {
        uint64_t cum = 0;
        if (m->adm_latency_count[a] == 0)
            continue;
        for (int i = 0; i < KA_METRICS_LATENCY_BUCKETS; i++) {
            cum += m->adm_latency_buckets[a][i];
            emit(o,
                 "kadmit_admission_decision_duration_seconds_bucket{api=\"%s\",le=\"%g\"} %llu\n",
                 ka_adm_api_name(a), ka_metrics_latency_bounds[i], (unsigned long long)cum);
        }
        emit(o,
             "kadmit_admission_decision_duration_seconds_bucket{api=\"%s\",le=\"+Inf\"} %llu\n"
             "kadmit_admission_decision_duration_seconds_sum{api=\"%s\"} %.9f\n"
             "kadmit_admission_decision_duration_seconds_count{api=\"%s\"} %llu\n",
             ka_adm_api_name(a), (unsigned long long)m->adm_latency_count[a], ka_adm_api_name(a),
             (double)m->adm_latency_sum_ns[a] / 1e9, ka_adm_api_name(a),
             (unsigned long long)m->adm_latency_count[a]);
    }
}

long ka_metrics_render(const ka_metrics_t *m, ka_pool_t *pool, char *buf, size_t cap)
{
    out_t o = {.buf = buf, .cap = cap};
    char v[64];

    if (cap == 0)
        return KA_EOVERFLOW;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && !o.overflow; i++) {
        const metric_row_t *r = &rows[i];
        uint64_t x = *(const uint64_t *)((const char *)m + r->offset);
        if (i == 0 || strcmp(rows[i - 1].name, r->name) != 0)
            emit(&o, "# HELP %s %s\n# TYPE %s %s\n", r->name, r->help, r->name, r->type);
        if (r->labels != NULL)
            emit(&o, "%s{%s} %llu\n", r->name, r->labels, (unsigned long long)x);
        else
            emit(&o, "%s %llu\n", r->name, (unsigned long long)x);
    }
    render_ledger_round_trips(&o, m);
    render_loop(&o, m);
    render_latency(&o, m);
    render_rules(&o, m);
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
        snprintf(v, sizeof(v), "%.5f", ka_pool_avg_depleted_percent(pool) / 100.0);
        emit_metric(&o, "kadmit_memory_pool_avg_depleted_ratio", "gauge",
                    "memory-pool-avg-depleted-percent, as a ratio: share of recent time the pool "
                    "was full.",
                    v);
        snprintf(v, sizeof(v), "%.6f", ka_pool_depleted_time_total_s(pool));
        emit_metric(&o, "kadmit_memory_pool_depleted_time_seconds_total", "counter",
                    "memory-pool-depleted-time-total: time the pool was full.", v);
        snprintf(v, sizeof(v), "%zu", ka_pool_waiters(pool));
        emit_metric(&o, "kadmit_memory_pool_waiting_streams", "gauge",
                    "Streams waiting for pool memory.", v);
    }
    return o.overflow ? KA_EOVERFLOW : (long)o.len;
}
