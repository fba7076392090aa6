/*
 * ka_scram.c: SCRAM client (see ka_scram.h), on OpenSSL's PBKDF2, HMAC and
 * digests.
 *
 * The server's messages are untrusted: they are parsed as comma-separated
 * "k=value" attributes with every length checked, the iteration count is
 * capped before any work is done, and base64 is decoded into fixed buffers
 * only after its decoded size is known to fit.
 */
#include "ka_scram.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ka_error.h"

static const EVP_MD *digest(const ka_scram_t *s)
{
    return s->hash == 512 ? EVP_sha512() : EVP_sha256();
}

/* Base64 of n bytes into out (NUL-terminated); returns the length or -1. */
static long b64_encode(const uint8_t *in, size_t n, char *out, size_t cap)
{
    if (cap < 4 * ((n + 2) / 3) + 1)
        return -1;
    return EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* Decodes base64 of len characters into out; returns the byte count or -1. */
static long b64_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > cap || len > 4096)
        return -1;
    int n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
    if (n < 0)
        return -1;
    if (in[len - 1] == '=')
        n--;
    if (in[len - 2] == '=')
        n--;
    return n;
}

int ka_scram_init(ka_scram_t *s, const char *mechanism, const char *user, const char *password,
                  const char *nonce)
{
    memset(s, 0, sizeof(*s));
    if (strcmp(mechanism, "SCRAM-SHA-256") == 0)
        s->hash = 256;
    else if (strcmp(mechanism, "SCRAM-SHA-512") == 0)
        s->hash = 512;
    else
        return KA_EUNSUPPORTED;
    s->hash_len = (size_t)EVP_MD_size(digest(s));
    if (strlen(password) >= sizeof(s->password))
        return KA_ELIMIT;
    memcpy(s->password, password, strlen(password) + 1);
    if (nonce != NULL) {
        if (strlen(nonce) >= sizeof(s->client_nonce) || strchr(nonce, ',') != NULL)
            return KA_EINVALID;
        memcpy(s->client_nonce, nonce, strlen(nonce) + 1);
    } else {
        uint8_t raw[18];
        if (RAND_bytes(raw, sizeof(raw)) != 1)
            return KA_ENOMEM;
        b64_encode(raw, sizeof(raw), s->client_nonce, sizeof(s->client_nonce));
    }
    /* saslname: "=" and "," are escaped as "=3D" and "=2C". */
    char name[3 * 256 + 1];
    size_t o = 0;
    for (const char *p = user; *p; p++) {
        if (o + 4 > sizeof(name))
            return KA_ELIMIT;
        if (*p == '=' || *p == ',') {
            memcpy(name + o, *p == '=' ? "=3D" : "=2C", 3);
            o += 3;
        } else {
            name[o++] = *p;
        }
    }
    name[o] = '\0';
    int n = snprintf(s->client_first_bare, sizeof(s->client_first_bare), "n=%s,r=%s", name,
                     s->client_nonce);
    if (n < 0 || (size_t)n >= sizeof(s->client_first_bare))
        return KA_ELIMIT;
    return 0;
}

long ka_scram_client_first(const ka_scram_t *s, char *out, size_t cap)
{
    int n = snprintf(out, cap, "n,,%s", s->client_first_bare);
    return n < 0 || (size_t)n >= cap ? KA_EOVERFLOW : n;
}

/* The value of attribute `key` in a "k=v,k=v" message, as a slice of it. */
static int attribute(const char *msg, size_t n, char key, const char **val, size_t *len)
{
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        while (end < n && msg[end] != ',')
            end++;
        if (end - i >= 2 && msg[i] == key && msg[i + 1] == '=') {
            *val = msg + i + 2;
            *len = end - i - 2;
            return 0;
        }
        i = end + 1;
    }
    return KA_EINVALID;
}

static int hmac(const ka_scram_t *s, const uint8_t *key, size_t klen, const void *data, size_t dlen,
                uint8_t *out)
{
    unsigned int olen = 0;
    return HMAC(digest(s), key, (int)klen, data, dlen, out, &olen) ? 0 : KA_ENOMEM;
}

