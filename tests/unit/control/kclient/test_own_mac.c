/*
 * test_own_mac.c: the MAC of kadmit's own records (ka_own_mac.h): a record
 * signed under the cluster secret verifies; a byte changed anywhere (tag,
 * key, value, MAC), another secret, a missing or short MAC, or a key byte
 * moved into the value are refused; without a secret nothing is checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_own_mac.h"

static const char SECRET[] = "0123456789abcdef0123456789abcdef-cluster-one";
static const char OTHER[] = "0123456789abcdef0123456789abcdef-cluster-two";
static const char KEY[] = "overrides";
static const char VALUE[] = "{\"at\":7,\"kadmit.limits\":1,\"overrides\":"
                            "{\"max.broker.partitions\":30},\"written_by\":\"s1\"}";

static ka_own_key_t key_of(const char *secret)
{
    return (ka_own_key_t){(const uint8_t *)secret, strlen(secret)};
}

static void sign(const char *secret, enum ka_own_topic topic, const void *k, size_t klen,
                 const void *v, size_t vlen, uint8_t mac[KA_OWN_MAC_LEN])
{
    ka_own_key_t key = key_of(secret);
    assert_int_equal(ka_own_mac_sign(&key, topic, k, klen, v, vlen, mac), 0);
}

static enum ka_own_verdict verify(const char *secret, enum ka_own_topic topic, const void *k,
                                  size_t klen, const void *v, size_t vlen, const void *mac,
                                  size_t mac_len)
{
    ka_own_key_t key = key_of(secret);
    return ka_own_mac_verify(&key, topic, k, klen, v, vlen, mac, mac_len);
}

static void test_signed_record_verifies(void **state)
{
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    sign(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac);
    assert_int_equal(
        verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac, sizeof(mac)),
        KA_OWN_AUTHENTIC);
}

/* Every single byte of the value and of the key, and every bit of the MAC. */
static void test_a_changed_byte_anywhere_is_refused(void **state)
{
    uint8_t mac[KA_OWN_MAC_LEN], bad[KA_OWN_MAC_LEN];
    char value[sizeof(VALUE)], key[sizeof(KEY)];

    (void)state;
    sign(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac);
    for (size_t i = 0; i < strlen(VALUE); i++) {
        memcpy(value, VALUE, sizeof(VALUE));
        value[i] ^= 0x01;
        assert_int_equal(
            verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), value, strlen(VALUE), mac, sizeof(mac)),
            KA_OWN_BAD_MAC);
    }
    for (size_t i = 0; i < strlen(KEY); i++) {
        memcpy(key, KEY, sizeof(KEY));
        key[i] ^= 0x20;
        assert_int_equal(
            verify(SECRET, KA_OWN_LIMITS, key, strlen(KEY), VALUE, strlen(VALUE), mac, sizeof(mac)),
            KA_OWN_BAD_MAC);
    }
    for (size_t i = 0; i < KA_OWN_MAC_LEN * 8; i++) {
        memcpy(bad, mac, sizeof(mac));
        bad[i / 8] ^= (uint8_t)(1u << (i % 8));
        assert_int_equal(
            verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), bad, sizeof(bad)),
            KA_OWN_BAD_MAC);
    }
    /* One byte shorter or longer, a value cut short. */
    assert_int_equal(
        verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac, sizeof(mac) - 1),
        KA_OWN_BAD_MAC);
    assert_int_equal(
        verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE) - 1, mac, sizeof(mac)),
        KA_OWN_BAD_MAC);
}

/* The length prefixes: "ab" + "c" and "a" + "bc" are different records. */
static void test_bytes_cannot_move_between_key_and_value(void **state)
{
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    sign(SECRET, KA_OWN_LEDGER, "ab", 2, "c", 1, mac);
    assert_int_equal(verify(SECRET, KA_OWN_LEDGER, "a", 1, "bc", 2, mac, sizeof(mac)),
                     KA_OWN_BAD_MAC);
    assert_int_equal(verify(SECRET, KA_OWN_LEDGER, "ab", 2, "c", 1, mac, sizeof(mac)),
                     KA_OWN_AUTHENTIC);
    /* A null value (a tombstone) is not an empty one. */
    sign(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), NULL, 0, mac);
    assert_int_equal(verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), "", 0, mac, sizeof(mac)),
                     KA_OWN_BAD_MAC);
    assert_int_equal(verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), NULL, 0, mac, sizeof(mac)),
                     KA_OWN_AUTHENTIC);
}

