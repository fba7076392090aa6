/*
 * ka_ledger.c: the ledger client (see ka_ledger.h).
 *
 * The client moves through phases: it waits for a cluster view, creates
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
 * is off therefore still counts every live intent. On a ledger topic that
 * stores CreateTime (made by an older kadmit), the writers' clocks stand in,
 * and a warning says so.
 */
#include "ka_ledger.h"

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
#include "ka_ledger_state.h"
#include "ka_log.h"

#define TICK_MS           50
#define RETRY_MS          1000
#define LOOKUP_TIMEOUT_MS 5000
#define CREATE_TIMEOUT_MS 10000
#define RETENTION_TTLS    4 /* records are kept this many TTLs */

enum phase { PH_WAIT_VIEW = 0, PH_CREATING, PH_CLOCK, PH_LOOKUP, PH_RETRY, PH_READING };

/* The opaque of a heartbeat's delivery report (intents carry their seq, outcomes 0). */
#define HEARTBEAT_OPAQUE UINT64_MAX

typedef struct pending {
    struct pending *next;
    uint64_t seq;
    char *held; /* the intent's JSON while the limits are loading; NULL once written */
    size_t held_len;
    ka_ledger_intent_cb cb;
    void *arg;
    int64_t started_ms, deadline_ms; /* loop clock */
} pending_t;

/* Where to start reading, found on the thread pool. */
typedef struct lookup {
    ka_rdk_work_t w; /* first: the work is the lookup */
    ka_ledger_t *l;
    char topic[KA_LEDGER_TOPIC_MAX + 1];
    int64_t since_ms; /* wall clock: the oldest record that can still count */
    int64_t offset;   /* result */
    char err[256];
} lookup_t;

struct ka_ledger {
    uv_loop_t *loop;
    ka_metrics_t *m;
    char topic[KA_LEDGER_TOPIC_MAX + 1];
    char limits_topic[KA_LEDGER_TOPIC_MAX + 1]; /* configured; "" when not given */
    char sidecar[KA_LEDGER_SIDECAR_MAX + 1];
    int64_t timeout_ms, ttl_ms;
    ka_reservations_t *mirror;
    ka_ledger_state_t *state;
    ka_rdk_t *producer, *consumer;
    rd_kafka_topic_t *ptopic, *ctopic;
    enum phase phase;
    int topic_known; /* the view showed it, or creating it found it there */
    int brokers;     /* in the last view: the replication factor to create with */
    int64_t retry_at_ms;
    /* The ledger's clock: loop_ms() + clock_offset_ms once an append time is known. */
    int clock_known;
    int64_t clock_offset_ms;
    int create_time_warned; /* the topic stores CreateTime: said once */
    lookup_t *lookup;       /* in flight on the pool */
    pending_t *pending;
    uint64_t next_seq;
    ka_own_key_t key;           /* the cluster secret (borrowed), or none */
    ka_own_warn_t warn;         /* rate limit of the refusal log lines */
    ka_ledger_health_t *health; /* whether decisions can work (ka_ledger_health.h) */
    uv_timer_t tick;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t loop_ms(ka_ledger_t *l)
{
    uv_update_time(l->loop);
    return (int64_t)uv_now(l->loop);
}

/* The ledger's now: a lower bound of its leader's clock (wall clock until one is known). */
static int64_t ledger_now(ka_ledger_t *l)
{
    return l->clock_known ? loop_ms(l) + l->clock_offset_ms : wall_ms();
}

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
    if (!l->clock_known || ts - loop_ms(l) > l->clock_offset_ms)
        l->clock_offset_ms = ts - loop_ms(l);
    l->clock_known = 1;
    return ts;
}

static void set_connected(ka_ledger_t *l, int up)
{
    if (l->m->ledger_connected != (uint64_t)up)
        ka_log(up ? KA_LOG_INFO : KA_LOG_WARN, up ? "ledger reachable" : "ledger unreachable",
               KA_KS("topic", l->topic));
    l->m->ledger_connected = (uint64_t)up;
}

