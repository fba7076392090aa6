/*
 * test_loop_watch.c: the loop watch on a real libuv loop: a turn that runs
 * long is counted and is the longest-turn gauge; only turns in which the
 * control plane charged over 1 ms count as control turns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_loop_watch.h"

struct run {
    ka_loop_watch_t *watch;
    uv_timer_t timer;
    int step;
};

static void spin_ms(uint64_t ms)
{
    uint64_t end = uv_hrtime() + ms * 1000000u;

    while (uv_hrtime() < end)
        ;
}

/* Turn 1: 5 ms busy, 2 ms charged. Turn 2: 0.5 ms charged. Then the end. */
static void step_cb(uv_timer_t *t)
{
    struct run *r = t->data;

    if (r->step == 0) {
        spin_ms(5);
        ka_loop_watch_charge(r->watch, 2000000);
    } else if (r->step == 1) {
        ka_loop_watch_charge(r->watch, 500000);
    } else {
        ka_loop_watch_stop(r->watch);
        uv_close((uv_handle_t *)t, NULL);
        return;
    }
    r->step++;
    uv_timer_start(t, step_cb, 2, 0); /* the next step in a later turn */
}

static void test_long_turns_and_control_work_over_a_millisecond_are_counted(void **state)
{
    uv_loop_t loop;
    ka_metrics_t m;
    struct run r = {0};

    (void)state;
    memset(&m, 0, sizeof(m));
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(ka_loop_watch_start(&loop, &m, &r.watch), 0);
    uv_timer_init(&loop, &r.timer);
    r.timer.data = &r;
    uv_timer_start(&r.timer, step_cb, 0, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(r.step, 2);
    assert_int_equal(m.control_turns_over_1ms, 1);
    assert_true(m.loop_turns_over_1ms >= 1);
    assert_true(m.loop_turn_max_us >= 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_turns_and_control_work_over_a_millisecond_are_counted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
