/*
 * test_relay_principal.c: a connection's principal as the relay learns it
 * from the SASL exchange it forwards, in process over real sockets.
 *
 * A fake broker answers SaslHandshake, SaslAuthenticate (refusing the user
 * "mallory"), raw tokens after SaslHandshake v0, and a probe API whose
 * request is held for a handler that records the principal and client id
 * of each probe. One client thread plays every case on its own connection.
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
#include <unistd.h>

#include "ka_proxy.h"
#include "socket_fixtures.h"

#define PROBE_KEY  99
#define MAX_PROBES 16

static int broker_listen_fd, proxy_port;
static ka_server_t *srv;
/* What the handler saw for the probe with correlation id i. */
static char seen_principal[MAX_PROBES][128];
static char seen_client_id[MAX_PROBES][64];
static int seen[MAX_PROBES];

static size_t put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

/* One connection of the fake broker. */
static void *broker_conn(void *arg)
{
    int fd = (int)(intptr_t)arg, raw_left = 0;
    uint8_t buf[4096], out[64];
    uint32_t len;
    while (fx_read_frame(fd, buf, sizeof(buf), &len) == 0) {
        size_t n = 0;
        if (raw_left > 0) { /* a raw token: an empty raw answer, unless refused */
            raw_left--;
            if (memmem(buf, len, "mallory", 7) != NULL)
                break; /* a broker closes on a failed raw exchange */
            fx_put32(out, 0);
            if (write(fd, out, 4) < 0)
                break;
            continue;
        }
        uint16_t key = (uint16_t)(buf[0] << 8 | buf[1]), ver = (uint16_t)(buf[2] << 8 | buf[3]);
        memcpy(out + 4, buf + 4, 4); /* correlation id */
        n = 8;
        if (key == 17) { /* SaslHandshake: error 0, no mechanisms */
            n += put16(out + n, 0);
            fx_put32(out + n, 0);
            n += 4;
            if (ver == 0)
                raw_left = memmem(buf, len, "SCRAM", 5) ? 2 : 1;
        } else if (key == 36) { /* SaslAuthenticate */
            uint16_t error = memmem(buf, len, "mallory", 7) ? 58 : 0;
            if (ver >= 2)
                out[n++] = 0; /* response header tags */
            n += put16(out + n, error);
            if (ver >= 2) {
                out[n++] = 0; /* null message */
                out[n++] = 1; /* empty bytes */
            } else {
                n += put16(out + n, 0xffff);
                fx_put32(out + n, 0);
                n += 4;
            }
            if (ver >= 1) {
                memset(out + n, 0, 8);
                n += 8;
            }
            if (ver >= 2)
                out[n++] = 0;
        } else {
            fx_put32(out + n, 0);
            n += 4;
        }
        fx_put32(out, (uint32_t)(n - 4));
        if (write(fd, out, n) != (ssize_t)n)
            break;
    }
    close(fd);
    return NULL;
}

static void *broker_main(void *arg)
{
    (void)arg;
    fx_serve_each(broker_listen_fd, broker_conn);
    return NULL;
}

/* A request: header v1 (v2 when flexible) with client id "cid", then body. */
static void request(int fd, uint16_t key, uint16_t ver, int32_t corr, int flexible,
                    const uint8_t *body, size_t body_len)
{
    uint8_t f[1024];
    size_t n = 4;
    n += put16(f + n, key);
    n += put16(f + n, ver);
    fx_put32(f + n, (uint32_t)corr);
    n += 4;
    n += put16(f + n, 3);
    memcpy(f + n, "cid", 3);
    n += 3;
    if (flexible)
        f[n++] = 0;
    if (body_len > 0)
        memcpy(f + n, body, body_len);
    n += body_len;
    fx_put32(f, (uint32_t)(n - 4));
    assert_int_equal(write(fd, f, n), (ssize_t)n);
}

static int response(int fd)
{
    uint8_t buf[256];
    uint32_t len;
    return fx_read_frame(fd, buf, sizeof(buf), &len);
}

static void handshake(int fd, uint16_t ver, const char *mech)
{
    uint8_t b[64];
    size_t n = put16(b, (uint16_t)strlen(mech));
    memcpy(b + n, mech, strlen(mech));
    request(fd, 17, ver, 1000, 0, b, n + strlen(mech));
    assert_int_equal(response(fd), 0);
}

/* One SaslAuthenticate with token; 0 when answered. */
static int authenticate(int fd, uint16_t ver, const char *token, size_t len)
{
    uint8_t b[256];
    size_t n = 0;
    if (ver >= 2) {
        b[n++] = (uint8_t)(len + 1);
    } else {
        fx_put32(b, (uint32_t)len);
        n = 4;
    }
    memcpy(b + n, token, len);
    n += len;
    if (ver >= 2)
        b[n++] = 0;
    request(fd, 36, ver, 2000, ver >= 2, b, n);
    return response(fd);
}

