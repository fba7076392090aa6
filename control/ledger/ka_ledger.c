/*
 * ka_ledger.c: the ledger client (see ka_ledger.h).
 *
 * The client moves through phases (ka_ledger_start.c): it waits for a cluster view, creates
 * the topic if the view lacks it, looks up where to start reading (on the
 * thread pool: librdkafka's offset lookups block), then reads for good. A
 * failed step is retried after RETRY_MS. One timer ticks every TICK_MS to
 * fail intents that were not read back in time, to retry, and to drop the
 * bookkeeping of intents past their TTL.
 *
 * Delivery reports carry an intent's seq as their opaque (outcomes carry
 * none), never a pointer: a report can arrive after its intent has timed
 * out and been forgotten.
 *
 * Every record is signed under the cluster secret (ka_own_mac.h, header
 * kadmit-mac over the sidecar id and the JSON), and a record read without a
 * MAC that verifies is counted and skipped before it reaches the state
 * (the check is in ka_ledger_own.c).
 *
 * An intent waits, unwritten, while the ledger is not read yet (a sidecar
 * starting: a create that arrives then is judged once it is, not refused),
 * and while the cluster's limits have not been read
 * to their end since start (the limits_loaded gauge, which the limits topic
 * sets): the request is then judged again, in phase two, on the limits in
 * force, never on the policy file's alone. It is written as soon as they
 * are, or fails like any intent at --ledger-timeout-ms.
 *
 * Time comes from one clock, the ledger's (ARCHITECTURE invariant 12): the
 * topic stores LogAppendTime, so every record carries the time its
 * partition leader appended it. The client's estimate of the ledger's now
 * is the newest append time it has read or been told in a delivery report,
 * plus the monotonic time since: a lower bound, so an intent is never
 * thought older than it is. Before reading, the client appends a heartbeat
 * and waits for its delivery report, which anchors the clock, so the start
 * offset is looked up on the ledger's clock too. A sidecar whose wall clock
 * is off therefore still counts every live intent. An empty ledger (a fresh
 * cluster) needs no clock to find where to start: it is read from its end at
 * once, and every record read anchors the clock before it is applied. On a ledger topic that
 * stores CreateTime (made by an older kadmit), the writers' clocks stand in,
 * and a warning says so.
 */
#include "ka_ledger_int.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"
#include "ka_ledger_health.h"
#include "ka_ledger_own.h"
#include "ka_ledger_record.h"
#include "ka_log.h"

/* A record's append time, when the topic stores LogAppendTime; 0 otherwise. An append time
 * can only have happened by now, so the newest one anchors the clock. */
static int64_t note_time(ka_ledger_t *l, const rd_kafka_message_t *msg)
{
    rd_kafka_timestamp_type_t type;
    int64_t ts = rd_kafka_message_timestamp(msg, &type);

    if (type != RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME || ts <= 0) {
        if (type == RD_KAFKA_TIMESTAMP_CREATE_TIME && !l->create_time_warned) {
            l->create_time_warned = 1;
            ka_log(KA_LOG_WARN,
                   "ledger topic stores CreateTime, not LogAppendTime: intents' ages use their "
                   "writers' clocks; set message.timestamp.type=LogAppendTime on it",
                   KA_KS("topic", l->topic));
        }
        return 0;
    }
    if (!l->clock_known || ts - ka_ledger_loop_ms(l) > l->clock_offset_ms)
        l->clock_offset_ms = ts - ka_ledger_loop_ms(l);
    l->clock_known = 1;
    return ts;
}

void ka_ledger_set_connected(ka_ledger_t *l, int up)
{
    if (l->m->ledger_connected != (uint64_t)up)
        ka_log(up ? KA_LOG_INFO : KA_LOG_WARN, up ? "ledger reachable" : "ledger unreachable",
               KA_KS("topic", l->topic));
    l->m->ledger_connected = (uint64_t)up;
}

/*
 * Every broker is down before the ledger was first read: the ledger is unreachable, not
 * starting, so held intents get --ledger-timeout-ms, no more. A step that fails while the
 * brokers answer (the first acks=all append of a topic just created can outlast
 * --ledger-timeout-ms) is a start still under way: it is retried, and the holds keep waiting.
 */
static void note_start_failed(ka_ledger_t *l)
{
    if (l->step_ms[KA_LEDGER_STEP_READING] != 0)
        return; /* read once: holds now only wait for the limits */
    l->start_failed = 1;
    for (pending_t *p = l->pending; p != NULL; p = p->next)
        if (p->held != NULL && p->deadline_ms > p->started_ms + l->timeout_ms)
            p->deadline_ms = p->started_ms + l->timeout_ms;
}

