/*
 * test_ledger_health.c: what makes the ledger unusable, and the recreate
 * path of a fatal producer error, without a broker.
 *
 * The clients point at a port nobody listens on: the health reads only
 * what it is told (fetched messages and delivery reports, made up here as
 * librdkafka would hand them) and what the clients say of themselves (a
 * fatal error, provoked with librdkafka's rd_kafka_test_fatal_error on a
 * real idempotent producer). The topic check needs a broker and is covered
 * by tests/integration/test_ledger_health.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_ledger_health.h"

#define TIMEOUT_MS 600

typedef struct fixture {
    uv_loop_t loop;
    ka_metrics_t m;
    ka_rdk_t *producer, *consumer;
    ka_ledger_health_t *h;
} fixture_t;

static void ignore(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    (void)arg, (void)rdk, (void)ev;
}

static int setup(void **state)
{
    static const char *const idem[] = {"enable.idempotence", "true", "message.timeout.ms", "1000",
                                       NULL};
    fixture_t *f = calloc(1, sizeof(*f));
    char err[256];
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    ka_rdk_settings_t p = {.role = KA_RDK_PRODUCER, .bootstrap = "127.0.0.1:1", .props = idem};
    ka_rdk_settings_t c = {.role = KA_RDK_CONSUMER, .bootstrap = "127.0.0.1:1"};
    assert_int_equal(ka_rdk_new(&f->loop, &p, ignore, NULL, &f->producer, err, sizeof(err)), 0);
    assert_int_equal(ka_rdk_new(&f->loop, &c, ignore, NULL, &f->consumer, err, sizeof(err)), 0);
    assert_int_equal(ka_ledger_health_new(&f->m, f->producer, f->consumer, "__kadmit_ledger", "",
                                          TIMEOUT_MS, &f->h),
                     0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    ka_ledger_health_free(f->h);
    ka_rdk_close(f->producer);
    ka_rdk_close(f->consumer);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

static rd_kafka_message_t message(rd_kafka_resp_err_t err, int64_t offset)
{
    rd_kafka_message_t m;
    memset(&m, 0, sizeof(m));
    m.err = err;
    m.offset = offset;
    return m;
}

static void test_reading_and_delivering_is_usable(void **state)
{
    fixture_t *f = *state;
    char why[256];
    ka_ledger_health_reading(f->h, 0, 1000);
    rd_kafka_message_t rec = message(RD_KAFKA_RESP_ERR_NO_ERROR, 0);
    ka_ledger_health_read(f->h, &rec, 1000);
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1000), KA_LEDGER_HEALTH_NONE);
    assert_false(ka_ledger_health_blocking(f->h, 1000, why, sizeof(why)));
    assert_int_equal(f->m.ledger_usable, 1);
    /* Not read yet: not usable, and the reason says so. */
    ka_ledger_health_tick(f->h, 0, 1001);
    assert_int_equal(f->m.ledger_usable, 0);
    assert_string_equal(f->m.ledger_blocked_why, "is not being read yet");
}

static void test_a_failing_consumer_blocks_until_it_reads_or_the_error_ages(void **state)
{
    fixture_t *f = *state;
    char why[256];
    ka_ledger_health_reading(f->h, 0, 1000);
    rd_kafka_message_t bad = message(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, -1);
    ka_ledger_health_read(f->h, &bad, 2000);
    ka_ledger_health_tick(f->h, 1, 2000);
    assert_true(ka_ledger_health_blocking(f->h, 2000, why, sizeof(why)));
    assert_non_null(strstr(why, "its consumer fails"));
    assert_int_equal(f->m.ledger_consumer_error, 1);
    assert_int_equal(f->m.ledger_consumer_errors, 1);
    assert_int_equal(f->m.ledger_usable, 0);
    assert_non_null(strstr(f->m.ledger_consumer_last_error, "uthoriz"));
    assert_true(f->m.ledger_consumer_last_error_unix_ms > 0);
    /* End of partition is not an error. */
    rd_kafka_message_t eof = message(RD_KAFKA_RESP_ERR__PARTITION_EOF, 0);
    ka_ledger_health_read(f->h, &eof, 2100);
    assert_int_equal(f->m.ledger_consumer_errors, 1);
    /* A record read clears it. */
    rd_kafka_message_t rec = message(RD_KAFKA_RESP_ERR_NO_ERROR, 0);
    ka_ledger_health_read(f->h, &rec, 2200);
    ka_ledger_health_tick(f->h, 1, 2200);
    assert_false(ka_ledger_health_blocking(f->h, 2200, NULL, 0));
    assert_int_equal(f->m.ledger_consumer_error, 0);
    /* An error with nothing read since counts 5 s, then ages out. */
    ka_ledger_health_read(f->h, &bad, 3000);
    assert_true(ka_ledger_health_blocking(f->h, 7999, NULL, 0));
    assert_false(ka_ledger_health_blocking(f->h, 8001, NULL, 0));
}

