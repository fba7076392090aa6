/*
 * ka_limits.h: the cluster's limits topic, on the proxy's loop.
 *
 * With the ledger on, the limits changed over any sidecar's admin API live
 * in one compacted Kafka topic (--limits-topic, default __kadmit_limits; one
 * partition, replication min(3, brokers), min.insync.replicas min(2, RF)).
 * This module creates the topic when it is missing, reads it from the
 * beginning and then follows it, handing every record to the caller in
 * offset order (ka_limits_record.h is the format), and writes new layers
 * with an idempotent producer (acks=all).
 *
 * A write is confirmed to its caller only once the record was acknowledged
 * by the topic's in-sync replicas and read back here, so the caller's answer
 * describes the policy that is then in force; a write that is not
 * acknowledged within the timeout fails, and the layer stays as it was. A
 * write that another change beat to the topic (it landed after a record it
 * did not know of) changes nothing and fails with KA_ECONFLICT.
 *
 * With a cluster secret every record is signed and every record read is
 * checked (ka_own_mac.h); a refused one changes nothing and is counted.
 *
 * librdkafka runs its own threads; its events are served on the loop
 * (ka_rdk.h), so nothing blocks the loop. Every callback runs on the loop
 * thread.
 */
#ifndef KA_LIMITS_H
#define KA_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ka_limits_record.h"
#include "ka_metrics.h"
#include "ka_rdk.h"

/* How long a write may wait for the replicas' acknowledgement and its read-back. */
#define KA_LIMITS_WRITE_TIMEOUT_MS 5000

typedef struct ka_limits ka_limits_t;

typedef struct ka_limits_handlers {
    void *arg;
    /* A record was read (in offset order); rec is valid during the call. */
    void (*record)(void *arg, const ka_limits_record_t *rec, int64_t offset);
    /* A record that is not a limits document (it is skipped), or a failure
     * of the topic or the connection, as a sentence. */
    void (*problem)(void *arg, const char *why);
    /* The topic has been read to its end for the first time since start. */
    void (*loaded)(void *arg);
    /* The number of brokers in the cluster, or 0 while it is not known (the
     * topic is created with replication min(3, brokers) once it is). */
    int (*broker_count)(void *arg);
    /* True when the cluster view already lists the topic: it is then read
     * without a CreateTopics request, which admission would judge. May be NULL. */
    bool (*topic_exists)(void *arg, const char *topic);
} ka_limits_handlers_t;

typedef struct ka_limits_settings {
    const char *bootstrap; /* "host:port" of a broker (kadmit's own upstream) */
    const char *topic;
    const char *writer; /* written_by of this sidecar's records */
    /* TLS and SASL of the sidecars' client side (ka_rdk_side_from),
     * and the cluster secret that signs the records; or NULL. */
    const ka_rdk_security_t *security;
    /* Refusals, conflicts, repairs and the limits_loaded gauge; or NULL. */
    ka_metrics_t *metrics;
} ka_limits_settings_t;

/*
 * A write's outcome: rc 0 once the record at `offset` was acknowledged and
 * read back (record() has run for it); KA_ECONFLICT when it was read back
 * but another change came first (nothing changed); another negative ka_err
 * and a sentence in `why` when it was not acknowledged in time or failed.
 */
typedef void (*ka_limits_written_fn)(void *arg, int rc, int64_t offset, const char *why);

/*
 * Starts the producer and the consumer on `loop`. Returns 0, or a negative
 * ka_err with a sentence in err (librdkafka refused its configuration).
 */
int ka_limits_start(uv_loop_t *loop, const ka_limits_settings_t *settings,
                    const ka_limits_handlers_t *handlers, ka_limits_t **out, char *err,
                    size_t errlen);

/*
 * Writes `layer` (a merge patch; "{}" clears) as the topic's record, for the
 * topic's end as read here. `done` runs later, exactly once (also when the
 * module closes first). Returns 0, or a negative ka_err with a sentence in
 * err when the write could not even be queued (then `done` never runs):
 * KA_ECONFLICT while another write of this sidecar's is not yet read back.
 */
int ka_limits_write(ka_limits_t *l, const char *layer, ka_limits_written_fn done, void *arg,
                    char *err, size_t errlen);

/* True until the topic has been read to its end once. */
bool ka_limits_loading(const ka_limits_t *l);
/* The offset of the last record read, or -1. */
int64_t ka_limits_offset(const ka_limits_t *l);
/* The last problem (see handlers.problem), or "". */
const char *ka_limits_last_problem(const ka_limits_t *l);

/*
 * Fails the writes still waiting, stops the clients and closes the handles;
 * the module frees itself once the loop has run the close callbacks.
 * Accepts NULL.
 */
void ka_limits_close(ka_limits_t *l);

#endif
