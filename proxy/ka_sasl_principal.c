/*
 * ka_sasl_principal.c: see ka_sasl_principal.h.
 *
 * PLAIN's message is authzid NUL authcid NUL password; SCRAM's client-first
 * message is a GS2 header ("n," then an optional "a=" authzid, then ",")
 * followed by "n=" name "," "r=" nonce and optional extensions, where a
 * name escapes ',' as "=2C" and '=' as "=3D". Each field is bounded by the
 * token's length; nothing is read past it.
 */
#include "ka_sasl_principal.h"

#include <stdio.h>
#include <string.h>

#include "ka_error.h"

enum ka_sasl_mech ka_sasl_mech_of(const uint8_t *name, size_t len)
{
    if (name == NULL)
        return KA_SASL_MECH_OTHER;
    if (len == 5 && memcmp(name, "PLAIN", 5) == 0)
        return KA_SASL_MECH_PLAIN;
    if (len == 13 &&
        (memcmp(name, "SCRAM-SHA-256", 13) == 0 || memcmp(name, "SCRAM-SHA-512", 13) == 0))
        return KA_SASL_MECH_SCRAM;
    return KA_SASL_MECH_OTHER;
}

int ka_sasl_mech_steps(enum ka_sasl_mech mech)
{
    return mech == KA_SASL_MECH_PLAIN ? 1 : mech == KA_SASL_MECH_SCRAM ? 2 : 0;
}

/* A name kadmit writes into logs and compares with the policy: bounded, no control bytes. */
static int name_ok(const char *name, size_t len)
{
    if (len == 0 || len > KA_SASL_USER_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return 0;
    return 1;
}

static int write_principal(const char *name, size_t len, char *out, size_t cap)
{
    if (!name_ok(name, len))
        return KA_EINVALID;
    if (cap < 5 + len + 1)
        return KA_EOVERFLOW;
    memcpy(out, "User:", 5);
    memcpy(out + 5, name, len);
    out[5 + len] = '\0';
    return 0;
}

static int plain_principal(const uint8_t *t, size_t len, char *out, size_t cap)
{
    const uint8_t *nul1 = memchr(t, 0, len);
    if (nul1 == NULL)
        return KA_EINVALID;
    size_t authzid_len = (size_t)(nul1 - t);
    const uint8_t *authcid = nul1 + 1;
    size_t rest = len - authzid_len - 1;
    const uint8_t *nul2 = memchr(authcid, 0, rest);
    if (nul2 == NULL)
        return KA_EINVALID; /* no password field: not a PLAIN message */
    size_t authcid_len = (size_t)(nul2 - authcid);
    if (authzid_len != 0 && (authzid_len != authcid_len || memcmp(t, authcid, authcid_len) != 0))
        return KA_EINVALID;
    return write_principal((const char *)authcid, authcid_len, out, cap);
}

/* Decodes a SCRAM saslname of [p, p+len) into out; its length, or -1 when malformed. */
static long scram_name(const uint8_t *p, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = (char)p[i];
        if (c == '=') {
            if (len - i < 3)
                return -1;
            if (p[i + 1] == '2' && p[i + 2] == 'C')
                c = ',';
            else if (p[i + 1] == '3' && p[i + 2] == 'D')
                c = '=';
            else
                return -1;
            i += 2;
        }
        if (n == cap)
            return -1;
        out[n++] = c;
    }
    return (long)n;
}

/* The field of [*p, end) up to the next ',' (or end); *p moves past the comma. */
static size_t next_field(const uint8_t **p, const uint8_t *end, const uint8_t **field)
{
    const uint8_t *comma = memchr(*p, ',', (size_t)(end - *p));
    const uint8_t *stop = comma ? comma : end;
    size_t n = (size_t)(stop - *p);
    *field = *p;
    *p = comma ? comma + 1 : end;
    return n;
}

static int scram_principal(const uint8_t *t, size_t len, char *out, size_t cap)
{
    const uint8_t *p = t, *end = t + len, *f;
    char user[KA_SASL_USER_MAX], authzid[KA_SASL_USER_MAX];
    long user_len, authzid_len = 0;
    size_t n;

    /* GS2 header: kadmit's brokers accept only "n" (no channel binding). */
    if ((n = next_field(&p, end, &f)) != 1 || f[0] != 'n' || p == end)
        return KA_EINVALID;
    n = next_field(&p, end, &f);
    if (n > 0) {
        if (n < 2 || f[0] != 'a' || f[1] != '=' ||
            (authzid_len = scram_name(f + 2, n - 2, authzid, sizeof(authzid))) < 0)
            return KA_EINVALID;
    }
    n = next_field(&p, end, &f);
    if (n < 2 || f[0] != 'n' || f[1] != '=' ||
        (user_len = scram_name(f + 2, n - 2, user, sizeof(user))) < 0)
        return KA_EINVALID;
    n = next_field(&p, end, &f);
    if (n < 2 || f[0] != 'r' || f[1] != '=')
        return KA_EINVALID;
    while (p < end) {
        /* A delegation token authenticates as its owner, whom the token does not name. */
        n = next_field(&p, end, &f);
        if (n == 14 && memcmp(f, "tokenauth=true", 14) == 0)
            return KA_EINVALID;
    }
    if (authzid_len > 0 && (authzid_len != user_len || memcmp(authzid, user, (size_t)user_len)))
        return KA_EINVALID;
    return write_principal(user, (size_t)user_len, out, cap);
}

int ka_sasl_token_principal(enum ka_sasl_mech mech, const uint8_t *token, size_t len, char *out,
                            size_t cap)
{
    if (cap > 0)
        out[0] = '\0';
    if (token == NULL || len == 0)
        return KA_EINVALID;
    if (mech == KA_SASL_MECH_PLAIN)
        return plain_principal(token, len, out, cap);
    if (mech == KA_SASL_MECH_SCRAM)
        return scram_principal(token, len, out, cap);
    return KA_EINVALID;
}
