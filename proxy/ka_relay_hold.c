/*
 * ka_relay_hold.c: the memory of a frame the relay holds whole (a request an
 * interception handler judges, a response it rewrites), for ka_relay.c.
 */
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

/*
 * A held request above --max-held-request is refused from its header alone,
 * before any of its body is buffered. None of the held APIs can be answered
 * without their body (their errors are per topic), so the connection is
 * closed, as for a frame above --max-frame-bytes.
 */
int ka_relay_refuse_oversize_hold(ka_session_t *s, const ka_frame_header_t *h)
{
    uint64_t total = 4 + (uint64_t)(uint32_t)h->size, cap = s->server->cfg->max_held_request;
    if (total <= cap)
        return 0;
    s->server->metrics.held_oversize++;
    ka_log(KA_LOG_WARN, "held request above --max-held-request, closing", KA_KI("session", s->id),
           KA_KS("peer", s->peer), KA_KS("api", ka_api_name(h->api_key)),
           KA_KI("version", h->api_version), KA_KI("correlation_id", h->correlation_id),
           KA_KI("size", total), KA_KI("cap", cap));
    s->events->close(s, KA_LOG_DEBUG, "held request too large", NULL);
    return 1;
}
