/*
 * test_scram.c: the SCRAM client against RFC 7677's SCRAM-SHA-256 example
 * (user "user", password "pencil"), and its refusals of bad server messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_scram.h"

#define RFC_NONCE "rOprNGfwEbeRWgbNEkqO"
#define RFC_SERVER_FIRST                                                                           \
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_CLIENT_FINAL                                                                           \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"                                 \
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define RFC_SERVER_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static long final_of(ka_scram_t *s, const char *server_first, char *out, size_t cap, char *err)
{
    return ka_scram_client_final(s, (const uint8_t *)server_first, strlen(server_first), out, cap,
                                 err, 200);
}

static void test_rfc7677_vector_round_trip(void **state)
{
    (void)state;
    ka_scram_t s;
    char out[512], err[200] = "";
    assert_int_equal(ka_scram_init(&s, "SCRAM-SHA-256", "user", "pencil", RFC_NONCE), 0);
    long n = ka_scram_client_first(&s, out, sizeof(out));
    assert_string_equal(out, "n,,n=user,r=" RFC_NONCE);
    assert_int_equal(n, (long)strlen(out));
    n = final_of(&s, RFC_SERVER_FIRST, out, sizeof(out), err);
    assert_true(n > 0);
    assert_string_equal(out, RFC_CLIENT_FINAL);
    assert_int_equal(ka_scram_verify_server(&s, (const uint8_t *)RFC_SERVER_FINAL,
                                            strlen(RFC_SERVER_FINAL), err, sizeof(err)),
                     0);
    ka_scram_clear(&s);
}

static void test_wrong_server_signature_is_refused(void **state)
{
    (void)state;
    ka_scram_t s;
    char out[512], err[200] = "";
    const char *forged = "v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    ka_scram_init(&s, "SCRAM-SHA-256", "user", "pencil", RFC_NONCE);
    assert_true(final_of(&s, RFC_SERVER_FIRST, out, sizeof(out), err) > 0);
    assert_int_equal(
        ka_scram_verify_server(&s, (const uint8_t *)forged, strlen(forged), err, sizeof(err)),
        KA_EINVALID);
    assert_non_null(strstr(err, "does not match"));
}

static void test_nonce_must_extend_ours(void **state)
{
    (void)state;
    ka_scram_t s;
    char out[512], err[200] = "";
    ka_scram_init(&s, "SCRAM-SHA-256", "user", "pencil", RFC_NONCE);
    assert_true(
        final_of(&s, "r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", out, sizeof(out), err) < 0);
    assert_non_null(strstr(err, "nonce"));
}

static void test_iterations_are_bounded(void **state)
{
    (void)state;
    ka_scram_t s;
    char out[512], err[200] = "";
    ka_scram_init(&s, "SCRAM-SHA-512", "user", "pencil", RFC_NONCE);
    assert_true(final_of(&s, "r=" RFC_NONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999", out,
                         sizeof(out), err) < 0);
    assert_true(
        final_of(&s, "r=" RFC_NONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1", out, sizeof(out), err) < 0);
    assert_true(final_of(&s, "r=" RFC_NONCE "x,s=!!!!,i=4096", out, sizeof(out), err) < 0);
    assert_true(final_of(&s, "e=invalid-proof", out, sizeof(out), err) < 0);
    assert_non_null(strstr(err, "invalid-proof"));
}

static void test_sha512_proof_has_sha512_length(void **state)
{
    (void)state;
    ka_scram_t s;
    char out[512], err[200] = "";
    ka_scram_init(&s, "SCRAM-SHA-512", "a=b,c", "pw", NULL);
    char first[256];
    ka_scram_client_first(&s, first, sizeof(first));
    assert_memory_equal(first, "n,,n=a=3Db=2Cc,r=", 17);
    char server_first[300];
    snprintf(server_first, sizeof(server_first), "r=%sSERVER,s=c2FsdA==,i=4096", s.client_nonce);
    long n = final_of(&s, server_first, out, sizeof(out), err);
    assert_true(n > 0);
    const char *p = strstr(out, ",p=");
    assert_non_null(p);
    assert_int_equal(strlen(p + 3), 88); /* base64 of 64 bytes */
    assert_int_equal(ka_scram_init(&s, "SCRAM-MD5", "u", "p", NULL), KA_EUNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7677_vector_round_trip),
        cmocka_unit_test(test_wrong_server_signature_is_refused),
        cmocka_unit_test(test_nonce_must_extend_ours),
        cmocka_unit_test(test_iterations_are_bounded),
        cmocka_unit_test(test_sha512_proof_has_sha512_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
