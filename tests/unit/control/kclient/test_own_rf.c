/*
 * test_own_rf.c: when a kadmit topic's replication is raised, to what, and
 * that several sidecars ask for the same assignment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_alterpartitionreassignments_request.h"
#include "ka_own_rf.h"

static ka_slice_t S(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

/* Brokers 1..n (fenced: the ids in `fenced`), the ledger on `ledger_replicas`, one user topic. */
static ka_cluster_t *view(int n, int32_t fenced, const int32_t *ledger_replicas, int32_t lr)
{
    ka_cluster_builder_t *b = NULL;
    ka_cluster_t *v = NULL;
    static const int32_t user[] = {1};
    assert_int_equal(ka_cluster_builder_new(0, &b), 0);
    for (int i = 1; i <= n; i++)
        assert_int_equal(ka_cluster_builder_add_broker(b, i, S(""), i == fenced), 0);
    assert_int_equal(
        ka_cluster_builder_add_partition(b, S("__kadmit_ledger"), 0, ledger_replicas, lr), 0);
    assert_int_equal(ka_cluster_builder_add_partition(b, S("user"), 0, user, 1), 0);
    assert_int_equal(ka_cluster_builder_finish(b, &v), 0);
    return v;
}

static int own(ka_slice_t name)
{
    return name.len == 15 && memcmp(name.ptr, "__kadmit_ledger", 15) == 0;
}

static void test_target_adds_the_lowest_unfenced_ids(void **state)
{
    (void)state;
    int32_t out[KA_OWN_RF_MAX], n = 0;
    static const int32_t two[] = {2};
    ka_cluster_t *v = view(4, 1, two, 1); /* broker 1 fenced */
    assert_true(ka_own_rf_target(v, two, 1, out, &n));
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 2); /* the current replica stays first (the leader) */
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 4);
    ka_cluster_unref(v);
    /* Enough already: min(3, 2 brokers) = 2. */
    static const int32_t both[] = {1, 2};
    v = view(2, 0, both, 2);
    assert_false(ka_own_rf_target(v, both, 2, out, &n));
    ka_cluster_unref(v);
    /* One broker: nothing to raise. */
    static const int32_t one[] = {1};
    v = view(1, 0, one, 1);
    assert_false(ka_own_rf_target(v, one, 1, out, &n));
    ka_cluster_unref(v);
}

static void test_due_waits_its_jitter_then_asks_once(void **state)
{
    (void)state;
    static const int32_t one[] = {1};
    ka_own_rf_t s = {0};
    ka_own_rf_plan_t plan;
    ka_cluster_t *v = view(3, 0, one, 1);
    assert_false(ka_own_rf_due(&s, v, own, 1000, 700, &plan)); /* seen first: waits */
    assert_false(ka_own_rf_due(&s, v, own, 1600, 0, &plan));
    assert_true(ka_own_rf_due(&s, v, own, 1700, 0, &plan));
    assert_string_equal(plan.topic, "__kadmit_ledger");
    assert_int_equal(plan.partition, 0);
    assert_int_equal(plan.from, 1);
    assert_int_equal(plan.count, 3);
    /* The same target is not asked again while Kafka moves it... */
    assert_false(ka_own_rf_due(&s, v, own, 2000, 0, &plan));
    /* ...but is after RESEND_MS if the views still show it short. */
    assert_true(ka_own_rf_due(&s, v, own, 1700 + KA_OWN_RF_RESEND_MS, 0, &plan));
    ka_cluster_unref(v);
    /* Raised: the need is forgotten. */
    static const int32_t three[] = {1, 2, 3};
    v = view(3, 0, three, 3);
    assert_false(ka_own_rf_due(&s, v, own, 50000, 0, &plan));
    assert_int_equal(s.due_ms, 0);
    ka_cluster_unref(v);
}

static void test_request_names_the_partition_and_its_replicas(void **state)
{
    (void)state;
    ka_own_rf_plan_t plan = {
        .topic = "__kadmit_limits", .partition = 0, .from = 1, .target = {1, 2, 3}, .count = 3};
    ka_own_rf_msg_t msg;
    ka_own_rf_request(&plan, &msg);
    assert_int_equal(msg.req.topics.count, 1);
    assert_int_equal(msg.req.topics.items[0].name.len, 15);
    assert_memory_equal(msg.req.topics.items[0].name.ptr, "__kadmit_limits", 15);
    assert_int_equal(msg.req.topics.items[0].partitions.count, 1);
    assert_int_equal(msg.req.topics.items[0].partitions.items[0].replicas.count, 3);
    assert_int_equal(msg.req.topics.items[0].partitions.items[0].replicas.items[2], 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_adds_the_lowest_unfenced_ids),
        cmocka_unit_test(test_due_waits_its_jitter_then_asks_once),
        cmocka_unit_test(test_request_names_the_partition_and_its_replicas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
