/*
 * test_mdc_conn.c: the metadata client's connection against a fake broker
 * on the same libuv loop: responses longer than one read arrive whole and
 * are charged to the memory pool until released; several responses in one
 * write arrive as several frames; a response above the cap, or one the pool
 * cannot hold, is reported as an error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_mdc_conn.h"

/* The fake broker: answers the first request it reads with `reply`. */
struct broker {
    uv_tcp_t listener, peer;
    int peer_open;
    uint8_t *reply;
    size_t reply_len;
    uv_write_t write_req;
    uint8_t read_buffer[4096];
};

struct run {
    uv_loop_t loop;
    struct broker broker;
    ka_mdc_conn_t conn;
    ka_pool_t pool;
    size_t frames;
    size_t frame_lens[4];
    int frames_ok; /* every byte as the broker sent it */
    uint64_t pool_used_in_cb;
    char error[256];
};

static uint64_t test_clock_ns(void)
{
    return 0;
}

/* A response frame: size prefix, correlation id 7, then body_len bytes of i % 251. */
static size_t put_frame(uint8_t *out, uint32_t body_len)
{
    uint32_t size = 4 + body_len;
    out[0] = (uint8_t)(size >> 24);
    out[1] = (uint8_t)(size >> 16);
    out[2] = (uint8_t)(size >> 8);
    out[3] = (uint8_t)size;
    memcpy(out + 4, "\0\0\0\7", 4);
    for (uint32_t i = 0; i < body_len; i++)
        out[8 + i] = (uint8_t)(i % 251);
    return 8 + (size_t)body_len;
}

static void broker_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct broker *b = h->data;
    (void)suggested;
    *buf = uv_buf_init((char *)b->read_buffer, sizeof(b->read_buffer));
}

static void broker_write_cb(uv_write_t *req, int status)
{
    (void)req;
    (void)status;
}

static void broker_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct broker *b = s->data;
    (void)buf;
    if (nread <= 0)
        return;
    uv_buf_t out = uv_buf_init((char *)b->reply, (unsigned)b->reply_len);
    uv_read_stop(s);
    assert_int_equal(uv_write(&b->write_req, s, &out, 1, broker_write_cb), 0);
}

static void broker_connection_cb(uv_stream_t *server, int status)
{
    struct broker *b = server->data;
    assert_int_equal(status, 0);
    uv_tcp_init(server->loop, &b->peer);
    b->peer.data = b;
    b->peer_open = 1;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&b->peer), 0);
    uv_read_start((uv_stream_t *)&b->peer, broker_alloc_cb, broker_read_cb);
}

static void ready_cb(void *owner)
{
    struct run *r = owner;
    static const uint8_t request[] = {0, 0, 0, 4, 0, 0, 0, 7};
    assert_int_equal(ka_mdc_conn_send(&r->conn, request, sizeof(request)), 0);
}

static void frame_cb(void *owner, ka_pbuf_t *buf, const uint8_t *body, size_t len)
{
    struct run *r = owner;
    int ok = len >= 4 && memcmp(body, "\0\0\0\7", 4) == 0;
    for (size_t i = 4; ok && i < len; i++)
        ok = body[i] == (uint8_t)((i - 4) % 251);
    r->frames_ok &= ok;
    r->frame_lens[r->frames++ % 4] = len;
    r->pool_used_in_cb = ka_pool_used_bytes(&r->pool); /* the pool given, not the private one */
    ka_mdc_conn_release(&r->conn, buf);
    if (r->frames == 2 || len > 1000)
        ka_mdc_conn_close(&r->conn);
}

static void error_cb(void *owner, const char *step, const char *detail)
{
    struct run *r = owner;
    snprintf(r->error, sizeof(r->error), "%s: %s", step, detail);
    ka_mdc_conn_close(&r->conn);
}

static void closed_cb(void *owner)
{
    struct run *r = owner;
    uv_close((uv_handle_t *)&r->broker.listener, NULL);
    if (r->broker.peer_open)
        uv_close((uv_handle_t *)&r->broker.peer, NULL);
}

static const ka_mdc_conn_events_t events = {ready_cb, frame_cb, error_cb, closed_cb};

