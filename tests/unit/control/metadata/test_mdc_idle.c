/*
 * test_mdc_idle.c: when the metadata client's periodic refresh runs at the
 * idle interval: after that long without a judged request, back at the
 * normal interval on the next request or when the policy turns the mode off.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_mdc_idle.h"
#include "ka_metrics.h"

#define NORMAL 30000
#define IDLE   90000

static ka_mdc_idle_t fresh(int64_t now)
{
    ka_mdc_idle_t s;
    ka_mdc_idle_init(&s, NORMAL, now);
    assert_int_equal(ka_mdc_idle_set(&s, NORMAL, IDLE, now), -1);
    return s;
}

static void test_client_stays_at_the_normal_interval_until_quiet_for_the_idle_interval(void **state)
{
    (void)state;
    ka_mdc_idle_t s = fresh(1000);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
    assert_int_equal(ka_mdc_idle_tick(&s, 1000 + IDLE - 1), -1);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
    assert_int_equal(ka_mdc_idle_tick(&s, 1000 + IDLE), IDLE);
    assert_int_equal(ka_mdc_idle_period(&s), IDLE);
    /* Once idle, later ticks change nothing. */
    assert_int_equal(ka_mdc_idle_tick(&s, 1000 + 5 * IDLE), -1);
    assert_int_equal(ka_mdc_idle_period(&s), IDLE);
}

static void test_each_judged_request_restarts_the_quiet_time(void **state)
{
    (void)state;
    ka_mdc_idle_t s = fresh(0);
    assert_int_equal(ka_mdc_idle_activity(&s, 80000), -1); /* not idle: nothing to restart */
    assert_int_equal(ka_mdc_idle_tick(&s, IDLE), -1);
    assert_int_equal(ka_mdc_idle_tick(&s, 80000 + IDLE), IDLE);
}

static void test_first_request_after_idleness_brings_the_normal_interval_back(void **state)
{
    (void)state;
    ka_mdc_idle_t s = fresh(0);
    assert_int_equal(ka_mdc_idle_tick(&s, IDLE + 10), IDLE + 10);
    assert_int_equal(ka_mdc_idle_activity(&s, 250000), 250000);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
    assert_int_equal(ka_mdc_idle_activity(&s, 250001), -1);
}

static void test_idle_interval_not_above_the_normal_one_means_no_idle_mode(void **state)
{
    (void)state;
    ka_mdc_idle_t s;
    ka_mdc_idle_init(&s, NORMAL, 0);
    assert_int_equal(ka_mdc_idle_tick(&s, 10 * IDLE), -1);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
    /* A lower idle interval is raised to the normal one. */
    assert_int_equal(ka_mdc_idle_set(&s, NORMAL, 1000, 20 * IDLE), -1);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
}

static void test_policy_turning_the_mode_off_ends_idleness(void **state)
{
    (void)state;
    ka_mdc_idle_t s = fresh(0);
    assert_int_equal(ka_mdc_idle_tick(&s, IDLE), IDLE);
    assert_int_equal(ka_mdc_idle_set(&s, NORMAL, NORMAL, IDLE + 5), IDLE + 5);
    assert_int_equal(ka_mdc_idle_period(&s), NORMAL);
    /* New longer intervals while idle keep it idle, at the new period. */
    s = fresh(0);
    assert_int_equal(ka_mdc_idle_tick(&s, IDLE), IDLE);
    assert_int_equal(ka_mdc_idle_set(&s, NORMAL, 2 * IDLE, IDLE + 5), -1);
    assert_int_equal(ka_mdc_idle_period(&s), 2 * IDLE);
}

static void test_intervals_are_bounded_below_like_the_timer(void **state)
{
    (void)state;
    ka_mdc_idle_t s = fresh(0);
    ka_mdc_idle_set(&s, 5, 50, 0);
    assert_int_equal(ka_mdc_idle_period(&s), KA_MDC_IDLE_MIN_INTERVAL_MS);
}

static void test_announce_sets_the_gauge_both_ways(void **state)
{
    (void)state;
    ka_metrics_t m;
    memset(&m, 0, sizeof(m));
    ka_mdc_idle_t s = fresh(0);
    ka_mdc_idle_tick(&s, IDLE);
    ka_mdc_idle_announce(&s, "broker:9092", IDLE, &m);
    assert_int_equal(m.metadata_refresh_idle, 1);
    ka_mdc_idle_activity(&s, 2 * IDLE);
    ka_mdc_idle_announce(&s, "broker:9092", IDLE, &m);
    assert_int_equal(m.metadata_refresh_idle, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_client_stays_at_the_normal_interval_until_quiet_for_the_idle_interval),
        cmocka_unit_test(test_each_judged_request_restarts_the_quiet_time),
        cmocka_unit_test(test_first_request_after_idleness_brings_the_normal_interval_back),
        cmocka_unit_test(test_idle_interval_not_above_the_normal_one_means_no_idle_mode),
        cmocka_unit_test(test_policy_turning_the_mode_off_ends_idleness),
        cmocka_unit_test(test_intervals_are_bounded_below_like_the_timer),
        cmocka_unit_test(test_announce_sets_the_gauge_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
