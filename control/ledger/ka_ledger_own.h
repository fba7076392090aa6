/*
 * ka_ledger_own.h: what the ledger client checks about kadmit's own records
 * and topics, kept apart from its phases (ka_ledger.c).
 *
 *   - A record read back changes the state only when its MAC verifies under
 *     the cluster secret (ARCHITECTURE invariant 11); one refused is counted
 *     by reason and logged, rate-limited.
 *   - An intent whose items are all kadmit's own topics does not wait for
 *     the cluster's limits, which cannot be read before their topic exists.
 */
#ifndef KA_LEDGER_OWN_H
#define KA_LEDGER_OWN_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "ka_metrics.h"
#include "ka_own_mac.h"
#include "ka_reader.h"

/* True when msg's MAC verifies (or no secret is configured); counts and logs a refusal. */
bool ka_ledger_own_authentic(const ka_own_key_t *key, ka_own_warn_t *warn, ka_metrics_t *m,
                             const char *topic, const rd_kafka_message_t *msg, int64_t now_ms);

/* True for the ledger topic, the configured limits topic ("" for none) or a name starting
 * __kadmit. */
int ka_ledger_own_topic(const char *ledger_topic, const char *limits_topic, ka_slice_t name);

#endif
