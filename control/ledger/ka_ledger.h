/*
 * ka_ledger.h: the cluster-wide admission ledger client.
 *
 * Sidecars that decide alone overshoot a limit when creates rotate over
 * them. The order of admission decisions therefore comes from Kafka: one
 * partition of a kadmit topic (--ledger-topic), replicated, written by an
 * idempotent producer with acks=all and read by a group-less consumer. A
 * sidecar that would admit appends an intent, waits until it reads that
 * intent back (every earlier record has then been read), and checks its
 * decision again against the view plus every intent ordered before its own.
 *
 * The client:
 *   - creates the topic when the cluster view lacks it (1 partition,
 *     RF = min(3, brokers), min.insync.replicas = min(2, RF), delete
 *     retention of a few TTLs), straight to the broker;
 *   - starts reading at the first record not older than the TTL
 *     (rd_kafka_offsets_for_times on the thread pool), so a restarted
 *     sidecar rebuilds the intents that still count;
 *   - applies every record to the mirror (ka_ledger_state.h), counting
 *     malformed ones;
 *   - calls an intent's callback once: when it is read back (with its
 *     offset), or when it was not read back within --ledger-timeout-ms or
 *     could not be written (unavailable); a timed-out intent is released
 *     at once and an outcome releasing it is appended.
 * Both librdkafka handles are served on the loop (ka_rdk.h).
 */
#ifndef KA_LEDGER_H
#define KA_LEDGER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ka_cluster.h"
#include "ka_metrics.h"
#include "ka_rdk.h"
#include "ka_reservations.h"

typedef struct ka_ledger ka_ledger_t;

typedef struct ka_ledger_config {
    const char *topic;
    const char *limits_topic; /* kadmit's limits topic (NULL: the default name alone) */
    const char *sidecar_id;
    const char *bootstrap; /* HOST:PORT of a broker */
    int64_t timeout_ms;    /* an intent not read back by then fails */
    int64_t ttl_ms;        /* intents count this long at most */
    ka_rdk_security_t security;
} ka_ledger_config_t;

enum ka_ledger_status {
    KA_LEDGER_READ_BACK = 0, /* the intent is at `order` in the ledger */
    KA_LEDGER_UNAVAILABLE,   /* not written, or not read back in time */
};

/* The intent's fate; called on the loop, never from inside ka_ledger_append_intent. */
typedef void (*ka_ledger_intent_cb)(void *arg, enum ka_ledger_status status, uint64_t order);

/* mirror: the reservations the engine decides against (borrowed; outlives the client). */
int ka_ledger_start(uv_loop_t *loop, const ka_ledger_config_t *cfg, ka_reservations_t *mirror,
                    ka_metrics_t *metrics, ka_ledger_t **out, char *err, size_t errlen);
/* Each new cluster view: creates the topic when missing, then starts reading. */
void ka_ledger_on_view(ka_ledger_t *l, const ka_cluster_t *view);
/* True while the consumer reads the ledger and nothing stops an intent appended now from being
 * read back (ka_ledger_health.h: a failed or recreated producer, a consumer in error or lagging,
 * an unavailable topic); while read but unusable, ka_ledger_append_intent refuses at once. */
int ka_ledger_usable(const ka_ledger_t *l);
/*
 * Appends an intent for the mirror's reservations ids[0..n) (their specs are
 * read from the mirror). *seq names it for ka_ledger_forget and
 * ka_ledger_append_outcome. An intent that cannot be written yet (the ledger
 * not read yet, or the limits loading) is held up to hold_ms (at least
 * --ledger-timeout-ms); once written it has --ledger-timeout-ms to be read
 * back. Returns 0, or a negative ka_err when it cannot be written at all (cb
 * is then never called).
 */
int ka_ledger_append_intent(ka_ledger_t *l, const uint64_t *ids, size_t n, int64_t hold_ms,
                            ka_ledger_intent_cb cb, void *arg, uint64_t *seq);
/* The caller no longer waits for intent seq: it is released (and so recorded). */
void ka_ledger_forget(ka_ledger_t *l, uint64_t seq);
/* What became of each item of a read-back intent: admitted[i] nonzero or released. */
int ka_ledger_append_outcome(ka_ledger_t *l, uint64_t seq, const uint8_t *admitted, size_t n);
/* Closes both handles; pending intents' callbacks are not called. */
void ka_ledger_stop(ka_ledger_t *l);

#endif
