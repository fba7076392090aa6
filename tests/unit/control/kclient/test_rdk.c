/*
 * test_rdk.c: the librdkafka handle on a libuv loop, without a broker.
 *
 * A producer pointed at a port nobody listens on still reports each
 * message (as failed, once message.timeout.ms passes): seeing that report
 * arrive through the loop proves the queue's wake-up fd, the uv_poll watch
 * and the serving of events; the blocking runner and close are checked the
 * same way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_rdk.h"

typedef struct seen {
    int reports;
    rd_kafka_resp_err_t err;
    void *opaque;
    uv_timer_t guard;
} seen_t;

static void on_event(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    seen_t *s = arg;
    (void)rdk;
    if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DR)
        return;
    const rd_kafka_message_t *m;
    while ((m = rd_kafka_event_message_next(ev)) != NULL) {
        s->reports++;
        s->err = m->err;
        s->opaque = m->_private;
    }
    uv_timer_stop(&s->guard);
    uv_stop(s->guard.loop); /* the queue's watch keeps the loop alive */
}

static void guard_cb(uv_timer_t *t)
{
    uv_stop(t->loop);
}

static const char *const fast_fail[] = {"message.timeout.ms", "300", "linger.ms", "0", NULL};

static ka_rdk_settings_t unreachable(enum ka_rdk_role role)
{
    return (ka_rdk_settings_t){
        .role = role, .bootstrap = "127.0.0.1:1", .client_id = "kadmit-test", .props = fast_fail};
}

