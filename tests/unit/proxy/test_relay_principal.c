/*
 * test_relay_principal.c: a connection's principal as the relay learns it
 * from the SASL exchange it forwards, in process over real sockets.
 *
 * A fake broker keeps Kafka's SASL states per connection: a SaslHandshake
 * starts an exchange (also after a login: re-authentication, KIP-368) unless
 * it names GSSAPI after a login, which it refuses with ILLEGAL_SASL_STATE as
 * a broker without re-authentication refuses any; a SaslAuthenticate
 * outside an exchange gets ILLEGAL_SASL_STATE and the connection stays, as
 * Kafka's KafkaApis answers it; "mallory" and a SCRAM proof "badproof" get
 * SASL_AUTHENTICATION_FAILED (Kafka then closes; the fake keeps the
 * connection so the test can look at the principal after it); SCRAM gets a
 * server-first and a server-final "v=" (or "e=" for the proof "noverify").
 * Raw tokens after SaslHandshake v0 are answered empty. A probe API's
 * request is held for a handler that records the principal, client id and
 * authentication state of each probe. One client thread plays every case.
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
#define MAX_PROBES 32

#define ERR_ILLEGAL_SASL_STATE         34
#define ERR_SASL_AUTHENTICATION_FAILED 58

static int broker_listen_fd, proxy_port;
static ka_server_t *srv;
static uv_loop_t loop;
/* What the handler saw for the probe with correlation id i. */
static char seen_principal[MAX_PROBES][128];
static char seen_client_id[MAX_PROBES][64];
static int seen[MAX_PROBES], seen_authenticated[MAX_PROBES];
/* The SaslAuthenticate and SaslHandshake error codes the client got, in order. */
static int auth_errors[64], n_auth_errors;

static size_t put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

/* The fake broker's SASL state of one connection, as Kafka keeps it. */
struct conn_sasl {
    int authed;     /* a login completed */
    int exchange;   /* a SaslHandshake was accepted: tokens expected */
    int steps_left; /* client tokens the mechanism still needs */
    int scram;
};

/* The SaslAuthenticate answer's bytes for this token, and its error code. */
static uint16_t authenticate_answer(struct conn_sasl *c, const uint8_t *buf, uint32_t len,
                                    const char **bytes)
{
    *bytes = "";
    if (!c->exchange)
        return ERR_ILLEGAL_SASL_STATE;
    if (memmem(buf, len, "mallory", 7) || memmem(buf, len, "badproof", 8)) {
        c->exchange = 0;
        return ERR_SASL_AUTHENTICATION_FAILED;
    }
    if (--c->steps_left > 0) {
        *bytes = "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096";
        return 0;
    }
    if (c->scram)
        *bytes =
            memmem(buf, len, "noverify", 8) ? "e=other-error" : "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=";
    c->exchange = 0;
    c->authed = 1;
    return 0;
}