static void retry_later(ka_ledger_t *l, const char *what, const char *why)
{
    ka_log(KA_LOG_WARN, "ledger setup failed, retrying", KA_KS("step", what),
           KA_KS("topic", l->topic), KA_KS("error", why), KA_KI("retry_ms", RETRY_MS));
    l->phase = PH_RETRY;
    l->retry_at_ms = loop_ms(l) + RETRY_MS;
    set_connected(l, 0);
}

/* Appends a record; opaque_seq is 0 for outcomes. */
static int produce(ka_ledger_t *l, char *json, size_t len, uint64_t opaque_seq)
{
    uint8_t mac[KA_OWN_MAC_LEN];
    rd_kafka_resp_err_t e;
    size_t klen = strlen(l->sidecar);

    if (l->ptopic == NULL) /* the producer could not be recreated */
        e = RD_KAFKA_RESP_ERR__STATE;
    else if (!ka_own_key_set(&l->key)) {
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
    set_connected(l, 0);
    ka_log(KA_LOG_WARN, "ledger intent failed", KA_KS("why", why), KA_KI("seq", p->seq),
           KA_KI("waited_ms", loop_ms(l) - p->started_ms));
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
    if (!ka_ledger_own_authentic(&l->key, &l->warn, l->m, l->topic, msg, loop_ms(l)))
        return;
    int64_t appended = note_time(l, msg);
    enum ka_ledger_applied what =
        ka_ledger_state_apply_at(l->state, msg->payload, msg->len, (uint64_t)msg->offset, appended,
                                 ledger_now(l), loop_ms(l), &seq, err, sizeof(err));
    if (what == KA_LEDGER_MALFORMED) {
        l->m->ledger_records_malformed++;
        ka_log(KA_LOG_WARN, "ledger record malformed, ignored", KA_KI("offset", msg->offset),
               KA_KS("error", err));
        return;
    }
    if (what == KA_LEDGER_REPLAYED) {
        l->m->own_refused_ledger_replayed++;
        if (ka_own_warn_due(&l->warn, loop_ms(l), &suppressed))
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
    int64_t rtt = loop_ms(l) - p->started_ms;
    l->m->ledger_round_trip_ms_sum += (uint64_t)(rtt > 0 ? rtt : 0);
    l->m->ledger_round_trips++;
    set_connected(l, 1);
    ka_ledger_intent_cb cb = p->cb;
    void *arg = p->arg;
    free(p);
    cb(arg, KA_LEDGER_READ_BACK, (uint64_t)msg->offset);
}

static void start_lookup(ka_ledger_t *l);

static void on_delivery(ka_ledger_t *l, const rd_kafka_message_t *msg)
{
    uint64_t seq = (uint64_t)(uintptr_t)msg->_private;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        set_connected(l, 1);
        note_time(l, msg);
        if (seq == HEARTBEAT_OPAQUE && l->phase == PH_CLOCK)
            start_lookup(l); /* the clock is anchored (or the topic has none to give) */
        return;
    }
    if (seq == HEARTBEAT_OPAQUE) {
        if (l->phase == PH_CLOCK)
            retry_later(l, "learn the ledger's clock", rd_kafka_err2str(msg->err));
        return;
    }
    ka_log(KA_LOG_WARN, "ledger append failed", KA_KS("error", rd_kafka_err2str(msg->err)),
           KA_KS("record", seq != 0 ? "intent" : "outcome"));
    pending_t *p = seq != 0 ? take_pending(l, seq) : NULL;
    if (p != NULL)
        fail_pending(l, p, rd_kafka_err2str(msg->err));
}

static void learn_clock(ka_ledger_t *l);

static void on_created(ka_ledger_t *l, rd_kafka_event_t *ev)
{
    size_t n = 0;
    const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
    const rd_kafka_topic_result_t **topics =
        res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
    rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && n == 1)
        e = rd_kafka_topic_result_error(topics[0]);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        retry_later(l, "create topic",
                    n == 1 && rd_kafka_topic_result_error_string(topics[0])
                        ? rd_kafka_topic_result_error_string(topics[0])
                        : rd_kafka_err2str(e));
        return;
    }
    ka_log(KA_LOG_INFO, e ? "ledger topic already exists" : "ledger topic created",
           KA_KS("topic", l->topic));
    l->topic_known = 1;
    learn_clock(l);
}

