/*
 * test_sasl_principal.c: the name a PLAIN or SCRAM client's first token
 * offers, and the tokens that name nobody kadmit can vouch for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ka_error.h"
#include "ka_sasl_principal.h"

static int parse(enum ka_sasl_mech mech, const char *token, size_t len, char *out)
{
    return ka_sasl_token_principal(mech, (const uint8_t *)token, len, out, KA_PRINCIPAL_MAX);
}

#define TOKEN(s) s, sizeof(s) - 1

static void test_mechanism_names_are_recognised(void **state)
{
    (void)state;
    assert_int_equal(ka_sasl_mech_of((const uint8_t *)"PLAIN", 5), KA_SASL_MECH_PLAIN);
    assert_int_equal(ka_sasl_mech_of((const uint8_t *)"SCRAM-SHA-256", 13), KA_SASL_MECH_SCRAM);
    assert_int_equal(ka_sasl_mech_of((const uint8_t *)"SCRAM-SHA-512", 13), KA_SASL_MECH_SCRAM);
    assert_int_equal(ka_sasl_mech_of((const uint8_t *)"GSSAPI", 6), KA_SASL_MECH_OTHER);
    assert_int_equal(ka_sasl_mech_of((const uint8_t *)"plain", 5), KA_SASL_MECH_OTHER);
    assert_int_equal(ka_sasl_mech_of(NULL, 0), KA_SASL_MECH_OTHER);
    assert_int_equal(ka_sasl_mech_steps(KA_SASL_MECH_PLAIN), 1);
    assert_int_equal(ka_sasl_mech_steps(KA_SASL_MECH_SCRAM), 2);
    assert_int_equal(ka_sasl_mech_steps(KA_SASL_MECH_OTHER), 0);
}

static void test_plain_names_the_authentication_id_and_never_the_password(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0alice\0s3cret"), out), 0);
    assert_string_equal(out, "User:alice");
    assert_null(strstr(out, "s3cret"));
    /* An authorization id equal to the user is what the broker accepts. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("alice\0alice\0pw"), out), 0);
    assert_string_equal(out, "User:alice");
    /* An empty password is the broker's to refuse; the name is still read. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0alice\0"), out), 0);
}

static void test_plain_refuses_what_the_broker_refuses(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("admin\0alice\0pw"), out), KA_EINVALID);
    assert_string_equal(out, "");
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0\0pw"), out), KA_EINVALID);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0alice"), out), KA_EINVALID);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("alice"), out), KA_EINVALID);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0al\nice\0pw"), out), KA_EINVALID);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, "", 0, out), KA_EINVALID);
}

static void test_plain_caps_the_name(void **state)
{
    char token[KA_SASL_USER_MAX + 10], out[KA_PRINCIPAL_MAX];
    (void)state;
    token[0] = '\0';
    memset(token + 1, 'u', KA_SASL_USER_MAX);
    token[KA_SASL_USER_MAX + 1] = '\0';
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, token, KA_SASL_USER_MAX + 2, out), 0);
    assert_int_equal(strlen(out), 5 + KA_SASL_USER_MAX);
    memset(token + 1, 'u', KA_SASL_USER_MAX + 1);
    token[KA_SASL_USER_MAX + 2] = '\0';
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, token, KA_SASL_USER_MAX + 3, out), KA_EINVALID);
    /* A caller's buffer too small is said so, not overrun. */
    assert_int_equal(
        ka_sasl_token_principal(KA_SASL_MECH_PLAIN, (const uint8_t *)"\0alice\0pw", 9, out, 8),
        KA_EOVERFLOW);
}

static void test_scram_client_first_names_the_user_with_escapes_decoded(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=alice,r=rOprNGfwEbeRWgbNEkqO"), out), 0);
    assert_string_equal(out, "User:alice");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=a=2Cb=3Dc,r=x"), out), 0);
    assert_string_equal(out, "User:a,b=c");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,a=alice,n=alice,r=x"), out), 0);
    assert_string_equal(out, "User:alice");
    /* Extensions after the nonce are allowed. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=cruise-control,r=x,ext=1"), out), 0);
    assert_string_equal(out, "User:cruise-control");
}

static void test_scram_refuses_malformed_and_delegation_tokens(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    static const char *bad[] = {
        "y,,n=alice,r=x", /* channel binding flags kadmit's brokers refuse */
        "p=tls-unique,,n=alice,r=x",
        "n,a=bob,n=alice,r=x",           /* another authorization id */
        "n,,n=,r=x",                     /* empty name */
        "n,,n=al=2ice,r=x",              /* a bad escape */
        "n,,n=alice=,r=x",               /* an escape cut short */
        "n,,n=alice",                    /* no nonce */
        "n,,r=x,n=alice",                /* fields out of order */
        "n,,n=alice,r=x,tokenauth=true", /* a delegation token: its owner is not named */
        "n,",
        "n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(KA_SASL_MECH_SCRAM, bad[i], strlen(bad[i]), out), KA_EINVALID);
}

static void test_other_mechanisms_name_nobody(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    assert_int_equal(parse(KA_SASL_MECH_OTHER, TOKEN("\0alice\0pw"), out), KA_EINVALID);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mechanism_names_are_recognised),
        cmocka_unit_test(test_plain_names_the_authentication_id_and_never_the_password),
        cmocka_unit_test(test_plain_refuses_what_the_broker_refuses),
        cmocka_unit_test(test_plain_caps_the_name),
        cmocka_unit_test(test_scram_client_first_names_the_user_with_escapes_decoded),
        cmocka_unit_test(test_scram_refuses_malformed_and_delegation_tokens),
        cmocka_unit_test(test_other_mechanisms_name_nobody),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