/* Runs one connection against a broker that answers with reply; pool_bytes 0: the private pool. */
static void run(struct run *r, uint8_t *reply, size_t reply_len, uint64_t pool_bytes)
{
    struct sockaddr_in addr;
    int namelen = sizeof(addr);

    memset(r, 0, sizeof(*r));
    r->frames_ok = 1;
    assert_int_equal(uv_loop_init(&r->loop), 0);
    r->broker.reply = reply;
    r->broker.reply_len = reply_len;
    r->broker.listener.data = &r->broker;
    uv_tcp_init(&r->loop, &r->broker.listener);
    uv_ip4_addr("127.0.0.1", 0, &addr);
    assert_int_equal(uv_tcp_bind(&r->broker.listener, (const struct sockaddr *)&addr, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&r->broker.listener, 4, broker_connection_cb), 0);
    uv_tcp_getsockname(&r->broker.listener, (struct sockaddr *)&addr, &namelen);
    ka_mdc_conn_init(&r->conn, &r->loop, &events, r);
    if (pool_bytes > 0) {
        ka_pool_init(&r->pool, pool_bytes, pool_bytes, test_clock_ns);
        ka_mdc_conn_set_pool(&r->conn, &r->pool);
    }
    assert_int_equal(ka_mdc_conn_open(&r->conn, (const struct sockaddr *)&addr, NULL), 0);
    /* The connection's handle is unreferenced (it never keeps a daemon alive), so the
     * broker's handles keep the loop running until closed_cb closes them. */
    uv_run(&r->loop, UV_RUN_DEFAULT);
    assert_int_equal(ka_pool_used_bytes(r->conn.pool), 0);
    assert_int_equal(uv_loop_close(&r->loop), 0);
}

/* Runs against a broker answering one frame of `body` bytes after the correlation id. */
static struct run *run_one_frame(uint32_t body, uint64_t pool_bytes)
{
    uint8_t *reply = malloc(8 + (size_t)body);
    struct run *r = malloc(sizeof(*r));

    assert_non_null(reply);
    assert_non_null(r);
    run(r, reply, put_frame(reply, body), pool_bytes);
    free(reply);
    return r;
}

static void test_response_longer_than_a_read_arrives_whole_and_is_charged_to_the_pool(void **state)
{
    struct run *r = run_one_frame(300 * 1024, 4u << 20);

    (void)state;
    assert_string_equal(r->error, "");
    assert_int_equal(r->frames, 1);
    assert_int_equal(r->frame_lens[0], 4 + 300 * 1024);
    assert_true(r->frames_ok);
    /* While the frame was held, its buffer (size prefix included) was charged. */
    assert_true(r->pool_used_in_cb >= 8 + 300 * 1024);
    free(r);
}

static void test_two_responses_in_one_write_arrive_as_two_frames(void **state)
{
    uint8_t reply[64];
    struct run *r = malloc(sizeof(*r));

    (void)state;
    size_t n = put_frame(reply, 10);
    n += put_frame(reply + n, 0);
    run(r, reply, n, 0);
    assert_string_equal(r->error, "");
    assert_int_equal(r->frames, 2);
    assert_int_equal(r->frame_lens[0], 14);
    assert_int_equal(r->frame_lens[1], 4);
    assert_true(r->frames_ok);
    free(r);
}

static void test_response_above_the_cap_is_an_error(void **state)
{
    uint8_t reply[8];
    struct run *r = malloc(sizeof(*r));
    uint32_t size = (uint32_t)KA_MDC_MAX_RESPONSE; /* with its prefix, 4 bytes over */

    (void)state;
    reply[0] = (uint8_t)(size >> 24);
    reply[1] = (uint8_t)(size >> 16);
    reply[2] = (uint8_t)(size >> 8);
    reply[3] = (uint8_t)size;
    memcpy(reply + 4, "\0\0\0\7", 4);
    run(r, reply, sizeof(reply), 0);
    assert_int_equal(r->frames, 0);
    assert_non_null(strstr(r->error, "read: a response of 268435460 bytes is above the cap"));
    free(r);
}

static void test_response_the_pool_cannot_hold_is_an_error(void **state)
{
    struct run *r = run_one_frame(200 * 1024, 128 * 1024);

    (void)state;
    assert_int_equal(r->frames, 0);
    assert_non_null(
        strstr(r->error, "read: the memory pool has no room for a 204808-byte response"));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_response_longer_than_a_read_arrives_whole_and_is_charged_to_the_pool),
        cmocka_unit_test(test_two_responses_in_one_write_arrive_as_two_frames),
        cmocka_unit_test(test_response_above_the_cap_is_an_error),
        cmocka_unit_test(test_response_the_pool_cannot_hold_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