/* Both handles' events: the consumer's fetches, the producer's reports and results. */
static void event_cb(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    ka_ledger_t *l = arg;
    const rd_kafka_message_t *msg;
    (void)rdk;
    switch (rd_kafka_event_type(ev)) {
    case RD_KAFKA_EVENT_FETCH:
        while ((msg = rd_kafka_event_message_next(ev)) != NULL) {
            ka_ledger_health_read(l->health, msg, loop_ms(l));
            if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) /* errors: logged by the health */
                on_record(l, msg);
        }
        break;
    case RD_KAFKA_EVENT_DR:
        while ((msg = rd_kafka_event_message_next(ev)) != NULL) {
            ka_ledger_health_delivered(l->health, msg, loop_ms(l));
            on_delivery(l, msg);
        }
        break;
    case RD_KAFKA_EVENT_CREATETOPICS_RESULT:
        if (l->phase == PH_CREATING)
            on_created(l, ev);
        break;
    case RD_KAFKA_EVENT_ERROR:
        if (rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
            set_connected(l, 0);
        break;
    default:
        break;
    }
}

static int topic_config(rd_kafka_NewTopic_t *nt, int rf, int64_t ttl_ms, char *why, size_t len)
{
    char isr[16], retention[32];
    snprintf(isr, sizeof(isr), "%d", rf < 2 ? rf : 2);
    snprintf(retention, sizeof(retention), "%" PRId64, ttl_ms * RETENTION_TTLS);
    if (rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", isr) ||
        rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "delete") ||
        rd_kafka_NewTopic_set_config(nt, "retention.ms", retention) ||
        rd_kafka_NewTopic_set_config(nt, "message.timestamp.type", "LogAppendTime")) {
        snprintf(why, len, "cannot set the topic's configs");
        return KA_EINVALID;
    }
    return 0;
}

static void create_topic(ka_ledger_t *l)
{
    char why[256];
    int rf = l->brokers < 3 ? l->brokers : 3;
    rd_kafka_t *rk = ka_rdk_handle(l->producer);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(l->topic, 1, rf, why, sizeof(why));
    if (nt == NULL || topic_config(nt, rf, l->ttl_ms, why, sizeof(why)) < 0) {
        rd_kafka_NewTopic_destroy(nt);
        retry_later(l, "create topic", why);
        return;
    }
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(opt, CREATE_TIMEOUT_MS, why, sizeof(why));
    l->phase = PH_CREATING;
    ka_log(KA_LOG_INFO, "creating the ledger topic", KA_KS("topic", l->topic),
           KA_KI("replication_factor", rf));
    rd_kafka_CreateTopics(rk, &nt, 1, opt, ka_rdk_queue(l->producer));
    rd_kafka_AdminOptions_destroy(opt);
    rd_kafka_NewTopic_destroy(nt);
}

/* On the pool: the first offset not older than the TTL, else the end. */
static void lookup_run(ka_rdk_work_t *w, rd_kafka_t *rk)
{
    lookup_t *k = (lookup_t *)w;
    int64_t low = 0, high = 0;
    /* The end first: a record written after this is at or past `high`. */
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk, k->topic, 0, &low, &high, LOOKUP_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(k->err, sizeof(k->err), "end offset: %s", rd_kafka_err2str(e));
        return;
    }
    rd_kafka_topic_partition_list_t *pl = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(pl, k->topic, 0)->offset = k->since_ms;
    e = rd_kafka_offsets_for_times(rk, pl, LOOKUP_TIMEOUT_MS);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        e = pl->elems[0].err;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(k->err, sizeof(k->err), "offset for time: %s", rd_kafka_err2str(e));
    else
        k->offset = pl->elems[0].offset >= 0 ? pl->elems[0].offset : high;
    rd_kafka_topic_partition_list_destroy(pl);
}

