/*
 * test_relay_held.c: held frames take memory as their bytes arrive, are
 * capped by --max-held-request, and time out when they stop arriving; in
 * process over real sockets.
 *
 * One client thread plays three connections in turn: one sends the header
 * of a large held frame and a few bytes, then goes silent; one declares a
 * frame above the cap; one sends a large held frame whole. A loop timer
 * samples the pool while the silent one is alone, so the test sees what a
 * stalled frame pins.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ka_proxy.h"
#include "socket_fixtures.h"

#define HELD_KEY    99
#define HELD_CAP    (2u << 20)
#define TIMEOUT_MS  300
#define WHOLE_BYTES (1536u * 1024u)

static int broker_listen_fd, proxy_port;
static ka_server_t *srv;
static int phase; /* 1 while only the silent connection holds a frame */
static uint64_t stalled_peak;
static size_t handler_len;
static uint32_t handler_sum, broker_sum, client_sum;
static double silent_closed_after_s;
static int oversize_closed, whole_answered;

static uint32_t checksum(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Answers each request with its correlation id and the checksum of the frame. */
static void *broker_main(void *arg)
{
    uint8_t head[4], out[12];
    (void)arg;
    for (;;) {
        int fd = accept(broker_listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        while (fx_read_exact(fd, head, 4) == 0) {
            uint32_t len = fx_get32(head);
            uint8_t *frame = malloc(4 + (size_t)len);
            memcpy(frame, head, 4);
            if (fx_read_exact(fd, frame + 4, len) < 0) {
                free(frame);
                break;
            }
            broker_sum = checksum(frame, 4 + (size_t)len);
            fx_put32(out, 8);
            memcpy(out + 4, frame + 8, 4);
            fx_put32(out + 8, broker_sum);
            free(frame);
            if (write(fd, out, sizeof(out)) < 0)
                break;
        }
        close(fd);
    }
}

/* A request header of the held key declaring `total` bytes, size prefix included. */
static void held_header(uint8_t *p, uint32_t total, int32_t corr)
{
    memset(p, 0, 15);
    fx_put32(p, total - 4);
    p[5] = HELD_KEY;
    p[7] = 1;
    fx_put32(p + 8, (uint32_t)corr);
    p[13] = 1;
    p[14] = 'c';
}

/* Blocks until the peer closes; 1 if it did (EOF or reset). */
static int wait_closed(int fd)
{
    uint8_t b[64];
    ssize_t n;
    while ((n = read(fd, b, sizeof(b))) > 0) {
    }
    return n <= 0;
}

static void *client_main(void *arg)
{
    uint8_t small[256];
    (void)arg;

    /* 1. A held frame that claims almost the cap and stops after 256 bytes. */
    int silent = fx_dial_loopback(proxy_port);
    held_header(small, HELD_CAP - 64, 1);
    memset(small + 15, 'x', sizeof(small) - 15);
    double t0 = now_s();
    if (write(silent, small, sizeof(small)) != (ssize_t)sizeof(small))
        goto out;
    usleep(100 * 1000);
    __atomic_store_n(&phase, 2, __ATOMIC_SEQ_CST);

    /* 2. A frame above the cap: closed from its header, which arrives in
     * two pieces (so the splitter carries it). */
    int over = fx_dial_loopback(proxy_port);
    held_header(small, HELD_CAP + 1, 2);
    if (write(over, small, 6) == 6) {
        usleep(30 * 1000);
        if (write(over, small + 6, 9) == 9)
            oversize_closed = wait_closed(over);
    }
    close(over);

    /* 3. A held frame sent whole, in uneven pieces, is forwarded intact. */
    int whole = fx_dial_loopback(proxy_port);
    uint8_t *frame = malloc(WHOLE_BYTES);
    held_header(frame, WHOLE_BYTES, 3);
    for (size_t i = 15; i < WHOLE_BYTES; i++)
        frame[i] = (uint8_t)(i * 7 + i / 1000);
    client_sum = checksum(frame, WHOLE_BYTES);
    for (size_t off = 0; off < WHOLE_BYTES;) {
        size_t n = WHOLE_BYTES - off < 70001 ? WHOLE_BYTES - off : 70001;
        ssize_t w = write(whole, frame + off, n);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    free(frame);
    uint8_t resp[12];
    if (fx_read_exact(whole, resp, sizeof(resp)) == 0 && fx_get32(resp + 4) == 3)
        whole_answered = fx_get32(resp + 8) == client_sum;
    close(whole);

    if (wait_closed(silent))
        silent_closed_after_s = now_s() - t0;
out:
    close(silent);
    kill(getpid(), SIGTERM);
    return NULL;
}

static void sample_cb(uv_timer_t *t)
{
    (void)t;
    uint64_t used = ka_pool_priority_used_bytes(ka_server_pool(srv));
    if (__atomic_load_n(&phase, __ATOMIC_SEQ_CST) == 1 && used > stalled_peak)
        stalled_peak = used;
}

static int on_request(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                      ka_hook_verdict_t *v)
{
    (void)user;
    (void)hdr;
    memset(v, 0, sizeof(*v));
    handler_len = *len;
    handler_sum = checksum(frame, *len);
    v->kind = KA_HOOK_FORWARD;
    return 0;
}

static void test_held_frames_grow_are_capped_and_time_out(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_timer_t sampler;
    ka_config_t cfg;
    char err[256];
    uint16_t broker_port = 0;
    pthread_t broker, client;

    broker_listen_fd = fx_listen_loopback(&broker_port);
    assert_true(broker_listen_fd >= 0);
    /* A small pool, a 2 MiB cap and a short timeout: each limit is reached. */
    ka_config_defaults(&cfg);
    cfg.buffer_memory = 8u << 20;
    cfg.max_held_request = HELD_CAP;
    cfg.held_request_timeout_ms = TIMEOUT_MS;
    cfg.log_level = KA_LOG_ERROR;
    snprintf(cfg.upstream.host, sizeof(cfg.upstream.host), "127.0.0.1");
    cfg.upstream.port = broker_port;
    snprintf(cfg.listen.host, sizeof(cfg.listen.host), "127.0.0.1");
    cfg.listen.port = 0;
    ka_log_setup(cfg.log_level, cfg.log_format);
    uv_loop_init(&loop);
    assert_int_equal(ka_server_new(&loop, &cfg, &srv, err, sizeof(err)), 0);
    ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[HELD_KEY];
    e->buffer_request = 1;
    e->on_request = on_request;
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);
    uv_timer_init(&loop, &sampler);
    uv_timer_start(&sampler, sample_cb, 5, 5);
    uv_unref((uv_handle_t *)&sampler);
    phase = 1;

    pthread_create(&broker, NULL, broker_main, NULL);
    pthread_create(&client, NULL, client_main, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&sampler, NULL);
    ka_server_close(srv);
    pthread_join(client, NULL);
    shutdown(broker_listen_fd, SHUT_RDWR);
    close(broker_listen_fd);
    pthread_join(broker, NULL);

    /* The silent frame pinned one first buffer, not its declared 2 MiB. */
    assert_true(stalled_peak > 0);
    assert_true(stalled_peak <= 64 * 1024);
    assert_true(oversize_closed);
    assert_int_equal(ka_server_metrics(srv)->held_oversize, 1);
    /* The whole frame reached the handler and the broker byte for byte. */
    assert_int_equal(handler_len, WHOLE_BYTES);
    assert_int_equal(handler_sum, client_sum);
    assert_int_equal(broker_sum, client_sum);
    assert_true(whole_answered);
    /* The silent one was closed by the held timeout, not the idle one. */
    assert_int_equal(ka_server_metrics(srv)->held_timeouts, 1);
    assert_true(silent_closed_after_s >= TIMEOUT_MS / 1000.0 - 0.05);
    assert_true(silent_closed_after_s < 5.0);
    assert_int_equal(ka_pool_used_bytes(ka_server_pool(srv)), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    ka_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_frames_grow_are_capped_and_time_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
