/*
 * ka_own_rf.h: kadmit's own topics reach RF = min(3, brokers) as brokers
 * join (issue #27).
 *
 * A sidecar that starts with the cluster's first broker creates the ledger
 * and limits topics with the replicas the cluster has then, which can be 1,
 * and Kafka never raises a replication factor by itself. The metadata
 * client, after each view, asks this module whether a partition of a
 * kadmit topic has fewer replicas than min(3, unfenced brokers); if so it
 * sends AlterPartitionReassignments on its own connection to the broker
 * (straight to the broker, never through admission: kadmit's topics are
 * exempt from its own limits' judgement of clients, and their replicas are
 * counted in every view like any other).
 *
 * Several sidecars see the same view. The target is deterministic (the
 * current replicas in their order, then the lowest-id unfenced brokers not
 * among them), so requests sent by several sidecars ask for the same
 * assignment and a duplicate changes nothing. Each sidecar also waits a
 * random 0 to JITTER_MS after it first sees the need and looks again on a
 * newer view: the first request shows at once in Metadata (the adding
 * replicas are listed), so the others usually find nothing to do. The same
 * target is not asked again for RESEND_MS.
 *
 * Pure: no I/O; the clock and the random draw are passed in.
 */
#ifndef KA_OWN_RF_H
#define KA_OWN_RF_H

#include <stddef.h>
#include <stdint.h>

#include "ka_alterpartitionreassignments_request.h"
#include "ka_cluster.h"

#define KA_OWN_RF_MAX       3
#define KA_OWN_RF_TOPIC_MAX 249

/* One partition to raise, and to what. */
typedef struct ka_own_rf_plan {
    char topic[KA_OWN_RF_TOPIC_MAX + 1];
    int32_t partition;
    int32_t from; /* replicas now */
    int32_t target[KA_OWN_RF_MAX];
    int32_t count;
} ka_own_rf_plan_t;

/* What a sidecar remembers between views. */
typedef struct ka_own_rf {
    int64_t due_ms;  /* when the need seen first may be acted on; 0: no need seen */
    int64_t sent_ms; /* when `sent` was asked */
    ka_own_rf_plan_t sent;
} ka_own_rf_t;

/*
 * The target for replicas[0..n) on the view's brokers: 1 and out filled when
 * n < min(3, unfenced brokers), else 0.
 */
int ka_own_rf_target(const ka_cluster_t *view, const int32_t *replicas, int32_t n,
                     int32_t out[KA_OWN_RF_MAX], int32_t *out_count);

/*
 * After a view: 1 with plan filled when a reassignment should be sent now,
 * else 0. own(name) says whether a topic is kadmit's; jitter_ms is a random
 * draw in [0, KA_OWN_RF_JITTER_MS).
 */
#define KA_OWN_RF_JITTER_MS 5000
#define KA_OWN_RF_RESEND_MS 30000
int ka_own_rf_due(ka_own_rf_t *s, const ka_cluster_t *view, int (*own)(ka_slice_t name),
                  int64_t now_ms, int64_t jitter_ms, ka_own_rf_plan_t *plan);

/* One request and the storage it points into (valid while the plan is). */
typedef struct ka_own_rf_msg {
    struct ka_alterpartitionreassignments_request req;
    struct ka_alterpartitionreassignments_request_reassignable_topic topic;
    struct ka_alterpartitionreassignments_request_reassignable_partition part;
} ka_own_rf_msg_t;
/* Fills msg for plan. */
void ka_own_rf_request(const ka_own_rf_plan_t *plan, ka_own_rf_msg_t *msg);

/* True for kadmit's own topics as configured (ka_adm_own_topics_setup). */
int ka_own_rf_is_own(ka_slice_t name);

/* Logs the broker's answer to the request for `sent` (one line) and counts a success. */
struct ka_alterpartitionreassignments_response;
struct ka_metrics;
void ka_own_rf_answer(const ka_own_rf_plan_t *sent,
                      const struct ka_alterpartitionreassignments_response *resp,
                      struct ka_metrics *m);

#endif
