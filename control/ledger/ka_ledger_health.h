/*
 * ka_ledger_health.h: whether the ledger client can carry decisions, and
 * what is wrong when it cannot (issue #27).
 *
 * "The consumer reads the ledger" is not enough: a consumer that errors or
 * lags, a producer whose appends fail or that hit a fatal error, a ledger
 * topic with no leader or too few in-sync replicas to take an acks=all
 * append all make every decision fail while the phase says reading. This
 * module watches what the ledger client sees and says so:
 *   - the consumer: the offset after the last record read against the high
 *     watermark (librdkafka's cached one, raised by our own delivered
 *     appends), how many records behind and for how long; its last fetch
 *     error and when;
 *   - the producer: its last failed delivery and when; a fatal error
 *     (rd_kafka_fatal_error), after which the client is recreated
 *     (ka_rdk_recreate) by the ledger and counted;
 *   - kadmit's two topics, from a Metadata request on the consumer's
 *     client every CHECK_MS, on the thread pool: replicas, in-sync
 *     replicas, leader, and the brokers the cluster has.
 * The figures go to the metrics (kadmit_ledger_* and kadmit_limits_topic_*
 * gauges, docs/metrics.md) and to /v1/admission.
 *
 * Decisions cannot work (ka_ledger_health_blocking) when the producer is
 * being recreated, appends failed and none succeeded since (for
 * ERROR_HOLD_MS), the consumer errs and read nothing since, the consumer
 * lags for longer than the ledger timeout, or the ledger topic has no
 * leader or fewer in-sync replicas than min(2, replicas), the
 * min.insync.replicas kadmit creates its topics with. Under-replicated
 * alone (ISR < replicas, or replicas < min(3, brokers)) is a warning.
 *
 * Recreating the producer keeps the ledger's state: the state is what the
 * consumer read, and the consumer's client is not touched by its sibling's
 * fatal error (a group-less consumer has none of its own), so it goes on
 * reading where it was. What the fatal error makes uncertain is this
 * sidecar's intents in flight: they fail (their reservations released, an
 * outcome releasing them appended by the new client), which is what the
 * other sidecars then read. Until the new client's first delivery report
 * (a heartbeat), decisions are refused with a message that says so.
 *
 * For tests only: KADMIT_TEST_LEDGER_FATAL_AFTER_MS=<ms> (unset by
 * default) provokes one fatal error on the producer (librdkafka's
 * rd_kafka_test_fatal_error) that long after the ledger first reads, so an
 * integration test can watch the recreation against a real cluster.
 */
#ifndef KA_LEDGER_HEALTH_H
#define KA_LEDGER_HEALTH_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ka_metrics.h"
#include "ka_rdk.h"

typedef struct ka_ledger_health ka_ledger_health_t;

/* Handles and names are borrowed and outlive the health; limits_topic "" for the default. */
int ka_ledger_health_new(ka_metrics_t *m, ka_rdk_t *producer, ka_rdk_t *consumer, const char *topic,
                         const char *limits_topic, int64_t timeout_ms, ka_ledger_health_t **out);
/* A check in flight on the pool finishes on its own and is then dropped. */
void ka_ledger_health_free(ka_ledger_health_t *h);

/* The consumer starts (again) at offset. */
void ka_ledger_health_reading(ka_ledger_health_t *h, int64_t offset, int64_t now_ms);
/* Every fetched message, records and errors alike. */
void ka_ledger_health_read(ka_ledger_health_t *h, const rd_kafka_message_t *msg, int64_t now_ms);
/* Every delivery report of the producer. */
void ka_ledger_health_delivered(ka_ledger_health_t *h, const rd_kafka_message_t *msg,
                                int64_t now_ms);

enum ka_ledger_health_action {
    KA_LEDGER_HEALTH_NONE = 0,
    KA_LEDGER_HEALTH_RECREATE, /* the producer hit a fatal error: recreate it now */
};
/* The ledger's tick: updates the figures, starts a topic check when due. reading: phase. */
enum ka_ledger_health_action ka_ledger_health_tick(ka_ledger_health_t *h, int reading,
                                                   int64_t now_ms);
/* The ledger recreated the producer (rc 0) or could not (rc < 0, err says why). */
void ka_ledger_health_recreated(ka_ledger_health_t *h, int rc, const char *err);
/* A new producer's first delivery came back: the recreation is over. */
int ka_ledger_health_recreating(const ka_ledger_health_t *h);

/* Nonzero when decisions cannot work now, with a sentence in why (len may be 0). */
int ka_ledger_health_blocking(const ka_ledger_health_t *h, int64_t now_ms, char *why, size_t len);

#endif
