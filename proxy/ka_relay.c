/*
 * ka_relay.c: moves the bytes of one read through the frame splitter to the
 * other leg.
 *
 * Pass-through bytes are never copied: a read buffer is sliced into runs of
 * pass-through bytes and each run is queued for writing with a reference on
 * the buffer, which the write callback drops. Only three things are copied:
 * a header that straddles two reads (the splitter's carry), a frame that an
 * interception handler must see whole, and a local answer.
 *
 * Processing can stop in the middle of a read (memory for a whole frame is
 * short, a SASL handshake must be answered first, the proxy is draining);
 * the rest of the read is then parked on the leg, which stops reading until
 * the condition clears and ka_relay_resume() continues where it stopped.
 */
#include <stdio.h>
#include <string.h>

#include "ka_admission.h"
#include "ka_protocol.h"
#include "ka_proxy_internal.h"

/* ka_relay_process steps: go on, stop here (rest parked), or the session closed. */
enum step { STEP_GO = 0, STEP_PARK = 1, STEP_DEFER = 2, STEP_CLOSED = -1 };

uint8_t *ka_relay_carry_alloc(void *ctx, size_t n)
{
    ka_leg_t *leg = ctx;
    ka_pbuf_t *pb = ka_pool_alloc(&leg->session->server->pool, n, n, 0, &leg->waiter);
    return pb ? pb->data : NULL;
}

void ka_relay_carry_release(void *ctx, uint8_t *p)
{
    ka_leg_t *leg = ctx;
    ka_pbuf_unref(&leg->session->server->pool, ka_pbuf_of(p));
}

/* Keeps [off, off+len) of pb for later and stops reading. */
static void park(ka_leg_t *leg, ka_pbuf_t *pb, size_t off, size_t len)
{
    if (len > 0) {
        ka_pbuf_ref(pb);
        leg->parked = pb;
        leg->parked_off = (uint32_t)off;
        leg->parked_len = (uint32_t)len;
    }
    ka_leg_update_reading(leg);
}

void ka_relay_park(ka_leg_t *leg, ka_pbuf_t *pb, size_t off, size_t len)
{
    park(leg, pb, off, len);
}

void ka_relay_release(ka_leg_t *leg)
{
    ka_pool_t *pool = &leg->session->server->pool;
    if (leg->parked)
        ka_pbuf_unref(pool, leg->parked);
    if (leg->hold)
        ka_pbuf_unref(pool, leg->hold);
    if (leg->hold_prefix)
        ka_pbuf_unref(pool, leg->hold_prefix);
    if (leg->out)
        ka_output_release(leg->session->server, leg->out);
    if (leg->deferred) {
        const ka_intercept_entry_t *ie =
            ka_intercept_lookup(&leg->session->server->intercept, leg->deferred_api_key);
        if (!leg->deferred_woken && ie && ie->cancel)
            ie->cancel(ie->user, leg);
        ka_pbuf_unref(pool, leg->deferred);
        leg->deferred = NULL;
    }
    leg->parked = leg->hold = leg->hold_prefix = NULL;
    leg->out = NULL;
    ka_frame_free(&leg->splitter);
}

/* Writes every LOCAL answer that has become due to the client. */
static void write_due_answers(ka_session_t *s)
{
    ka_inflight_entry_t e;
    while (ka_inflight_pop_due_answer(&s->inflight, &e)) {
        ka_pbuf_t *pb = e.answer;
        ka_output_add(&s->client, pb, 0, e.answer_len);
        ka_pbuf_unref(&s->server->pool, pb);
        s->server->metrics.local_answers++;
    }
}

/* Copies a handler's verdict bytes (a re-encoded request, a merged response,
 * a local answer) into a pool buffer of the priority class. The handler's
 * own copy is charged too while both exist, so the peak of a rewrite counts
 * against --buffer-memory. */
static ka_pbuf_t *verdict_bytes(ka_session_t *s, ka_hook_verdict_t *v)
{
    ka_pool_t *pool = &s->server->pool;
    ka_pbuf_t *pb = NULL;
    if (v->len > 0 && v->len <= UINT32_MAX && ka_pool_charge(pool, v->len) == 0) {
        pb = ka_pool_alloc(pool, v->len, v->len, 1, NULL);
        if (pb != NULL)
            memcpy(pb->data, v->bytes, v->len);
        ka_pool_uncharge(pool, v->len);
    }
    if (v->free_bytes)
        v->free_bytes(v->bytes);
    return pb;
}

