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
#define KA_ADM_VERSION_SLOTS       16 /* decode errors of versions >= 15 share the last slot */
#define KA_METRICS_LATENCY_BUCKETS 14

const char *ka_adm_api_name(enum ka_adm_api api);
const char *ka_adm_decision_name(enum ka_adm_decision d);
const char *ka_adm_reason_name(enum ka_reason r);

/* One admission decision as the status page lists it (GET /v1/decisions). */
#define KA_METRICS_RECENT_DECISIONS 20
#define KA_METRICS_DECISION_MESSAGE 480 /* longer messages are cut; the log has them whole */
typedef struct ka_metrics_decision {
    int64_t at_unix_ms;
    enum ka_adm_api api;
    enum ka_adm_decision decision;
    enum ka_reason reason;
    int32_t correlation_id;
    uint32_t items, admitted, rejected;
    int audit; /* decided in audit mode */
    char message[KA_METRICS_DECISION_MESSAGE];
    char principal[128]; /* who asked, as judged (the policy's principal.unknown when unknown) */
    char rule[128];      /* the rule of the first rejected (else first) item; "" when none */
} ka_metrics_decision_t;

/*
 * kadmit_rule_decisions_total{rule,verdict}: one count per judged item. The
 * label values are bounded: the first KA_METRICS_RULES distinct rule names
 * get a row each (rule "" is the items no rule decided), every later one
 * counts under rule "other".
 */
#define KA_METRICS_RULES     64
#define KA_METRICS_RULE_NAME 160 /* longer rule names are cut */
enum ka_rule_verdict {
    KA_RULE_VERDICT_ADMIT = 0,
    KA_RULE_VERDICT_REJECT,
    KA_RULE_VERDICT_AUDIT,
    KA_RULE_VERDICT_DEFER,
    KA_RULE_VERDICT_COUNT
};
typedef struct ka_rule_counter {
    char rule[KA_METRICS_RULE_NAME];
    uint64_t count[KA_RULE_VERDICT_COUNT];
} ka_rule_counter_t;

