/*
 * policy_fixtures.c: synthetic views and policies for the policy/ tests.
 * Any failure here aborts the test at once: fixtures must always build.
 */
#include "policy_fixtures.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

ka_cluster_builder_t *fx_builder(int64_t taken_at_ms)
{
    ka_cluster_builder_t *b = NULL;

    OK(ka_cluster_builder_new(taken_at_ms, &b));
    return b;
}

void fx_broker(ka_cluster_builder_t *b, int32_t id, const char *rack, bool fenced)
{
    ka_slice_t r = rack ? S(rack) : (ka_slice_t){NULL, -1};

    OK(ka_cluster_builder_add_broker(b, id, r, fenced));
}

void fx_load(ka_cluster_builder_t *b, int32_t broker_id, int32_t count)
{
    char name[32];

    snprintf(name, sizeof(name), "load-%d", broker_id);
    for (int32_t p = 0; p < count; p++)
        OK(ka_cluster_builder_add_partition(b, S(name), p, &broker_id, 1));
}

void fx_topic(ka_cluster_builder_t *b, const char *name, int32_t partitions, int32_t rf,
              const int32_t *brokers, int32_t n)
{
    int32_t replicas[64];

    for (int32_t p = 0; p < partitions; p++) {
        for (int32_t i = 0; i < rf; i++)
            replicas[i] = brokers[(p + i) % n];
        OK(ka_cluster_builder_add_partition(b, S(name), p, replicas, rf));
    }
}

ka_cluster_t *fx_finish(ka_cluster_builder_t *b)
{
    ka_cluster_t *c = NULL;

    OK(ka_cluster_builder_finish(b, &c));
    return c;
}

ka_cluster_t *fx_view(int64_t taken_at_ms, int32_t n, const int32_t *load)
{
    ka_cluster_builder_t *b = fx_builder(taken_at_ms);

    for (int32_t i = 0; i < n; i++) {
        fx_broker(b, i + 1, NULL, false);
        if (load != NULL && load[i] > 0)
            fx_load(b, i + 1, load[i]);
    }
    return fx_finish(b);
}

ka_policy_t *fx_policy(const char *json)
{
    ka_policy_t *p = NULL;
    char err[512] = "";
    int rc = ka_policy_parse(json, strlen(json), 1, &p, err, sizeof(err));

    if (rc != 0)
        fail_msg("fixture policy rejected: %s", err);
    return p;
}

ka_create_topic_t fx_create(const char *name, int32_t partitions, int16_t rf)
{
    return (ka_create_topic_t){
        .name = S(name), .num_partitions = partitions, .replication_factor = rf};
}

void fx_release(ka_verdict_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ka_verdict_release(&v[i]);
}

int32_t fx_count(const ka_verdict_t *v, int32_t broker_id)
{
    int32_t n = 0;

    for (int32_t i = 0; i < v->assignment_partitions * v->assignment_replication; i++)
        n += v->assignment[i] == broker_id;
    return n;
}

void fx_env_init(fx_env_t *e, const char *policy, ka_cluster_t *view)
{
    e->policy = fx_policy(policy);
    e->view = view;
    OK(ka_reservations_new(&e->ledger));
    e->ctx = (ka_decision_context_t){e->policy, e->view, e->ledger, 1000, 42};
}

void fx_env_free(fx_env_t *e)
{
    ka_policy_unref(e->policy);
    ka_cluster_unref(e->view);
    ka_reservations_free(e->ledger);
}
