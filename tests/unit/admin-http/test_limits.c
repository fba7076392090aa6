/*
 * test_limits.c: the admin API cannot be starved or rebound, over real
 * sockets. With every connection slot held, a new connection takes the slot
 * of the idlest keep-alive connection, or (none idle) goes to the probe
 * reserve, which answers only /healthz, /readyz and /metrics; above both it
 * gets 503. Idle keep-alive connections time out. On a loopback bind a
 * request whose Host names another site gets 403 (DNS rebinding); on
 * 0.0.0.0 there is no check, so Kubernetes probes (Host: pod IP) work.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "admin_fixtures.h"

#define GET(path) "GET " path " HTTP/1.1\r\nHost: localhost\r\n\r\n"

/* One complete request on c, its status returned. */
static int ask(client_t *c, const char *request, reply_t *r)
{
    client_sends(c, request);
    return client_read(c, r);
}

/* A fresh connection that has been served once and now idles (keep-alive). */
static client_t *idle_keep_alive(int port)
{
    client_t *c = client_connect(port);
    reply_t r;

    assert_int_equal(ask(c, GET("/healthz"), &r), 200);
    reply_free(&r);
    return c;
}

/* A connection mid-request: the request line sent, the headers never end. */
static client_t *mid_request(int port)
{
    client_t *c = client_connect(port);

    client_sends(c, "GET /v1/policy HTTP/1.1\r\nHost: localhost\r\n");
    return c;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_a_new_connection_takes_the_slot_of_the_idlest(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN, .max_connections = 4};
    admin_harness_t h;
    client_t *held[4], *c;
    reply_t r;

    (void)state;
    harness_start(&h, &cfg);
    for (int i = 0; i < 4; i++) {
        held[i] = idle_keep_alive(h.port);
        usleep(20 * 1000); /* distinct idle times: held[0] idles longest */
    }
    /* held[0] asks again: now held[1] is the idlest. */
    assert_int_equal(ask(held[0], GET("/healthz"), &r), 200);
    reply_free(&r);
    c = client_connect(h.port);
    assert_int_equal(ask(c, GET("/v1/policy"), &r), 200); /* a whole slot: any path */
    reply_free(&r);
    assert_true(client_closed(held[1], 2000));
    for (int i = 0; i < 4; i++) {
        if (i == 1)
            continue;
        assert_int_equal(ask(held[i], GET("/healthz"), &r), 200);
        reply_free(&r);
    }
    /* And the new one keeps its slot (keep-alive). */
    assert_int_equal(ask(c, GET("/readyz"), &r), 200);
    reply_free(&r);
    client_close(c);
    for (int i = 0; i < 4; i++)
        client_close(held[i]);
    harness_stop(&h);
}

static void test_probes_are_answered_from_the_reserve_when_every_slot_is_busy(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN, .max_connections = 3, .probe_reserve = 2};
    const char *probes[] = {GET("/healthz"), GET("/readyz"), GET("/metrics")};
    admin_harness_t h;
    client_t *busy[3], *c;
    char value[64];
    reply_t r;

    (void)state;
    harness_start(&h, &cfg);
    for (int i = 0; i < 3; i++)
        busy[i] = mid_request(h.port);
    usleep(200 * 1000); /* all three accepted and mid-request */
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        c = client_connect(h.port);
        assert_int_equal(ask(c, probes[i], &r), 200);
        /* One answer per reserve connection: the next probe may need it. */
        assert_non_null(reply_header(&r, "Connection", value, sizeof(value)));
        assert_string_equal(value, "close");
        reply_free(&r);
        assert_true(client_closed(c, 2000));
        client_close(c);
    }
    /* Anything else on a reserve connection: 503 with a JSON sentence. */
    c = client_connect(h.port);
    assert_int_equal(ask(c, GET("/v1/policy"), &r), 503);
    assert_non_null(strstr(r.body, "\"error\""));
    assert_non_null(strstr(r.body, "may only ask /healthz, /readyz or /metrics"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
    /* The busy ones were never cut to make room, and still finish. */
    for (int i = 0; i < 3; i++) {
        client_sends(busy[i], "\r\n");
        assert_int_equal(client_read(busy[i], &r), 200);
        reply_free(&r);
        client_close(busy[i]);
    }
    harness_stop(&h);
}

static void test_the_reserve_is_bounded(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN, .max_connections = 1, .probe_reserve = 2};
    admin_harness_t h;
    client_t *busy, *reserve[2], *c;
    reply_t r;

    (void)state;
    harness_start(&h, &cfg);
    busy = mid_request(h.port);
    usleep(100 * 1000);
    /* Two silent connections hold the reserve (each until the request timeout). */
    reserve[0] = client_connect(h.port);
    reserve[1] = client_connect(h.port);
    usleep(100 * 1000);
    c = client_connect(h.port);
    assert_int_equal(ask(c, GET("/healthz"), &r), 503);
    assert_non_null(strstr(r.body, "too many admin connections"));
    assert_non_null(strstr(r.body, "2 more for probes"));
    reply_free(&r);
    assert_true(client_closed(c, 2000));
    client_close(c);
    /* A reserve place freed is usable again. */
    client_close(reserve[0]);
    usleep(100 * 1000);
    c = client_connect(h.port);
    assert_int_equal(ask(c, GET("/healthz"), &r), 200);
    reply_free(&r);
    client_close(c);
    client_close(reserve[1]);
    client_close(busy);
    usleep(200 * 1000); /* the server has seen both go: /metrics gets a whole slot */
    /* Its counters say what happened. */
    c = client_connect(h.port);
    assert_int_equal(ask(c, GET("/metrics"), &r), 200);
    assert_non_null(strstr(r.body, "kadmit_admin_connections_rejected_total 1\n"));
    assert_non_null(strstr(r.body, "kadmit_admin_reserve_connections_total 3\n"));
    reply_free(&r);
    client_close(c);
    harness_stop(&h);
}

