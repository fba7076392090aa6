/*
 * test_relay_defer.c: the relay's deferred verdict (KA_HOOK_DEFER) and
 * per-request handler state, in process over real sockets.
 *
 * A handler that needs a fresher cluster view says DEFER; the relay parks
 * the frame and stops reading that client, and runs the handler again once
 * woken. Requests pipelined behind it must not overtake it (ARCHITECTURE
 * invariant 1), on the way to the broker nor on the way back, and state
 * attached to a forwarded request reaches on_response and is freed. A
 * response handler may say DEFER too (a change the broker accepted is
 * stored before the client hears of it): later responses, and local
 * answers behind it, wait for it.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ka_proxy.h"
#include "socket_fixtures.h"

#define INTERCEPTED_KEY     99
#define SLOW_CORRELATION_ID 1

static int broker_listen_fd, proxy_port;
static int32_t broker_order[8]; /* correlation ids the broker received, in order */
static int broker_frames;
static int32_t client_order[8];
static char client_bodies[8][32];
static int client_got;
static int defers, resumes, states_freed, responses_seen, responses_deferred;
static uv_loop_t *test_loop;

/* One DEFER waiting for its wake-up (each on its own timer, so a request's
 * and a response's waits may overlap). */
typedef struct pending {
    uv_timer_t timer;
    void (*wake)(void *);
    void *arg;
} pending_t;
static pending_t pendings[4];

/* Answers each request with its correlation id and the request body. */
static void *broker_main(void *arg)
{
    uint8_t frame[4096], out[4096];
    uint32_t len;
    (void)arg;
    int fd = accept(broker_listen_fd, NULL, NULL);
    while (fd >= 0 && fx_read_frame(fd, frame, sizeof(frame), &len) == 0) {
        int32_t corr = (int32_t)fx_get32(frame + 4);
        size_t hdr = 10 + (size_t)(frame[8] << 8 | frame[9]);
        if (broker_frames < 8)
            broker_order[broker_frames] = corr;
        broker_frames++;
        if (corr == SLOW_CORRELATION_ID)
            usleep(100 * 1000);
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
        n += request(buf + n, 3, 1, "slow");
        n += request(buf + n, INTERCEPTED_KEY, 2, "forward");
        n += request(buf + n, 3, 3, "plain");
        n += request(buf + n, INTERCEPTED_KEY, 4, "answer");
        n += request(buf + n, 3, 5, "last");
        if (write(fd, buf, n) == (ssize_t)n) {
            while (client_got < 5 && fx_read_frame(fd, frame, sizeof(frame), &len) == 0) {
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

static void wake_cb(uv_timer_t *t)
{
    pending_t *p = t->data;
    void (*wake)(void *) = p->wake;
    p->wake = NULL;
    if (wake != NULL)
        wake(p->arg);
}

static int defer(void *user, void (*wake)(void *arg), void *arg)
{
    (void)user;
    if (defers >= (int)(sizeof(pendings) / sizeof(pendings[0])))
        return -1;
    pending_t *p = &pendings[defers++];
    p->wake = wake;
    p->arg = arg;
    uv_timer_init(test_loop, &p->timer);
    p->timer.data = p;
    uv_unref((uv_handle_t *)&p->timer);
    uv_timer_start(&p->timer, wake_cb, 30, 0);
    return 0;
}

static void cancel(void *user, void *arg)
{
    (void)user;
    for (int i = 0; i < defers; i++)
        if (pendings[i].arg == arg)
            pendings[i].wake = NULL;
}

static void free_state(void *user, void *state)
{
    (void)user;
    states_freed++;
    free(state);
}

/* Always DEFER first; once resumed, forward corr 2 with state, answer corr 4. */
static int on_request(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                      ka_hook_verdict_t *v)
{
    int resumed = v->resumed;
    (void)user;
    (void)frame;
    (void)len;
    memset(v, 0, sizeof(*v));
    if (!resumed) {
        v->kind = KA_HOOK_DEFER;
        return 0;
    }
    resumes++;
    if (hdr->correlation_id == 4) {
        uint8_t *answer = malloc(13);
        fx_put32(answer, 9);
        fx_put32(answer + 4, (uint32_t)hdr->correlation_id);
        memcpy(answer + 8, "local", 5);
        v->kind = KA_HOOK_ANSWER;
        v->bytes = answer;
        v->len = 13;
        v->free_bytes = free;
        return 0;
    }
    v->kind = KA_HOOK_FORWARD;
    v->state = strdup("merged");
    return 0;
}

/* The response of a request with state: first DEFER, then its body replaced
 * by the state. */
static int on_response(void *user, const ka_inflight_entry_t *request, uint8_t *frame, size_t *len,
                       ka_hook_verdict_t *v)
{
    int resumed = v->resumed;
    (void)user;
    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (!(request->flags & KA_INFLIGHT_HOOK_STATE))
        return 0;
    if (!resumed) {
        responses_deferred++;
        v->kind = KA_HOOK_DEFER;
        return 0;
    }
    responses_seen++;
    const char *s = request->answer;
    size_t n = strlen(s);
    if (8 + n > *len)
        return 0;
    fx_put32(frame, (uint32_t)(4 + n));
    memcpy(frame + 8, s, n);
    *len = 8 + n;
    return 0;
}

static void test_deferred_request_keeps_order(void **state)
{
    (void)state;
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
    ka_log_setup(cfg.log_level, cfg.log_format);
    uv_loop_init(&loop);
    test_loop = &loop;
    assert_int_equal(ka_server_new(&loop, &cfg, &srv, err, sizeof(err)), 0);
    ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[INTERCEPTED_KEY];
    e->buffer_request = 1;
    e->on_request = on_request;
    e->on_response = on_response;
    e->defer = defer;
    e->cancel = cancel;
    e->free_state = free_state;
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);

    pthread_create(&broker, NULL, broker_main, NULL);
    pthread_create(&client, NULL, client_main, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    for (int i = 0; i < defers; i++)
        uv_close((uv_handle_t *)&pendings[i].timer, NULL);
    ka_server_close(srv);
    pthread_join(client, NULL);
    close(broker_listen_fd);
    pthread_join(broker, NULL);

    assert_int_equal(client_got, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(client_order[i], i + 1);
    assert_string_equal(client_bodies[0], "slow");
    assert_string_equal(client_bodies[1], "merged");
    assert_string_equal(client_bodies[2], "plain");
    assert_string_equal(client_bodies[3], "local");
    assert_string_equal(client_bodies[4], "last");
    /* The broker saw 1, 2, 3, 5: nothing overtook the deferred frames. */
    assert_int_equal(broker_frames, 4);
    assert_int_equal(broker_order[0], 1);
    assert_int_equal(broker_order[1], 2);
    assert_int_equal(broker_order[2], 3);
    assert_int_equal(broker_order[3], 5);
    /* Two requests and one response waited, and each ran again once. */
    assert_int_equal(defers, 3);
    assert_int_equal(resumes, 2);
    assert_int_equal(responses_deferred, 1);
    assert_int_equal(responses_seen, 1);
    assert_int_equal(states_freed, 1);
    assert_int_equal(ka_server_metrics(srv)->local_answers, 1);
    assert_int_equal(ka_pool_used_bytes(ka_server_pool(srv)), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    ka_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deferred_request_keeps_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