/* A record of the ledger is not valid on the limits topic, nor the reverse. */
static void test_domain_tag_binds_the_topic_kind(void **state)
{
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    sign(SECRET, KA_OWN_LEDGER, KEY, strlen(KEY), VALUE, strlen(VALUE), mac);
    assert_int_equal(
        verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac, sizeof(mac)),
        KA_OWN_BAD_MAC);
    assert_string_equal(ka_own_mac_domain(KA_OWN_LEDGER), "kadmit-ledger-v1");
    assert_string_equal(ka_own_mac_domain(KA_OWN_LIMITS), "kadmit-limits-v1");
}

static void test_another_secret_is_refused(void **state)
{
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    sign(OTHER, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac);
    assert_int_equal(
        verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), mac, sizeof(mac)),
        KA_OWN_BAD_MAC);
}

static void test_unsigned_is_refused_with_a_secret_and_unchecked_without(void **state)
{
    ka_own_key_t none = {NULL, 0};
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    assert_int_equal(verify(SECRET, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), NULL, 0),
                     KA_OWN_UNSIGNED);
    assert_int_equal(
        ka_own_mac_verify(&none, KA_OWN_LIMITS, KEY, strlen(KEY), VALUE, strlen(VALUE), NULL, 0),
        KA_OWN_UNCHECKED);
    assert_false(ka_own_key_set(&none));
    assert_int_equal(ka_own_mac_sign(&none, KA_OWN_LIMITS, KEY, 1, VALUE, 1, mac), KA_EINVALID);
    assert_string_equal(ka_own_verdict_name(KA_OWN_UNSIGNED), "unsigned");
    assert_string_equal(ka_own_verdict_name(KA_OWN_BAD_MAC), "bad_mac");
}

/* Known answer: HMAC-SHA256 over the length-prefixed parts (computed with
 * Python's hmac module), so another implementation can check records. */
static void test_mac_matches_the_documented_construction(void **state)
{
    static const uint8_t want[KA_OWN_MAC_LEN] = {0xcf, 0x3c, 0x30, 0x78, 0xed, 0x43, 0x0c, 0xb9,
                                                 0x3f, 0xd5, 0xfa, 0x40, 0x9c, 0x4a, 0xa7, 0x52,
                                                 0xa6, 0xe4, 0x1c, 0x7e, 0x53, 0x9d, 0x20, 0x4e,
                                                 0x6a, 0xe2, 0x98, 0x46, 0xed, 0x1e, 0x29, 0x10};
    uint8_t mac[KA_OWN_MAC_LEN];

    (void)state;
    sign(SECRET, KA_OWN_LEDGER, "s1", 2, "{}", 2, mac);
    assert_memory_equal(mac, want, sizeof(mac));
}

static void test_refusal_lines_are_rate_limited(void **state)
{
    ka_own_warn_t w = {0};
    uint64_t suppressed = 99;

    (void)state;
    assert_true(ka_own_warn_due(&w, 1000, &suppressed));
    assert_int_equal(suppressed, 0);
    assert_false(ka_own_warn_due(&w, 1001, &suppressed));
    assert_false(ka_own_warn_due(&w, 1000 + KA_OWN_WARN_INTERVAL_MS - 1, &suppressed));
    assert_true(ka_own_warn_due(&w, 1000 + KA_OWN_WARN_INTERVAL_MS, &suppressed));
    assert_int_equal(suppressed, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signed_record_verifies),
        cmocka_unit_test(test_a_changed_byte_anywhere_is_refused),
        cmocka_unit_test(test_bytes_cannot_move_between_key_and_value),
        cmocka_unit_test(test_domain_tag_binds_the_topic_kind),
        cmocka_unit_test(test_another_secret_is_refused),
        cmocka_unit_test(test_unsigned_is_refused_with_a_secret_and_unchecked_without),
        cmocka_unit_test(test_mac_matches_the_documented_construction),
        cmocka_unit_test(test_refusal_lines_are_rate_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