static void test_an_idle_keep_alive_connection_times_out(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN, .idle_timeout_ms = 400};
    admin_harness_t h;
    client_t *c;
    int64_t t0;

    (void)state;
    harness_start(&h, &cfg);
    c = idle_keep_alive(h.port);
    t0 = now_ms();
    assert_false(client_closed(c, 200));
    assert_true(client_closed(c, 2000));
    assert_true(now_ms() - t0 >= 350);
    client_close(c);
    harness_stop(&h);
}

/* The status of one request with this Host header line ("" sends none). */
static int with_host(int port, const char *version, const char *host_line)
{
    char req[512];
    client_t *c = client_connect(port);
    reply_t r;
    int status;

    snprintf(req, sizeof(req), "GET /v1/policy HTTP/%s\r\n%sConnection: close\r\n\r\n", version,
             host_line);
    status = ask(c, req, &r);
    if (status == 403) {
        assert_non_null(strstr(r.body, "\"error\""));
        assert_non_null(strstr(r.body, "--admin-allowed-hosts"));
    }
    reply_free(&r);
    client_close(c);
    return status;
}

static void test_a_loopback_bind_refuses_other_host_names(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN,
                             .allowed_hosts = "kadmit.internal, Admin.Example"};
    admin_harness_t h;
    char line[128];

    (void)state;
    harness_start(&h, &cfg);
    /* A rebinding page's requests carry its own name, with or without port. */
    assert_int_equal(with_host(h.port, "1.1", "Host: evil.example\r\n"), 403);
    snprintf(line, sizeof(line), "Host: evil.example:%d\r\n", h.port);
    assert_int_equal(with_host(h.port, "1.1", line), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: 127.0.0.1.evil.example\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: localhost.evil.example\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: localhost:abc\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: localhost:\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: ::1\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.1", "Host: [::1\r\n"), 403);
    assert_int_equal(with_host(h.port, "1.0", "Host: evil.example\r\n"), 403);
    /* The loopback names, any port (port-forwards and tunnels use another). */
    snprintf(line, sizeof(line), "Host: 127.0.0.1:%d\r\n", h.port);
    assert_int_equal(with_host(h.port, "1.1", line), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: 127.0.0.1\r\n"), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: localhost:8080\r\n"), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: LocalHost\r\n"), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: [::1]:9644\r\n"), 200);
    /* The operator's names, case aside. */
    assert_int_equal(with_host(h.port, "1.1", "Host: kadmit.internal:9644\r\n"), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: admin.example\r\n"), 200);
    /* No Host at all (HTTP/1.0) names no other site. */
    assert_int_equal(with_host(h.port, "1.0", ""), 200);
    /* Two Host headers are malformed. */
    assert_int_equal(with_host(h.port, "1.1", "Host: localhost\r\nHost: evil.example\r\n"), 400);
    /* Every path is covered, probes and mutations alike. */
    {
        client_t *c = client_connect(h.port);
        reply_t r;

        assert_int_equal(ask(c, "GET /healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n", &r), 403);
        reply_free(&r);
        assert_int_equal(ask(c,
                             "PUT /v1/limits/default HTTP/1.1\r\nHost: evil.example\r\n"
                             "Authorization: Bearer " TEST_TOKEN "\r\nContent-Length: 29\r\n\r\n"
                             "{\"max.broker.partitions\": 42}",
                             &r),
                         403);
        reply_free(&r);
        assert_int_equal(ask(c, GET("/metrics"), &r), 200);
        assert_non_null(strstr(r.body, "kadmit_admin_host_rejected_total 11\n"));
        reply_free(&r);
        client_close(c);
    }
    assert_int_not_equal(ka_policy_default_broker_limit(h.fake.policy), 42);
    harness_stop(&h);
}

static void test_a_wildcard_bind_answers_any_host(void **state)
{
    ka_admin_config_t cfg = {.token = TEST_TOKEN};
    admin_harness_t h;

    (void)state;
    harness_start_on(&h, &cfg, "0.0.0.0:0");
    /* What a kubelet sends: Host is the pod's IP and port. */
    assert_int_equal(with_host(h.port, "1.1", "Host: 10.244.1.17:9644\r\n"), 200);
    assert_int_equal(with_host(h.port, "1.1", "Host: evil.example\r\n"), 200);
    harness_stop(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_new_connection_takes_the_slot_of_the_idlest),
        cmocka_unit_test(test_probes_are_answered_from_the_reserve_when_every_slot_is_busy),
        cmocka_unit_test(test_the_reserve_is_bounded),
        cmocka_unit_test(test_an_idle_keep_alive_connection_times_out),
        cmocka_unit_test(test_a_loopback_bind_refuses_other_host_names),
        cmocka_unit_test(test_a_wildcard_bind_answers_any_host),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
