/*
 * test_idle_interval.c: metadata.refresh.idle.interval.ms, the interval an
 * idle sidecar refreshes at: its bounds against the other metadata keys,
 * the value it takes when not set, and that unset stays unset in the
 * policy's canonical JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_policy.h"

static ka_policy_t *parse_ok(const char *json)
{
    ka_policy_t *p = NULL;
    char err[512] = "";
    int rc = ka_policy_parse(json, strlen(json), 1, &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s: %s", json, err);
    return p;
}

static int64_t idle_of(const char *json)
{
    ka_policy_t *p = parse_ok(json);
    int64_t ms = ka_policy_metadata_refresh_idle_interval_ms(p);
    ka_policy_unref(p);
    return ms;
}

static void test_unset_idle_interval_is_90s_at_the_defaults(void **state)
{
    (void)state;
    assert_int_equal(idle_of("{}"), 90000);
}

static void test_unset_idle_interval_stays_a_quarter_of_the_staleness_away(void **state)
{
    (void)state;
    assert_int_equal(idle_of("{\"metadata.max.staleness.ms\": 2000, "
                             "\"metadata.refresh.interval.ms\": 500, "
                             "\"metadata.refresh.before.decision.ms\": 500}"),
                     1500);
    assert_int_equal(
        idle_of("{\"metadata.max.staleness.ms\": 600000, \"reservation.expiry.ms\": 700000}"),
        90000);
}

static void test_unset_idle_interval_never_undercuts_the_refresh_interval(void **state)
{
    (void)state;
    /* 3/4 of the staleness is below the interval: no idle mode (both equal). */
    assert_int_equal(idle_of("{\"metadata.max.staleness.ms\": 2000, "
                             "\"metadata.refresh.interval.ms\": 1800, "
                             "\"metadata.refresh.before.decision.ms\": 500}"),
                     1800);
    assert_int_equal(idle_of("{\"metadata.refresh.interval.ms\": 100000}"), 100000);
}

static void test_set_idle_interval_is_taken_as_written(void **state)
{
    (void)state;
    assert_int_equal(idle_of("{\"metadata.refresh.idle.interval.ms\": 120000}"), 120000);
    assert_int_equal(idle_of("{\"metadata.refresh.idle.interval.ms\": 30000}"), 30000);
}

static void expect_refused(const char *json, const char *message)
{
    ka_policy_t *p = (ka_policy_t *)1;
    char err[512] = "";

    assert_int_equal(ka_policy_parse(json, strlen(json), 1, &p, err, sizeof(err)), KA_EINVALID);
    assert_null(p);
    assert_string_equal(err, message);
}

static void test_idle_interval_below_the_refresh_interval_is_refused(void **state)
{
    (void)state;
    expect_refused("{\"metadata.refresh.idle.interval.ms\": 29999}",
                   "metadata.refresh.idle.interval.ms: must be at least "
                   "metadata.refresh.interval.ms (30000) and at most metadata.max.staleness.ms "
                   "(120000), or an idle sidecar's view goes stale, got 29999");
}

static void test_idle_interval_above_the_staleness_is_refused(void **state)
{
    (void)state;
    expect_refused("{\"metadata.refresh.idle.interval.ms\": 120001}",
                   "metadata.refresh.idle.interval.ms: must be at least "
                   "metadata.refresh.interval.ms (30000) and at most metadata.max.staleness.ms "
                   "(120000), or an idle sidecar's view goes stale, got 120001");
    expect_refused("{\"metadata.refresh.idle.interval.ms\": 99}",
                   "metadata.refresh.idle.interval.ms: must be an integer between 100 and "
                   "86400000, got 99");
}

static void test_idle_interval_round_trips_only_when_set(void **state)
{
    (void)state;
    ka_policy_t *unset = parse_ok("{}");
    ka_policy_t *set = parse_ok("{\"metadata.refresh.idle.interval.ms\": 90000}");
    char *a = ka_policy_serialize(unset), *b = ka_policy_serialize(set);

    assert_non_null(a);
    assert_non_null(b);
    assert_null(strstr(a, "idle"));
    assert_non_null(strstr(b, "\"metadata.refresh.idle.interval.ms\": 90000"));
    /* Same value in force, but one follows the other keys and one does not. */
    assert_false(ka_policy_equal(unset, set));
    ka_policy_t *again = parse_ok(b);
    assert_true(ka_policy_equal(again, set));
    free(a);
    free(b);
    ka_policy_unref(again);
    ka_policy_unref(unset);
    ka_policy_unref(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_idle_interval_is_90s_at_the_defaults),
        cmocka_unit_test(test_unset_idle_interval_stays_a_quarter_of_the_staleness_away),
        cmocka_unit_test(test_unset_idle_interval_never_undercuts_the_refresh_interval),
        cmocka_unit_test(test_set_idle_interval_is_taken_as_written),
        cmocka_unit_test(test_idle_interval_below_the_refresh_interval_is_refused),
        cmocka_unit_test(test_idle_interval_above_the_staleness_is_refused),
        cmocka_unit_test(test_idle_interval_round_trips_only_when_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
