/*
 * test_connection.c: HTTP/1.1 connection behaviour over a real socket:
 * keep-alive, pipelining in order, Connection: close, the size caps (413,
 * 431), the slow-loris timeout (408), malformed HTTP (400 then close) and
 * Expect: 100-continue. The connection limit and the Host check are in
 * test_limits.c.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <sys/socket.h>

#include "admin_fixtures.h"

static int setup(void **state)
{
    admin_harness_t *h = calloc(1, sizeof(*h));

    harness_start(h, NULL);
    *state = h;
    return 0;
}

static int teardown(void **state)
{
    admin_harness_t *h = *state;

    harness_stop(h);
    free(h);
    return 0;
}

static void test_keep_alive_serves_two_requests_on_one_connection(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    char value[64];
    reply_t r;

    client_sends(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    assert_null(reply_header(&r, "Connection", value, sizeof(value)));
    reply_free(&r);
    client_sends(c, "GET /v1/policy HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    assert_non_null(strstr(r.body, "\"version\""));
    reply_free(&r);
    assert_false(client_closed(c, 100));
    client_close(c);
}

static void test_pipelined_requests_are_answered_in_order(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    reply_t r;

    /* Five requests in one write, the last one closing the connection. */
    client_sends(
        c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
           "GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n"
           "PUT /v1/limits/default HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " TEST_TOKEN
           "\r\nContent-Length: 29\r\n\r\n{\"max.broker.partitions\": 42}"
           "POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"
           "GET /v1/policy HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    assert_int_equal(client_read(c, &r), 404);
    reply_free(&r);
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    assert_int_equal(client_read(c, &r), 405);
    reply_free(&r);
    assert_int_equal(client_read(c, &r), 200);
    assert_non_null(strstr(r.body, "\"max.broker.partitions\": 42"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_many_pipelined_requests_survive_the_output_pause(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    static const char one[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
    char *all = malloc(200 * sizeof(one));
    reply_t r;

    /* 200 metrics responses far exceed the session's output high-water mark. */
    all[0] = '\0';
    for (int i = 0; i < 200; i++)
        strcat(all, one);
    client_sends(c, all);
    free(all);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(client_read(c, &r), 200);
        reply_free(&r);
    }
    client_close(c);
}

static void test_half_closed_client_gets_every_answer_then_eof(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    static const char one[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
    reply_t r;

    for (int i = 0; i < 100; i++)
        client_sends(c, one);
    shutdown(c->fd, SHUT_WR);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(client_read(c, &r), 200);
        reply_free(&r);
    }
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_connection_close_is_honoured(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    char value[64];
    reply_t r;

    client_sends(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                    "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    assert_string_equal(reply_header(&r, "Connection", value, sizeof(value)), "close");
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);

    /* HTTP/1.0 closes by default. */
    c = client_connect(h->port);
    client_sends(c, "GET /healthz HTTP/1.0\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_oversized_body_gets_413_before_it_is_read(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    reply_t r;

    client_sends(c,
                 "PUT /v1/policy HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " TEST_TOKEN
                 "\r\nContent-Length: 104857600\r\n\r\n{");
    assert_int_equal(client_read(c, &r), 413);
    assert_non_null(strstr(r.body, "\"error\""));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);

    /* A client that sends the whole body anyway still reads the 413: the
     * server drains what follows instead of resetting the connection. */
    enum { BIG = 2 * 1024 * 1024 };
    char *body = malloc(BIG);
    memset(body, ' ', BIG);
    c = client_connect(h->port);
    client_sends(c,
                 "PUT /v1/policy HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " TEST_TOKEN
                 "\r\nContent-Length: 2097152\r\n\r\n");
    client_send(c, body, BIG);
    free(body);
    assert_int_equal(client_read(c, &r), 413);
    reply_free(&r);
    client_close(c);
    assert_int_equal(h->fake.apply_calls, 0);
}

static void test_oversized_chunked_body_gets_413(void **state)
{
    admin_harness_t *h = *state;
    ka_admin_config_t cfg = {.token = TEST_TOKEN, .max_body_bytes = 64};
    admin_harness_t small;
    client_t *c;
    reply_t r;

    (void)h;
    harness_start(&small, &cfg);
    c = client_connect(small.port);
    client_sends(c,
                 "PUT /v1/policy HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3f\r\n{\"max.broker.partitions\": 1                                    \r\n"
                 "10\r\n                \r\n");
    assert_int_equal(client_read(c, &r), 413);
    assert_non_null(strstr(r.body, "64 bytes"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
    harness_stop(&small);
}

static void test_oversized_headers_get_431(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    char *big = malloc(10000);
    reply_t r;

    memset(big, 'a', 9999);
    big[9999] = '\0';
    client_sends(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Filler: ");
    client_sends(c, big);
    free(big);
    assert_int_equal(client_read(c, &r), 431);
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_slow_loris_is_cut_by_the_request_timeout(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    reply_t r;

    /* A request that never finishes, one header at a time (timeout: 300 ms). */
    client_sends(c, "GET /healthz HTTP/1.1\r\n");
    for (int i = 0; i < 3; i++) {
        usleep(100 * 1000);
        client_sends(c, "X-Slow: 1\r\n");
    }
    assert_int_equal(client_read(c, &r), 408);
    assert_non_null(strstr(r.body, "300 ms"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);

    /* A client that connects and says nothing is cut too, without a response. */
    c = client_connect(h->port);
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_malformed_http_gets_400_then_close(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    reply_t r;

    client_sends(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
                    "HELLO WORLD\r\n\r\n");
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    assert_int_equal(client_read(c, &r), 400);
    assert_non_null(strstr(r.body, "not valid HTTP/1.1"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
}

static void test_expect_100_continue_is_answered_before_the_body(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    reply_t r;

    client_sends(
        c, "PUT /v1/limits/default HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " TEST_TOKEN
           "\r\nExpect: 100-continue\r\nContent-Length: 29\r\n\r\n");
    assert_int_equal(client_read(c, &r), 100);
    reply_free(&r);
    client_sends(c, "{\"max.broker.partitions\": 77}");
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    client_close(c);
    assert_int_equal(ka_policy_default_broker_limit(h->fake.policy), 77);
}

static void test_requests_split_into_single_bytes_still_parse(void **state)
{
    admin_harness_t *h = *state;
    client_t *c = client_connect(h->port);
    const char *req =
        "PUT /v1/limits/brokers/12 HTTP/1.1\r\nHost: localhost\r\nauthorization:   "
        "bearer " TEST_TOKEN "  \r\nContent-Length: 30\r\n\r\n{\"max.broker.partitions\": 120}";
    reply_t r;

    for (const char *p = req; *p != '\0'; p++)
        client_send(c, p, 1);
    assert_int_equal(client_read(c, &r), 200);
    reply_free(&r);
    client_close(c);
    assert_int_equal(ka_policy_broker_limit(h->fake.policy, 12), 120);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keep_alive_serves_two_requests_on_one_connection,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_requests_are_answered_in_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_many_pipelined_requests_survive_the_output_pause,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_closed_client_gets_every_answer_then_eof, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connection_close_is_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_body_gets_413_before_it_is_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_oversized_chunked_body_gets_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_headers_get_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_loris_is_cut_by_the_request_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_malformed_http_gets_400_then_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_100_continue_is_answered_before_the_body, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_requests_split_into_single_bytes_still_parse, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