typedef struct ka_metrics {
    uint64_t connections_accepted; /* client connections taken by the listener */
    uint64_t connections_rejected; /* closed at once because of --max-connections */
    uint64_t connections_active;   /* sessions open now (gauge) */
    uint64_t connections_cut;      /* closed by the drain timeout */
    uint64_t idle_timeouts;        /* closed by --idle-timeout */
    uint64_t stalled_readers;      /* closed by --stalled-reader-timeout-ms */
    uint64_t upstream_connect_failures;
    /* Gateway mode (proxy/ka_gateway.c). */
    uint64_t gw_brokers;          /* brokers the gateway serves (gauge) */
    uint64_t gw_listeners_opened; /* broker listeners opened ... */
    uint64_t gw_listeners_closed; /* ... and closed (broker left, drain) */
    uint64_t gw_listen_failures;  /* a broker's gateway port could not be bound */
    uint64_t gw_rewritten;        /* responses whose broker endpoints were rewritten */
    uint64_t gw_unchanged;        /* held for the rewrite, forwarded as they were */
    uint64_t gw_rewrite_errors;   /* did not parse (forwarded unchanged) or did not fit */
    uint64_t gw_unmapped;         /* endpoints of broker ids with no gateway port */
    uint64_t gw_closed_left;      /* connections closed because their broker left */
    uint64_t gw_route_failures;   /* connections closed: no address known for their broker */
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
    uint64_t tls_ktls_available;      /* 1 when the start-up probe found the kernel's tls module */
    uint64_t tls_ktls_send;           /* TLS legs whose records the kernel encrypts (kTLS) */
    uint64_t tls_ktls_recv;           /* TLS legs whose records the kernel decrypts (kTLS) */
    uint64_t produce_acks0;           /* Produce requests that get no response */
    uint64_t unexpected_responses;    /* responses with nothing in flight */
    uint64_t sasl_raw_tokens;         /* raw SASL tokens after SaslHandshake v0 */
    uint64_t sasl_opaque_connections; /* connections passed through unframed */
    uint64_t sasl_principals;     /* SASL exchanges the broker accepted (principal known or not) */
    uint64_t sasl_auth_failures;  /* SASL exchanges the broker refused: the principal stays */
    uint64_t sasl_auth_ignored;   /* SaslAuthenticate answers outside an exchange (after a login) */
    uint64_t sasl_v0_refused;     /* SaslHandshake v0, unfollowed mechanism, policy on */
    uint64_t frames_intercepted;  /* frames buffered whole for a handler */
    uint64_t local_answers;       /* answers kadmit wrote itself */
    uint64_t backpressure_pauses; /* reads stopped for a slow peer */
    uint64_t spliced_client_to_broker; /* of the forwarded bytes, moved by splice(2) */
    uint64_t spliced_broker_to_client;
    uint64_t splice_fallbacks; /* splice refused by the kernel (EINVAL, ENOSYS, ...): plain reads */
    uint64_t splice_short_writes;  /* splices the destination took part of: the rest queued */
    uint64_t splice_chained_reads; /* headers read right after a spliced body, same callback */
    uint64_t pool_waits;           /* reads stopped for lack of pool memory */
    uint64_t inflight_pauses;      /* client reads stopped at --max-inflight */
    uint64_t frames_truncated;     /* clients that closed in the middle of a frame */
    uint64_t frames_stalled;       /* idle timeouts with a request frame half sent */
    uint64_t held_oversize;        /* held requests above --max-held-request, refused */
    uint64_t held_timeouts;        /* held requests not whole by --held-request-timeout-ms */
    uint64_t unknown_api_keys;     /* requests with an API key not in the specs */
    /* Admission (only with --policy). */
    uint64_t adm_decisions[KA_ADM_API_COUNT][KA_ADM_D_COUNT][KA_REASON_COUNT];
    uint64_t adm_decode_errors[KA_ADM_API_COUNT][KA_ADM_VERSION_SLOTS];
    uint64_t adm_version_refused[KA_ADM_API_COUNT]; /* above what kadmit decodes: closed */
    uint64_t adm_auto_create_denials; /* Metadata forwarded with auto-creation cleared */
    uint64_t adm_deferred;            /* decisions that waited for a metadata refresh */
    uint64_t adm_unauthenticated; /* admission requests before authentication, left to the broker */
    uint64_t adm_reservations_released; /* released because the broker reported an error */
    uint64_t adm_reservations_kept;     /* kept after an error that may still create (a timeout) */
    uint64_t protected_refused_delete_topics;  /* DeleteTopics items refused: protected topic */
    uint64_t protected_refused_delete_records; /* DeleteRecords topics refused: protected topic */
    /* Topic config changes refused: kadmit's own topic, or destroying a protected one's data. */
    uint64_t protected_refused_alter_configs;
    uint64_t protected_refused_incremental_alter_configs;
    /* The cluster-wide ledger (only with --ledger on). */
    uint64_t ledger_appends;           /* records appended (intents and outcomes) */
    uint64_t ledger_round_trip_ms_sum; /* from appending an intent to reading it back */
    uint64_t ledger_round_trips;       /* intents read back */
    uint64_t ledger_failures;          /* intents not written or not read back in time */
    uint64_t ledger_records_malformed; /* records read back and refused */
    uint64_t ledger_connected;         /* gauge: 1 while appends and reads succeed */
    uint64_t admission_healthy;        /* gauge: 1 while admission can decide */
    uint64_t ledger_intents_live;      /* gauge: intents that still count */
    /* The ledger client's health (control/ledger/ka_ledger_health.h); gauges unless named a count.
     */
    uint64_t ledger_usable;               /* 1 while decisions can be ordered by the ledger */
    uint64_t ledger_consumer_lag_records; /* records between the last read and the high watermark */
    uint64_t ledger_consumer_lag_ms;      /* how long the consumer has been behind (0: caught up) */
    uint64_t ledger_consumer_error;   /* 1 while the last fetch failed and nothing was read since */
    uint64_t ledger_consumer_errors;  /* count: fetch errors */
    uint64_t ledger_producer_error;   /* 1 while the last append failed and none succeeded since */
    uint64_t ledger_producer_fatal;   /* 1 from a fatal error until the new producer delivers */
    uint64_t ledger_client_recreated; /* count: producers recreated after a fatal error */
    /* kadmit's topics, from librdkafka's Metadata: the fewest replicas and in-sync replicas of
     * a partition, under-replicated (ISR < replicas, or replicas < min(3, brokers)) and
     * unavailable (no leader, or ISR < min(2, replicas)). */
    uint64_t ledger_topic_replicas, ledger_topic_isr;
    uint64_t ledger_topic_under_replicated, ledger_topic_unavailable;
    uint64_t limits_topic_replicas, limits_topic_isr;
    uint64_t limits_topic_under_replicated, limits_topic_unavailable;
    uint64_t own_topic_reassignments; /* count: own topics' replication raised by this sidecar */
    /* The same in sentences, for GET /v1/admission and the status page ("": nothing to say). */
    char ledger_blocked_why[256];
    char ledger_consumer_last_error[160];
    int64_t ledger_consumer_last_error_unix_ms;
    char ledger_producer_last_error[160];
    int64_t ledger_producer_last_error_unix_ms;
    char ledger_topic_state[200];
    char limits_topic_state[200];
    uint64_t ledger_ready_ms; /* gauge: from the ledger client's start to reading (0: not yet) */
    /* kadmit's own records read back and refused (control/kclient/ka_own_mac.h): by
     * topic and reason. Unsigned or bad MAC: not written by a sidecar of this
     * cluster; replayed: a ledger intent whose sidecar already used its seq;
     * out of place: a limits record that did not land at the offset it was
     * written for (a concurrent change, or a copy of an old record). */
    uint64_t own_refused_ledger_unsigned, own_refused_ledger_bad_mac, own_refused_ledger_replayed;
    uint64_t own_refused_limits_unsigned, own_refused_limits_bad_mac;
    uint64_t own_refused_limits_out_of_place;
    uint64_t limits_conflicts;          /* own limits writes another change beat (HTTP 409) */
    uint64_t limits_repairs;            /* layers rewritten because the newest record was refused */
    uint64_t limits_loaded;             /* gauge: 1 once the limits topic was read to its end */
    uint64_t cluster_secret_configured; /* gauge: 1 when kadmit's records are signed and checked */
    uint64_t metadata_refreshes;        /* cluster views built */
    uint64_t metadata_refresh_failures; /* refresh attempts that failed */
    uint64_t metadata_offloop_us_sum;   /* worker time decoding Metadata and building views */
    uint64_t metadata_refresh_idle;     /* gauge: 1 while refreshing at the idle interval */
    uint64_t view_partial;              /* gauge: 1 while the view may be partial */
    uint64_t view_checks_complete;      /* log-directory checks that found every topic */
    uint64_t view_checks_missing;       /* checks that found replicas the view lacks */
    uint64_t view_checks_unauthorized;  /* checks the broker refused (no Describe on CLUSTER) */
    uint64_t view_checks_failed;        /* checks whose answer could not be read */
    uint64_t loop_turn_max_us;          /* gauge: the longest loop turn of the last ~10 s */
    uint64_t loop_turns_over_1ms;       /* loop turns that ran for over 1 ms */
    uint64_t control_turns_over_1ms;    /* turns with over 1 ms of control-plane work */
    /* How long decisions take, from the judgement that decides to the verdict
     * (the ledger's round trip included, a wait for a metadata refresh not), by
     * API: ka_metrics_observe_decision(). */
    uint64_t adm_latency_buckets[KA_ADM_API_COUNT][KA_METRICS_LATENCY_BUCKETS];
    uint64_t adm_latency_count[KA_ADM_API_COUNT];
    uint64_t adm_latency_sum_ns[KA_ADM_API_COUNT];
    /* The latest decisions, a ring: ka_metrics_record_decision(), ka_metrics_recent(). */
    ka_metrics_decision_t recent[KA_METRICS_RECENT_DECISIONS];
    uint64_t recent_total; /* decisions recorded since start */
    /* Per rule and verdict: ka_metrics_count_rule(). The last slot is "other". */
    ka_rule_counter_t rules[KA_METRICS_RULES + 1];
    size_t rule_slots; /* named slots in use */
} ka_metrics_t;