void ka_relay_free_state(ka_server_t *srv, const ka_inflight_entry_t *e)
{
    if (!(e->flags & KA_INFLIGHT_HOOK_STATE))
        return;
    const ka_intercept_entry_t *ie = ka_intercept_lookup(&srv->intercept, e->api_key);
    if (ie && ie->free_state)
        ie->free_state(ie->user, e->answer);
}

static int push_request(ka_session_t *s, const ka_frame_header_t *h, uint32_t flags, void *state)
{
    ka_inflight_entry_t e = {.correlation_id = h->correlation_id,
                             .api_key = h->api_key,
                             .api_version = h->api_version,
                             .flags = flags};
    if (state != NULL) {
        e.flags |= KA_INFLIGHT_HOOK_STATE | KA_INFLIGHT_BUFFER_RESPONSE;
        e.answer = state;
    }
    if (h->api_key == KA_API_PRODUCE && h->acks == 0) {
        s->server->metrics.produce_acks0++;
        return 0; /* no response will come */
    }
    int rc = ka_inflight_push(&s->inflight, &e);
    if (rc < 0) {
        ka_relay_free_state(s->server, &e);
        s->server->metrics.protocol_errors++;
        s->events->close(s, KA_LOG_WARN, "too many requests in flight", ka_strerror(rc));
    }
    return rc;
}

/* The request header's flags for the in-flight entry. */
static uint32_t request_flags(ka_session_t *s, const ka_frame_header_t *h, int buffer_response)
{
    const ka_intercept_entry_t *ie = ka_intercept_lookup(&s->server->intercept, h->api_key);
    uint32_t flags = 0;
    if (buffer_response ||
        (ie && ie->buffer_response && ie->on_response &&
         (!ie->response_wanted || ie->response_wanted(h->api_key, h->api_version))))
        flags |= KA_INFLIGHT_BUFFER_RESPONSE;
    if (h->api_key == KA_API_SASL_HANDSHAKE)
        flags |=
            KA_INFLIGHT_SASL_HANDSHAKE | (h->api_version == 0 ? KA_INFLIGHT_SASL_HANDSHAKE_V0 : 0);
    return flags | ka_session_auth_flags(s, h->api_key, 0);
}

/* The held, refused SaslHandshake v0 (ka_relay_sasl_refused) gets its answer in order. */
static enum step sasl_refusal(ka_leg_t *src, ka_pbuf_t *hold)
{
    ka_session_t *s = src->session;
    size_t n = ka_sasl_refusal_answer(src->hold_hdr.correlation_id, NULL, 0);
    ka_pbuf_t *pb = ka_pool_alloc(&s->server->pool, n, n, 1, NULL);
    ka_pbuf_unref(&s->server->pool, hold);
    ka_inflight_entry_t e = {.correlation_id = src->hold_hdr.correlation_id,
                             .api_key = src->hold_hdr.api_key,
                             .flags = KA_INFLIGHT_LOCAL,
                             .answer = pb,
                             .answer_len = (uint32_t)n};
    if (pb == NULL || ka_inflight_push(&s->inflight, &e) < 0) {
        if (pb != NULL)
            ka_pbuf_unref(&s->server->pool, pb);
        s->events->close(s, KA_LOG_WARN, "cannot answer a refused SaslHandshake", NULL);
        return STEP_CLOSED;
    }
    ka_sasl_refusal_answer(src->hold_hdr.correlation_id, pb->data, n);
    write_due_answers(s);
    return STEP_GO;
}

/*
 * A client sends runs of requests of one API and version (a producer's
 * Produce after Produce), and whether a key is known and its version
 * decodable are pure functions of the two: the leg remembers the last pair
 * that passed both checks, so a pass-through frame of the same pair skips
 * the table searches. 0 is "none" (key -1 never passes).
 */
