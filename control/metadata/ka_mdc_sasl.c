/*
 * ka_mdc_sasl.c: the SASL exchange of kadmit's own connection (see ka_mdc_sasl.h).
 */
#include "ka_mdc_sasl.h"

#include <stdio.h>
#include <string.h>

static int is_plain(const ka_mdc_sasl_t *s)
{
    return strcmp(s->sec->mechanism, "PLAIN") == 0;
}

static void carry_token(ka_mdc_sasl_t *s, size_t len, struct ka_saslauthenticate_request *next)
{
    ka_saslauthenticate_request_init(next);
    next->auth_bytes = (ka_slice_t){s->token, (int32_t)len};
}

void ka_mdc_sasl_begin(ka_mdc_sasl_t *s, const ka_upstream_security_t *sec,
                       struct ka_saslhandshake_request *req)
{
    ka_mdc_sasl_clear(s);
    s->sec = sec;
    ka_saslhandshake_request_init(req);
    req->mechanism = (ka_slice_t){(const uint8_t *)sec->mechanism, (int32_t)strlen(sec->mechanism)};
}

int ka_mdc_sasl_on_handshake(ka_mdc_sasl_t *s, const struct ka_saslhandshake_response *resp,
                             struct ka_saslauthenticate_request *next, char *why, size_t whylen)
{
    const ka_upstream_security_t *sec = s->sec;

    if (resp->error_code != 0) {
        snprintf(why, whylen, "the broker does not enable SASL mechanism %s (error %d)",
                 sec->mechanism, resp->error_code);
        return KA_EUNSUPPORTED;
    }
    s->round_trips = 0;
    if (is_plain(s)) {
        /* authzid (empty), NUL, authcid, NUL, password: RFC 4616. */
        size_t ul = strnlen(sec->username, sizeof(sec->username));
        size_t pl = strnlen(sec->password, sizeof(sec->password));
        s->token[0] = '\0';
        memcpy(s->token + 1, sec->username, ul);
        s->token[1 + ul] = '\0';
        memcpy(s->token + 2 + ul, sec->password, pl);
        carry_token(s, 2 + ul + pl, next);
        return 0;
    }
    long n;
    if (ka_scram_init(&s->scram, sec->mechanism, sec->username, sec->password, NULL) < 0 ||
        (n = ka_scram_client_first(&s->scram, (char *)s->token, sizeof(s->token))) < 0) {
        snprintf(why, whylen, "cannot start %s for this user name", sec->mechanism);
        return KA_EINVALID;
    }
    carry_token(s, (size_t)n, next);
    return 0;
}

int ka_mdc_sasl_on_authenticate(ka_mdc_sasl_t *s, const struct ka_saslauthenticate_response *resp,
                                struct ka_saslauthenticate_request *next, char *why, size_t whylen)
{
    const ka_slice_t token = resp->auth_bytes;
    size_t token_len = token.len > 0 ? (size_t)token.len : 0;

    if (resp->error_code != 0) {
        snprintf(why, whylen, "authentication as %s failed: %.*s (error %d)", s->sec->username,
                 resp->error_message.len > 0 ? (int)resp->error_message.len : 0,
                 resp->error_message.ptr ? (const char *)resp->error_message.ptr : "",
                 resp->error_code);
        return KA_EINVALID;
    }
    s->round_trips++;
    if (is_plain(s) || s->round_trips == 2) {
        if (s->round_trips == 2 &&
            ka_scram_verify_server(&s->scram, token.ptr, token_len, why, whylen) < 0)
            return KA_EINVALID;
        ka_mdc_sasl_clear(s);
        return 0;
    }
    long n = ka_scram_client_final(&s->scram, token.ptr, token_len, (char *)s->token,
                                   sizeof(s->token), why, whylen);
    if (n < 0)
        return (int)n;
    carry_token(s, (size_t)n, next);
    return 1;
}

void ka_mdc_sasl_clear(ka_mdc_sasl_t *s)
{
    const ka_upstream_security_t *sec = s->sec;

    ka_scram_clear(&s->scram);
    memset(s->token, 0, sizeof(s->token));
    s->round_trips = 0;
    s->sec = sec;
}
