/*
 * ka_sasl_principal.c: see ka_sasl_principal.h.
 *
 * The parsers follow the broker's own, so that kadmit never reads a name
 * from a token the broker reads differently:
 *
 * - PLAIN (Kafka's PlainSaslServer): the token is decoded as UTF-8 and cut
 *   at NUL bytes into exactly three fields, authzid NUL authcid NUL
 *   password; authcid and password must not be empty, and a non-empty
 *   authzid must equal authcid. The principal is User:authcid.
 * - SCRAM client-first (ScramMessages.ClientFirstMessage): the whole token
 *   must match
 *     n,[a=SASLNAME],[m=VALUE,]n=SASLNAME,r=PRINTABLE{,ALPHA=VALUE}
 *   where SASLNAME is bytes 0x01-0x7F other than ',' and '=' or the escapes
 *   "=2C" and "=3D", VALUE bytes 0x01-0x7F other than ',', PRINTABLE bytes
 *   0x21-0x7E other than ',', ALPHA letters. Any byte 0x00 or 0x80-0xFF
 *   fails the match. The extensions go into a map (the last of a repeated
 *   key wins); the key "tokenauth", spelt exactly so, with a value Java's
 *   Boolean.parseBoolean reads as true ("true" in any case) makes it a
 *   delegation token, whose principal is the token's owner. A non-empty
 *   authzid is compared, as sent (escapes not decoded), with the decoded
 *   name. The principal is User: + the decoded name.
 *
 * Each field is bounded by the token's length; nothing is read past it.
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

/*
 * A name the broker accepts but kadmit does not take: control bytes would
 * end up in log lines and in comparisons with the policy, so such a
 * connection's principal is unknown. Longer than KA_SASL_USER_MAX: the same.
 */
static int name_check(const char *name, size_t len)
{
    if (len > KA_SASL_USER_MAX)
        return KA_ELIMIT;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return KA_EUNSUPPORTED;
    return 0;
}

static int write_principal(const char *name, size_t len, char *out, size_t cap)
{
    int rc = name_check(name, len);
    if (rc < 0)
        return rc;
    if (cap < 5 + len + 1)
        return KA_EOVERFLOW;
    memcpy(out, "User:", 5);
    memcpy(out + 5, name, len);
    out[5 + len] = '\0';
    return 0;
}

/*
 * Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
 * past U+10FFFF). Java decodes anything else to U+FFFD, so two different
 * malformed names would compare equal in the broker: kadmit takes neither.
 */
static int utf8_ok(const uint8_t *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = p[i];
        size_t n;
        uint32_t min, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            n = 1, min = 0x80, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            n = 2, min = 0x800, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            n = 3, min = 0x10000, cp = c & 0x07;
        else
            return 0;
        if (len - i - 1 < n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += n + 1;
    }
    return 1;
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
        return KA_EINVALID; /* two fields: not a PLAIN message */
    size_t authcid_len = (size_t)(nul2 - authcid);
    const uint8_t *password = nul2 + 1;
    size_t password_len = rest - authcid_len - 1;
    /* Kafka wants exactly three fields, and a name and a password. */
    if (memchr(password, 0, password_len) != NULL || authcid_len == 0 || password_len == 0)
        return KA_EINVALID;
    if (!utf8_ok(t, authzid_len) || !utf8_ok(authcid, authcid_len))
        return KA_EUNSUPPORTED;
    if (authzid_len != 0 && (authzid_len != authcid_len || memcmp(t, authcid, authcid_len) != 0))
        return KA_EINVALID;
    return write_principal((const char *)authcid, authcid_len, out, cap);
}

/*
 * Checks a SASLNAME of [p, p+len) and decodes it into out (when out is
 * not NULL); its decoded length, or -1 when it is not one. A name longer
 * than cap is measured but not written past cap.
 */
static long scram_name(const uint8_t *p, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = (char)p[i];
        if (c == ',')
            return -1;
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
        if (out != NULL && n < cap)
            out[n] = c;
        n++;
    }
    return (long)n;
}