static int same_key_version(const ka_leg_t *src, const ka_frame_header_t *h)
{
    return src->checked_key_version != 0 && src->checked_key_version == ka_relay_key_version(h) + 1;
}

/* Decides the route of a frame whose header was just peeked. */
static enum step on_header(ka_leg_t *src, ka_frame_event_t *ev, ka_pbuf_t *pb, size_t a, size_t b,
                           size_t *run)
{
    ka_session_t *s = src->session;
    ka_leg_t *dst = src->peer;
    const ka_frame_header_t *h = &ev->hdr;
    enum ka_frame_route route = KA_ROUTE_PASS;

    if (src->is_client) {
        if (src->splitter.mode == KA_FRAME_RAW) {
            ka_inflight_entry_t e = {.api_key = -1, .flags = KA_INFLIGHT_RAW};
            src->hold_raw_token = ka_session_auth_wants_token(s, h, 1);
            if (src->hold_raw_token)
                route = KA_ROUTE_HOLD; /* the first token names the user */
            e.flags |= ka_session_auth_flags(s, -1, 1);
            s->sasl_tokens_left--;
            s->server->metrics.sasl_raw_tokens++;
            if (ka_inflight_push(&s->inflight, &e) < 0) {
                s->events->close(s, KA_LOG_WARN, "too many requests in flight", NULL);
                return STEP_CLOSED;
            }
        } else {
            if (!same_key_version(src, h) && ka_relay_check_key_version(src, h) < 0)
                return STEP_CLOSED;
            const ka_intercept_entry_t *ie = ka_intercept_lookup(&s->server->intercept, h->api_key);
            if (h->api_key == KA_API_SASL_HANDSHAKE)
                ka_session_auth_handshake(s, h);
            if ((ie && ie->buffer_request && ie->on_request) || ka_relay_sasl_refused(s, h) ||
                ka_session_auth_wants_token(s, h, 0)) {
                route = KA_ROUTE_HOLD;
            } else {
                uint32_t flags = request_flags(s, h, 0);
                if (flags & KA_INFLIGHT_SASL_HANDSHAKE_V0) {
                    s->sasl_pending_tokens = ka_sasl_mechanism_tokens(
                        h->sasl_mechanism.ptr,
                        h->sasl_mechanism.len > 0 ? (size_t)h->sasl_mechanism.len : 0);
                    src->frame_is_handshake = 1;
                }
                if (push_request(s, h, flags, NULL) < 0)
                    return STEP_CLOSED;
            }
        }
    } else {
        ka_inflight_entry_t *head = ka_inflight_head(&s->inflight);
        if (head == NULL) {
            s->server->metrics.unexpected_responses++;
            if (!s->warned_unexpected)
                ka_log(KA_LOG_WARN, "response with no request in flight, passed through",
                       KA_KI("session", s->id), KA_KI("correlation_id", h->correlation_id));
            s->warned_unexpected = 1;
        } else if (!(head->flags & KA_INFLIGHT_RAW)) {
            if (head->correlation_id != h->correlation_id)
                ka_log(KA_LOG_WARN, "response correlation id does not match the request",
                       KA_KI("session", s->id), KA_KI("expected", head->correlation_id),
                       KA_KI("got", h->correlation_id), KA_KI("api_key", head->api_key));
            if ((head->flags & KA_INFLIGHT_SASL_HANDSHAKE_V0) && h->has_error_code)
                src->handshake_failed = h->error_code != 0;
            if (head->flags & KA_INFLIGHT_SASL_HANDSHAKE)
                ka_session_auth_handshake_answered(s, h->has_error_code ? h->error_code : -1);
            if (head->flags & KA_INFLIGHT_BUFFER_RESPONSE) {
                if ((uint64_t)(uint32_t)h->size > s->server->cfg->max_frame_bytes) {
                    s->events->close(s, KA_LOG_WARN, "response too large to inspect", NULL);
                    return STEP_CLOSED;
                }
                route = KA_ROUTE_HOLD;
            }
        }
    }

    src->route = route;
    src->splice_hint =
        route == KA_ROUTE_PASS && (uint32_t)h->size >= KA_SPLICE_MIN && ka_splice_possible(src);
    if (route == KA_ROUTE_PASS) {
        if (ev->carried != NULL) {
            ka_pbuf_t *carried = ka_pbuf_of(ev->carried);
            ka_output_add(dst, pb, *run, a);
            ka_output_add(dst, carried, 0, ev->carried_len);
            ka_pbuf_unref(&s->server->pool, carried);
            *run = b;
        }
        return STEP_GO;
    }

    /* HOLD: everything before this frame goes out now; the frame waits. */
    int oversize = src->is_client ? ka_relay_refuse_oversize_hold(s, h) : 0;
    if (oversize) {
        if (ev->carried != NULL)
            ka_pbuf_unref(&s->server->pool, ka_pbuf_of(ev->carried));
        if (oversize != KA_HOLD_DISCARD)
            return STEP_CLOSED;
        ka_output_add(dst, pb, *run, a); /* the frame's own bytes are dropped */
        *run = b;
        src->route = KA_ROUTE_DISCARD;
        src->hold_total = 4 + (size_t)(uint32_t)h->size;
        src->hold_hdr = *h;
        return STEP_GO;
    }
    s->server->metrics.frames_intercepted++;
    ka_output_add(dst, pb, *run, a);
    *run = b;
    src->hold_total = 4 + (size_t)(uint32_t)h->size;
    src->hold_hdr = *h;
    if (src->is_client)
        src->hold_hdr.origin = ka_session_origin(s, h);
    src->hold_hdr.client_id = (ka_slice_t){NULL, -1};
    src->hold_hdr.sasl_mechanism = (ka_slice_t){NULL, -1};
    if (ev->carried != NULL) {
        src->hold_prefix = ka_pbuf_of(ev->carried);
        src->hold_prefix_off = 0;
        src->hold_prefix_len = (uint32_t)ev->carried_len;
    } else {
        ka_pbuf_ref(pb);
        src->hold_prefix = pb;
        src->hold_prefix_off = (uint32_t)a;
        src->hold_prefix_len = (uint32_t)(b - a);
    }
    if (src->is_client) {
        src->hold_started_ms = uv_now(s->server->loop);
        ka_session_watch_held(s);
    }
    if (ka_relay_hold_grow(src) < 0) {
        ka_relay_hold_wait(src);
        return STEP_PARK;
    }
    return STEP_GO;
}

