/*
 * ka_session_tls.c: a session leg over TLS, through ka_transport.h.
 *
 * Reading: the socket's ciphertext lands in a pool buffer as on a plaintext
 * leg and is lent to the engine (read in place, copied only if left unread); decrypted bytes go
 * into further pool buffers that ka_relay_process handles exactly like plaintext reads. When the
 * relay parks or pauses the leg (memory, SASL, backpressure), the remaining records stay in the
 * engine, tls_more is set, and the leg reads no more from the socket until its resume has drained
 * them (ka_leg_tls_pump).
 *
 * Writing: the relay assembles a leg's output as slices of pool buffers as
 * usual; ka_output_flush hands them here, they are encrypted together (small
 * slices share records, see ka_transport_writev; one copy, which TLS needs
 * anyway) and the records go out as pool buffers from the reserved share, so
 * TLS output is bounded by --buffer-memory too.
 *
 * Kernel TLS: at start the kernel is probed once for the tls module and the
 * answer logged; each established leg reports whether OpenSSL put it on
 * kTLS (never, today: the engines use a buffer BIO, see ka_transport.h) in
 * its log line and in kadmit_tls_ktls_sessions_total.
 *
 * The upstream handshake runs before the client leg is read, so no request
 * waits in plaintext while it runs. A client that speaks plaintext Kafka to
 * the TLS listener is told apart from other garbage in the log and closed.
 *
 * The certificate files of both sides are polled once a second; a change
 * builds a new context for new connections (ka_tls_source_check).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "ka_proxy_internal.h"

#define TLS_RELOAD_POLL_MS 1000

static void reload_one(ka_server_t *srv, ka_tls_source_t *src, const char *side)
{
    char err[512] = "", desc[400];
    int rc = ka_tls_source_check(src, err, sizeof(err));
    if (rc == 0)
        return;
    if (rc < 0) {
        srv->metrics.tls_reload_failures++;
        ka_log(KA_LOG_WARN, "TLS files changed but cannot be loaded, keeping the previous ones",
               KA_KS("side", side), KA_KS("error", err));
        return;
    }
    srv->metrics.tls_reloads++;
    ka_tls_source_describe(src, desc, sizeof(desc));
    ka_log(KA_LOG_INFO, "TLS files reloaded; new connections use them", KA_KS("side", side),
           KA_KS("certificate", desc));
}

static void reload_timer_cb(uv_timer_t *t)
{
    ka_server_t *srv = t->data;
    if (srv->tls_clients)
        reload_one(srv, srv->tls_clients, "clients");
    if (srv->tls_upstream)
        reload_one(srv, srv->tls_upstream, "upstream");
}

int ka_server_tls_init(ka_server_t *srv, char *err, size_t errlen)
{
    const ka_config_t *cfg = srv->cfg;
    char why[512] = "", desc[400];
    if (cfg->tls_cert[0] != '\0' || cfg->upstream_tls) {
        char ktls[200];
        srv->metrics.tls_ktls_available = (uint64_t)ka_tls_ktls_probe(ktls, sizeof(ktls));
        ka_log(KA_LOG_INFO,
               srv->metrics.tls_ktls_available ? "kernel TLS offered by the kernel"
                                               : "kernel TLS unavailable",
               KA_KS("reason", ktls), KA_KS("tls_ktls", cfg->tls_ktls_off ? "off" : "auto"));
    }
    if (cfg->tls_cert[0] != '\0') {
        ka_tls_settings_t st = {.is_server = 1,
                                .cert_file = cfg->tls_cert,
                                .key_file = cfg->tls_key,
                                .ca_file = cfg->tls_client_ca,
                                .client_auth = (enum ka_tls_client_auth)cfg->tls_client_auth,
                                .ktls = !cfg->tls_ktls_off};
        if (ka_tls_source_new(&st, &srv->tls_clients, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "--tls-cert: %s", why);
            return KA_EINVALID;
        }
        ka_tls_source_describe(srv->tls_clients, desc, sizeof(desc));
        ka_log(KA_LOG_INFO, "TLS toward clients", KA_KS("certificate", desc),
               KA_KI("client_auth", cfg->tls_client_auth));
    }
    if (cfg->upstream_tls) {
        ka_tls_settings_t st = {.is_server = 0,
                                .cert_file = cfg->upstream_cert,
                                .key_file = cfg->upstream_key,
                                .ca_file = cfg->upstream_ca,
                                .verify = cfg->upstream_verify,
                                .server_name = cfg->upstream_server_name[0]
                                                   ? cfg->upstream_server_name
                                                   : cfg->upstream.host,
                                .ktls = !cfg->tls_ktls_off};
        if (ka_tls_source_new(&st, &srv->tls_upstream, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "--upstream-tls: %s", why);
            return KA_EINVALID;
        }
        ka_log(KA_LOG_INFO, "TLS toward the broker", KA_KS("server_name", st.server_name),
               KA_KS("verify", cfg->upstream_verify ? "on" : "off"));
    }
    ka_upstream_security_t *sec = &srv->mdc_security;
    sec->tls = srv->tls_upstream;
    if (cfg->metadata_sasl_mechanism[0] != '\0') {
        if (ka_config_load_sasl_password(cfg, sec->password, sizeof(sec->password), err, errlen) <
            0)
            return KA_EINVALID;
        snprintf(sec->mechanism, sizeof(sec->mechanism), "%s", cfg->metadata_sasl_mechanism);
        snprintf(sec->username, sizeof(sec->username), "%s", cfg->metadata_sasl_username);
    }
    if (srv->tls_clients || srv->tls_upstream) {
        uv_timer_init(srv->loop, &srv->tls_reload_timer);
        srv->tls_reload_timer.data = srv;
        uv_timer_start(&srv->tls_reload_timer, reload_timer_cb, TLS_RELOAD_POLL_MS,
                       TLS_RELOAD_POLL_MS);
        uv_unref((uv_handle_t *)&srv->tls_reload_timer);
        srv->tls_timer_open = 1;
    }
    return 0;
}

void ka_server_tls_close(ka_server_t *srv)
{
    if (srv->tls_timer_open) {
        srv->tls_timer_open = 0;
        uv_close((uv_handle_t *)&srv->tls_reload_timer, NULL);
    }
}

static void tls_flush_cb(ka_leg_t *dst);

int ka_leg_tls_open(ka_leg_t *leg)
{
    ka_server_t *srv = leg->session->server;
    ka_tls_source_t *src = leg->is_client ? srv->tls_clients : srv->tls_upstream;
    if (src == NULL)
        return 0;
    /* A gateway reaches each broker under its own name. */
    const char *name = !leg->is_client && leg->session->tls_name[0] && srv->gateway != NULL &&
                               srv->cfg->upstream_server_name[0] == '\0'
                           ? leg->session->tls_name
                           : NULL;
    if ((leg->tls = ka_transport_new_named(src, name)) == NULL)
        return KA_ENOMEM;
    leg->flush_cb = tls_flush_cb;
    return 0;
}