/* One connection of the fake broker. */
static void *broker_conn(void *arg)
{
    int fd = (int)(intptr_t)arg, raw_left = 0;
    struct conn_sasl st = {0};
    uint8_t buf[4096], out[256];
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
        if (key == 17) { /* SaslHandshake: no mechanisms listed */
            int gssapi = memmem(buf, len, "GSSAPI", 6) != NULL;
            uint16_t error = st.authed && gssapi ? ERR_ILLEGAL_SASL_STATE : 0;
            if (error == 0) {
                st.scram = memmem(buf, len, "SCRAM", 5) != NULL;
                st.exchange = 1;
                st.steps_left = st.scram || gssapi ? 2 : 1; /* GSSAPI: two rounds here */
                if (ver == 0)
                    raw_left = st.steps_left;
            }
            n += put16(out + n, error);
            fx_put32(out + n, 0);
            n += 4;
        } else if (key == 36) { /* SaslAuthenticate */
            const char *bytes;
            uint16_t error = authenticate_answer(&st, buf, len, &bytes);
            size_t blen = strlen(bytes);
            if (ver >= 2)
                out[n++] = 0; /* response header tags */
            n += put16(out + n, error);
            if (ver >= 2) {
                out[n++] = 0; /* null message */
                out[n++] = (uint8_t)(blen + 1);
            } else {
                n += put16(out + n, 0xffff);
                fx_put32(out + n, (uint32_t)blen);
                n += 4;
            }
            memcpy(out + n, bytes, blen);
            n += blen;
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

/* Reads a response; its error code (after the header's tags when flexible), or -1. */
static int response(int fd, int flexible)
{
    uint8_t buf[256];
    uint32_t len;
    if (fx_read_frame(fd, buf, sizeof(buf), &len) != 0)
        return -1;
    size_t at = 4 + (flexible ? 1 : 0);
    return len >= at + 2 ? (buf[at] << 8 | buf[at + 1]) : 0;
}

static void note_error(int error)
{
    if (n_auth_errors < (int)(sizeof(auth_errors) / sizeof(auth_errors[0])))
        auth_errors[n_auth_errors++] = error;
}

static void handshake(int fd, uint16_t ver, const char *mech)
{
    uint8_t b[64];
    size_t n = put16(b, (uint16_t)strlen(mech));
    memcpy(b + n, mech, strlen(mech));
    request(fd, 17, ver, 1000, 0, b, n + strlen(mech));
    int error = response(fd, 0);
    assert_true(error >= 0);
    note_error(error);
}

/* One SaslAuthenticate with token; the answer's error code. */
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
    int error = response(fd, ver >= 2);
    assert_true(error >= 0);
    note_error(error);
    return error;
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
    assert_true(response(fd, 0) >= 0);
}

#define TOKEN(s)           s, sizeof(s) - 1
#define PLAIN(user)        TOKEN("\0" user "\0secret")
#define SCRAM_FINAL(proof) TOKEN("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=" proof)

/* A whole SCRAM login (SaslAuthenticate v1) with client-first `first`; the last error code. */
static int scram_login(int fd, const char *first, size_t len, const char *proof, size_t plen)
{
    handshake(fd, 1, "SCRAM-SHA-512");
    if (authenticate(fd, 1, first, len) != 0)
        return -1;
    return authenticate(fd, 1, proof, plen);
}

static void *client_main_sasl_listener(void *arg)
{
    (void)arg;
    /* 1: PLAIN through SaslAuthenticate v2; then a re-authentication as bob. */
    int c = fx_dial_loopback(proxy_port);
    probe(c, 1); /* before authentication: unknown, and not authenticated */
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
    assert_int_equal(authenticate(c, 1, PLAIN("mallory")), ERR_SASL_AUTHENTICATION_FAILED);
    probe(c, 4);
    close(c);

    /* 3: SCRAM in two steps (v1), with an escaped name; known only after the second. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "SCRAM-SHA-512");
    assert_int_equal(authenticate(c, 1, TOKEN("n,,n=bo=2Cb,r=fyko+d2lbbFgONRv9qkxdawL")), 0);
    probe(c, 5);
    assert_int_equal(authenticate(c, 1, SCRAM_FINAL("v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")), 0);
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
    assert_int_equal(authenticate(c, 2, TOKEN("\x05\x04 wrap")), 0); /* a second round */
    probe(c, 20);
    close(c);

    /* 6: after a login, garbage the broker refuses and keeps the connection:
     * a SaslAuthenticate with no handshake (garbage, then a PLAIN token
     * naming bob), and a SaslHandshake it refuses. alice stays. */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 1, PLAIN("alice")), 0);
    assert_int_equal(authenticate(c, 2, TOKEN("\xff\xfe garbage \x01")), ERR_ILLEGAL_SASL_STATE);
    probe(c, 9);
    assert_int_equal(authenticate(c, 1, PLAIN("bob")), ERR_ILLEGAL_SASL_STATE);
    probe(c, 10);
    handshake(c, 1, "GSSAPI");
    assert_int_equal(auth_errors[n_auth_errors - 1], ERR_ILLEGAL_SASL_STATE);
    probe(c, 11);
    close(c);

    /* 7: a failed re-authentication keeps the principal (Kafka then closes). */
    c = fx_dial_loopback(proxy_port);
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 2, PLAIN("alice")), 0);
    handshake(c, 1, "PLAIN");
    assert_int_equal(authenticate(c, 2, PLAIN("mallory")), ERR_SASL_AUTHENTICATION_FAILED);
    probe(c, 12);
    close(c);

    /* 8: SCRAM re-authentications: one that succeeds commits, one whose
     * final answer is not a server signature does not. */
    c = fx_dial_loopback(proxy_port);
    assert_int_equal(scram_login(c, TOKEN("n,,n=carol,r=abc"), SCRAM_FINAL("cHJvb2Y=")), 0);
    probe(c, 13);
    assert_int_equal(scram_login(c, TOKEN("n,,n=dave,r=abd"), SCRAM_FINAL("cHJvb2Y=")), 0);
    probe(c, 14);
    assert_int_equal(scram_login(c, TOKEN("n,,n=erin,r=abe"), SCRAM_FINAL("noverify")), 0);
    probe(c, 15);
    handshake(c, 1, "SCRAM-SHA-512");
    assert_int_equal(authenticate(c, 1, TOKEN("n,,n=erin,r=abf")), 0);
    assert_int_equal(authenticate(c, 1, SCRAM_FINAL("badproof")), ERR_SASL_AUTHENTICATION_FAILED);
    probe(c, 16);
    close(c);

    /* 9: delegation tokens, in the spellings Kafka reads as one, are unknown;
     * a key in another case is an ordinary extension to Kafka. */
    c = fx_dial_loopback(proxy_port);
    assert_int_equal(
        scram_login(c, TOKEN("n,,n=tokenid,r=abg,tokenauth=TRUE"), SCRAM_FINAL("cHJvb2Y=")), 0);
    probe(c, 17);
    close(c);
    c = fx_dial_loopback(proxy_port);
    assert_int_equal(
        scram_login(c, TOKEN("n,,n=alice,r=abh,TokenAuth=true"), SCRAM_FINAL("cHJvb2Y=")), 0);
    probe(c, 18);
    close(c);
    c = fx_dial_loopback(proxy_port);
    assert_int_equal(scram_login(c, TOKEN("n,,n=tokenid,r=abi,tokenauth=false,tokenauth=True"),
                                 SCRAM_FINAL("cHJvb2Y=")),
                     0);
    probe(c, 19);
    close(c);

    kill(getpid(), SIGTERM);
    return NULL;
}