/* Bytes [a, b) of the current frame's body. */
static void route_bytes(ka_leg_t *src, ka_pbuf_t *pb, size_t *run, size_t a, size_t b)
{
    if (src->route == KA_ROUTE_PASS || b == a)
        return;
    ka_output_add(src->peer, pb, *run, a);
    *run = b;
    if (src->route == KA_ROUTE_DISCARD)
        return;
    memcpy(src->hold->data + src->hold_len, pb->data + a, b - a);
    src->hold_len += b - a;
}

static void deferred_wake(void *arg)
{
    ka_leg_t *leg = arg;
    leg->deferred_woken = 1;
    leg->pause &= ~KA_PAUSE_DEFER;
    ka_leg_schedule_resume(leg);
}

/* Keeps a whole frame whose handler said DEFER until the handler wakes it. */
static int defer_frame(ka_leg_t *src, const ka_intercept_entry_t *ie, int16_t api_key,
                       ka_pbuf_t *hold, size_t len)
{
    if (ie->defer == NULL || ie->defer(ie->user, deferred_wake, src) != 0)
        return -1;
    src->deferred = hold;
    src->deferred_len = len;
    src->deferred_api_key = api_key;
    src->deferred_woken = 0;
    src->pause |= KA_PAUSE_DEFER;
    return 0;
}

/* Runs the handler on a complete held frame and queues what it decided. */
static enum step release_frame(ka_leg_t *src, ka_pbuf_t *hold, size_t len, int resumed)
{
    ka_session_t *s = src->session;
    ka_hook_verdict_t v = {0};
    int rc;