/* The field of [*p, end) up to the next ',' (or end); *p moves past the comma. */
static size_t next_field(const uint8_t **p, const uint8_t *end, const uint8_t **field, int *comma)
{
    const uint8_t *c = memchr(*p, ',', (size_t)(end - *p));
    const uint8_t *stop = c ? c : end;
    size_t n = (size_t)(stop - *p);
    *field = *p;
    *p = c ? c + 1 : end;
    *comma = c != NULL;
    return n;
}

static int has_prefix(const uint8_t *f, size_t n, char a)
{
    return n >= 2 && f[0] == (uint8_t)a && f[1] == '=';
}

/* Java's Boolean.parseBoolean: "true", ignoring ASCII case. */
static int java_true(const uint8_t *v, size_t n)
{
    static const char t[] = "true";
    if (n != 4)
        return 0;
    for (size_t i = 0; i < 4; i++)
        if ((v[i] | 0x20) != (uint8_t)t[i])
            return 0;
    return 1;
}

/*
 * The extensions after the nonce, each ",ALPHA=VALUE": 0 when well-formed,
 * with *token set when the last "tokenauth" reads as true.
 */
static int scram_extensions(const uint8_t *p, const uint8_t *end, int more, int *token)
{
    *token = 0;
    while (more) {
        const uint8_t *f;
        size_t n = next_field(&p, end, &f, &more), k = 0;
        while (k < n && ((f[k] | 0x20) >= 'a' && (f[k] | 0x20) <= 'z'))
            k++;
        if (k == 0 || k + 1 >= n || f[k] != '=')
            return KA_EINVALID; /* an empty key, no '=', or an empty value */
        if (k == 9 && memcmp(f, "tokenauth", 9) == 0)
            *token = java_true(f + k + 1, n - k - 1);
    }
    return 0;
}

static int scram_principal(const uint8_t *t, size_t len, char *out, size_t cap)
{
    const uint8_t *p = t, *end = t + len, *f, *authzid = NULL;
    char user[KA_SASL_USER_MAX];
    long user_len;
    size_t n, authzid_len = 0;
    int more, token;

    /* Java reads the token as UTF-8 and every class of the pattern is ASCII. */
    for (size_t i = 0; i < len; i++)
        if (t[i] == 0 || t[i] >= 0x80)
            return KA_EINVALID;
    /* GS2 header: only "n" (no channel binding), then an optional authzid. */
    if (next_field(&p, end, &f, &more) != 1 || f[0] != 'n' || !more)
        return KA_EINVALID;
    n = next_field(&p, end, &f, &more);
    if (!more)
        return KA_EINVALID;
    if (n > 0) {
        if (!has_prefix(f, n, 'a') || scram_name(f + 2, n - 2, NULL, 0) < 0)
            return KA_EINVALID;
        authzid = f + 2;
        authzid_len = n - 2;
    }
    n = next_field(&p, end, &f, &more);
    if (has_prefix(f, n, 'm')) { /* a reserved mandatory extension, which Kafka ignores */
        if (n == 2 || !more)
            return KA_EINVALID;
        n = next_field(&p, end, &f, &more);
    }
    if (!has_prefix(f, n, 'n') || !more ||
        (user_len = scram_name(f + 2, n - 2, user, sizeof(user))) < 0)
        return KA_EINVALID;
    n = next_field(&p, end, &f, &more);
    if (!has_prefix(f, n, 'r') || n == 2)
        return KA_EINVALID;
    for (size_t i = 2; i < n; i++)
        if (f[i] < 0x21 || f[i] > 0x7e)
            return KA_EINVALID;
    if (scram_extensions(p, end, more, &token) < 0)
        return KA_EINVALID;
    if (user_len > KA_SASL_USER_MAX)
        return KA_ELIMIT;
    if (authzid_len > 0 &&
        (authzid_len != (size_t)user_len || memcmp(authzid, user, (size_t)user_len) != 0))
        return KA_EINVALID;
    /* A delegation token authenticates as its owner, whom the token does not name. */
    if (token)
        return KA_EUNSUPPORTED;
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
    return KA_EUNSUPPORTED;
}
