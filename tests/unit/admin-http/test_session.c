/*
 * test_session.c: the HTTP session without sockets: the output pause and
 * resume that bound work per read, what happens to input after the session
 * decided to close, timeouts, and request splitting at every byte.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "admin_fixtures.h"
#include "ka_admin_router.h"
#include "ka_admin_session.h"

typedef struct session_fixture {
    fake_proxy_t fake;
    ka_admin_ops_t ops;
    ka_admin_context_t ctx;
    ka_admin_session_t session;
} session_fixture_t;

static int setup(void **state)
{
    session_fixture_t *f = calloc(1, sizeof(*f));
    ka_admin_config_t cfg = {.token = TEST_TOKEN};

    fake_init(&f->fake);
    f->ops = fake_ops(&f->fake);
    assert_int_equal(ka_admin_context_init(&f->ctx, &cfg, &f->ops), 0);
    ka_admin_session_init(&f->session, &f->ctx);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    session_fixture_t *f = *state;

    ka_admin_session_free(&f->session);
    ka_admin_context_free(&f->ctx);
    fake_free(&f->fake);
    free(f);
    return 0;
}

static size_t count(const char *haystack, const char *needle)
{
    size_t n = 0;

    for (const char *p = haystack; p != NULL && (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_large_output_pauses_parsing_until_it_is_taken(void **state)
{
    session_fixture_t *f = *state;
    static const char one[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    enum { N = 300 };
    char *all = malloc(N * (sizeof(one) - 1) + 1);
    size_t answered = 0, rounds = 0, len;
    char *out;

    all[0] = '\0';
    for (int i = 0; i < N; i++)
        strcat(all, one);
    assert_int_equal(ka_admin_session_feed(&f->session, all, strlen(all)), 0);
    free(all);
    assert_true(f->session.paused);
    assert_true(f->session.pending.len > 0);
    for (;;) {
        assert_true(f->session.out.len < KA_ADMIN_SESSION_OUTPUT_HIGH + 16384);
        out = ka_admin_buf_take(&f->session.out, &len);
        answered += count(out ? out : "", "HTTP/1.1 200 OK\r\n");
        free(out);
        if (!f->session.paused)
            break;
        assert_int_equal(ka_admin_session_resume(&f->session), 0);
        rounds++;
    }
    assert_int_equal(answered, N);
    assert_true(rounds > 1);
    assert_int_equal(f->session.completed, N);
}

static void test_half_close_still_answers_every_pending_request(void **state)
{
    session_fixture_t *f = *state;
    static const char one[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    enum { N = 100 };
    char *all = malloc(N * (sizeof(one) - 1) + 1);
    size_t answered = 0, len;
    char *out;

    all[0] = '\0';
    for (int i = 0; i < N; i++)
        strcat(all, one);
    assert_int_equal(ka_admin_session_feed(&f->session, all, strlen(all)), 0);
    free(all);
    assert_true(f->session.paused);
    ka_admin_session_end_input(&f->session);
    assert_false(f->session.closing);
    for (;;) {
        out = ka_admin_buf_take(&f->session.out, &len);
        answered += count(out ? out : "", "HTTP/1.1 200 OK\r\n");
        free(out);
        if (!f->session.paused)
            break;
        assert_int_equal(ka_admin_session_resume(&f->session), 0);
    }
    assert_int_equal(answered, N);
    assert_true(f->session.closing);
}

static void test_input_after_connection_close_is_dropped(void **state)
{
    session_fixture_t *f = *state;
    const char *in = "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"
                     "PUT /v1/limits/default HTTP/1.1\r\nAuthorization: Bearer " TEST_TOKEN
                     "\r\nContent-Length: 28\r\n\r\n{\"max.broker.partitions\": 1}";

    assert_int_equal(ka_admin_session_feed(&f->session, in, strlen(in)), 0);
    assert_true(f->session.closing);
    assert_int_equal(count(f->session.out.data, "HTTP/1.1 "), 1);
    assert_int_equal(ka_admin_session_feed(&f->session, in, strlen(in)), 0);
    assert_int_equal(count(f->session.out.data, "HTTP/1.1 "), 1);
    assert_int_equal(f->fake.apply_calls, 0);
}

static void test_timeout_answers_408_only_mid_request(void **state)
{
    session_fixture_t *f = *state;

    ka_admin_session_timeout(&f->session);
    assert_true(f->session.closing);
    assert_int_equal(f->session.out.len, 0);

    ka_admin_session_free(&f->session);
    ka_admin_session_init(&f->session, &f->ctx);
    assert_int_equal(ka_admin_session_feed(&f->session, "GET /hea", 8), 0);
    assert_true(f->session.in_request);
    ka_admin_session_timeout(&f->session);
    assert_non_null(strstr(f->session.out.data, "HTTP/1.1 408 Request Timeout\r\n"));
    assert_int_equal(f->ctx.stats.request_timeouts, 1);
}

static void test_every_split_point_gives_the_same_answer(void **state)
{
    session_fixture_t *f = *state;
    const char *in =
        "PUT /v1/limits/brokers/5?x=1 HTTP/1.1\r\nHost: a\r\nAUTHORIZATION: Bearer " TEST_TOKEN
        "\r\nTransfer-Encoding: chunked\r\n\r\n"
        "a\r\n{\"max.brok\r\n13\r\ner.partitions\": 55}\r\n0\r\n\r\n";
    size_t len = strlen(in);

    for (size_t cut = 0; cut <= len; cut++) {
        ka_admin_session_free(&f->session);
        ka_admin_session_init(&f->session, &f->ctx);
        assert_int_equal(ka_admin_session_feed(&f->session, in, cut), 0);
        assert_int_equal(ka_admin_session_feed(&f->session, in + cut, len - cut), 0);
        assert_non_null(f->session.out.data);
        if (strncmp(f->session.out.data, "HTTP/1.1 200 OK\r\n", 17) != 0)
            fail_msg("cut at %zu: %s", cut, f->session.out.data);
    }
    assert_int_equal(ka_policy_broker_limit(f->fake.policy, 5), 55);
}

static void test_many_small_headers_count_against_the_header_cap(void **state)
{
    session_fixture_t *f = *state;
    char line[] = "X: 1\r\n";

    assert_int_equal(ka_admin_session_feed(&f->session, "GET /healthz HTTP/1.1\r\n", 23), 0);
    for (int i = 0; i < 2000 && !f->session.closing; i++)
        assert_int_equal(ka_admin_session_feed(&f->session, line, strlen(line)), 0);
    assert_true(f->session.closing);
    assert_non_null(strstr(f->session.out.data, "HTTP/1.1 431 "));
}

static void test_duplicate_authorization_headers_are_refused(void **state)
{
    session_fixture_t *f = *state;
    const char *in = "DELETE /v1/limits/brokers/1 HTTP/1.1\r\nAuthorization: Bearer wrong\r\n"
                     "Authorization: Bearer " TEST_TOKEN "\r\n\r\n";

    assert_int_equal(ka_admin_session_feed(&f->session, in, strlen(in)), 0);
    assert_non_null(strstr(f->session.out.data, "HTTP/1.1 400 "));
    assert_int_equal(f->fake.apply_calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_large_output_pauses_parsing_until_it_is_taken, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_half_close_still_answers_every_pending_request, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_input_after_connection_close_is_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_timeout_answers_408_only_mid_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_split_point_gives_the_same_answer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_many_small_headers_count_against_the_header_cap, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_authorization_headers_are_refused, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
