/*
 * ka_session_auth.c: the principal of one connection (see
 * ka_proxy_internal.h's ka_session_auth_t and docs/tls-sasl.md).
 *
 * kadmit follows the SASL exchange it forwards, and the principal follows
 * the broker's answers, never the client's requests alone:
 *
 * - a SaslHandshake request names the mechanism; the client's first token
 *   (inside SaslAuthenticate, or raw after SaslHandshake v0) names the
 *   user for PLAIN and SCRAM, held whole by the relay so it can be read
 *   here: that name is only a candidate;
 * - the broker's SaslHandshake answer with error 0 starts an exchange;
 * - within it, the broker's answer to the last token with error 0 (and for
 *   SCRAM its server-final message "v=...") commits the candidate; v0 raw
 *   tokens: the broker answers the last one only when it accepted it;
 * - any error answer ends the exchange as failed and leaves the principal
 *   as it was: a failed re-authentication (KIP-368) does not change who the
 *   broker thinks the client is, and the broker closes such a connection;
 * - a SaslAuthenticate outside an exchange (after a login, with no new
 *   SaslHandshake the broker accepted) is answered ILLEGAL_SASL_STATE by
 *   the broker, which keeps the connection and its principal: so does kadmit.
 *
 * With TLS toward clients and a verified client certificate, the subject
 * is the principal, unless the client authenticates with SASL (SASL_SSL),
 * whose name wins as it does in the broker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_arena.h"
#include "ka_header.h"
#include "ka_protocol.h"
#include "ka_proxy_internal.h"
#include "ka_saslauthenticate_request.h"
#include "ka_saslauthenticate_response.h"

/* SaslAuthenticate bodies hold no arrays: the decoders need no real arena. */
#define AUTH_ARENA_CAP 4096
#define CLIENT_ID_MAX  256 /* with the NUL; a longer id is cut */

/* A name as it reads: "" when unset. */
static const char *name(const char *n)
{
    return n != NULL ? n : "";
}

/* Sets *slot to a copy of text ("" or NULL: unset). On a failed allocation the name is unset
 * and the failure logged: the principal stays unknown, which admission treats as such. */
