/*
 * test_splice.c: large pass-through frames through the relay, in process,
 * over real sockets, with splice on and off. Every byte arrives, in order,
 * both ways; with splice on most of them were spliced, and with a broker
 * and a client that read slowly through small socket buffers, some splices
 * found the destination full (the rest went out as a normal write) without
 * a byte lost or reordered. With splice off nothing is spliced. Many 64 KiB
 * requests sent back to back, read at once, with small answers (a
 * producer's shape): the header after a spliced body was read in the same
 * callback (chained) at least once, every byte still in order.
 *
 * The proxy runs on this thread's libuv loop; the fake broker and the
 * client (a writer and a reader) run on their own threads.
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
#include <uv.h>

#include "ka_config.h"
#include "ka_proxy.h"
#include "socket_fixtures.h"

#define FRAMES      6
#define FAST_FRAMES 64
#define HDR         15 /* size, key, version, correlation id, client id "c" */
#define SMALL_BUF   8192

static int broker_listen_fd, proxy_port;
/* 0: six ~1 MiB frames each way, slow readers, small buffers; 1: FAST_FRAMES
 * 64 KiB requests written back to back, 64 B answers, readers at full speed. */
static int fast, frames;
static int broker_frames, broker_bad, client_got, client_bad;

static size_t request_len(int i)
{
    return fast ? 64 * 1024 + (size_t)i * 13 : 1024 * 1024 + (size_t)i * 77777;
}

static size_t response_len(int i)
{
    return fast ? 64 : 1024 * 1024 + (size_t)i * 55555;
}

/* The byte at offset k of message i's body, direction d. */
static uint8_t pattern(int d, int i, size_t k)
{
    return (uint8_t)(k * 31 + (size_t)i * 7 + (size_t)d * 101 + (k >> 9));
}

static void small_buffers(int fd)
{
    int n = SMALL_BUF;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n));
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads slowly (small reads, short sleeps), so kadmit's writes toward it fill. */
static int read_slowly(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t want = fast ? n : n < 4096 ? n : 4096;
        ssize_t r = read(fd, p, want);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
        if (!fast)
            usleep(20);
    }
    return 0;
}

static void *broker_main(void *arg)
{
    uint8_t *buf = malloc(2 * 1024 * 1024);
    (void)arg;
    int fd = accept(broker_listen_fd, NULL, NULL);
    for (int i = 0; fd >= 0 && buf && i < frames; i++) {
        size_t len = request_len(i);
        if (!fast)
            usleep(100 * 1000); /* kadmit's socket buffer toward the broker fills meanwhile */
        if (read_slowly(fd, buf, 4 + len) < 0)
            break;
        if (fx_get32(buf) != len || fx_get32(buf + 8) != (uint32_t)i)
            broker_bad++;
        for (size_t k = HDR - 4; k < len; k++)
            if (buf[4 + k] != pattern(0, i, k)) {
                broker_bad++;
                break;
            }
        broker_frames++;
        size_t rlen = response_len(i);
        fx_put32(buf, (uint32_t)rlen);
        fx_put32(buf + 4, (uint32_t)i);
        for (size_t k = 4; k < rlen; k++)
            buf[4 + k] = pattern(1, i, k);
        if (write_all(fd, buf, 4 + rlen) < 0)
            break;
    }
    free(buf);
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void *writer_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint8_t *buf = malloc(2 * 1024 * 1024);
    for (int i = 0; buf && i < frames; i++) {
        size_t len = request_len(i);
        fx_put32(buf, (uint32_t)len);
        buf[4] = 0; /* Fetch v4, passed through */
        buf[5] = 1;
        buf[6] = 0;
        buf[7] = 4;
        fx_put32(buf + 8, (uint32_t)i);
        buf[12] = 0;
        buf[13] = 1;
        buf[14] = 'c';
        for (size_t k = HDR - 4; k < len; k++)
            buf[4 + k] = pattern(0, i, k);
        if (write_all(fd, buf, 4 + len) < 0)
            break;
    }
    free(buf);
    return NULL;
}

