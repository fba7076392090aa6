/*
 * ka_relay_hold.c: the memory of a frame the relay holds whole (a request an
 * interception handler judges, a response it rewrites), for ka_relay.c.
 */
#include <stdio.h>
#include <string.h>

#include "ka_protocol.h"
#include "ka_proxy_internal.h"

/*
 * Memory for a held frame is taken as its bytes arrive, never for its
 * declared size up front: the buffer starts at what has arrived plus a read's
 * worth and doubles (in place, ka_pool_grow) when the next bytes do not fit.
 * So a frame that claims 60 MiB and stalls after a few bytes pins a few KiB.
 */
#define KA_HOLD_FIRST (16 * 1024)

/* The pool class of the held frame: a client's request is a held request
 * (small ones first); a broker's response is kadmit's own. */
static int hold_class(const ka_leg_t *leg)
{
    if (!leg->is_client)
        return 1;
    return leg->hold_total <= KA_POOL_SMALL_HELD ? KA_POOL_HELD_SMALL : KA_POOL_HELD;
}

/* Makes room in the held frame's buffer for at least one more step of its
 * bytes, allocating it (and moving the header bytes in) on first use. */
int ka_relay_hold_grow(ka_leg_t *leg)
{
    ka_pool_t *pool = &leg->session->server->pool;
    size_t have = leg->hold ? leg->hold_len : leg->hold_prefix_len;
    size_t cap = leg->hold ? (size_t)leg->hold->cap * 2 : KA_HOLD_FIRST;
    size_t min = have + KA_POOL_READ_MIN;
    if (min > leg->hold_total)
        min = leg->hold_total;
    if (cap < min)
        cap = min;
    if (cap > leg->hold_total)
        cap = leg->hold_total;
    if (leg->hold != NULL) {
        ka_pbuf_t *grown = ka_pool_grow(pool, leg->hold, cap, min, &leg->waiter);
        if (grown == NULL)
            return KA_ENOMEM;
        leg->hold = grown;
        return 0;
    }
    ka_pbuf_t *hold = ka_pool_alloc(pool, cap, min, hold_class(leg), &leg->waiter);
    if (hold == NULL)
        return KA_ENOMEM;
    memcpy(hold->data, leg->hold_prefix->data + leg->hold_prefix_off, leg->hold_prefix_len);
    leg->hold = hold;
    leg->hold_len = leg->hold_prefix_len;
    ka_pbuf_unref(pool, leg->hold_prefix);
    leg->hold_prefix = NULL;
    return 0;
}

/* Waits for the memory hold_grow could not find (the growth it needs). */
void ka_relay_hold_wait(ka_leg_t *leg)
{
    size_t have = leg->hold ? leg->hold->cap : 0;
    size_t min = (leg->hold ? leg->hold_len : leg->hold_prefix_len) + KA_POOL_READ_MIN;
    if (min > leg->hold_total)
        min = leg->hold_total;
    ka_leg_wait_memory(leg, min > have ? min - have : 1, hold_class(leg));
}

/* Whether an answer can be made from the header alone: only these held APIs
 * carry a top-level error code and message. */
static int answerable(const ka_frame_header_t *h)
{
    const struct ka_codec *c = ka_codec_find(h->api_key, KA_RESPONSE);
    if (c == NULL || h->api_version < c->min_version || h->api_version > c->max_version)
        return 0;
    return h->api_key == KA_API_ALTER_PARTITION_REASSIGNMENTS ||
           h->api_key == KA_API_STREAMS_GROUP_HEARTBEAT;
}

/*
 * A held request above --max-held-request is refused from its header alone,
 * before any of its body is buffered. AlterPartitionReassignments and
 * StreamsGroupHeartbeat answer with one top-level error, so their bytes are
 * read and dropped (never held) and the request is answered POLICY_VIOLATION
 * with a message naming the cap; the connection goes on. The other held APIs
 * answer per item (topic, resource), which takes the body, so their
 * connection is closed, as for a frame above --max-frame-bytes.
 */
