/*
 * test_sasl_principal.c: the name a PLAIN or SCRAM client's first token
 * offers, read as Kafka's PlainSaslServer and ScramMessages read it: the
 * tokens the broker refuses, and those it accepts whose principal kadmit
 * cannot name (delegation tokens in every spelling Kafka takes).
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
    /* What librdkafka and the Java client send: no authorization id. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0alice\0s3cret"), out), 0);
    assert_string_equal(out, "User:alice");
    assert_null(strstr(out, "s3cret"));
    /* An authorization id equal to the user is what the broker accepts. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("alice\0alice\0pw"), out), 0);
    assert_string_equal(out, "User:alice");
    /* Kafka reads the token as UTF-8: a name in UTF-8 is a name. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0j\xc3\xbcrgen\0pw"), out), 0);
    assert_string_equal(out, "User:j\xc3\xbcrgen");
}

static void test_plain_refuses_what_the_broker_refuses(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    static const struct {
        const char *token;
        size_t len;
    } bad[] = {
        {TOKEN("admin\0alice\0pw")}, /* another authorization id */
        {TOKEN("Alice\0alice\0pw")}, /* compared as sent, case and all */
        {TOKEN("\0\0pw")},           /* no name */
        {TOKEN("\0alice\0")},        /* no password: PlainSaslServer refuses it */
        {TOKEN("\0alice\0pw\0x")},   /* four fields: Kafka wants exactly three */
        {TOKEN("\0alice")},          {TOKEN("alice")}, {"", 0},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(KA_SASL_MECH_PLAIN, bad[i].token, bad[i].len, out), KA_EINVALID);
        assert_string_equal(out, "");
    }
}

static void test_plain_names_kadmit_cannot_vouch_for(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    /* The broker may accept these; kadmit keeps the principal unknown. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0al\nice\0pw"), out), KA_EUNSUPPORTED);
    /* Not UTF-8: Java would read U+FFFD, which two different names share. */
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0al\xffice\0pw"), out), KA_EUNSUPPORTED);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\xfe\0\xff\0pw"), out), KA_EUNSUPPORTED);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0\xc0\xaf\0pw"), out), KA_EUNSUPPORTED);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0\xed\xa0\x80\0pw"), out), KA_EUNSUPPORTED);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, TOKEN("\0\xe2\x82\0pw"), out), KA_EUNSUPPORTED);
    assert_string_equal(out, "");
}

static void test_plain_caps_the_name(void **state)
{
    char token[KA_SASL_USER_MAX + 10], out[KA_PRINCIPAL_MAX];
    (void)state;
    token[0] = '\0';
    memset(token + 1, 'u', KA_SASL_USER_MAX);
    memcpy(token + 1 + KA_SASL_USER_MAX, "\0p", 2);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, token, KA_SASL_USER_MAX + 3, out), 0);
    assert_int_equal(strlen(out), 5 + KA_SASL_USER_MAX);
    memset(token + 1, 'u', KA_SASL_USER_MAX + 1);
    memcpy(token + 2 + KA_SASL_USER_MAX, "\0p", 2);
    assert_int_equal(parse(KA_SASL_MECH_PLAIN, token, KA_SASL_USER_MAX + 4, out), KA_ELIMIT);
    /* A caller's buffer too small is said so, not overrun. */
    assert_int_equal(
        ka_sasl_token_principal(KA_SASL_MECH_PLAIN, (const uint8_t *)"\0alice\0pw", 9, out, 8),
        KA_EOVERFLOW);
}

static void test_scram_client_first_names_the_user_with_escapes_decoded(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    /* librdkafka's and the Java client's client-first. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=alice,r=rOprNGfwEbeRWgbNEkqO"), out), 0);
    assert_string_equal(out, "User:alice");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=a=2Cb=3Dc,r=x"), out), 0);
    assert_string_equal(out, "User:a,b=c");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n==3D2C,r=x"), out), 0);
    assert_string_equal(out, "User:=2C");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,a=alice,n=alice,r=x"), out), 0);
    assert_string_equal(out, "User:alice");
    /* Extensions after the nonce; Kafka ignores those it does not know. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=cruise-control,r=x,ext=1"), out), 0);
    assert_string_equal(out, "User:cruise-control");
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=alice,r=x,a=b=c,Zz=~"), out), 0);
    assert_string_equal(out, "User:alice");
    /* A reserved "m=" before the name: Kafka's pattern takes it. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,m=ext,n=alice,r=x"), out), 0);
    assert_string_equal(out, "User:alice");
    /* The nonce is any printable ASCII but ','. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=alice,r=!~=+/"), out), 0);
}

static void test_scram_refuses_what_the_broker_refuses(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    static const char *bad[] = {
        "y,,n=alice,r=x", /* channel binding flags kadmit's brokers refuse */
        "p=tls-unique,,n=alice,r=x",
        "n,a=bob,n=alice,r=x",   /* another authorization id */
        "n,a=a=2Cb,n=a=2Cb,r=x", /* Kafka compares the authzid as sent with the decoded name */
        "n,a=,n=alice,r=x",      /* an empty authorization id */
        "n,,n=,r=x",             /* empty name */
        "n,,n=al=2ice,r=x",      /* a bad escape */
        "n,,n=al=2cice,r=x",     /* escapes are upper case */
        "n,,n=alice=,r=x",       /* an escape cut short */
        "n,,n=alice",            /* no nonce */
        "n,,n=alice,r=",         /* an empty nonce */
        "n,,n=alice,r=x y",      /* a space in the nonce */
        "n,,r=x,n=alice",        /* fields out of order */
        "n,,m=,n=alice,r=x",     /* an empty reserved extension */
        "n,,n=alice,r=x,",       /* an empty extension */
        "n,,n=alice,r=x,ext",    /* an extension without a value */
        "n,,n=alice,r=x,ext=",
        "n,,n=alice,r=x,=v",
        "n,,n=alice,r=x,ext1=v",     /* extension keys are letters */
        "n,,n=alice,r=x,tokenauth=", /* not even a delegation token */
        "n,,n=al\xc3\xa9,r=x",       /* Kafka's pattern is ASCII only */
        "n,,n=alice,r=x\x80",
        "n,",
        "n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(KA_SASL_MECH_SCRAM, bad[i], strlen(bad[i]), out), KA_EINVALID);
        assert_string_equal(out, "");
    }
    /* A NUL is outside the pattern too. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=al\0ice,r=x"), out), KA_EINVALID);
}

/*
 * ScramExtensions: Utils.parseMap into a HashMap (the last of a repeated key
 * wins), then Boolean.parseBoolean(map.get("tokenauth")): the key is spelt
 * exactly, the value is "true" in any case.
 */
