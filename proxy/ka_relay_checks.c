/*
 * ka_relay_checks.c: what a frame's header must pass before the relay
 * routes it (ka_relay.c), and what it says when one does not: a known API
 * key, a version kadmit decodes for the requests it judges, a SASL
 * mechanism it can follow, and the splitter's refusals of a frame's size
 * or header. None of it runs per pass-through frame on the steady path: a
 * leg remembers the last (key, version) that passed.
 */
#include <stdio.h>
#include <string.h>

#include "ka_admission.h"
#include "ka_protocol.h"
#include "ka_proxy_internal.h"

/* The splitter refused a frame: log and count why, and close the session. */
void ka_relay_frame_error(ka_leg_t *src)
{
    ka_session_t *s = src->session;
    ka_metrics_t *m = &s->server->metrics;
    const ka_splitter_t *sp = &src->splitter;
    const char *dir = src->is_client ? "request" : "response";

    switch (sp->error) {
    case KA_FRAME_EOVERSIZE:
        m->frames_oversize++;
        ka_log(KA_LOG_WARN, "frame size above the cap, closing", KA_KI("session", s->id),
               KA_KS("peer", s->peer), KA_KS("direction", dir),
               KA_KI("size", (uint32_t)sp->last_size), KA_KI("cap", sp->max_frame));
        break;
    case KA_FRAME_EUNDERSIZE:
        m->frames_undersize++;
        ka_log(KA_LOG_WARN, "frame size below the smallest header, closing",
               KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KS("direction", dir),
               KA_KI("size", sp->last_size));
        break;
    case KA_FRAME_ETLS:
        m->tls_on_plaintext++;
        ka_log(KA_LOG_WARN, "TLS handshake on a plaintext listener, closing",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
        break;
    default:
        m->protocol_errors++;
        ka_log(KA_LOG_WARN, "malformed frame header, closing", KA_KI("session", s->id),
               KA_KS("peer", s->peer), KA_KS("direction", dir),
               KA_KS("error", ka_frame_strerror(sp->error)));
        break;
    }
    s->events->close(s, KA_LOG_DEBUG, "protocol error", ka_frame_strerror(sp->error));
}

/*
 * Invariant 4: a request to an API that kadmit judges, at a version kadmit
 * cannot decode, is never forwarded blindly, with or without a policy. Real
 * clients never send one (they follow the clamped ApiVersions), so a broker
 * would treat it as a client error too: log, count, close. The peeked header
 * is enough, so pass-through frames pay one table lookup.
 */
int ka_relay_refuse_undecodable_version(ka_session_t *s, const ka_frame_header_t *h)
{
    int api = ka_adm_api_of(h->api_key);
    char detail[160];
    if (api < 0 || !ka_adm_version_refused(h->api_key, h->api_version, detail, sizeof(detail)))
        return 0;
    s->server->metrics.adm_version_refused[api]++;
    /* The same line the admission hook writes when it refuses a request. */
    ka_log(KA_LOG_WARN, "admission request refused, closing the connection",
           KA_KS("api", ka_api_name(h->api_key)), KA_KI("version", h->api_version),
           KA_KS("detail", detail));
    ka_session_close(s, KA_LOG_INFO, "closed after a refused request", detail);
    return 1;
}

/*
 * SaslHandshake v0 hands the connection to raw SASL tokens, which kadmit
 * follows only for mechanisms with a fixed number of them. With a policy,
 * any other mechanism (GSSAPI) would make the connection opaque and its
 * later requests unjudged, so the handshake is held and answered locally
 * (sasl_refusal) instead. SaslHandshake v1 (every client since Kafka 1.0)
 * keeps Kafka framing and passes for any mechanism.
 */
int ka_relay_sasl_refused(ka_session_t *s, const ka_frame_header_t *h)
{
    size_t len = h->sasl_mechanism.len > 0 ? (size_t)h->sasl_mechanism.len : 0;
    char mechanism[64];
    if (h->api_key != KA_API_SASL_HANDSHAKE || h->api_version != 0 ||
        s->server->admission == NULL || ka_sasl_mechanism_tokens(h->sasl_mechanism.ptr, len) > 0)
        return 0;
    s->server->metrics.sasl_v0_refused++;
    snprintf(mechanism, sizeof(mechanism), "%.*s", (int)(len < 63 ? len : 63),
             len ? (const char *)h->sasl_mechanism.ptr : "");
    ka_log(KA_LOG_WARN,
           "SaslHandshake v0 for a mechanism kadmit cannot follow, refused "
           "(UNSUPPORTED_SASL_MECHANISM); use SaslHandshake v1",
           KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KS("mechanism", mechanism));
    return 1;
}

/* The checks a remembered (key, version) pair skips: -1 when the session closed. */
int ka_relay_check_key_version(ka_leg_t *src, const ka_frame_header_t *h)
{
    ka_session_t *s = src->session;
    if (ka_relay_refuse_undecodable_version(s, h))
        return -1;
    if (ka_api_info_find(h->api_key) != NULL) {
        src->checked_key_version = ka_relay_key_version(h) + 1;
        return 0;
    }
    s->server->metrics.unknown_api_keys++;
    if (!s->warned_unknown_api)
        ka_log(KA_LOG_WARN, "unknown API key, passed through to the broker",
               KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KI("api_key", h->api_key),
               KA_KI("version", h->api_version));
    s->warned_unknown_api = 1;
    return 0;
}