void ka_ledger_retry_later(ka_ledger_t *l, const char *what, const char *why)
{
    ka_log(KA_LOG_WARN, "ledger setup failed, retrying", KA_KS("step", what),
           KA_KS("topic", l->topic), KA_KS("error", why), KA_KI("retry_ms", RETRY_MS));
    l->phase = PH_RETRY;
    l->retry_at_ms = ka_ledger_loop_ms(l) + RETRY_MS;
    ka_ledger_set_connected(l, 0);
}

/* Appends a record; opaque_seq is 0 for outcomes. */
int ka_ledger_produce(ka_ledger_t *l, char *json, size_t len, uint64_t opaque_seq)
{
    uint8_t mac[KA_OWN_MAC_LEN];
    rd_kafka_resp_err_t e;
    size_t klen = strlen(l->sidecar);

    if (l->ptopic == NULL) { /* the topic is not known to exist yet: nothing can be written */
        free(json);
        return KA_EINVALID;
    }
    if (!ka_own_key_set(&l->key)) {
        e = rd_kafka_producev(ka_rdk_handle(l->producer), RD_KAFKA_V_RKT(l->ptopic),
                              RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(l->sidecar, klen),
                              RD_KAFKA_V_VALUE(json, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                              RD_KAFKA_V_OPAQUE((void *)(uintptr_t)opaque_seq), RD_KAFKA_V_END);
    } else if (ka_own_mac_sign(&l->key, KA_OWN_LEDGER, l->sidecar, klen, json, len, mac) < 0) {
        e = RD_KAFKA_RESP_ERR__FAIL;
    } else {
        e = rd_kafka_producev(ka_rdk_handle(l->producer), RD_KAFKA_V_RKT(l->ptopic),
                              RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(l->sidecar, klen),
                              RD_KAFKA_V_VALUE(json, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                              RD_KAFKA_V_HEADER(KA_OWN_MAC_HEADER, mac, sizeof(mac)),
                              RD_KAFKA_V_OPAQUE((void *)(uintptr_t)opaque_seq), RD_KAFKA_V_END);
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        free(json);
        ka_log(KA_LOG_WARN, "ledger append refused", KA_KS("error", rd_kafka_err2str(e)));
        return KA_EINVALID;
    }
    l->m->ledger_appends++;
    return 0;
}

static int append_released(ka_ledger_t *l, uint64_t seq, size_t n)
{
    uint8_t *none = calloc(n + 1, 1);
    if (none == NULL)
        return KA_ENOMEM;
    int rc = ka_ledger_append_outcome(l, seq, none, n);
    free(none);
    return rc;
}

static pending_t *take_pending(ka_ledger_t *l, uint64_t seq)
{
    for (pending_t **pp = &l->pending; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->seq == seq) {
            pending_t *p = *pp;
            *pp = p->next;
            return p;
        }
    }
    return NULL;
}

/* Gives up on an intent: released here, in the ledger, and for its caller. */
static void fail_pending(ka_ledger_t *l, pending_t *p, const char *why)
{
    int n = ka_ledger_state_own_abandon(l->state, p->seq);
    if (n >= 0 && p->held == NULL) /* an intent never written needs no outcome */
        append_released(l, p->seq, (size_t)n);
    free(p->held);
    p->held = NULL;
    l->m->ledger_failures++;
    ka_ledger_set_connected(l, 0);
    ka_log(KA_LOG_WARN, "ledger intent failed", KA_KS("why", why), KA_KI("seq", p->seq),
           KA_KI("waited_ms", ka_ledger_loop_ms(l) - p->started_ms));
    ka_ledger_intent_cb cb = p->cb;
    void *arg = p->arg;
    free(p);
    cb(arg, KA_LEDGER_UNAVAILABLE, 0);
}

static void on_record(ka_ledger_t *l, const rd_kafka_message_t *msg)
{
    char err[256] = "";
    uint64_t seq = 0;
    uint64_t suppressed = 0;
    if (!ka_ledger_own_authentic(&l->key, &l->warn, l->m, l->topic, msg, ka_ledger_loop_ms(l)))
        return;
    int64_t appended = note_time(l, msg);
    enum ka_ledger_applied what =
        ka_ledger_state_apply_at(l->state, msg->payload, msg->len, (uint64_t)msg->offset, appended,
                                 ka_ledger_now(l), ka_ledger_loop_ms(l), &seq, err, sizeof(err));
    if (what == KA_LEDGER_MALFORMED) {
        l->m->ledger_records_malformed++;
        ka_log(KA_LOG_WARN, "ledger record malformed, ignored", KA_KI("offset", msg->offset),
               KA_KS("error", err));
        return;
    }
    if (what == KA_LEDGER_REPLAYED) {
        l->m->own_refused_ledger_replayed++;
        if (ka_own_warn_due(&l->warn, ka_ledger_loop_ms(l), &suppressed))
            ka_log(KA_LOG_WARN, "ledger intent refused: its sidecar already used its seq (a copy)",
                   KA_KS("topic", l->topic), KA_KI("partition", msg->partition),
                   KA_KI("offset", msg->offset), KA_KS("reason", "replayed"),
                   KA_KI("refusals_not_logged", suppressed));
        return;
    }
    if (what != KA_LEDGER_OWN_INTENT)
        return;
    pending_t *p = take_pending(l, seq);
    if (p == NULL)
        return;
    int64_t rtt = ka_ledger_loop_ms(l) - p->started_ms;
    l->m->ledger_round_trip_ms_sum += (uint64_t)(rtt > 0 ? rtt : 0);
    l->m->ledger_round_trips++;
    ka_ledger_set_connected(l, 1);
    ka_ledger_intent_cb cb = p->cb;
    void *arg = p->arg;
    free(p);
    cb(arg, KA_LEDGER_READ_BACK, (uint64_t)msg->offset);
}

static void on_delivery(ka_ledger_t *l, const rd_kafka_message_t *msg)
{
    uint64_t seq = (uint64_t)(uintptr_t)msg->_private;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ka_ledger_set_connected(l, 1);
        note_time(l, msg);
        if (seq == HEARTBEAT_OPAQUE && l->phase == PH_CLOCK) {
            /* The clock is anchored (or the topic has none to give). */
            ka_ledger_mark(l, KA_LEDGER_STEP_CLOCK);
            ka_ledger_start_lookup(l);
        }
        return;
    }
    if (seq == HEARTBEAT_OPAQUE) {
        if (l->phase == PH_CLOCK)
            ka_ledger_retry_later(l, "learn the ledger's clock", rd_kafka_err2str(msg->err));
        return;
    }
    ka_log(KA_LOG_WARN, "ledger append failed", KA_KS("error", rd_kafka_err2str(msg->err)),
           KA_KS("record", seq != 0 ? "intent" : "outcome"));
    pending_t *p = seq != 0 ? take_pending(l, seq) : NULL;
    if (p != NULL)
        fail_pending(l, p, rd_kafka_err2str(msg->err));
}

