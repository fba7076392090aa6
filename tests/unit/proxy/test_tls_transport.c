/*
 * test_tls_transport.c: ka_transport.h between two engines in memory, with
 * a throwaway certificate: gathered writes (ka_transport_writev) decrypt to
 * exactly what was written and use fewer records than one per slice, and
 * lent input is read in place and what is left unread survives the
 * lender's buffer being reused (ka_transport_settle); and
 * the kernel TLS answers are the truth: the probe agrees with the kernel's
 * own list of TCP upper-layer protocols, and an engine on kadmit's BIO never
 * claims kTLS even with SSL_OP_ENABLE_KTLS set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ka_transport.h"

static char dir[] = "/tmp/ka-test-tls-XXXXXX";
static char cert_path[64], key_path[64];

/* A self-signed P-256 certificate for "localhost", written as PEM files. */
static int make_cert(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(cert_path, sizeof(cert_path), "%s/c.pem", dir);
    snprintf(key_path, sizeof(key_path), "%s/k.pem", dir);
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (pkey == NULL || x == NULL)
        return -1;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    if (X509_sign(x, pkey, EVP_sha256()) == 0)
        return -1;
    FILE *c = fopen(cert_path, "w"), *k = fopen(key_path, "w");
    int ok = c && k && PEM_write_X509(c, x) == 1 &&
             PEM_write_PrivateKey(k, pkey, NULL, NULL, 0, NULL, NULL) == 1;
    if (c)
        fclose(c);
    if (k)
        fclose(k);
    X509_free(x);
    EVP_PKEY_free(pkey);
    return ok ? 0 : -1;
}

static int remove_cert(void **state)
{
    (void)state;
    unlink(cert_path);
    unlink(key_path);
    rmdir(dir);
    return 0;
}

typedef struct pair {
    ka_tls_source_t *server_src, *client_src;
    ka_transport_t *server, *client;
} pair_t;

/* Moves every pending record from one engine to the other; returns the record
 * bytes moved and counts the TLS records among them (5-byte headers). */
static size_t move(ka_transport_t *from, ka_transport_t *to, size_t *records)
{
    static uint8_t buf[1 << 20];
    size_t n = 0, got;
    while ((got = ka_transport_take(from, buf + n, sizeof(buf) - n)) > 0)
        n += got;
    for (size_t off = 0; records != NULL && off + 5 <= n;) {
        size_t len = (size_t)buf[off + 3] << 8 | buf[off + 4];
        (*records)++;
        off += 5 + len;
    }
    if (n > 0)
        assert_int_equal(ka_transport_feed(to, buf, n), 0);
    return n;
}

static void open_pair(pair_t *p, int ktls)
{
    ka_tls_settings_t ss = {
        .is_server = 1, .cert_file = cert_path, .key_file = key_path, .ktls = ktls};
    ka_tls_settings_t cs = {.is_server = 0,
                            .ca_file = cert_path,
                            .verify = 1,
                            .server_name = "localhost",
                            .ktls = ktls};
    char err[256];
    assert_int_equal(ka_tls_source_new(&ss, &p->server_src, err, sizeof(err)), 0);
    assert_int_equal(ka_tls_source_new(&cs, &p->client_src, err, sizeof(err)), 0);
    p->server = ka_transport_new(p->server_src);
    p->client = ka_transport_new(p->client_src);
    assert_non_null(p->server);
    assert_non_null(p->client);
    uint8_t scratch[64];
    for (int i = 0; i < 20; i++) {
        assert_true(ka_transport_read(p->client, scratch, sizeof(scratch)) >= 0);
        move(p->client, p->server, NULL);
        assert_true(ka_transport_read(p->server, scratch, sizeof(scratch)) >= 0);
        move(p->server, p->client, NULL);
        if (ka_transport_established(p->client) && ka_transport_established(p->server))
            break;
    }
    assert_true(ka_transport_established(p->client));
    assert_true(ka_transport_established(p->server));
    /* The client reads the server's session tickets (TLS 1.3), so none are left to count. */
    assert_int_equal(ka_transport_read(p->client, scratch, sizeof(scratch)), 0);
}

static void close_pair(pair_t *p)
{
    ka_transport_free(p->server);
    ka_transport_free(p->client);
    ka_tls_source_free(p->server_src);
    ka_tls_source_free(p->client_src);
}

/* Slices of 1 to 300 bytes and a 40 KiB one, gathered: the same bytes arrive
 * in order, in a few records instead of one per slice. */