    v.resumed = resumed;
    int raw = src->hold_raw_token;
    src->hold_raw_token = 0;
    if (src->is_client) {
        const ka_intercept_entry_t *ie =
            ka_intercept_lookup(&s->server->intercept, src->hold_hdr.api_key);
        if (raw || (ie == NULL && src->hold_hdr.api_key == KA_API_SASL_AUTHENTICATE)) {
            /* Held only to read the client's name; it goes on unchanged. */
            ka_session_auth_token(s, hold->data, len, raw);
            rc = 0;
        } else if (ie == NULL || ie->on_request == NULL) {
            return sasl_refusal(src, hold); /* held without a handler, to be answered */
        } else {
            rc = ie->on_request(ie->user, &src->hold_hdr, hold->data, &len, &v);
        }
        if (rc == 0 && v.kind == KA_HOOK_DEFER) {
            if (defer_frame(src, ie, src->hold_hdr.api_key, hold, len) == 0)
                return STEP_DEFER;
            /* Cannot wait: decide now. */
            memset(&v, 0, sizeof(v));
            v.resumed = KA_HOOK_RESUMED_LAST;
            rc = ie->on_request(ie->user, &src->hold_hdr, hold->data, &len, &v);
            if (v.kind == KA_HOOK_DEFER)
                v.kind = KA_HOOK_CLOSE;
        }
    } else {
        /* A response may wait too (its handler makes a change the broker
         * accepted and answers once it is stored); the leg stops reading, so
         * later responses keep their order behind it. */
        ka_inflight_entry_t *head = ka_inflight_head(&s->inflight);
        const ka_intercept_entry_t *ie = ka_intercept_lookup(&s->server->intercept, head->api_key);
        ka_session_auth_response(s, head, hold->data, len);
        rc = ie && ie->on_response ? ie->on_response(ie->user, head, hold->data, &len, &v) : 0;
        if (rc == 0 && v.kind == KA_HOOK_DEFER) {
            if (defer_frame(src, ie, head->api_key, hold, len) == 0)
                return STEP_DEFER;
            memset(&v, 0, sizeof(v));
            v.resumed = KA_HOOK_RESUMED_LAST;
            rc = ie->on_response(ie->user, head, hold->data, &len, &v);
            if (v.kind == KA_HOOK_DEFER)
                v.kind = KA_HOOK_CLOSE;
        }
        if (v.kind == KA_HOOK_ANSWER)
            v.kind = KA_HOOK_FORWARD; /* a response's answer is a rewrite */
    }
    if (rc < 0 || v.kind == KA_HOOK_CLOSE || len > src->hold_total) {
        if (v.free_bytes)
            v.free_bytes(v.bytes);
        if (v.state != NULL) {
            ka_inflight_entry_t tmp = {.api_key = src->hold_hdr.api_key,
                                       .flags = KA_INFLIGHT_HOOK_STATE,
                                       .answer = v.state};
            ka_relay_free_state(s->server, &tmp);
        }
        ka_pbuf_unref(&s->server->pool, hold);
        s->events->close(s, KA_LOG_WARN, "closed by interception handler",
                         v.reason ? v.reason : ka_strerror(rc));
        return STEP_CLOSED;
    }
    if (v.bytes != NULL) {
        ka_pbuf_unref(&s->server->pool, hold);
        len = v.len;
        if ((hold = verdict_bytes(s, &v)) == NULL) {
            s->events->close(s, KA_LOG_ERROR, "no memory for a handler's bytes", NULL);
            return STEP_CLOSED;
        }
    }
    if (src->is_client && v.kind == KA_HOOK_ANSWER) {
        if (v.state != NULL) {
            ka_inflight_entry_t tmp = {.api_key = src->hold_hdr.api_key,
                                       .flags = KA_INFLIGHT_HOOK_STATE,
                                       .answer = v.state};
            ka_relay_free_state(s->server, &tmp);
        }
        ka_inflight_entry_t e = {.correlation_id = src->hold_hdr.correlation_id,
                                 .api_key = src->hold_hdr.api_key,
                                 .api_version = src->hold_hdr.api_version,
                                 .flags = KA_INFLIGHT_LOCAL,
                                 .answer = hold,
                                 .answer_len = (uint32_t)len};
        if (ka_inflight_push(&s->inflight, &e) < 0) {
            ka_pbuf_unref(&s->server->pool, hold);
            s->events->close(s, KA_LOG_WARN, "too many requests in flight", NULL);
            return STEP_CLOSED;
        }
        write_due_answers(s);
        return STEP_GO;
    }
    if (src->is_client && !raw &&
        push_request(s, &src->hold_hdr, request_flags(s, &src->hold_hdr, v.buffer_response),
                     v.state) < 0) {
        ka_pbuf_unref(&s->server->pool, hold);
        return STEP_CLOSED;
    }
    ka_output_add(src->peer, hold, 0, len);
    ka_pbuf_unref(&s->server->pool, hold);
    return STEP_GO;
}