static void raw_token(int fd, const char *token, size_t len)
{
    uint8_t b[256], r[4];
    fx_put32(b, (uint32_t)len);
    memcpy(b + 4, token, len);
    assert_int_equal(write(fd, b, 4 + len), (ssize_t)(4 + len));
    assert_int_equal(fx_read_exact(fd, r, 4), 0);
}

static void probe(int fd, int32_t corr)
{
    request(fd, PROBE_KEY, 1, corr, 0, NULL, 0);
    assert_int_equal(response(fd), 0);
}

#define PLAIN(user) ("\0" user "\0secret"), sizeof("\0" user "\0secret") - 1

static void *client_main(void *arg)
{
    (void)arg;
    /* 1: PLAIN through SaslAuthenticate v2; then a re-authentication as bob. */
    int c = fx_dial_loopback(proxy_port);
    probe(c, 1); /* before authentication: unknown */
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 2, PLAIN("alice")), 0);
    probe(c, 2);
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 2, PLAIN("bob")), 0);
    probe(c, 3);
    close(c);

    /* 2: a refused authentication leaves the connection unknown. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 1, PLAIN("mallory")), 0);
    probe(c, 4);
    close(c);

    /* 3: SCRAM in two steps (v1), with an escaped name; known only after the second. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "SCRAM-SHA-512");
    const char first[] = "n,,n=bo=2Cb,r=fyko+d2lbbFgONRv9qkxdawL";
    assert_int_equal(authenticate(c, 1, first, sizeof(first) - 1), 0);
    probe(c, 5);
    const char final[] =
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=";
    assert_int_equal(authenticate(c, 1, final, sizeof(final) - 1), 0);
    probe(c, 6);
    close(c);

    /* 4: SaslHandshake v0 and a raw PLAIN token. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 0, "PLAIN");
    raw_token(c, PLAIN("carol"));
    probe(c, 7);
    close(c);

    /* 5: GSSAPI through SaslAuthenticate: kadmit cannot read the name. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "GSSAPI");
    assert_int_equal(authenticate(c, 2, "\x60\x82kerberos", 10), 0);
    probe(c, 8);
    close(c);

    kill(getpid(), SIGTERM);
    return NULL;
}

static int on_probe(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                    ka_hook_verdict_t *v)
{
    (void)user, (void)frame, (void)len;
    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    int i = hdr->correlation_id;
    if (i >= 0 && i < MAX_PROBES && hdr->origin != NULL) {
        seen[i] = 1;
        snprintf(seen_principal[i], sizeof(seen_principal[i]), "%s",
                 hdr->origin->principal ? hdr->origin->principal : "(unknown)");
        snprintf(seen_client_id[i], sizeof(seen_client_id[i]), "%.*s",
                 (int)hdr->origin->client_id_len, hdr->origin->client_id);
    }
    return 0;
}

static void test_principal_follows_the_broker_answer_to_the_sasl_exchange(void **state)
{
    (void)state;
    uv_loop_t loop;
    ka_config_t cfg;
    char err[256];
    uint16_t broker_port = 0;

    broker_listen_fd = fx_listen_loopback(&broker_port);
    assert_true(broker_listen_fd >= 0);
    fx_proxy_config(&cfg, broker_port);
    uv_loop_init(&loop);
    assert_int_equal(ka_server_new(&loop, &cfg, &srv, err, sizeof(err)), 0);
    ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[PROBE_KEY];
    e->buffer_request = 1;
    e->on_request = on_probe;
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);
    fx_run_proxy(&loop, srv, broker_listen_fd, broker_main, client_main);

    for (int i = 1; i <= 8; i++) {
        assert_true(seen[i]);
        assert_string_equal(seen_client_id[i], "cid");
    }
    assert_string_equal(seen_principal[1], "(unknown)");
    assert_string_equal(seen_principal[2], "User:alice");
    assert_string_equal(seen_principal[3], "User:bob");
    assert_string_equal(seen_principal[4], "(unknown)");
    assert_string_equal(seen_principal[5], "(unknown)"); /* SCRAM half done */
    assert_string_equal(seen_principal[6], "User:bo,b");
    assert_string_equal(seen_principal[7], "User:carol");
    assert_string_equal(seen_principal[8], "(unknown)");
    assert_int_equal(ka_server_metrics(srv)->sasl_auth_failures, 1);
    assert_int_equal(ka_server_metrics(srv)->sasl_principals, 4);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_principal_follows_the_broker_answer_to_the_sasl_exchange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
