/*
 * test_relay.c: the relay with an interception handler, in process, over
 * real sockets: a request answered locally reaches the client only after
 * every earlier response (ARCHITECTURE invariant 1), is never forwarded,
 * and a handler can rewrite a request in place before it is forwarded.
 * With --max-inflight 1 the same requests still arrive, in order, the client
 * being paused after each one until its response came back.
 *
 * The proxy runs on this thread's libuv loop; a blocking fake broker and a
 * blocking client run on their own threads. The client ends the test by
 * sending the process SIGTERM, which drains the proxy and stops the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ka_proxy.h"
#include "socket_fixtures.h"

#define INTERCEPTED_KEY     99
#define SLOW_CORRELATION_ID 1

static int broker_listen_fd, proxy_port;
static int broker_frames;           /* frames the broker received */
static char broker_saw_rewrite[32]; /* body of the rewritten request */
static int32_t client_order[8];     /* correlation ids, in arrival order */
static char client_bodies[8][32];
static int client_got;

/* Answers each request with its correlation id and the request body. */
static void *broker_main(void *arg)
{
    uint8_t frame[4096], out[4096];
    uint32_t len;
    (void)arg;
    int fd = accept(broker_listen_fd, NULL, NULL);
    while (fd >= 0 && fx_read_frame(fd, frame, sizeof(frame), &len) == 0) {
        int32_t corr = (int32_t)fx_get32(frame + 4);
        size_t hdr = 10 + (size_t)(frame[8] << 8 | frame[9]); /* client_id */
        broker_frames++;
        if (frame[1] == INTERCEPTED_KEY)
            snprintf(broker_saw_rewrite, sizeof(broker_saw_rewrite), "%.*s", (int)(len - hdr),
                     (const char *)frame + hdr);
        if (corr == SLOW_CORRELATION_ID)
            usleep(200 * 1000);
        size_t body = len - hdr;
        fx_put32(out, (uint32_t)(4 + body));
        fx_put32(out + 4, (uint32_t)corr);
        memcpy(out + 8, frame + hdr, body);
        if (write(fd, out, 8 + body) < 0)
            break;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static size_t request(uint8_t *p, int16_t key, int32_t corr, const char *body)
{
    size_t blen = strlen(body);
    fx_put32(p, (uint32_t)(10 + 1 + blen));
    p[4] = (uint8_t)(key >> 8);
    p[5] = (uint8_t)key;
    p[6] = 0;
    p[7] = 1;
    fx_put32(p + 8, (uint32_t)corr);
    p[12] = 0;
    p[13] = 1;
    p[14] = 'c';
    memcpy(p + 15, body, blen);
    return 15 + blen;
}

static void *client_main(void *arg)
{
    uint8_t buf[1024], frame[1024];
    size_t n = 0;
    uint32_t len;
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        /* All four pipelined in one write. */
        n += request(buf + n, 3, 1, "slow");
        n += request(buf + n, INTERCEPTED_KEY, 2, "answer-me");
        n += request(buf + n, 3, 3, "plain");
        n += request(buf + n, INTERCEPTED_KEY, 4, "rewrite-me");
        if (write(fd, buf, n) == (ssize_t)n) {
            while (client_got < 4 && fx_read_frame(fd, frame, sizeof(frame), &len) == 0) {
                client_order[client_got] = (int32_t)fx_get32(frame);
                snprintf(client_bodies[client_got], sizeof(client_bodies[0]), "%.*s",
                         (int)(len - 4), (const char *)frame + 4);
                client_got++;
            }
        }
    }
    close(fd);
    kill(getpid(), SIGTERM);
    return NULL;
}

static void free_answer(void *p)
{
    free(p);
}

/* Even correlation ids: answer locally; others: rewrite 'r' to 'R'. */
static int handler(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                   ka_hook_verdict_t *v)
{
    (void)user;
    memset(v, 0, sizeof(*v));
    if (hdr->correlation_id == 2) {
        uint8_t *answer = malloc(13);
        fx_put32(answer, 9);
        fx_put32(answer + 4, (uint32_t)hdr->correlation_id);
        memcpy(answer + 8, "local", 5);
        v->kind = KA_HOOK_ANSWER;
        v->bytes = answer;
        v->len = 13;
        v->free_bytes = free_answer;
        return 0;
    }
    for (size_t i = 15; i < *len; i++) {
        if (frame[i] == 'r')
            frame[i] = 'R';
    }
    v->kind = KA_HOOK_FORWARD;
    return 0;
}

/* Runs the four pipelined requests through a proxy with --max-inflight = max_inflight. */
static void run_relay(uint32_t max_inflight)
{
    uv_loop_t loop;
    ka_config_t cfg;
    ka_server_t *srv = NULL;
    char err[256];
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t salen = sizeof(sa);
    pthread_t broker, client;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    broker_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(broker_listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(broker_listen_fd, 4), 0);
    getsockname(broker_listen_fd, (struct sockaddr *)&sa, &salen);

    ka_config_defaults(&cfg);
    snprintf(cfg.listen.host, sizeof(cfg.listen.host), "127.0.0.1");
    cfg.listen.port = 0;
    snprintf(cfg.upstream.host, sizeof(cfg.upstream.host), "127.0.0.1");
    cfg.upstream.port = ntohs(sa.sin_port);
    cfg.log_level = KA_LOG_WARN;
    cfg.max_inflight = max_inflight;
    broker_frames = client_got = 0;
    broker_saw_rewrite[0] = '\0';
    ka_log_setup(cfg.log_level, cfg.log_format);
    uv_loop_init(&loop);
    assert_int_equal(ka_server_new(&loop, &cfg, &srv, err, sizeof(err)), 0);
    ka_server_intercept(srv)->api[INTERCEPTED_KEY].buffer_request = 1;
    ka_server_intercept(srv)->api[INTERCEPTED_KEY].on_request = handler;
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);

    pthread_create(&broker, NULL, broker_main, NULL);
    pthread_create(&client, NULL, client_main, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ka_server_close(srv);
    pthread_join(client, NULL);
    close(broker_listen_fd);
    pthread_join(broker, NULL);

    assert_int_equal(client_got, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(client_order[i], i + 1);
    assert_string_equal(client_bodies[0], "slow");
    assert_string_equal(client_bodies[1], "local");
    assert_string_equal(client_bodies[2], "plain");
    assert_string_equal(client_bodies[3], "RewRite-me");
    assert_int_equal(broker_frames, 3); /* the answered request never left */
    assert_string_equal(broker_saw_rewrite, "RewRite-me");
    assert_int_equal(ka_server_metrics(srv)->local_answers, 1);
    assert_int_equal(ka_server_metrics(srv)->frames_intercepted, 2);
    assert_int_equal(ka_pool_used_bytes(ka_server_pool(srv)), 0);
    /* With one request in flight at a time, the client was paused at least
     * while the slow first request was with the broker, and resumed. */
    if (max_inflight == 1)
        assert_true(ka_server_metrics(srv)->inflight_pauses >= 1);
    else
        assert_int_equal(ka_server_metrics(srv)->inflight_pauses, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    ka_server_free(srv);
}

static void test_local_answer_waits_for_earlier_responses(void **state)
{
    (void)state;
    run_relay(1000);
}

static void test_max_inflight_one_pauses_and_resumes_the_client(void **state)
{
    (void)state;
    run_relay(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_answer_waits_for_earlier_responses),
        cmocka_unit_test(test_max_inflight_one_pauses_and_resumes_the_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