static void lookup_done(ka_rdk_work_t *w, int closed)
{
    lookup_t *k = (lookup_t *)w;
    ka_ledger_t *l = k->l;
    if (closed || l == NULL) {
        free(k);
        return;
    }
    l->lookup = NULL;
    if (k->err[0] != '\0') {
        retry_later(l, "find the start offset", k->err);
        free(k);
        return;
    }
    rd_kafka_topic_conf_t *tconf = rd_kafka_topic_conf_new();
    rd_kafka_topic_conf_set(tconf, "auto.offset.reset", "earliest", NULL, 0);
    if (l->ctopic == NULL)
        l->ctopic = rd_kafka_topic_new(ka_rdk_handle(l->consumer), l->topic, tconf);
    else
        rd_kafka_topic_conf_destroy(tconf);
    if (l->ctopic == NULL ||
        rd_kafka_consume_start_queue(l->ctopic, 0, k->offset, ka_rdk_queue(l->consumer)) < 0) {
        retry_later(l, "start reading", rd_kafka_err2str(rd_kafka_last_error()));
        free(k);
        return;
    }
    l->phase = PH_READING;
    ka_ledger_health_reading(l->health, k->offset, loop_ms(l));
    set_connected(l, 1);
    ka_log(KA_LOG_INFO, "ledger reading", KA_KS("topic", l->topic), KA_KI("from_offset", k->offset),
           KA_KS("sidecar", l->sidecar));
    free(k);
}

static void start_lookup(ka_ledger_t *l)
{
    lookup_t *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        retry_later(l, "find the start offset", "out of memory");
        return;
    }
    k->w.run = lookup_run;
    k->w.done = lookup_done;
    k->l = l;
    snprintf(k->topic, sizeof(k->topic), "%s", l->topic);
    k->since_ms = ledger_now(l) - l->ttl_ms;
    if (ka_rdk_blocking_run(l->consumer, &k->w) < 0) {
        free(k);
        retry_later(l, "find the start offset", "cannot queue the lookup");
        return;
    }
    l->lookup = k;
    l->phase = PH_LOOKUP;
}

/* Appends a heartbeat; its delivery report anchors the ledger's clock, then the lookup. */
static void learn_clock(ka_ledger_t *l)
{
    char *json = NULL;
    size_t len = 0;

    if (ka_ledger_encode_heartbeat(l->sidecar, wall_ms(), &json, &len) < 0 ||
        produce(l, json, len, HEARTBEAT_OPAQUE) < 0) {
        retry_later(l, "learn the ledger's clock", "cannot append a heartbeat");
        return;
    }
    l->phase = PH_CLOCK;
    l->retry_at_ms = loop_ms(l) + LOOKUP_TIMEOUT_MS; /* no report by then: retry */
}

/* Takes the next setup step the phase allows. */
static void advance(ka_ledger_t *l)
{
    if (l->phase != PH_WAIT_VIEW)
        return;
    if (l->topic_known)
        learn_clock(l);
    else if (l->brokers > 0)
        create_topic(l);
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
        if (produce(l, json, first->held_len, first->seq) < 0)
            first->deadline_ms = 0;
    }
}

/* The producer hit a fatal error: a new client in its place (ka_ledger_health.h says why the
 * state is kept). Intents it carried fail, released by the new one; a heartbeat proves it. */