static void test_scram_delegation_tokens_are_caught_as_kafka_reads_them(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    static const char *tokens[] = {
        /* ScramSaslClient with tokenauth=true in the JAAS options (the Java client). */
        "n,,n=dGtuaWQ,r=6SGvMWrUbb4ruoz0Mbe4Tu,tokenauth=true",
        "n,,n=tokenid,r=x,tokenauth=TRUE",
        "n,,n=tokenid,r=x,tokenauth=True",
        "n,,n=tokenid,r=x,tokenauth=tRuE",
        "n,,n=tokenid,r=x,ext=1,tokenauth=true",
        "n,,n=tokenid,r=x,tokenauth=false,tokenauth=true",
        "n,,n=tokenid,r=x,tokenauth=true,ext=1",
        "n,,m=x,n=tokenid,r=x,tokenauth=true",
        "n,a=tokenid,n=tokenid,r=x,tokenauth=true",
    };
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        assert_int_equal(parse(KA_SASL_MECH_SCRAM, tokens[i], strlen(tokens[i]), out),
                         KA_EUNSUPPORTED);
        assert_string_equal(out, "");
    }
    /* Not a delegation token to Kafka: the user is the one named. */
    static const char *users[] = {
        "n,,n=tokenid,r=x,TokenAuth=true", /* the key is case-sensitive */
        "n,,n=tokenid,r=x,TOKENAUTH=TRUE",
        "n,,n=tokenid,r=x,tokenauth=false",
        "n,,n=tokenid,r=x,tokenauth=yes",
        "n,,n=tokenid,r=x,tokenauth=1",
        "n,,n=tokenid,r=x,tokenauth=true=1", /* the value is everything after the first '=' */
        "n,,n=tokenid,r=x,tokenauth=true,tokenauth=false",
        "n,,n=tokenid,r=x,tokenauthx=true",
        "n,,n=tokenid,r=x,tokenaut=true",
        "n,,n=tokenid,r=tokenauth=true", /* inside the nonce */
    };
    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        assert_int_equal(parse(KA_SASL_MECH_SCRAM, users[i], strlen(users[i]), out), 0);
        assert_string_equal(out, "User:tokenid");
    }
}

static void test_scram_names_kadmit_cannot_vouch_for(void **state)
{
    char out[KA_PRINCIPAL_MAX], token[KA_SASL_USER_MAX + 32];
    (void)state;
    /* Kafka's SASLNAME takes control bytes; kadmit keeps the principal unknown. */
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=al\x01ice,r=x"), out), KA_EUNSUPPORTED);
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, TOKEN("n,,n=alice\x7f,r=x"), out), KA_EUNSUPPORTED);
    memcpy(token, "n,,n=", 5);
    memset(token + 5, 'u', KA_SASL_USER_MAX + 1);
    memcpy(token + 6 + KA_SASL_USER_MAX, ",r=x", 4);
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, token, KA_SASL_USER_MAX + 10, out), KA_ELIMIT);
    /* Escapes count once decoded. */
    memset(token + 5, 'u', KA_SASL_USER_MAX - 1);
    memcpy(token + 4 + KA_SASL_USER_MAX, "=2C,r=x", 7);
    assert_int_equal(parse(KA_SASL_MECH_SCRAM, token, KA_SASL_USER_MAX + 11, out), 0);
    assert_int_equal(strlen(out), 5 + KA_SASL_USER_MAX);
}

static void test_other_mechanisms_name_nobody(void **state)
{
    char out[KA_PRINCIPAL_MAX];
    (void)state;
    assert_int_equal(parse(KA_SASL_MECH_OTHER, TOKEN("\0alice\0pw"), out), KA_EUNSUPPORTED);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mechanism_names_are_recognised),
        cmocka_unit_test(test_plain_names_the_authentication_id_and_never_the_password),
        cmocka_unit_test(test_plain_refuses_what_the_broker_refuses),
        cmocka_unit_test(test_plain_names_kadmit_cannot_vouch_for),
        cmocka_unit_test(test_plain_caps_the_name),
        cmocka_unit_test(test_scram_client_first_names_the_user_with_escapes_decoded),
        cmocka_unit_test(test_scram_refuses_what_the_broker_refuses),
        cmocka_unit_test(test_scram_delegation_tokens_are_caught_as_kafka_reads_them),
        cmocka_unit_test(test_scram_names_kadmit_cannot_vouch_for),
        cmocka_unit_test(test_other_mechanisms_name_nobody),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
