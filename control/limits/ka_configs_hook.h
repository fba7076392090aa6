/*
 * ka_configs_hook.h: KIP-578's kafka-configs interface on the data path
 * (with --policy).
 *
 * Installs interception handlers for IncrementalAlterConfigs,
 * AlterConfigs and DescribeConfigs (admission/ka_admission_configs.h is the
 * translation). An alter's kadmit keys are taken out of the request, the
 * rest goes to the broker, and once the broker has accepted a resource (so
 * Kafka's authorizer allowed it) its changes go to kadmit's limits store:
 * the cluster's limits topic with the ledger on (every sidecar applies the
 * record as it reads it), else the policy store like an admin API change.
 * The client's answer is the broker's (merged with kadmit's refusals); it
 * does not wait for the limits record to be read back, so another sidecar
 * may enforce the old value for up to the topic's read latency.
 */
#ifndef KA_CONFIGS_HOOK_H
#define KA_CONFIGS_HOOK_H

#include <stddef.h>

#include "ka_policy_reload.h"
#include "ka_proxy.h"

typedef struct ka_configs ka_configs_t;

/* After ka_admission_start and ka_policy_reload_start. Returns 0 or KA_ENOMEM. */
int ka_configs_start(ka_server_t *srv, ka_policy_reload_t *reload, ka_configs_t **out, char *err,
                     size_t errlen);
/* After the loop has run its last callbacks. Accepts NULL. */
void ka_configs_stop(ka_configs_t *c);

#endif