static void recreate_producer(ka_ledger_t *l)
{
    char why[256] = "", *json = NULL;
    size_t len = 0;
    if (l->ptopic != NULL) /* NULL after a failed attempt */
        rd_kafka_topic_destroy(l->ptopic);
    int rc = ka_rdk_recreate(l->producer, why, sizeof(why));
    l->ptopic = rc == 0 ? rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL) : NULL;
    ka_ledger_health_recreated(l->health, l->ptopic == NULL ? (rc < 0 ? rc : KA_ENOMEM) : 0,
                               why[0] ? why : "cannot open the ledger topic");
    if (l->ptopic == NULL)
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
    if (l->phase == PH_CLOCK || l->phase == PH_CREATING) /* their answer went with the client */
        retry_later(l, "recreate the ledger client", "the client was recreated");
    else if (ka_ledger_encode_heartbeat(l->sidecar, wall_ms(), &json, &len) == 0)
        produce(l, json, len, HEARTBEAT_OPAQUE);
}

static void tick_cb(uv_timer_t *t)
{
    ka_ledger_t *l = t->data;
    int64_t now = loop_ms(l);
    if (ka_ledger_health_tick(l->health, l->phase == PH_READING, now) == KA_LEDGER_HEALTH_RECREATE)
        recreate_producer(l);
    if (l->phase == PH_READING && l->m->limits_loaded)
        write_held(l);
    for (pending_t **pp = &l->pending; *pp != NULL;) {
        pending_t *p = *pp;
        if (p->deadline_ms > now) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        fail_pending(l, p, "not read back within --ledger-timeout-ms");
    }
    if (l->phase == PH_CLOCK && now >= l->retry_at_ms)
        retry_later(l, "learn the ledger's clock", "no delivery report for the heartbeat");
    if (l->phase == PH_RETRY && now >= l->retry_at_ms) {
        l->phase = PH_WAIT_VIEW;
        advance(l);
    }
    ka_ledger_state_expire(l->state, now);
    l->m->ledger_intents_live = ka_ledger_state_live(l->state);
}

static int new_handle(ka_ledger_t *l, const ka_ledger_config_t *cfg, enum ka_rdk_role role,
                      ka_rdk_t **out, char *err, size_t errlen)
{
    char client_id[KA_LEDGER_SIDECAR_MAX + 32], timeout[32];
    snprintf(client_id, sizeof(client_id), "kadmit-ledger-%s", cfg->sidecar_id);
    snprintf(timeout, sizeof(timeout), "%" PRId64, cfg->timeout_ms);
    /* Reconnect fast: a decision waits on this connection. */
    const char *const producer[] = {"enable.idempotence",
                                    "true",
                                    "acks",
                                    "all",
                                    "linger.ms",
                                    "0",
                                    "message.timeout.ms",
                                    timeout,
                                    "retry.backoff.ms",
                                    "50",
                                    "reconnect.backoff.ms",
                                    "50",
                                    "reconnect.backoff.max.ms",
                                    "1000",
                                    NULL};
    const char *const consumer[] = {"fetch.wait.max.ms",
                                    "10",
                                    "fetch.error.backoff.ms",
                                    "50",
                                    "enable.partition.eof",
                                    "false",
                                    "reconnect.backoff.ms",
                                    "50",
                                    "reconnect.backoff.max.ms",
                                    "1000",
                                    NULL};
    ka_rdk_settings_t s = {.role = role,
                           .bootstrap = cfg->bootstrap,
                           .client_id = client_id,
                           .security = cfg->security,
                           .props = role == KA_RDK_PRODUCER ? producer : consumer};
    return ka_rdk_new(l->loop, &s, event_cb, l, out, err, errlen);
}