/* Writes the records the engine has produced (handshake, alerts, data). */
static void send_records(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    ka_pool_t *pool = &s->server->pool;
    size_t pending;
    while (s->state != KA_SESSION_CLOSING && (pending = ka_transport_pending(leg->tls)) > 0) {
        size_t want = pending < KA_POOL_READ_SIZE ? pending : KA_POOL_READ_SIZE;
        ka_pbuf_t *pb = ka_pool_alloc(pool, want, want < 4096 ? want : 4096, 1, NULL);
        if (pb == NULL) {
            s->events->close(s, KA_LOG_ERROR, "out of pool memory for TLS records", NULL);
            return;
        }
        size_t n = ka_transport_take(leg->tls, pb->data, pb->cap);
        ka_output_send_raw(leg, pb, n);
        ka_pbuf_unref(pool, pb);
    }
}

static void tls_failed(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    s->server->metrics.tls_handshake_failures++;
    ka_log(KA_LOG_WARN,
           leg->tls_established ? (leg->is_client ? "TLS error from client, closing"
                                                  : "TLS error from upstream, closing")
                                : (leg->is_client ? "TLS handshake with client failed"
                                                  : "TLS handshake with upstream failed"),
           KA_KI("session", s->id), KA_KS("peer", leg->is_client ? s->peer : s->upstream_name),
           KA_KS("error", ka_transport_error(leg->tls)));
    s->events->close(s, KA_LOG_DEBUG, "TLS failure", NULL);
}