/* Behind a listener kadmit does not know to be SASL: no login is needed. */
static void *client_main_plain_listener(void *arg)
{
    (void)arg;
    int c = fx_dial_loopback(proxy_port);
    probe(c, 1);
    handshake(c, 1, "PLAIN");
    probe(c, 2); /* the broker accepted the handshake: a login is under way */
    assert_int_equal(authenticate(c, 2, PLAIN("alice")), 0);
    probe(c, 3);
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
        seen_authenticated[i] = hdr->origin->authenticated;
        snprintf(seen_principal[i], sizeof(seen_principal[i]), "%s",
                 hdr->origin->principal ? hdr->origin->principal : "(unknown)");
        snprintf(seen_client_id[i], sizeof(seen_client_id[i]), "%.*s",
                 (int)hdr->origin->client_id_len, hdr->origin->client_id);
    }
    return 0;
}

/* Runs client_main against a proxy; sasl_listener: kadmit's own connection logs in with SASL. */
static void run(int sasl_listener, void *(*client_main)(void *))
{
    static ka_config_t cfg; /* the server keeps a pointer to it */
    char err[256];
    uint16_t broker_port = 0;

    memset(seen, 0, sizeof(seen));
    n_auth_errors = 0;
    broker_listen_fd = fx_listen_loopback(&broker_port);
    assert_true(broker_listen_fd >= 0);
    fx_proxy_config(&cfg, broker_port);
    if (sasl_listener) { /* kadmit's own login (never used here: no policy, no metadata client) */
        snprintf(cfg.metadata_sasl_mechanism, sizeof(cfg.metadata_sasl_mechanism), "PLAIN");
        snprintf(cfg.metadata_sasl_username, sizeof(cfg.metadata_sasl_username), "kadmit");
        setenv("KADMIT_METADATA_SASL_PASSWORD", "kadmit-secret", 1);
    }
    uv_loop_init(&loop);
    assert_int_equal(ka_server_new(&loop, &cfg, &srv, err, sizeof(err)), 0);
    ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[PROBE_KEY];
    e->buffer_request = 1;
    e->on_request = on_probe;
    assert_int_equal(ka_server_listen(srv, err, sizeof(err)), 0);
    proxy_port = ka_server_listen_port(srv);
    fx_run_proxy(&loop, srv, broker_listen_fd, broker_main, client_main);
}