static void test_delivery_report_arrives_through_the_loop(void **state)
{
    (void)state;
    uv_loop_t loop;
    seen_t s = {0};
    char err[256] = "";
    ka_rdk_t *r = NULL;
    ka_rdk_settings_t st = unreachable(KA_RDK_PRODUCER);
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &s.guard);
    uv_timer_start(&s.guard, guard_cb, 10000, 0);
    assert_int_equal(ka_rdk_new(&loop, &st, on_event, &s, &r, err, sizeof(err)), 0);
    int token = 7;
    rd_kafka_resp_err_t e = rd_kafka_producev(
        ka_rdk_handle(r), RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("x", 1),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(&token), RD_KAFKA_V_END);
    assert_int_equal(e, RD_KAFKA_RESP_ERR_NO_ERROR);
    uv_run(&loop, UV_RUN_DEFAULT); /* ends when the report stopped the guard */
    assert_int_equal(s.reports, 1);
    assert_int_not_equal(s.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_ptr_equal(s.opaque, &token);
    ka_rdk_close(r);
    uv_close((uv_handle_t *)&s.guard, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_refused_property_is_named_in_the_error(void **state)
{
    (void)state;
    uv_loop_t loop;
    char err[256] = "";
    ka_rdk_t *r = NULL;
    static const char *const bad[] = {"no.such.property", "1", NULL};
    ka_rdk_settings_t st = unreachable(KA_RDK_CONSUMER);
    st.props = bad;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(ka_rdk_new(&loop, &st, on_event, NULL, &r, err, sizeof(err)), KA_EINVALID);
    assert_null(r);
    assert_non_null(strstr(err, "no.such.property"));
    assert_int_equal(uv_loop_close(&loop), 0);
}

typedef struct blocking {
    ka_rdk_work_t w;
    int ran_off_loop;
    int done;
    int closed;
    uv_thread_t loop_thread;
} blocking_t;

static void blocking_run(ka_rdk_work_t *w, rd_kafka_t *rk)
{
    blocking_t *b = (blocking_t *)w;
    uv_thread_t self = uv_thread_self();
    b->ran_off_loop = rk != NULL && !uv_thread_equal(&self, &b->loop_thread);
}

static void blocking_done(ka_rdk_work_t *w, int closed)
{
    blocking_t *b = (blocking_t *)w;
    b->done = 1;
    b->closed = closed;
}

static void test_blocking_work_runs_off_the_loop_and_close_waits_for_it(void **state)
{
    (void)state;
    uv_loop_t loop;
    char err[256] = "";
    ka_rdk_t *r = NULL;
    ka_rdk_settings_t st = unreachable(KA_RDK_CONSUMER);
    blocking_t b = {.w = {.run = blocking_run, .done = blocking_done}};
    b.loop_thread = uv_thread_self();
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(ka_rdk_new(&loop, &st, on_event, NULL, &r, err, sizeof(err)), 0);
    assert_int_equal(ka_rdk_blocking_run(r, &b.w), 0);
    ka_rdk_close(r); /* before the work completed: it still completes */
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(b.done);
    assert_true(b.closed);
    assert_true(b.ran_off_loop);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* What the recreate test saw: fatal error events, then delivery reports. */
typedef struct fatal_seen {
    int fatal_events;
    int reports;
    uv_timer_t guard;
} fatal_seen_t;

static void on_fatal_event(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    fatal_seen_t *s = arg;
    const rd_kafka_message_t *m;
    (void)rdk;
    if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_ERROR && rd_kafka_event_error_is_fatal(ev))
        s->fatal_events++;
    if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_DR) {
        while ((m = rd_kafka_event_message_next(ev)) != NULL)
            s->reports++;
    }
    uv_stop(s->guard.loop);
}

/* An idempotent producer's fatal error (provoked with librdkafka's test hook) reaches the
 * owner through the loop; recreating gives a working client in the same handle, the old
 * one's messages dropped without a report. */
static void test_fatal_error_then_recreate_gives_a_working_client(void **state)
{
    (void)state;
    uv_loop_t loop;
    fatal_seen_t s = {0};
    char err[256] = "", why[256] = "";
    ka_rdk_t *r = NULL;
    static const char *const idem[] = {
        "enable.idempotence", "true", "message.timeout.ms", "300", "linger.ms", "0", NULL};
    ka_rdk_settings_t st = unreachable(KA_RDK_PRODUCER);
    st.props = idem;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &s.guard);
    uv_timer_start(&s.guard, guard_cb, 10000, 0);
    assert_int_equal(ka_rdk_new(&loop, &st, on_fatal_event, &s, &r, err, sizeof(err)), 0);
    assert_false(ka_rdk_fatal(r, why, sizeof(why)));
    rd_kafka_t *old = ka_rdk_handle(r);
    assert_int_equal(rd_kafka_test_fatal_error(old, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                               "provoked by the unit test"),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    while (s.fatal_events == 0 && uv_timer_get_due_in(&s.guard) > 0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(s.fatal_events, 1);
    assert_true(ka_rdk_fatal(r, why, sizeof(why)));
    assert_non_null(strstr(why, "provoked by the unit test"));
    /* A fatal producer refuses new messages. */
    assert_int_not_equal(rd_kafka_producev(old, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("x", 1),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                           RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);

    assert_int_equal(ka_rdk_recreate(r, err, sizeof(err)), 0);
    assert_false(ka_rdk_fatal(r, why, sizeof(why)));
    rd_kafka_resp_err_t e =
        rd_kafka_producev(ka_rdk_handle(r), RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("x", 1),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    assert_int_equal(e, RD_KAFKA_RESP_ERR_NO_ERROR);
    while (s.reports == 0 && uv_timer_get_due_in(&s.guard) > 0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(s.reports, 1); /* the new client's report came through the same watch */
    assert_int_equal(s.fatal_events, 1);
    ka_rdk_close(r);
    uv_close((uv_handle_t *)&s.guard, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivery_report_arrives_through_the_loop),
        cmocka_unit_test(test_refused_property_is_named_in_the_error),
        cmocka_unit_test(test_blocking_work_runs_off_the_loop_and_close_waits_for_it),
        cmocka_unit_test(test_fatal_error_then_recreate_gives_a_working_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