int ka_relay_refuse_oversize_hold(ka_session_t *s, const ka_frame_header_t *h)
{
    uint64_t total = 4 + (uint64_t)(uint32_t)h->size, cap = s->server->cfg->max_held_request;
    if (total <= cap)
        return 0;
    int answer = answerable(h);
    s->server->metrics.held_oversize++;
    ka_log(KA_LOG_WARN,
           answer ? "held request above --max-held-request, dropped and answered"
                  : "held request above --max-held-request, closing",
           KA_KI("session", s->id), KA_KS("peer", s->peer), KA_KS("api", ka_api_name(h->api_key)),
           KA_KI("version", h->api_version), KA_KI("correlation_id", h->correlation_id),
           KA_KI("size", total), KA_KI("cap", cap));
    if (answer)
        return KA_HOLD_DISCARD;
    s->events->close(s, KA_LOG_DEBUG, "held request too large", NULL);
    return 1;
}

/* Encodes the answer: size prefix, response header, then the body. */
static int encode_oversize(const ka_frame_header_t *h, const char *msg, ka_writer_t *w)
{
    union {
        struct ka_alterpartitionreassignments_response apr;
        struct ka_streamsgroupheartbeat_response sgh;
    } body;
    struct ka_response_header rh = {.correlation_id = h->correlation_id};
    ka_slice_t message = {(const uint8_t *)msg, (int32_t)strlen(msg)};

    if (h->api_key == KA_API_ALTER_PARTITION_REASSIGNMENTS) {
        ka_alterpartitionreassignments_response_init(&body.apr);
        body.apr.error_code = KA_KAFKA_ERR_POLICY_VIOLATION;
        body.apr.error_message = message;
        body.apr.responses.count = 0;
    } else {
        ka_streamsgroupheartbeat_response_init(&body.sgh);
        body.sgh.error_code = KA_KAFKA_ERR_POLICY_VIOLATION;
        body.sgh.error_message = message;
        body.sgh.member_id = KA_SLICE_LIT("");
    }
    ka_write_i32(w, 0);
    ka_response_header_encode(w, ka_response_header_version(h->api_key, h->api_version), &rh);
    ka_codec_find(h->api_key, KA_RESPONSE)->encode(w, h->api_version, &body);
    if (w->err != 0)
        return KA_EOVERFLOW;
    ka_writer_patch_i32(w, 0, (int32_t)(w->len - 4));
    return 0;
}

int ka_relay_answer_oversize(ka_leg_t *leg)
{
    ka_session_t *s = leg->session;
    const ka_frame_header_t *h = &leg->hold_hdr;
    char msg[300];
    ka_writer_t w;

    snprintf(msg, sizeof(msg),
             "kadmit judges %s requests of at most --max-held-request (%llu bytes), and this one "
             "is %llu bytes; it was not forwarded. Send smaller requests, or raise "
             "--max-held-request.",
             ka_api_name(h->api_key), (unsigned long long)s->server->cfg->max_held_request,
             (unsigned long long)leg->hold_total);
    ka_writer_init(&w, 64 * 1024);
    int rc = encode_oversize(h, msg, &w);
    ka_pbuf_t *pb = rc == 0 ? ka_pool_alloc(&s->server->pool, w.len, w.len, 1, NULL) : NULL;
    ka_inflight_entry_t e = {.correlation_id = h->correlation_id,
                             .api_key = h->api_key,
                             .flags = KA_INFLIGHT_LOCAL,
                             .answer = pb,
                             .answer_len = (uint32_t)w.len};
    if (pb != NULL)
        memcpy(pb->data, w.buf, w.len);
    ka_writer_free(&w);
    if (pb == NULL || ka_inflight_push(&s->inflight, &e) < 0) {
        if (pb != NULL)
            ka_pbuf_unref(&s->server->pool, pb);
        return pb == NULL ? KA_ENOMEM : KA_EOVERFLOW;
    }
    return 0;
}