static void test_failed_appends_block_until_one_succeeds(void **state)
{
    fixture_t *f = *state;
    char why[256];
    ka_ledger_health_reading(f->h, 0, 1000);
    rd_kafka_message_t bad = message(RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, -1);
    ka_ledger_health_delivered(f->h, &bad, 2000);
    ka_ledger_health_tick(f->h, 1, 2000);
    assert_true(ka_ledger_health_blocking(f->h, 2000, why, sizeof(why)));
    assert_non_null(strstr(why, "appends fail"));
    assert_int_equal(f->m.ledger_producer_error, 1);
    rd_kafka_message_t ok = message(RD_KAFKA_RESP_ERR_NO_ERROR, 0);
    ka_ledger_health_delivered(f->h, &ok, 2100);
    ka_ledger_health_tick(f->h, 1, 2100);
    assert_false(ka_ledger_health_blocking(f->h, 2100, NULL, 0));
    assert_int_equal(f->m.ledger_producer_error, 0);
}

/* Our own delivered appends raise the end the consumer must reach: a consumer that reads
 * nothing more lags, and past the ledger timeout the ledger is unusable. */
static void test_a_consumer_behind_its_own_appends_lags_then_blocks(void **state)
{
    fixture_t *f = *state;
    char why[256];
    ka_ledger_health_reading(f->h, 10, 1000);
    rd_kafka_message_t ok = message(RD_KAFKA_RESP_ERR_NO_ERROR, 14);
    ka_ledger_health_delivered(f->h, &ok, 1000); /* the end is now 15: 5 records behind */
    ka_ledger_health_tick(f->h, 1, 1000);
    assert_int_equal(f->m.ledger_consumer_lag_records, 5);
    assert_false(ka_ledger_health_blocking(f->h, 1000, NULL, 0));
    ka_ledger_health_tick(f->h, 1, 1000 + TIMEOUT_MS);
    assert_int_equal(f->m.ledger_consumer_lag_ms, TIMEOUT_MS);
    assert_false(ka_ledger_health_blocking(f->h, 1000 + TIMEOUT_MS, NULL, 0));
    ka_ledger_health_tick(f->h, 1, 1001 + TIMEOUT_MS);
    assert_true(ka_ledger_health_blocking(f->h, 1001 + TIMEOUT_MS, why, sizeof(why)));
    assert_non_null(strstr(why, "5 records behind"));
    assert_int_equal(f->m.ledger_usable, 0);
    /* Reading up to the end catches up. */
    rd_kafka_message_t rec = message(RD_KAFKA_RESP_ERR_NO_ERROR, 14);
    ka_ledger_health_read(f->h, &rec, 1100 + TIMEOUT_MS);
    ka_ledger_health_tick(f->h, 1, 1100 + TIMEOUT_MS);
    assert_int_equal(f->m.ledger_consumer_lag_records, 0);
    assert_int_equal(f->m.ledger_consumer_lag_ms, 0);
    assert_int_equal(f->m.ledger_usable, 1);
}

/* The recreate path: a fatal error asks for a new producer at every tick until one is made,
 * decisions are refused with a sentence that says the client is being recreated, and the
 * first delivery of the new client ends it. */
static void test_a_fatal_producer_is_recreated_and_counted(void **state)
{
    fixture_t *f = *state;
    char why[256], err[256];
    ka_ledger_health_reading(f->h, 0, 1000);
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1000), KA_LEDGER_HEALTH_NONE);
    assert_int_equal(rd_kafka_test_fatal_error(ka_rdk_handle(f->producer),
                                               RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                               "provoked by the unit test"),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1050), KA_LEDGER_HEALTH_RECREATE);
    assert_int_equal(f->m.ledger_producer_fatal, 1);
    assert_int_equal(f->m.ledger_usable, 0);
    assert_true(ka_ledger_health_recreating(f->h));
    assert_true(ka_ledger_health_blocking(f->h, 1050, why, sizeof(why)));
    assert_non_null(strstr(why, "being recreated"));
    assert_non_null(strstr(why, "provoked by the unit test"));
    assert_non_null(strstr(f->m.ledger_producer_last_error, "fatal"));
    /* Not recreated yet (the ledger could not): asked again. */
    ka_ledger_health_recreated(f->h, -1, "could not");
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1100), KA_LEDGER_HEALTH_RECREATE);
    assert_int_equal(f->m.ledger_client_recreated, 0);
    /* Recreated: counted once, no more asking; still refused until the new client delivers. */
    assert_int_equal(ka_rdk_recreate(f->producer, err, sizeof(err)), 0);
    ka_ledger_health_recreated(f->h, 0, "");
    assert_int_equal(f->m.ledger_client_recreated, 1);
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1150), KA_LEDGER_HEALTH_NONE);
    assert_true(ka_ledger_health_blocking(f->h, 1150, NULL, 0));
    rd_kafka_message_t ok = message(RD_KAFKA_RESP_ERR_NO_ERROR, 0);
    ka_ledger_health_delivered(f->h, &ok, 1200);
    ka_ledger_health_tick(f->h, 1, 1200);
    assert_false(ka_ledger_health_recreating(f->h));
    assert_false(ka_ledger_health_blocking(f->h, 1200, NULL, 0));
    assert_int_equal(f->m.ledger_producer_fatal, 0);
    assert_int_equal(f->m.ledger_usable, 1);
    /* The new client is not fatal: the next ticks ask for nothing. */
    assert_int_equal(ka_ledger_health_tick(f->h, 1, 1250), KA_LEDGER_HEALTH_NONE);
    assert_int_equal(f->m.ledger_client_recreated, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reading_and_delivering_is_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_failing_consumer_blocks_until_it_reads_or_the_error_ages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_appends_block_until_one_succeeds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_consumer_behind_its_own_appends_lags_then_blocks,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_fatal_producer_is_recreated_and_counted, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