static void handshake_done(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    char desc[128];
    int ktls_send, ktls_recv;
    static const char *ktls_words[] = {"off", "send", "recv", "send+recv"};
    leg->tls_established = 1;
    s->server->metrics.tls_handshakes++;
    ka_transport_describe(leg->tls, desc, sizeof(desc));
    ka_transport_ktls(leg->tls, &ktls_send, &ktls_recv);
    s->server->metrics.tls_ktls_send += (uint64_t)ktls_send;
    s->server->metrics.tls_ktls_recv += (uint64_t)ktls_recv;
    ka_log(KA_LOG_DEBUG,
           leg->is_client ? "TLS with client established" : "TLS with upstream established",
           KA_KI("session", s->id), KA_KS("tls", desc),
           KA_KS("ktls", ktls_words[ktls_send | ktls_recv << 1]));
    if (leg->is_client)
        ka_session_auth_tls(s, leg->tls);
    if (leg->is_client && s->sni_wait) {
        leg->pause |= KA_PAUSE_ROUTE; /* what follows waits for the upstream */
        ka_session_sni_routed(s);
    }
    if (!leg->is_client) {
        leg->peer->pause &= ~KA_PAUSE_TLS;
        ka_leg_schedule_resume(leg->peer);
    }
}

void ka_leg_tls_pump(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    ka_pool_t *pool = &s->server->pool;

    leg->tls_more = 0;
    while (s->state != KA_SESSION_CLOSING) {
        if (leg->pause != 0 || leg->parked != NULL) {
            leg->tls_more = ka_transport_has_input(leg->tls);
            break;
        }
        ka_pbuf_t *pb = ka_pool_alloc(pool, KA_POOL_READ_SIZE, KA_POOL_READ_MIN, 0, &leg->waiter);
        if (pb == NULL) {
            leg->tls_more = 1;
            ka_leg_wait_memory(leg, KA_POOL_READ_MIN, 0);
            break;
        }
        long n = ka_transport_read(leg->tls, pb->data, pb->cap);
        send_records(leg); /* may close the session, which frees leg->tls */
        if (n < 0 || s->state == KA_SESSION_CLOSING) {
            ka_pbuf_unref(pool, pb);
            if (s->state != KA_SESSION_CLOSING)
                tls_failed(leg);
            return;
        }
        if (!leg->tls_established && ka_transport_established(leg->tls))
            handshake_done(leg);
        if (n > 0 && s->state != KA_SESSION_CLOSING && (leg->pause & KA_PAUSE_ROUTE)) {
            ka_relay_park(leg, pb, 0, (size_t)n); /* the first request, before the upstream */
            ka_pbuf_unref(pool, pb);
            leg->tls_more = ka_transport_has_input(leg->tls);
            break;
        }
        if (n > 0 && s->state != KA_SESSION_CLOSING)
            ka_relay_process(leg, pb, 0, (size_t)n);
        ka_pbuf_unref(pool, pb);
        if (n == 0)
            break;
    }
}