/* Both handles' events: the consumer's fetches, the producer's reports and results. */
void ka_ledger_event_cb(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    ka_ledger_t *l = arg;
    const rd_kafka_message_t *msg;
    (void)rdk;
    switch (rd_kafka_event_type(ev)) {
    case RD_KAFKA_EVENT_FETCH:
        while ((msg = rd_kafka_event_message_next(ev)) != NULL) {
            ka_ledger_health_read(l->health, msg, ka_ledger_loop_ms(l));
            if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) /* errors: logged by the health */
                on_record(l, msg);
        }
        break;
    case RD_KAFKA_EVENT_DR:
        while ((msg = rd_kafka_event_message_next(ev)) != NULL) {
            ka_ledger_health_delivered(l->health, msg, ka_ledger_loop_ms(l));
            on_delivery(l, msg);
        }
        break;
    case RD_KAFKA_EVENT_CREATETOPICS_RESULT:
        if (l->phase == PH_CREATING)
            ka_ledger_on_created(l, ev);
        break;
    case RD_KAFKA_EVENT_ERROR:
        if (rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
            ka_ledger_set_connected(l, 0);
            note_start_failed(l);
        }
        break;
    default:
        break;
    }
}

/*
 * Writes the intents held while the limits loaded, in seq order (readers
 * refuse an intent whose seq is below one they read from the same sidecar).
 * One that cannot be queued fails at the next tick, never from inside
 * ka_ledger_append_intent (its callback must not run there).
 */