long ka_scram_client_final(ka_scram_t *s, const uint8_t *server_first, size_t n, char *out,
                           size_t cap, char *err, size_t errlen)
{
    const char *msg = (const char *)server_first, *nonce, *salt64, *iter;
    size_t nonce_len, salt_len, iter_len;
    uint8_t salt[256], salted[KA_SCRAM_MAX_HASH], client_key[KA_SCRAM_MAX_HASH];
    uint8_t stored_key[KA_SCRAM_MAX_HASH], signature[KA_SCRAM_MAX_HASH];
    uint8_t server_key[KA_SCRAM_MAX_HASH];
    long rc = KA_EINVALID;

    if (n == 0 || n >= KA_SCRAM_MAX_MESSAGE || memchr(msg, '\0', n) != NULL) {
        snprintf(err, errlen, "the server-first message is empty, too long or not text");
        return KA_EINVALID;
    }
    if (attribute(msg, n, 'e', &nonce, &nonce_len) == 0) {
        snprintf(err, errlen, "the broker refused: %.*s", (int)(nonce_len > 200 ? 200 : nonce_len),
                 nonce);
        return KA_EINVALID;
    }
    if (attribute(msg, n, 'r', &nonce, &nonce_len) < 0 ||
        attribute(msg, n, 's', &salt64, &salt_len) < 0 ||
        attribute(msg, n, 'i', &iter, &iter_len) < 0) {
        snprintf(err, errlen, "the server-first message lacks r=, s= or i=");
        return KA_EINVALID;
    }
    size_t cn = strlen(s->client_nonce);
    if (nonce_len <= cn || memcmp(nonce, s->client_nonce, cn) != 0) {
        snprintf(err, errlen, "the server nonce does not extend the client nonce");
        return KA_EINVALID;
    }
    long iterations = 0;
    for (size_t i = 0; i < iter_len; i++) {
        if (iter[i] < '0' || iter[i] > '9' || iterations > KA_SCRAM_MAX_ITERATIONS) {
            iterations = -1;
            break;
        }
        iterations = iterations * 10 + (iter[i] - '0');
    }
    if (iter_len == 0 || iterations < KA_SCRAM_MIN_ITERATIONS ||
        iterations > KA_SCRAM_MAX_ITERATIONS) {
        snprintf(err, errlen, "iteration count outside [%d, %d]", KA_SCRAM_MIN_ITERATIONS,
                 KA_SCRAM_MAX_ITERATIONS);
        return KA_EINVALID;
    }
    long salt_n = b64_decode(salt64, salt_len, salt, sizeof(salt));
    if (salt_n <= 0) {
        snprintf(err, errlen, "the salt is not valid base64");
        return KA_EINVALID;
    }
    /* client-final-without-proof: "c=biws" is base64 of the "n,," header. */
    char without_proof[KA_SCRAM_MAX_MESSAGE + 16];
    int wn = snprintf(without_proof, sizeof(without_proof), "c=biws,r=%.*s", (int)nonce_len, nonce);
    int an = snprintf(s->auth_message, sizeof(s->auth_message), "%s,%.*s,%s", s->client_first_bare,
                      (int)n, msg, without_proof);
    if (wn < 0 || (size_t)wn >= sizeof(without_proof) || an < 0 ||
        (size_t)an >= sizeof(s->auth_message)) {
        snprintf(err, errlen, "the server-first message is too long");
        return KA_EINVALID;
    }
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* Fuzz builds only: the count is parsed and bounded as above, then one round is derived,
     * so the fuzzer's time goes to the parsers rather than to 4096+ rounds of PBKDF2. */
    iterations = 1;
#endif
    if (PKCS5_PBKDF2_HMAC(s->password, (int)strlen(s->password), salt, (int)salt_n, (int)iterations,
                          digest(s), (int)s->hash_len, salted) != 1 ||
        hmac(s, salted, s->hash_len, "Client Key", 10, client_key) < 0 ||
        EVP_Digest(client_key, s->hash_len, stored_key, NULL, digest(s), NULL) != 1 ||
        hmac(s, stored_key, s->hash_len, s->auth_message, (size_t)an, signature) < 0 ||
        hmac(s, salted, s->hash_len, "Server Key", 10, server_key) < 0 ||
        hmac(s, server_key, s->hash_len, s->auth_message, (size_t)an, s->server_signature) < 0) {
        snprintf(err, errlen, "a SCRAM computation failed");
        goto done;
    }
    s->have_signature = 1;
    uint8_t proof[KA_SCRAM_MAX_HASH];
    for (size_t i = 0; i < s->hash_len; i++)
        proof[i] = client_key[i] ^ signature[i];
    char proof64[2 * KA_SCRAM_MAX_HASH];
    if (b64_encode(proof, s->hash_len, proof64, sizeof(proof64)) < 0)
        goto done;
    int on = snprintf(out, cap, "%s,p=%s", without_proof, proof64);
    if (on < 0 || (size_t)on >= cap) {
        snprintf(err, errlen, "the client-final message does not fit");
        rc = KA_EOVERFLOW;
        goto done;
    }
    rc = on;
done:
    OPENSSL_cleanse(salted, sizeof(salted));
    OPENSSL_cleanse(client_key, sizeof(client_key));
    OPENSSL_cleanse(server_key, sizeof(server_key));
    return rc;
}

int ka_scram_verify_server(ka_scram_t *s, const uint8_t *server_final, size_t n, char *err,
                           size_t errlen)
{
    const char *msg = (const char *)server_final, *v;
    size_t vlen;
    uint8_t sig[KA_SCRAM_MAX_HASH + 3];

    if (!s->have_signature || n == 0 || n >= KA_SCRAM_MAX_MESSAGE) {
        snprintf(err, errlen, "unexpected server-final message");
        return KA_EINVALID;
    }
    if (attribute(msg, n, 'e', &v, &vlen) == 0) {
        snprintf(err, errlen, "the broker refused: %.*s", (int)(vlen > 200 ? 200 : vlen), v);
        return KA_EINVALID;
    }
    long sn;
    if (attribute(msg, n, 'v', &v, &vlen) < 0 || (sn = b64_decode(v, vlen, sig, sizeof(sig))) < 0 ||
        (size_t)sn != s->hash_len || CRYPTO_memcmp(sig, s->server_signature, s->hash_len) != 0) {
        snprintf(err, errlen, "the broker's SCRAM signature does not match");
        return KA_EINVALID;
    }
    return 0;
}

void ka_scram_clear(ka_scram_t *s)
{
    OPENSSL_cleanse(s, sizeof(*s));
}