/* True (and the session closed) when a plaintext client talks to the TLS listener. */
static int refuse_plaintext(ka_leg_t *leg, const uint8_t *p, size_t n)
{
    ka_session_t *s = leg->session;
    leg->tls_checked = 1;
    /* A TLS handshake record starts 0x16 0x03. */
    if (n == 0 || (p[0] == 0x16 && (n < 2 || p[1] == 0x03)))
        return 0;
    s->server->metrics.tls_plaintext_refused++;
    if (n >= 8) {
        uint32_t size = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        int api_key = (int16_t)(p[4] << 8 | p[5]), version = (int16_t)(p[6] << 8 | p[7]);
        if (size >= 8 && size <= s->server->cfg->max_frame_bytes && api_key >= 0 &&
            api_key < 1000 && version >= 0 && version < 100) {
            ka_log(KA_LOG_WARN,
                   "plaintext Kafka request on the TLS listener, closing: the client must use "
                   "security.protocol SSL or SASL_SSL",
                   KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KI("api_key", api_key),
                   KA_KI("api_version", version));
            s->events->close(s, KA_LOG_DEBUG, "plaintext on the TLS listener", NULL);
            return 1;
        }
    }
    ka_log(KA_LOG_WARN, "bytes that are not a TLS handshake on the TLS listener, closing",
           KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KI("first_byte", p[0]));
    s->events->close(s, KA_LOG_DEBUG, "not TLS on the TLS listener", NULL);
    return 1;
}

void ka_leg_tls_input(ka_leg_t *leg, ka_pbuf_t *pb, size_t n)
{
    if (leg->is_client && !leg->tls_checked && refuse_plaintext(leg, pb->data, n))
        return;
    /* OpenSSL reads the records from pb itself; only what the pump leaves
     * unread (a paused leg) is copied before pb goes back to the pool. */
    if (ka_transport_lend(leg->tls, pb->data, n) < 0) {
        leg->session->events->close(leg->session, KA_LOG_ERROR, "out of memory for TLS input",
                                    NULL);
        return;
    }
    ka_leg_tls_pump(leg);
    if (leg->tls != NULL && ka_transport_settle(leg->tls) < 0) { /* NULL: the pump closed */
        leg->session->events->close(leg->session, KA_LOG_ERROR, "out of memory for TLS input",
                                    NULL);
        return;
    }
    if (leg->tls_more)
        ka_leg_update_reading(leg);
}

/* The leg's flush_cb: encrypts the output the relay assembled and writes the records. */
static void tls_flush_cb(ka_leg_t *dst)
{
    ka_session_t *s = dst->session;
    ka_wreq_t *w = dst->out;
    dst->out = NULL;
    if (w == NULL || s->state == KA_SESSION_CLOSING) {
        if (w != NULL)
            ka_output_release(s->server, w);
        return;
    }
    /* libuv documents uv_buf_t as laid out like struct iovec on Unix. */
    _Static_assert(sizeof(uv_buf_t) == sizeof(struct iovec) &&
                       offsetof(uv_buf_t, base) == offsetof(struct iovec, iov_base) &&
                       offsetof(uv_buf_t, len) == offsetof(struct iovec, iov_len),
                   "uv_buf_t is an iovec");
    int rc = ka_transport_writev(dst->tls, (const struct iovec *)w->bufs, w->nbufs);
    size_t plain = w->bytes;
    ka_output_release(s->server, w);
    if (rc < 0) {
        tls_failed(dst);
        return;
    }
    if (dst->is_client)
        s->server->metrics.bytes_broker_to_client += plain;
    else
        s->server->metrics.bytes_client_to_broker += plain;
    send_records(dst);
}

/* After the loop has ended: no connection holds a context any more. */
void ka_server_tls_free(ka_server_t *srv)
{
    ka_tls_source_free(srv->tls_clients);
    ka_tls_source_free(srv->tls_upstream);
    srv->tls_clients = srv->tls_upstream = NULL;
    memset(&srv->mdc_security, 0, sizeof(srv->mdc_security));
}