static enum step release_held(ka_leg_t *src)
{
    ka_pbuf_t *hold = src->hold;
    src->hold = NULL;
    src->route = KA_ROUTE_PASS;
    src->deferred_rounds = 0;
    return release_frame(src, hold, src->hold_len, 0);
}

/* A response to SaslHandshake v0 decides how the client's next frames look. */
static void sasl_handshake_answered(ka_session_t *s)
{
    ka_leg_t *client = &s->client, *upstream = &s->upstream;
    int tokens = s->sasl_pending_tokens;

    if (upstream->handshake_failed) {
        ka_log(KA_LOG_DEBUG, "SaslHandshake v0 refused by the broker", KA_KI("session", s->id));
    } else if (tokens > 0) {
        s->sasl_tokens_left = tokens;
        ka_frame_set_mode(&client->splitter, KA_FRAME_RAW, 0);
    } else {
        s->server->metrics.sasl_opaque_connections++;
        ka_log(KA_LOG_INFO,
               "SASL mechanism without a fixed token count, passing the connection "
               "through unframed",
               KA_KI("session", s->id), KA_KS("peer", s->peer));
        ka_frame_set_mode(&client->splitter, KA_FRAME_OPAQUE, 0);
        ka_frame_set_mode(&upstream->splitter, KA_FRAME_OPAQUE, 0);
    }
    upstream->handshake_failed = 0;
    client->pause &= ~KA_PAUSE_SASL;
    ka_leg_schedule_resume(client);
}

/* A response has gone to the client: its request leaves the queue. */
static void response_done(ka_session_t *s)
{
    ka_inflight_entry_t e;
    if (ka_inflight_pop(&s->inflight, &e) == 0) {
        ka_relay_free_state(s->server, &e);
        ka_session_auth_raw_answered(s, &e);
        if (e.flags & KA_INFLIGHT_SASL_HANDSHAKE_V0)
            sasl_handshake_answered(s);
    }
    write_due_answers(s);
    if ((s->client.pause & KA_PAUSE_INFLIGHT) &&
        ka_inflight_count(&s->inflight) < s->server->cfg->max_inflight) {
        s->client.pause &= ~KA_PAUSE_INFLIGHT;
        ka_leg_schedule_resume(&s->client);
    }
}

/* A frame ended at `off` of pb; [*run, off) are pass-through bytes not yet queued.
 * Inlined into both callers: it runs once per frame, and as a call it cost
 * the small-frame path about 5% more instructions per byte (callgrind). */
__attribute__((always_inline)) static inline enum step on_end(ka_leg_t *src, ka_pbuf_t *pb,
                                                              size_t *run, size_t off)
{
    ka_session_t *s = src->session;
    ka_leg_t *dst = src->peer;
    enum step st;

    ka_output_add(dst, pb, *run, off);
    *run = off;
    if (src->is_client) {
        int handshake = src->frame_is_handshake;
        src->frame_is_handshake = 0;
        s->server->metrics.frames_client_to_broker++;
        int deferred = 0;
        if (src->route == KA_ROUTE_DISCARD) {
            src->route = KA_ROUTE_PASS;
            if (ka_relay_answer_oversize(src) < 0) {
                s->events->close(s, KA_LOG_WARN, "cannot answer an oversize request", NULL);
                return STEP_CLOSED;
            }
            write_due_answers(s);
        } else if (src->route == KA_ROUTE_HOLD) {
            st = release_held(src);
            if (st == STEP_DEFER)
                deferred = 1;
            else if (st != STEP_GO)
                return st;
        }
        ka_frame_set_mode(&src->splitter, s->sasl_tokens_left > 0 ? KA_FRAME_RAW : KA_FRAME_REQUEST,
                          0);
        if (deferred)
            return STEP_PARK;
        if (handshake) {
            /* Hold the client's next bytes until the broker has said whether
             * raw SASL tokens follow. */
            src->pause |= KA_PAUSE_SASL;
            return STEP_PARK;
        }
        if (s->draining) {
            src->pause |= KA_PAUSE_DRAIN;
            return STEP_PARK;
        }
        if (ka_inflight_count(&s->inflight) >= s->server->cfg->max_inflight) {
            src->pause |= KA_PAUSE_INFLIGHT;
            s->server->metrics.inflight_pauses++;
            return STEP_PARK;
        }
        return STEP_GO;
    }

    s->server->metrics.frames_broker_to_client++;
    if (src->route == KA_ROUTE_HOLD && (st = release_held(src)) != STEP_GO)
        return st == STEP_DEFER ? STEP_PARK : st;
    response_done(s);
    return STEP_GO;
}

