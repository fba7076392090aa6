/*
 * ka_admission_hook.h: admission on the data path (only with --policy).
 *
 * Owns the active policy (one pointer, swapped whole: a later reload only
 * calls ka_admission_set_policy), the current cluster view, the reservation
 * ledger and the metadata client, and installs interception handlers for
 * CreateTopics, CreatePartitions, AlterPartitionReassignments and Metadata
 * in the server's table. Each handler feeds the frame to ka_admission.c and
 * maps its action to a relay verdict; a decision that wants a fresher view
 * DEFERs until the metadata client's refresh completes (or fails). With
 * --ledger on, a decision that admits anything also DEFERs until its intent
 * is read back from the cluster-wide ledger (ka_ledger.h), then is checked
 * again against the intents ordered before it.
 */
#ifndef KA_ADMISSION_HOOK_H
#define KA_ADMISSION_HOOK_H

#include <stddef.h>

#include "ka_cluster.h"
#include "ka_policy.h"
#include "ka_reservations.h"
#include "ka_proxy.h"

typedef struct ka_admission ka_admission_t;

/* Takes the caller's reference on policy. Installs the handlers in srv->intercept. */
int ka_admission_start(ka_server_t *srv, ka_policy_t *policy, char *err, size_t errlen);
/* Replaces the active policy (takes the reference); decisions in progress keep theirs. */
void ka_admission_set_policy(ka_admission_t *a, ka_policy_t *policy);
/* The active policy, borrowed (valid until the next ka_admission_set_policy). */
ka_policy_t *ka_admission_policy(const ka_admission_t *a);
/* The current cluster view, borrowed, or NULL before the first refresh. */
ka_cluster_t *ka_admission_view(const ka_admission_t *a);
/* The reservation ledger, borrowed. */
const ka_reservations_t *ka_admission_ledger(const ka_admission_t *a);
/* True while the metadata client is connected to the broker. */
int ka_admission_upstream_connected(const ka_admission_t *a);
/* True with --ledger off, or once the ledger client reads the ledger (decisions can be ordered). */
int ka_admission_ledger_usable(const ka_admission_t *a);
/* Now, on the clock the cluster view's taken_at_ms uses (the loop's). */
int64_t ka_admission_now_ms(ka_admission_t *a);
/* Stops the metadata client and frees everything once the loop has closed its handles. */
void ka_admission_stop(ka_admission_t *a);

#endif