static void *client_main(void *arg)
{
    uint8_t *buf = malloc(2 * 1024 * 1024);
    pthread_t writer;
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (!fast)
        small_buffers(fd);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (buf && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        pthread_create(&writer, NULL, writer_main, (void *)(intptr_t)fd);
        for (int i = 0; i < frames; i++) {
            size_t rlen = response_len(i);
            if (!fast)
                usleep(100 * 1000); /* and toward the client */
            if (read_slowly(fd, buf, 4 + rlen) < 0)
                break;
            if (fx_get32(buf) != rlen || fx_get32(buf + 4) != (uint32_t)i)
                client_bad++;
            for (size_t k = 4; k < rlen; k++)
                if (buf[4 + k] != pattern(1, i, k)) {
                    client_bad++;
                    break;
                }
            client_got++;
        }
        pthread_join(writer, NULL);
    }
    free(buf);
    close(fd);
    kill(getpid(), SIGTERM);
    return NULL;
}

static const ka_metrics_t *run(int splice_off, int fast_shape, ka_server_t **out, uv_loop_t *loop)
{
    ka_config_t cfg;
    ka_server_t *srv = NULL;
    char err[256];
    uint16_t port;

    broker_frames = broker_bad = client_got = client_bad = 0;
    fast = fast_shape;
    frames = fast ? FAST_FRAMES : FRAMES;
    broker_listen_fd = fx_listen_loopback(&port);
    assert_true(broker_listen_fd >= 0);
    if (!fast)
        small_buffers(broker_listen_fd); /* accepted sockets inherit them */
    fx_proxy_config(&cfg, port);
    cfg.splice_off = splice_off;
    uv_loop_init(loop);
    assert_int_equal(ka_server_new(loop, &cfg, &srv, err, sizeof(err)), 0);
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);
    fx_run_proxy(loop, srv, broker_listen_fd, broker_main, client_main);
    assert_int_equal(broker_frames, frames);
    assert_int_equal(broker_bad, 0);
    assert_int_equal(client_got, frames);
    assert_int_equal(client_bad, 0);
    *out = srv;
    return ka_server_metrics(srv);
}

static void test_large_frames_spliced_both_ways_byte_exact(void **state)
{
    (void)state;
    uv_loop_t loop;
    ka_server_t *srv;
    const ka_metrics_t *m = run(0, 0, &srv, &loop);
    uint64_t req = 0, resp = 0;
    for (int i = 0; i < FRAMES; i++) {
        req += 4 + request_len(i);
        resp += 4 + response_len(i);
    }
    assert_int_equal(m->bytes_client_to_broker, req);
    assert_int_equal(m->bytes_broker_to_client, resp);
    /* Most of each direction went socket to socket. */
    assert_true(m->spliced_client_to_broker > req / 2);
    assert_true(m->spliced_broker_to_client > resp / 2);
    /* The slow readers' full buffers took only part of some splices (more
     * bytes each way than a socket buffer grows to: tcp_wmem's 4 MiB). */
    assert_true(m->splice_short_writes > 0);
    assert_int_equal(m->splice_fallbacks, 0);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

static void test_splice_off_copies_everything(void **state)
{
    (void)state;
    uv_loop_t loop;
    ka_server_t *srv;
    const ka_metrics_t *m = run(1, 0, &srv, &loop);
    assert_int_equal(m->spliced_client_to_broker, 0);
    assert_int_equal(m->spliced_broker_to_client, 0);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

static void test_back_to_back_requests_chain_their_headers(void **state)
{
    (void)state;
    uv_loop_t loop;
    ka_server_t *srv;
    const ka_metrics_t *m = run(0, 1, &srv, &loop);
    uint64_t req = 0;
    for (int i = 0; i < FAST_FRAMES; i++)
        req += 4 + request_len(i);
    assert_int_equal(m->bytes_client_to_broker, req);
    assert_int_equal(m->bytes_broker_to_client, (uint64_t)FAST_FRAMES * (4 + response_len(0)));
    /* How much is spliced depends on how far ahead of kadmit the client is
     * (a loaded machine splits bodies into short reads); that some is, and
     * that headers were chained, does not. */
    assert_true(m->spliced_client_to_broker > 0);
    /* The client wrote ahead: some headers followed their spliced body in one callback. */
    assert_true(m->splice_chained_reads > 0);
    assert_int_equal(m->splice_fallbacks, 0);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_frames_spliced_both_ways_byte_exact),
        cmocka_unit_test(test_splice_off_copies_everything),
        cmocka_unit_test(test_back_to_back_requests_chain_their_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
