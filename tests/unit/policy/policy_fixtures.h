/*
 * policy_fixtures.h: small helpers that build synthetic cluster views and
 * decision contexts for the policy/ unit tests.
 */
#ifndef POLICY_FIXTURES_H
#define POLICY_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ka_cluster.h"
#include "ka_engine.h"
#include "ka_policy.h"
#include "ka_reservations.h"

/* A slice over a C string (the string must outlive the slice). */
#define S(str) ((ka_slice_t){(const uint8_t *)(str), (int32_t)strlen(str)})

/* Asserts success of a call returning 0 or a negative ka_err. */
#define OK(expr) assert_int_equal((expr), 0)

ka_cluster_builder_t *fx_builder(int64_t taken_at_ms);
void fx_broker(ka_cluster_builder_t *b, int32_t id, const char *rack, bool fenced);
/* Adds topic "load-<id>" with `count` single-replica partitions on broker id. */
void fx_load(ka_cluster_builder_t *b, int32_t broker_id, int32_t count);
/* Adds a topic whose partition p has replicas brokers[(p + i) % n], i < rf. */
void fx_topic(ka_cluster_builder_t *b, const char *name, int32_t partitions, int32_t rf,
              const int32_t *brokers, int32_t n);
ka_cluster_t *fx_finish(ka_cluster_builder_t *b);
/* Brokers 1..n, no racks, each loaded with load[i] replicas (NULL: none). */
ka_cluster_t *fx_view(int64_t taken_at_ms, int32_t n, const int32_t *load);

ka_policy_t *fx_policy(const char *json);

/* A create-topics item with auto-assignment. */
ka_create_topic_t fx_create(const char *name, int32_t partitions, int16_t rf);

/* Frees an array of verdicts. */
void fx_release(ka_verdict_t *v, size_t n);

/* A decision context over a policy (JSON), a view (taken over) and an empty ledger. */
typedef struct fx_env {
    ka_policy_t *policy;
    ka_cluster_t *view;
    ka_reservations_t *ledger;
    ka_decision_context_t ctx;
} fx_env_t;
void fx_env_init(fx_env_t *e, const char *policy, ka_cluster_t *view);
void fx_env_free(fx_env_t *e);

/* Counts occurrences of broker id in an assignment. */
int32_t fx_count(const ka_verdict_t *v, int32_t broker_id);

#endif