static void test_writev_gathers_small_slices(void **state)
{
    (void)state;
    pair_t p;
    open_pair(&p, 0);
    enum { SLICES = 200, BIG = 40 * 1024 };
    static uint8_t src[SLICES * 300 + BIG], out[sizeof(src)];
    struct iovec iov[SLICES + 1];
    size_t total = 0;
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 7 + 3);
    for (int i = 0; i < SLICES; i++) {
        size_t len = (size_t)(i % 300) + 1;
        if (i == SLICES / 2) /* a large slice in the middle goes out unstaged */
            len = BIG;
        iov[i] = (struct iovec){.iov_base = src + total, .iov_len = len};
        total += len;
    }
    assert_int_equal(ka_transport_writev(p.client, iov, SLICES), 0);
    size_t records = 0;
    move(p.client, p.server, &records);
    size_t got = 0;
    long n;
    while ((n = ka_transport_read(p.server, out + got, sizeof(out) - got)) > 0)
        got += (size_t)n;
    assert_int_equal(n, 0);
    assert_int_equal(got, total);
    assert_memory_equal(out, src, total);
    /* One record per slice would be SLICES; gathered it is about total / 16 KiB + 2. */
    assert_true(records <= total / 16384 + 4);
    assert_true(records >= total / 16384);
    close_pair(&p);
}

/* Lent ciphertext: part read in place, the rest (a record cut in two, and a
 * whole record a paused reader did not read) copied by settle, then the
 * lender's buffer is scribbled over; every byte still arrives, in order. */
static void test_lend_settle_survives_buffer_reuse(void **state)
{
    (void)state;
    pair_t p;
    open_pair(&p, 0);
    static uint8_t src[50000], out[sizeof(src)], wire[sizeof(src) + 1024], lent[sizeof(wire)];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 13 + 1);
    assert_int_equal(ka_transport_write(p.client, src, sizeof(src)), 0);
    size_t n = 0, got;
    while ((got = ka_transport_take(p.client, wire + n, sizeof(wire) - n)) > 0)
        n += got;
    assert_true(n > sizeof(src));
    size_t cut = 16384 + 1000; /* inside the second record */
    size_t total = 0;
    /* 1: lend the first part, read some of it, settle, scribble. */
    memcpy(lent, wire, cut);
    assert_int_equal(ka_transport_lend(p.server, lent, cut), 0);
    long r = ka_transport_read(p.server, out, 100);
    assert_int_equal(r, 100);
    total += (size_t)r;
    assert_int_equal(ka_transport_settle(p.server), 0);
    memset(lent, 0xA5, sizeof(lent));
    /* 2: lend the rest and settle before reading anything (a paused leg). */
    memcpy(lent, wire + cut, n - cut);
    assert_int_equal(ka_transport_lend(p.server, lent, n - cut), 0);
    assert_int_equal(ka_transport_settle(p.server), 0);
    memset(lent, 0x5A, sizeof(lent));
    assert_true(ka_transport_has_input(p.server));
    while ((r = ka_transport_read(p.server, out + total, sizeof(out) - total)) > 0)
        total += (size_t)r;
    assert_int_equal(r, 0);
    assert_int_equal(total, sizeof(src));
    assert_memory_equal(out, src, sizeof(src));
    assert_false(ka_transport_has_input(p.server));
    close_pair(&p);
}

/* The probe says what the kernel's own list says (after the probe, which
 * loads the module where it can be loaded). */
static void test_probe_matches_kernel(void **state)
{
    (void)state;
    char why[200] = "";
    int avail = ka_tls_ktls_probe(why, sizeof(why));
    assert_true(why[0] != '\0');
    char ulps[256] = "";
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
    if (f == NULL)
        skip(); /* not Linux, or no /proc */
    if (fgets(ulps, sizeof(ulps), f) == NULL)
        ulps[0] = '\0';
    fclose(f);
    int listed = 0;
    for (char *tok = strtok(ulps, " \n"); tok != NULL; tok = strtok(NULL, " \n"))
        listed |= strcmp(tok, "tls") == 0;
    print_message("kTLS probe: %s (%s)\n", avail ? "available" : "unavailable", why);
    assert_int_equal(avail, listed);
    if (!avail)
        assert_non_null(strstr(why, "no tls module"));
}

/* SSL_OP_ENABLE_KTLS does not move records off kadmit's BIO, and data still flows. */
static void test_ktls_option_on_kadmit_bio(void **state)
{
    (void)state;
    pair_t p;
    open_pair(&p, 1);
    int send = -1, recv = -1;
    ka_transport_ktls(p.client, &send, &recv);
    assert_int_equal(send, 0);
    assert_int_equal(recv, 0);
    ka_transport_ktls(p.server, &send, &recv);
    assert_int_equal(send, 0);
    assert_int_equal(recv, 0);
    const uint8_t msg[] = "hello over TLS";
    uint8_t out[64];
    assert_int_equal(ka_transport_write(p.server, msg, sizeof(msg)), 0);
    move(p.server, p.client, NULL);
    assert_int_equal(ka_transport_read(p.client, out, sizeof(out)), (long)sizeof(msg));
    assert_memory_equal(out, msg, sizeof(msg));
    close_pair(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writev_gathers_small_slices),
        cmocka_unit_test(test_lend_settle_survives_buffer_reuse),
        cmocka_unit_test(test_probe_matches_kernel),
        cmocka_unit_test(test_ktls_option_on_kadmit_bio),
    };
    return cmocka_run_group_tests(tests, make_cert, remove_cert);
}