int ka_ledger_start(uv_loop_t *loop, const ka_ledger_config_t *cfg, ka_reservations_t *mirror,
                    ka_metrics_t *metrics, ka_ledger_t **out, char *err, size_t errlen)
{
    ka_ledger_t *l = calloc(1, sizeof(*l));
    *out = NULL;
    if (l == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    l->loop = loop;
    l->m = metrics;
    l->mirror = mirror;
    l->timeout_ms = cfg->timeout_ms;
    l->ttl_ms = cfg->ttl_ms;
    l->key = cfg->security.records;
    snprintf(l->topic, sizeof(l->topic), "%s", cfg->topic);
    snprintf(l->limits_topic, sizeof(l->limits_topic), "%s",
             cfg->limits_topic != NULL ? cfg->limits_topic : "");
    snprintf(l->sidecar, sizeof(l->sidecar), "%s", cfg->sidecar_id);
    /* Seqs only grow, across restarts too: the wall clock in microseconds. */
    l->next_seq = (uint64_t)wall_ms() * 1000;
    int rc = ka_ledger_state_new(l->sidecar, mirror, l->ttl_ms, &l->state);
    if (rc < 0) {
        snprintf(err, errlen, "--sidecar-id must have 1 to %d bytes", KA_LEDGER_SIDECAR_MAX);
        free(l);
        return rc;
    }
    if ((rc = new_handle(l, cfg, KA_RDK_PRODUCER, &l->producer, err, errlen)) < 0 ||
        (rc = new_handle(l, cfg, KA_RDK_CONSUMER, &l->consumer, err, errlen)) < 0 ||
        (l->ptopic = rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL)) == NULL ||
        (rc = ka_ledger_health_new(metrics, l->producer, l->consumer, l->topic, l->limits_topic,
                                   l->timeout_ms, &l->health)) < 0) {
        if (l->ptopic != NULL)
            rd_kafka_topic_destroy(l->ptopic);
        if (rc == 0)
            snprintf(err, errlen, "cannot open the ledger topic %s", l->topic);
        ka_rdk_close(l->producer);
        ka_rdk_close(l->consumer);
        ka_ledger_state_free(l->state);
        free(l);
        return rc < 0 ? rc : KA_EINVALID;
    }
    uv_timer_init(loop, &l->tick);
    l->tick.data = l;
    uv_timer_start(&l->tick, tick_cb, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&l->tick); /* never keeps the loop alive: a drain can end */
    *out = l;
    return 0;
}

void ka_ledger_on_view(ka_ledger_t *l, const ka_cluster_t *view)
{
    ka_slice_t name = {(const uint8_t *)l->topic, (int32_t)strlen(l->topic)};
    l->brokers = (int)ka_cluster_broker_count(view);
    if (ka_cluster_find_topic(view, name) != NULL)
        l->topic_known = 1;
    advance(l);
}

int ka_ledger_usable(const ka_ledger_t *l)
{
    return l != NULL && l->phase == PH_READING &&
           !ka_ledger_health_blocking(l->health, (int64_t)uv_now(l->loop), NULL, 0);
}

int ka_ledger_append_intent(ka_ledger_t *l, const uint64_t *ids, size_t n, ka_ledger_intent_cb cb,
                            void *arg, uint64_t *seq)
{
    if (l == NULL || n == 0 || n > KA_LEDGER_ITEMS_MAX)
        return KA_EINVALID;
    /* A ledger read but unusable refuses at once (the caller says why); one not read yet holds. */
    if (l->phase == PH_READING && ka_ledger_health_blocking(l->health, loop_ms(l), NULL, 0))
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
        rc = ka_ledger_encode_intent(l->sidecar, p->seq, wall_ms(), specs, n, &json, &len);
    }
    free(specs);
    if (rc == 0 && (rc = ka_ledger_state_own_begin(l->state, p->seq, ids, n, loop_ms(l))) < 0)
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
        if ((rc = produce(l, json, len, p->seq)) < 0)
            ka_ledger_state_own_end(l->state, p->seq);
    }
    if (rc < 0) {
        free(p);
        return rc;
    }
    p->cb = cb;
    p->arg = arg;
    p->started_ms = loop_ms(l);
    p->deadline_ms = p->started_ms + l->timeout_ms;
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
        rc = produce(l, json, len, 0);
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