static void expect(int i, const char *principal, int authenticated)
{
    assert_true(seen[i]);
    assert_string_equal(seen_client_id[i], "cid");
    assert_string_equal(seen_principal[i], principal);
    assert_int_equal(seen_authenticated[i], authenticated);
}

static void test_principal_follows_the_broker_answer_to_the_sasl_exchange(void **state)
{
    (void)state;
    run(1, client_main_sasl_listener);
    expect(1, "(unknown)", 0); /* a SASL listener before the login */
    expect(2, "User:alice", 1);
    expect(3, "User:bob", 1); /* a re-authentication that succeeds commits */
    expect(4, "(unknown)", 0);
    expect(5, "(unknown)", 0); /* SCRAM half done */
    expect(6, "User:bo,b", 1);
    expect(7, "User:carol", 1);
    expect(8, "(unknown)", 1);
    /* Garbage after a login changes nothing. */
    expect(9, "User:alice", 1);
    expect(10, "User:alice", 1);
    expect(11, "User:alice", 1);
    /* A failed re-authentication keeps the principal; the broker is closing. */
    expect(12, "User:alice", 0);
    expect(13, "User:carol", 1);
    expect(14, "User:dave", 1);
    expect(15, "User:dave", 0); /* error 0 but "e=": not a success */
    expect(16, "User:dave", 0);
    expect(17, "(unknown)", 1); /* tokenauth=TRUE: the token's owner */
    expect(18, "User:alice", 1);
    expect(19, "(unknown)", 1); /* the last tokenauth counts */
    expect(20, "(unknown)", 1);
    const ka_metrics_t *m = ka_server_metrics(srv);
    /* mallory twice, "e=" and badproof. */
    assert_int_equal(m->sasl_auth_failures, 4);
    /* alice bob bo,b carol alice alice carol dave tokenid alice tokenid. */
    assert_int_equal(m->sasl_principals, 11);
    /* The two SaslAuthenticate after case 6's login. */
    assert_int_equal(m->sasl_auth_ignored, 2);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

static void
test_without_a_sasl_listener_a_connection_is_authenticated_until_a_login_runs(void **state)
{
    (void)state;
    run(0, client_main_plain_listener);
    expect(1, "(unknown)", 1);
    expect(2, "(unknown)", 0);
    expect(3, "User:alice", 1);
    assert_int_equal(fx_proxy_free(&loop, srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_principal_follows_the_broker_answer_to_the_sasl_exchange),
        cmocka_unit_test(
            test_without_a_sasl_listener_a_connection_is_authenticated_until_a_login_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