/* Before each response header: the head of the queue says what to peek. */
static void response_mode(ka_leg_t *src)
{
    ka_splitter_t *sp = &src->splitter;
    if (!ka_frame_awaiting_header(sp) || sp->mode == KA_FRAME_OPAQUE)
        return;
    ka_inflight_entry_t *head = ka_inflight_head(&src->session->inflight);
    if (head && (head->flags & KA_INFLIGHT_RAW))
        ka_frame_set_mode(sp, KA_FRAME_RAW, 0);
    else
        ka_frame_set_mode(
            sp, KA_FRAME_RESPONSE,
            head && (head->flags & KA_INFLIGHT_SASL_HANDSHAKE) ? KA_FRAME_PEEK_ERROR_CODE : 0);
}

/* The end of a processing pass: [run, off) of pb still to queue, [off, end)
 * to park when the pass stopped there; then writes, backpressure, advance. */
static void finish(ka_leg_t *src, enum step st, ka_pbuf_t *pb, size_t run, size_t off, size_t end)
{
    ka_session_t *s = src->session;
    ka_leg_t *dst = src->peer;
    if (s->state != KA_SESSION_CLOSING) {
        ka_output_add(dst, pb, run, off);
        if (st == STEP_PARK)
            park(src, pb, off, end - off);
        /* The head of a frame whose body is spliced next waits for it. */
        src->splice_corked = src->splice_cork_ok && st == STEP_GO && src->pause == 0 &&
                             src->reading && dst->out != NULL;
        if (src->splice_corked && !ka_splice_wanted(src))
            src->splice_corked = 0;
        if (!src->splice_corked)
            ka_output_flush(dst);
        ka_output_flush(src); /* local answers */
        if (dst->write_pending > KA_WRITE_HIGH_WATERMARK && !(src->pause & KA_PAUSE_BACKPRESSURE)) {
            src->pause |= KA_PAUSE_BACKPRESSURE;
            s->server->metrics.backpressure_pauses++;
            ka_leg_update_reading(src);
        }
    }
    s->processing--;
    /* A FIN waits for the bytes before it; flushes that completed at once
     * left that check to here (ka_output.c). */
    if (s->state != KA_SESSION_CLOSING)
        s->events->advance(s);
}