static void set_name(ka_session_t *s, char **slot, const char *text)
{
    free(*slot);
    *slot = NULL;
    if (text == NULL || text[0] == '\0')
        return;
    if ((*slot = strdup(text)) == NULL)
        ka_log(KA_LOG_WARN, "out of memory for the connection's principal; it stays unknown",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
}

void ka_session_auth_free(ka_session_t *s)
{
    ka_session_auth_t *a = &s->auth;
    free(a->candidate);
    free(a->sasl);
    free(a->tls);
    free(a->client_id);
    *a = (ka_session_auth_t){0};
}

void ka_session_auth_handshake(ka_session_t *s, const ka_frame_header_t *h)
{
    ka_session_auth_t *a = &s->auth;
    size_t len = h->sasl_mechanism.len > 0 ? (size_t)h->sasl_mechanism.len : 0;
    a->mech = (int)ka_sasl_mech_of(h->sasl_mechanism.ptr, len);
    a->steps = 0;
    set_name(s, &a->candidate, NULL);
}

void ka_session_auth_handshake_answered(ka_session_t *s, int error_code)
{
    ka_session_auth_t *a = &s->auth;
    /* Refused (ILLEGAL_SASL_STATE after a login without re-authentication,
     * an unsupported mechanism): no exchange starts, nothing changes. */
    if (error_code != 0)
        return;
    a->exchange = KA_SASL_RUNNING;
    a->sasl_seen = 1;
}

int ka_session_auth_wants_token(const ka_session_t *s, const ka_frame_header_t *h, int raw)
{
    const ka_session_auth_t *a = &s->auth;
    if (a->mech == KA_SASL_MECH_OTHER || a->steps != 0)
        return 0;
    return raw || h->api_key == KA_API_SASL_AUTHENTICATE;
}

/* The auth_bytes of a SaslAuthenticate request frame, or an empty slice. */
static ka_slice_t request_token(const uint8_t *frame, size_t len, ka_arena_t *arena)
{
    struct ka_saslauthenticate_request m;
    struct ka_request_header hdr;
    int16_t header_version;
    ka_reader_t r;

    if (len < 4)
        return (ka_slice_t){NULL, 0};
    ka_reader_init(&r, frame + 4, len - 4);
    if (ka_request_header_read(&r, &hdr, &header_version) < 0 ||
        hdr.request_api_key != KA_API_SASL_AUTHENTICATE ||
        ka_saslauthenticate_request_decode(&r, hdr.request_api_version, arena, &m) < 0 ||
        m.auth_bytes.len <= 0)
        return (ka_slice_t){NULL, 0};
    return m.auth_bytes;
}

void ka_session_auth_token(ka_session_t *s, const uint8_t *frame, size_t len, int raw)
{
    ka_session_auth_t *a = &s->auth;
    char candidate[KA_PRINCIPAL_MAX];
    ka_arena_t arena;
    ka_slice_t token = {NULL, 0};

    ka_arena_init(&arena, AUTH_ARENA_CAP);
    if (raw && len > 4)
        token = (ka_slice_t){frame + 4, (int32_t)(len - 4)};
    else if (!raw)
        token = request_token(frame, len, &arena);
    int rc = token.len <= 0
                 ? KA_EINVALID
                 : ka_sasl_token_principal((enum ka_sasl_mech)a->mech, token.ptr, (size_t)token.len,
                                           candidate, sizeof(candidate));
    set_name(s, &a->candidate, rc < 0 ? NULL : candidate);
    if (rc < 0) {
        ka_log(KA_LOG_DEBUG,
               rc == KA_EINVALID ? "SASL token malformed, the broker will refuse it"
                                 : "SASL token names no user kadmit can follow",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
    }
    ka_arena_destroy(&arena);
}

uint32_t ka_session_auth_flags(ka_session_t *s, int16_t api_key, int raw)
{
    ka_session_auth_t *a = &s->auth;
    if (!raw && api_key != KA_API_SASL_AUTHENTICATE)
        return 0;
    uint32_t flags = raw ? 0 : KA_INFLIGHT_SASL_AUTH | KA_INFLIGHT_BUFFER_RESPONSE;
    if (a->steps < 8) /* past any mechanism's last token: no need to count on */
        a->steps++;
    if (a->steps == ka_sasl_mech_steps((enum ka_sasl_mech)a->mech))
        flags |= KA_INFLIGHT_SASL_FINAL;
    return flags;
}

/* The broker accepted the exchange: the candidate (if any) is who the client is. */
static void accepted(ka_session_t *s)
{
    ka_session_auth_t *a = &s->auth;
    if (a->sasl_done && strcmp(name(a->sasl), name(a->candidate)) != 0)
        /* Kafka refuses a re-authentication as someone else; a broker that did not. */
        ka_log(KA_LOG_WARN, "client re-authenticated as another principal", KA_KI("session", s->id),
               KA_KS("peer", s->peer), KA_KS("was", a->sasl && a->sasl[0] ? a->sasl : "(unknown)"),
               KA_KS("principal", a->candidate ? a->candidate : "(unknown)"));
    /* In place: a held request's origin may point at the principal. */
    if (a->sasl == NULL && (a->sasl = malloc(KA_PRINCIPAL_MAX)) == NULL)
        ka_log(KA_LOG_WARN, "out of memory for the connection's principal; it stays unknown",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
    if (a->sasl != NULL)
        snprintf(a->sasl, KA_PRINCIPAL_MAX, "%s", name(a->candidate));
    set_name(s, &a->candidate, NULL);
    a->sasl_done = 1;
    a->exchange = KA_SASL_IDLE;
    s->server->metrics.sasl_principals++;
    ka_log(KA_LOG_INFO, "client authenticated", KA_KI("session", s->id), KA_KS("peer", s->peer),
           KA_KS("principal", a->sasl && a->sasl[0] ? a->sasl : "(unknown)"));
}

/* The broker refused a token of the running exchange: the principal stays as it was. */
static void refused(ka_session_t *s, int16_t error_code)
{
    ka_session_auth_t *a = &s->auth;
    set_name(s, &a->candidate, NULL);
    a->exchange = KA_SASL_FAILED;
    s->server->metrics.sasl_auth_failures++;
    ka_log(KA_LOG_INFO, "client authentication failed at the broker", KA_KI("session", s->id),
           KA_KS("peer", s->peer), KA_KI("error_code", error_code),
           KA_KS("principal", a->sasl_done && a->sasl && a->sasl[0] ? a->sasl : "(unknown)"));
}

/* SCRAM's server-final message on success is "v=" + the server signature (RFC 5802). */
static int scram_server_final(ka_slice_t b)
{
    return b.len >= 2 && b.ptr[0] == 'v' && b.ptr[1] == '=';
}

void ka_session_auth_response(ka_session_t *s, const ka_inflight_entry_t *e, const uint8_t *frame,
                              size_t len)
{
    ka_session_auth_t *a = &s->auth;
    struct ka_saslauthenticate_response m;
    struct ka_response_header rh;
    ka_arena_t arena;
    ka_reader_t r;
    int rc = KA_EUNDERFLOW;

    if (!(e->flags & KA_INFLIGHT_SASL_AUTH))
        return;
    if (a->exchange != KA_SASL_RUNNING &&
        !(a->exchange == KA_SASL_OPAQUE && a->mech == KA_SASL_MECH_OTHER)) {
        /* After a login (ILLEGAL_SASL_STATE) or a failure: the broker's
         * principal is unchanged, and so is kadmit's. */
        s->server->metrics.sasl_auth_ignored++;
        return;
    }
    ka_arena_init(&arena, AUTH_ARENA_CAP);
    if (len >= 4) {
        ka_reader_init(&r, frame + 4, len - 4);
        rc = ka_response_header_decode(
            &r, ka_response_header_version(KA_API_SASL_AUTHENTICATE, e->api_version), &rh);
        if (rc == 0)
            rc = ka_saslauthenticate_response_decode(&r, e->api_version, &arena, &m);
    }
    if (rc < 0) {
        refused(s, -1); /* an answer kadmit cannot read vouches for nobody */
    } else if (m.error_code != 0) {
        refused(s, m.error_code);
    } else if (a->mech == KA_SASL_MECH_OTHER) {
        /* GSSAPI, OAUTHBEARER: kadmit cannot tell which answer ends the
         * exchange, nor whom it names; the broker accepted this token, so
         * the client may be in, as someone kadmit does not know. */
        set_name(s, &a->candidate, NULL);
        if (a->sasl != NULL)
            a->sasl[0] = '\0';
        a->sasl_done = 1;
        a->exchange = KA_SASL_OPAQUE;
    } else if (e->flags & KA_INFLIGHT_SASL_FINAL) {
        if (a->mech == KA_SASL_MECH_SCRAM && !scram_server_final(m.auth_bytes))
            refused(s, 0);
        else
            accepted(s);
    }
    ka_arena_destroy(&arena);
}

void ka_session_auth_raw_answered(ka_session_t *s, const ka_inflight_entry_t *e)
{
    /* After SaslHandshake v0 a broker that refuses the token closes the
     * connection instead of answering, so an answer to the last one is success. */
    if ((e->flags & KA_INFLIGHT_RAW) && (e->flags & KA_INFLIGHT_SASL_FINAL) &&
        s->auth.exchange == KA_SASL_RUNNING)
        accepted(s);
}

void ka_session_auth_tls(ka_session_t *s, const ka_transport_t *t)
{
    ka_session_auth_t *a = &s->auth;
    char subject[KA_PRINCIPAL_MAX - 5], principal[KA_PRINCIPAL_MAX];
    long n = ka_transport_peer_subject(t, subject, sizeof(subject));
    set_name(s, &a->tls, NULL);
    if (n > 0) {
        snprintf(principal, sizeof(principal), "User:%s", subject);
        set_name(s, &a->tls, principal);
        ka_log(KA_LOG_INFO, "client certificate verified", KA_KI("session", s->id),
               KA_KS("peer", s->peer), KA_KS("principal", principal));
    } else if (n < 0) {
        ka_log(KA_LOG_WARN, "client certificate subject too long to be a principal",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
    }
}

/*
 * kadmit's metadata connection logs in with SASL to the clients' listener
 * (no --metadata-upstream): that listener is a SASL one, where nothing but
 * ApiVersions and SASL is served before a login.
 */
static int sasl_listener(const ka_config_t *cfg)
{
    return cfg->metadata_sasl_mechanism[0] != '\0' && !cfg->metadata_upstream.set;
}

const char *ka_session_principal(const ka_session_t *s)
{
    const ka_session_auth_t *a = &s->auth;
    const char *p = a->sasl_done                                    ? a->sasl
                    : a->sasl_seen || sasl_listener(s->server->cfg) ? NULL
                                                                    : a->tls;
    return p != NULL && p[0] != '\0' ? p : NULL;
}

int ka_session_authenticated(const ka_session_t *s)
{
    const ka_session_auth_t *a = &s->auth;
    if (a->exchange == KA_SASL_RUNNING || a->exchange == KA_SASL_FAILED)
        return 0;
    return a->sasl_done || !sasl_listener(s->server->cfg);
}

const ka_frame_origin_t *ka_session_origin(ka_session_t *s, const ka_frame_header_t *h)
{
    ka_session_auth_t *a = &s->auth;
    size_t n = h->client_id.len > 0 ? (size_t)h->client_id.len : 0;
    if (n > CLIENT_ID_MAX - 1)
        n = CLIENT_ID_MAX - 1;
    /* Allocated once, at its bound, and then written in place: an origin handed out before
     * keeps pointing at live memory. */
    if (a->client_id == NULL && (a->client_id = malloc(CLIENT_ID_MAX)) == NULL) {
        ka_log(KA_LOG_WARN, "out of memory for a request's client id; judged without it",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
        n = 0;
    }
    if (a->client_id != NULL) {
        if (n > 0)
            memcpy(a->client_id, h->client_id.ptr, n);
        a->client_id[n] = '\0';
    }
    a->origin = (ka_frame_origin_t){.principal = ka_session_principal(s),
                                    .peer = s->peer,
                                    .client_id = h->client_id.len >= 0 ? a->client_id : NULL,
                                    .client_id_len = n,
                                    .authenticated = ka_session_authenticated(s)};
    return &a->origin;
}
