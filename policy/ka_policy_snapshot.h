/*
 * ka_policy_snapshot.h: the layout of a policy snapshot, shared by the
 * parser (ka_policy_parse.c), the snapshot operations and accessors
 * (ka_policy_snapshot.c) and the engine's budgets (ka_engine_rules.c, which
 * reach the rules). Private to policy/; other modules use ka_policy.h's and
 * ka_policy_rules.h's accessors.
 */
#ifndef KA_POLICY_SNAPSHOT_H
#define KA_POLICY_SNAPSHOT_H

#include <stdatomic.h>

#include "ka_policy.h"

struct ka_broker_limit {
    int32_t broker_id;
    int32_t limit;
};

struct ka_policy {
    atomic_int refs;  /* snapshots are shared by decisions and the admin API */
    uint64_t version; /* assigned by the caller; shown on the admin API and in logs */
    int32_t default_limit;
    int32_t max_partitions;
    enum ka_enforcement enforcement;
    int16_t reject_error_code;
    enum ka_auto_assignment auto_assignment;
    int64_t refresh_interval_ms;
    int64_t max_staleness_ms;
    int64_t refresh_before_decision_ms;
    int64_t refresh_idle_interval_ms; /* -1: not set, follows the other keys */
    int64_t reservation_expiry_ms;
    size_t override_count;
    /* Sorted by broker_id so that lookups are a binary search and the
     * serialized form is canonical. */
    struct ka_broker_limit *overrides;
    /* Topic rules, principals and protected topics (ka_rules_model.h); NULL
     * when the policy sets none. Shared with derived snapshots. */
    struct ka_rules *rules;
};

/* Every key at its default, one reference. */
void ka_policy_set_defaults(ka_policy_t *policy, uint64_t version);
/* Orders overrides by broker id (qsort and bsearch). */
int ka_policy_compare_override(const void *a, const void *b);

#endif