void ka_relay_process(ka_leg_t *src, ka_pbuf_t *pb, size_t off, size_t len)
{
    ka_session_t *s = src->session;
    ka_leg_t *dst = src->peer;
    size_t end = off + len, run = off;
    ka_frame_event_t ev;
    enum step st = STEP_GO;

    s->processing++;
    while (s->state != KA_SESSION_CLOSING) {
        if (!src->is_client)
            response_mode(src);
        size_t feed = end - off;
        if (src->route == KA_ROUTE_HOLD && feed > 0) {
            /* A held frame's body goes in only as far as its buffer has room. */
            if (src->hold->cap == src->hold_len && src->hold_len < src->hold_total &&
                ka_relay_hold_grow(src) < 0) {
                ka_output_add(dst, pb, run, off);
                run = off;
                ka_relay_hold_wait(src);
                st = STEP_PARK;
                break;
            }
            if (feed > src->hold->cap - src->hold_len)
                feed = src->hold->cap - src->hold_len;
        }
        long n = ka_frame_feed(&src->splitter, pb->data + off, feed, &ev);
        if (n < 0) {
            ka_relay_frame_error(src);
            break;
        }
        size_t a = off, b = off + (size_t)n;
        off = b;
        if (ev.type == KA_FRAME_NONE) {
            if (ka_frame_awaiting_header(&src->splitter) && src->splitter.mode != KA_FRAME_OPAQUE) {
                ka_output_add(dst, pb, run, a); /* [a, b) went into the carry */
                run = b;
            } else {
                route_bytes(src, pb, &run, a, b);
                if (off < end)
                    continue; /* the held frame's buffer was full: grow it */
            }
            break;
        }
        if (ev.type == KA_FRAME_NOMEM) {
            ka_output_add(dst, pb, run, a);
            run = b;
            ka_leg_wait_memory(src, KA_POOL_READ_MIN, 0);
            st = STEP_PARK;
            break;
        }
        if (ev.type == KA_FRAME_HEADER) {
            st = on_header(src, &ev, pb, a, b, &run);
        } else {
            route_bytes(src, pb, &run, a, b);
            st = on_end(src, pb, &run, off);
        }
        if (st != STEP_GO)
            break;
    }
    finish(src, st, pb, run, off, end);
}

void ka_relay_spliced(ka_leg_t *src, ka_pbuf_t *pb, size_t residue, uint64_t n)
{
    ka_session_t *s = src->session;
    ka_frame_event_t ev;
    enum step st = STEP_GO;
    size_t run = 0;

    s->processing++;
    /* What the peer did not take goes first, before anything the frame's end queues. */
    ka_output_add(src->peer, pb, 0, residue);
    if (ka_frame_skip(&src->splitter, n, &ev) < 0)
        s->events->close(s, KA_LOG_ERROR, "splice went past the frame", NULL);
    else if (ev.type == KA_FRAME_END)
        st = on_end(src, NULL, &run, 0);
    finish(src, st, NULL, 0, 0, 0);
}

/* A deferred frame's handler woke it: decide it now, then go on reading. */
static int resume_deferred(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    ka_pbuf_t *hold = leg->deferred;
    leg->deferred = NULL;
    leg->deferred_woken = 0;
    s->processing++;
    if (leg->deferred_rounds < KA_HOOK_RESUMED_LAST - 1)
        leg->deferred_rounds++;
    enum step st = release_frame(leg, hold, leg->deferred_len, leg->deferred_rounds);
    if (st == STEP_GO && !leg->is_client)
        response_done(s);
    if (s->state != KA_SESSION_CLOSING) {
        ka_output_flush(leg->peer);
        ka_output_flush(leg);
    }
    s->processing--;
    if (st == STEP_DEFER)
        return 1; /* waits again */
    if (s->state == KA_SESSION_CLOSING)
        return 1;
    if (s->draining && leg->is_client)
        leg->pause |= KA_PAUSE_DRAIN;
    /* A FIN that waited for the deferred frame, or for local answers written at once. */
    s->events->advance(s);
    return s->state == KA_SESSION_CLOSING;
}

int ka_relay_resume(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    if (s->state == KA_SESSION_CLOSING ||
        (leg->pause &
         (KA_PAUSE_POOL | KA_PAUSE_SASL | KA_PAUSE_DEFER | KA_PAUSE_ROUTE | KA_PAUSE_TLS)))
        return 1;
    if (leg->deferred != NULL && resume_deferred(leg))
        return 1;
    if (leg->hold_prefix != NULL && leg->hold == NULL) {
        if (ka_relay_hold_grow(leg) < 0) {
            ka_relay_hold_wait(leg);
            return 1;
        }
    }
    if (leg->parked != NULL && !(leg->pause & (KA_PAUSE_DRAIN | KA_PAUSE_INFLIGHT))) {
        ka_pbuf_t *pb = leg->parked;
        leg->parked = NULL;
        ka_relay_process(leg, pb, leg->parked_off, leg->parked_len);
        ka_pbuf_unref(&s->server->pool, pb);
    }
    return s->state == KA_SESSION_CLOSING;
}