static void write_held(ka_ledger_t *l)
{
    for (;;) {
        pending_t *first = NULL;
        for (pending_t *p = l->pending; p != NULL; p = p->next) {
            if (p->held != NULL && (first == NULL || p->seq < first->seq))
                first = p;
        }
        if (first == NULL)
            return;
        char *json = first->held;
        first->held = NULL;
        /* Written now: it has --ledger-timeout-ms to be read back, however long it was held. */
        int64_t back_by = ka_ledger_loop_ms(l) + l->timeout_ms;
        if (first->deadline_ms < back_by)
            first->deadline_ms = back_by;
        if (ka_ledger_produce(l, json, first->held_len, first->seq) < 0)
            first->deadline_ms = 0;
    }
}

/* The producer hit a fatal error: a new client in its place (ka_ledger_health.h says why the
 * state is kept). Intents it carried fail, released by the new one; a heartbeat proves it. The
 * topic handle is opened again once the topic is known to exist (else learn_clock opens it). */
static void recreate_producer(ka_ledger_t *l)
{
    char why[256] = "", *json = NULL;
    size_t len = 0;
    int reopen = l->phase == PH_LOOKUP || l->phase == PH_READING;
    if (l->ptopic != NULL) {
        rd_kafka_topic_destroy(l->ptopic);
        l->ptopic = NULL;
    }
    int rc = ka_rdk_recreate(l->producer, why, sizeof(why));
    if (rc == 0 && reopen &&
        (l->ptopic = rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL)) == NULL)
        rc = KA_ENOMEM;
    ka_ledger_health_recreated(l->health, rc, why[0] ? why : "cannot open the ledger topic");
    if (rc < 0)
        return;
    for (pending_t **pp = &l->pending; *pp != NULL;) {
        pending_t *p = *pp;
        if (p->held != NULL) { /* never written: still waits for the ledger */
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        fail_pending(l, p, "the ledger client is being recreated after a fatal error");
    }
    if (!reopen) /* an answer in flight went with the client */
        ka_ledger_retry_later(l, "recreate the ledger client", "the client was recreated");
    else if (ka_ledger_encode_heartbeat(l->sidecar, ka_ledger_wall_ms(), &json, &len) == 0)
        ka_ledger_produce(l, json, len, HEARTBEAT_OPAQUE);
}

void ka_ledger_tick_cb(uv_timer_t *t)
{
    ka_ledger_t *l = t->data;
    int64_t now = ka_ledger_loop_ms(l);
    if (ka_ledger_health_tick(l->health, l->phase == PH_READING, now) == KA_LEDGER_HEALTH_RECREATE)
        recreate_producer(l);
    if (l->phase != PH_READING && l->start_failed && !l->m->ledger_connected)
        snprintf(l->m->ledger_blocked_why, sizeof(l->m->ledger_blocked_why),
                 "is unreachable: none of its brokers answered");
    if (l->phase == PH_READING && l->m->limits_loaded)
        write_held(l);
    for (pending_t **pp = &l->pending; *pp != NULL;) {
        pending_t *p = *pp;
        if (p->deadline_ms > now) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        fail_pending(l, p,
                     p->held != NULL ? "held unwritten for as long as its request may wait: the "
                                       "ledger (or the limits) not read yet"
                                     : "not read back within --ledger-timeout-ms");
    }
    if (l->phase == PH_CLOCK && now >= l->retry_at_ms)
        ka_ledger_retry_later(l, "learn the ledger's clock",
                              "no delivery report for the heartbeat");
    if (l->phase == PH_RETRY && now >= l->retry_at_ms) {
        l->phase = PH_WAIT_VIEW;
        ka_ledger_advance(l);
    }
    ka_ledger_state_expire(l->state, now);
    l->m->ledger_intents_live = ka_ledger_state_live(l->state);
}

int ka_ledger_usable(const ka_ledger_t *l)
{
    /* The health's verdict, as /v1/admission and the metric show it (each tick, and at once
     * when a check finds the topic unavailable), so they never disagree with admission. */
    return l != NULL && l->phase == PH_READING && l->m->ledger_usable;
}

