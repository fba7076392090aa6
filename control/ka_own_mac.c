/*
 * ka_own_mac.c: see ka_own_mac.h.
 */
#include "ka_own_mac.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ka_error.h"

/* The length prefix of a null key or value (Kafka writes -1 for null). */
#define NULL_LENGTH UINT64_MAX

const char *ka_own_mac_domain(enum ka_own_topic topic)
{
    return topic == KA_OWN_LIMITS ? "kadmit-limits-v1" : "kadmit-ledger-v1";
}

const char *ka_own_topic_name(enum ka_own_topic topic)
{
    return topic == KA_OWN_LIMITS ? "limits" : "ledger";
}

const char *ka_own_verdict_name(enum ka_own_verdict v)
{
    static const char *names[KA_OWN_VERDICT_COUNT] = {"authentic", "unchecked", "unsigned",
                                                      "bad_mac"};
    return (unsigned)v < KA_OWN_VERDICT_COUNT ? names[v] : "unknown";
}

bool ka_own_warn_due(ka_own_warn_t *w, int64_t now_ms, uint64_t *suppressed)
{
    if (now_ms < w->next_ms) {
        w->suppressed++;
        return false;
    }
    *suppressed = w->suppressed;
    w->suppressed = 0;
    w->next_ms = now_ms + KA_OWN_WARN_INTERVAL_MS;
    return true;
}

bool ka_own_key_set(const ka_own_key_t *key)
{
    return key != NULL && key->secret != NULL && key->len > 0;
}

/* One part of the message: its length as 8 big-endian bytes, then its bytes. */
static int update_part(EVP_MD_CTX *ctx, const void *bytes, size_t len)
{
    uint64_t n = bytes == NULL ? NULL_LENGTH : (uint64_t)len;
    uint8_t prefix[8];

    for (int i = 7; i >= 0; i--, n >>= 8)
        prefix[i] = (uint8_t)(n & 0xff);
    if (EVP_DigestSignUpdate(ctx, prefix, sizeof(prefix)) != 1)
        return KA_ENOMEM;
    if (bytes != NULL && len > 0 && EVP_DigestSignUpdate(ctx, bytes, len) != 1)
        return KA_ENOMEM;
    return 0;
}

int ka_own_mac_sign(const ka_own_key_t *key, enum ka_own_topic topic, const void *rkey,
                    size_t rkey_len, const void *value, size_t value_len,
                    uint8_t out[KA_OWN_MAC_LEN])
{
    const char *domain = ka_own_mac_domain(topic);
    size_t out_len = KA_OWN_MAC_LEN;
    EVP_PKEY *pkey = NULL;
    EVP_MD_CTX *ctx = NULL;
    int rc = KA_ENOMEM;

    if (!ka_own_key_set(key) || key->len > KA_OWN_SECRET_MAX)
        return KA_EINVALID;
    /* EVP_DigestSign with an HMAC key: the same calls in OpenSSL 1.1.1 and 3. */
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC, NULL, key->secret, key->len);
    ctx = pkey != NULL ? EVP_MD_CTX_new() : NULL;
    if (ctx != NULL && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, pkey) == 1 &&
        update_part(ctx, domain, strlen(domain)) == 0 && update_part(ctx, rkey, rkey_len) == 0 &&
        update_part(ctx, value, value_len) == 0 && EVP_DigestSignFinal(ctx, out, &out_len) == 1 &&
        out_len == KA_OWN_MAC_LEN)
        rc = 0;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return rc;
}

enum ka_own_verdict ka_own_mac_verify(const ka_own_key_t *key, enum ka_own_topic topic,
                                      const void *rkey, size_t rkey_len, const void *value,
                                      size_t value_len, const void *mac, size_t mac_len)
{
    uint8_t want[KA_OWN_MAC_LEN];

    if (!ka_own_key_set(key))
        return KA_OWN_UNCHECKED;
    if (mac == NULL)
        return KA_OWN_UNSIGNED;
    if (mac_len != KA_OWN_MAC_LEN ||
        ka_own_mac_sign(key, topic, rkey, rkey_len, value, value_len, want) < 0)
        return KA_OWN_BAD_MAC;
    return CRYPTO_memcmp(want, mac, KA_OWN_MAC_LEN) == 0 ? KA_OWN_AUTHENTIC : KA_OWN_BAD_MAC;
}