/* Upper bounds, in seconds, of the decision-latency histogram's buckets (+Inf aside). */
extern const double ka_metrics_latency_bounds[KA_METRICS_LATENCY_BUCKETS];

/* Keeps d (its time set to now when 0) with message (cut to fit; NULL: none) as
 * the newest of the latest decisions. */
void ka_metrics_record_decision(ka_metrics_t *m, const ka_metrics_decision_t *d,
                                const char *message);

/* The i-th newest decision (0: the newest), or NULL past the ones kept. */
const ka_metrics_decision_t *ka_metrics_recent(const ka_metrics_t *m, size_t i);

/* Counts one judged item under its rule (NULL or "": none) and verdict. */
void ka_metrics_count_rule(ka_metrics_t *m, const char *rule, enum ka_rule_verdict verdict);
/* "admit", "reject", "audit", "defer". */
const char *ka_rule_verdict_name(enum ka_rule_verdict v);

/* Counts one admission decision of api that took ns nanoseconds. */
void ka_metrics_observe_decision(ka_metrics_t *m, enum ka_adm_api api, uint64_t ns);

/*
 * Renders the Prometheus text exposition format into buf, following the
 * naming conventions (counters end in _total, base units, labels rather
 * than name variants; docs/metrics.md lists every family). Returns the
 * length written, or KA_EOVERFLOW when buf is too small.
 */
long ka_metrics_render(const ka_metrics_t *m, ka_pool_t *pool, char *buf, size_t cap);

#endif