int ka_ledger_append_intent(ka_ledger_t *l, const uint64_t *ids, size_t n, int64_t hold_ms,
                            ka_ledger_intent_cb cb, void *arg, uint64_t *seq)
{
    if (l == NULL || n == 0 || n > KA_LEDGER_ITEMS_MAX)
        return KA_EINVALID;
    /* A ledger read but unusable refuses at once (the caller says why); one not read yet holds. */
    if (l->phase == PH_READING &&
        ka_ledger_health_blocking(l->health, ka_ledger_loop_ms(l), NULL, 0))
        return KA_EINVALID;
    ka_reservation_spec_t *specs = calloc(n, sizeof(*specs));
    pending_t *p = calloc(1, sizeof(*p));
    char *json = NULL;
    size_t len = 0;
    int rc = specs == NULL || p == NULL ? KA_ENOMEM : 0;
    int others = 0; /* an item of a topic not kadmit's own */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = ka_reservations_describe(l->mirror, ids[i], &specs[i], NULL);
        others |= rc == 0 && !ka_ledger_own_topic(l->topic, l->limits_topic, specs[i].topic);
    }
    /* Held until the ledger is read (a sidecar starting, or reconnecting) and, unless all its
     * items are kadmit's own topics, until the limits are loaded; at most --ledger-timeout-ms. */
    int hold = (others && !l->m->limits_loaded) || l->phase != PH_READING;
    if (rc == 0) {
        uint64_t floor = ka_ledger_state_seq_floor(l->state);
        if (l->next_seq < floor)
            l->next_seq = floor;
        p->seq = l->next_seq++;
        rc =
            ka_ledger_encode_intent(l->sidecar, p->seq, ka_ledger_wall_ms(), specs, n, &json, &len);
    }
    free(specs);
    if (rc == 0 &&
        (rc = ka_ledger_state_own_begin(l->state, p->seq, ids, n, ka_ledger_loop_ms(l))) < 0)
        free(json);
    if (rc == 0 && hold) {
        p->held = json; /* written by the tick once the limits are in force */
        p->held_len = len;
    } else if (rc == 0) {
        /* Earlier held intents go first. (Creating kadmit's own topics does
         * not wait: while the limits load, such an intent can pass held ones,
         * which are then refused as copies and fail at their timeout.) */
        if (l->m->limits_loaded)
            write_held(l); /* the phase is READING here */
        if ((rc = ka_ledger_produce(l, json, len, p->seq)) < 0)
            ka_ledger_state_own_end(l->state, p->seq);
    }
    if (rc < 0) {
        free(p);
        return rc;
    }
    p->cb = cb;
    p->arg = arg;
    p->started_ms = ka_ledger_loop_ms(l);
    /* A held intent waits as long as its request may (a sidecar starting: the request's own
     * timeout, capped), unless the start-up already failed (the ledger is unreachable: fail
     * closed); a written one has --ledger-timeout-ms to come back. */
    p->deadline_ms =
        p->started_ms +
        (hold && !l->start_failed && hold_ms > l->timeout_ms ? hold_ms : l->timeout_ms);
    p->next = l->pending;
    l->pending = p;
    *seq = p->seq;
    return 0;
}

void ka_ledger_forget(ka_ledger_t *l, uint64_t seq)
{
    pending_t *p = take_pending(l, seq);
    if (p == NULL)
        return;
    int n = ka_ledger_state_own_abandon(l->state, seq);
    if (n >= 0 && p->held == NULL)
        append_released(l, seq, (size_t)n);
    free(p->held);
    free(p);
}

int ka_ledger_append_outcome(ka_ledger_t *l, uint64_t seq, const uint8_t *admitted, size_t n)
{
    char *json = NULL;
    size_t len = 0;
    int rc = ka_ledger_encode_outcome(l->sidecar, seq, admitted, n, &json, &len);
    if (rc == 0)
        rc = ka_ledger_produce(l, json, len, 0);
    ka_ledger_state_own_end(l->state, seq);
    return rc;
}

static void tick_closed_cb(uv_handle_t *h)
{
    free(h->data);
}

void ka_ledger_stop(ka_ledger_t *l)
{
    if (l == NULL)
        return;
    if (l->lookup != NULL)
        l->lookup->l = NULL;
    if (l->ctopic != NULL) {
        if (l->phase == PH_READING)
            rd_kafka_consume_stop(l->ctopic, 0);
        rd_kafka_topic_destroy(l->ctopic);
    }
    if (l->ptopic != NULL)
        rd_kafka_topic_destroy(l->ptopic);
    ka_ledger_health_free(l->health);
    ka_rdk_close(l->producer);
    ka_rdk_close(l->consumer);
    while (l->pending != NULL) {
        pending_t *p = l->pending;
        l->pending = p->next;
        free(p->held);
        free(p);
    }
    ka_ledger_state_free(l->state);
    l->m->ledger_connected = 0;
    uv_close((uv_handle_t *)&l->tick, tick_closed_cb);
}
