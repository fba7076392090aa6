/*
 * ka_limits.c: see ka_limits.h.
 *
 * Two librdkafka handles served on the loop (ka_rdk.h): an idempotent
 * producer, whose queue carries delivery reports and the CreateTopics
 * result, and a consumer that reads the topic's one partition from the
 * beginning into its handle's queue (no consumer group: every sidecar reads
 * everything, and commits nothing).
 *
 * The state moves one way: wait until the cluster view knows the brokers,
 * create the topic (an existing one is fine), then consume for good. A timer
 * drives the first two steps, retries a failed creation, and fails writes
 * whose read-back does not come in time.
 *
 * Every record is signed (ka_own_mac.h, header kadmit-mac) and written for
 * the offset it must land at, the topic's end as this sidecar read it
 * (ka_limits_record_place). One write of this sidecar's is in flight at a
 * time, so a second one would be composed on a layer not yet in force: it
 * is refused (KA_ECONFLICT) rather than queued. A record refused when read
 * (unsigned, a bad MAC, out of place) changes nothing; when it is the
 * topic's newest, compaction would keep it over the layer in force, so a
 * sidecar that has read to the end writes that layer again after a random
 * delay (a repair), unless a newer record came first.
 */
#include "ka_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"
#include "ka_log.h"
#include "ka_rdk_side.h"
#include "ka_rdk_topic.h"

#define TICK_MS           100
#define CREATE_RETRY_MS   1000
#define CREATE_TIMEOUT_MS 10000
#define AWAIT_TOPIC_MS    3000 /* a new topic's leader; then librdkafka finds it itself */
/* A repair waits REPAIR_DELAY_MS plus up to REPAIR_JITTER_MS (so the
 * sidecars rarely repair at once), and at most one per REPAIR_INTERVAL_MS. */
#define REPAIR_DELAY_MS    500
#define REPAIR_JITTER_MS   2000
#define REPAIR_INTERVAL_MS 5000

/* AWAITING: the topic exists; waiting until the consumer's broker shows it with a leader
 * (ka_rdk_topic.h), so reading does not wait for librdkafka's scan of unknown topics. */
enum limits_state { WAIT_BROKERS, CREATING, AWAITING, CONSUMING };

typedef struct pending_write {
    struct pending_write *next;
    ka_limits_written_fn done;
    void *arg;
    int64_t offset;    /* -1 until the replicas acknowledged it */
    int64_t at;        /* the offset it was written for: it applies only there */
    uint64_t deadline; /* loop time by which it must be read back */
    bool in_flight;    /* librdkafka still holds it (a delivery report will come) */
    bool repair;       /* written by the module itself, not a caller's change */
} pending_write_t;

struct ka_limits {
    uv_loop_t *loop;
    char bootstrap[KA_RDK_BOOTSTRAP_MAX], topic[250], writer[KA_LIMITS_WRITER_MAX];
    ka_limits_handlers_t h;
    ka_rdk_t *producer, *consumer;
    rd_kafka_topic_t *produce_topic, *consume_topic;
    uv_timer_t timer;
    enum limits_state state;
    uint64_t retry_at;
    bool loading;
    bool closing;
    int64_t offset;      /* of the last record read */
    int64_t next_offset; /* where the next record lands, as far as read: a write's "at" */
    ka_own_key_t key;    /* the cluster secret (borrowed), or none */
    ka_metrics_t *m;     /* refusals, conflicts, repairs, limits_loaded; may be NULL */
    ka_own_warn_t warn;  /* rate limit of the refusal log lines */
    /* The last record applied (its offset, -1 for none in this run, and its
     * layer), which a repair writes again; and whether the newest record
     * read was refused, which calls for one. */
    int64_t applied_offset;
    char *applied_layer;
    bool newest_refused;
    uint64_t repair_at, last_repair_at; /* loop ms; repair_at 0: none due */
    uint64_t jitter_state;              /* xorshift64, seeded per process and sidecar */
    pending_write_t *pending;
    char problem[768];
};

static uint64_t in_flight_writes(const ka_limits_t *l)
{
    uint64_t n = 0;

    for (const pending_write_t *w = l->pending; w != NULL; w = w->next)
        n += w->done != NULL || w->in_flight || w->repair;
    return n;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void report(ka_limits_t *l, const char *why)
{
    snprintf(l->problem, sizeof(l->problem), "%s", why);
    if (l->h.problem != NULL)
        l->h.problem(l->h.arg, why);
}

/* Ends one pending write (unlinked by the caller unless librdkafka still holds it). */
static void finish(pending_write_t *w, int rc, int64_t offset, const char *why)
{
    ka_limits_written_fn done = w->done;

    w->done = NULL;
    if (done != NULL)
        done(w->arg, rc, offset, why);
}

/* Confirms the writes whose record has now been read back. */
static void confirm_read_back(ka_limits_t *l)
{
    pending_write_t **p = &l->pending;
    char why[600];

    while (*p != NULL) {
        pending_write_t *w = *p;
        if (w->offset >= 0 && w->offset <= l->offset) {
            w->repair = false; /* read back: it no longer holds the next write */
            if (w->offset == w->at) {
                finish(w, 0, w->offset, "");
            } else {
                if (w->done != NULL && l->m != NULL)
                    l->m->limits_conflicts++;
                snprintf(why, sizeof(why),
                         "another change of the limits reached the topic %.200s first (this one "
                         "was written for offset %lld and landed at %lld, so it changed "
                         "nothing); read the limits again and retry",
                         l->topic, (long long)w->at, (long long)w->offset);
                finish(w, KA_ECONFLICT, w->offset, why);
            }
        }
        if (w->done == NULL && !w->in_flight && !w->repair) {
            *p = w->next;
            free(w);
        } else {
            p = &w->next;
        }
    }
}

/*
 * The topic exists: read it from the beginning, for good. Its topic handles
 * are opened only now: opening one asks for the topic's metadata at once,
 * where a handle opened before the topic existed waits for librdkafka's
 * once-a-second scan of unknown topics.
 */
static void consume_from_beginning(ka_limits_t *l);

static void topic_visible_cb(void *arg, int ready)
{
    ka_limits_t *l = arg;
    (void)ready; /* not visible in time: librdkafka finds it itself */
    if (l->state == AWAITING && !l->closing)
        consume_from_beginning(l);
}

static void start_consuming(ka_limits_t *l)
{
    if (l->produce_topic == NULL)
        l->produce_topic = rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL);
    if (l->consume_topic == NULL)
        l->consume_topic = rd_kafka_topic_new(ka_rdk_handle(l->consumer), l->topic, NULL);
    l->state = AWAITING;
    if (ka_rdk_topic_await(l->consumer, l->topic, AWAIT_TOPIC_MS, topic_visible_cb, l) < 0)
        consume_from_beginning(l);
}

static void consume_from_beginning(ka_limits_t *l)
{
    if (l->produce_topic == NULL || l->consume_topic == NULL ||
        rd_kafka_consume_start_queue(l->consume_topic, 0, RD_KAFKA_OFFSET_BEGINNING,
                                     ka_rdk_queue(l->consumer)) < 0) {
        report(l, "limits topic: the consumer did not start; retrying");
        l->state = WAIT_BROKERS;
        l->retry_at = uv_now(l->loop) + CREATE_RETRY_MS;
        return;
    }
    l->state = CONSUMING;
}

static void on_create_result(ka_limits_t *l, rd_kafka_event_t *ev)
{
    const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t **topics = res ? rd_kafka_CreateTopics_result_topics(res, &n) : 0;
    rd_kafka_resp_err_t code =
        n == 1 ? rd_kafka_topic_result_error(topics[0]) : rd_kafka_event_error(ev);
    char why[600];

    if (code == RD_KAFKA_RESP_ERR_NO_ERROR || code == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        start_consuming(l);
        return;
    }
    snprintf(why, sizeof(why), "limits topic %s could not be created: %s; retrying", l->topic,
             n == 1 && rd_kafka_topic_result_error_string(topics[0])
                 ? rd_kafka_topic_result_error_string(topics[0])
                 : rd_kafka_err2str(code));
    report(l, why);
    l->state = WAIT_BROKERS;
    l->retry_at = uv_now(l->loop) + CREATE_RETRY_MS;
}

static void on_delivery(ka_limits_t *l, rd_kafka_event_t *ev)
{
    const rd_kafka_message_t *m;
    char why[400];

    while ((m = rd_kafka_event_message_next(ev)) != NULL) {
        pending_write_t *w = m->_private;
        if (w == NULL)
            continue;
        w->in_flight = false;
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            /* A record that timed out on the wire may still have been written:
             * say so, since it would then apply on every sidecar. */
            snprintf(why, sizeof(why),
                     "the record was not acknowledged by the in-sync replicas of %s: %s%s",
                     l->topic, rd_kafka_err2str(m->err),
                     rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED
                         ? " (it may still have been written: check GET /v1/policy)"
                         : "");
            finish(w, KA_EINVALID, -1, why);
            w->repair = false;
        } else {
            w->offset = m->offset;
        }
    }
    confirm_read_back(l);
}

static void producer_event_cb(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    ka_limits_t *l = arg;

    (void)rdk;
    if (l->closing)
        return;
    switch (rd_kafka_event_type(ev)) {
    case RD_KAFKA_EVENT_DR:
        on_delivery(l, ev);
        break;
    case RD_KAFKA_EVENT_CREATETOPICS_RESULT:
        on_create_result(l, ev);
        break;
    case RD_KAFKA_EVENT_ERROR:
        report(l, rd_kafka_event_error_string(ev));
        break;
    default:
        break;
    }
}

/* The next repair delay's jitter: different on every sidecar, so that they
 * rarely repair at the same moment (rand() would be the same everywhere). */
static uint64_t jitter_ms(ka_limits_t *l)
{
    uint64_t x = l->jitter_state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    l->jitter_state = x;
    return x % REPAIR_JITTER_MS;
}

/* The end of the partition: the first time, the topic has been read. */
static void on_end(ka_limits_t *l)
{
    int64_t low = -1, high = -1;
    uint64_t now = uv_now(l->loop), at;

    /* The end offset from the last fetch (cached, not a request): the topic
     * may end past its last record (a tombstone removed by compaction). */
    if (rd_kafka_get_watermark_offsets(ka_rdk_handle(l->consumer), l->topic, 0, &low, &high) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        high > l->next_offset)
        l->next_offset = high;
    if (l->loading) {
        l->loading = false;
        if (l->m != NULL)
            l->m->limits_loaded = 1;
        if (l->h.loaded != NULL)
            l->h.loaded(l->h.arg);
    }
    if (l->newest_refused && l->applied_offset >= 0 && l->repair_at == 0) {
        at = now + REPAIR_DELAY_MS + jitter_ms(l);
        if (l->last_repair_at != 0 && at < l->last_repair_at + REPAIR_INTERVAL_MS)
            at = l->last_repair_at + REPAIR_INTERVAL_MS;
        l->repair_at = at;
    }
}

/* Counts and logs (rate-limited) a record that changes nothing. */
static void refuse(ka_limits_t *l, const rd_kafka_message_t *m, enum ka_own_verdict verdict,
                   const char *why)
{
    uint64_t suppressed = 0;

    l->newest_refused = true;
    if (l->m != NULL) {
        if (verdict == KA_OWN_UNSIGNED)
            l->m->own_refused_limits_unsigned++;
        else if (verdict == KA_OWN_BAD_MAC)
            l->m->own_refused_limits_bad_mac++;
        else
            l->m->own_refused_limits_out_of_place++;
    }
    if (ka_own_warn_due(&l->warn, (int64_t)uv_now(l->loop), &suppressed))
        ka_log(KA_LOG_WARN, "limits record refused; it changes nothing", KA_KS("topic", l->topic),
               KA_KI("partition", m->partition), KA_KI("offset", m->offset), KA_KS("reason", why),
               KA_KI("refusals_not_logged", suppressed));
}

/* The record's MAC, from its kadmit-mac header (NULL when it has none). */
static enum ka_own_verdict check_mac(ka_limits_t *l, const rd_kafka_message_t *m)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *mac = NULL;
    size_t mac_len = 0;

    if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, KA_OWN_MAC_HEADER, &mac, &mac_len) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
        mac = NULL;
    return ka_own_mac_verify(&l->key, KA_OWN_LIMITS, m->key, m->key_len, m->payload, m->len, mac,
                             mac_len);
}

static void on_message(ka_limits_t *l, const rd_kafka_message_t *m)
{
    ka_limits_record_t rec;
    char why[768], err[400] = "";

    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        on_end(l);
        return;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(why, sizeof(why), "limits topic %s: %s", l->topic, rd_kafka_message_errstr(m));
        report(l, why);
        return;
    }
    l->offset = m->offset;
    if (m->offset + 1 > l->next_offset)
        l->next_offset = m->offset + 1;
    enum ka_own_verdict verdict = check_mac(l, m);
    if (verdict == KA_OWN_UNSIGNED || verdict == KA_OWN_BAD_MAC) {
        refuse(l, m, verdict,
               verdict == KA_OWN_UNSIGNED
                   ? "unsigned: no kadmit-mac header, and a cluster secret is set"
                   : "bad_mac: not signed with this cluster's secret, or changed since");
        return;
    }
    if (ka_limits_record_decode(m->payload, m->len, &rec, err, sizeof(err)) < 0) {
        l->newest_refused = true;
        snprintf(why, sizeof(why), "limits topic %s, offset %lld: skipped: %s", l->topic,
                 (long long)m->offset, err);
        report(l, why);
        return;
    }
    enum ka_limits_place place = ka_limits_record_place(&rec, m->offset, ka_own_key_set(&l->key));
    if (place != KA_LIMITS_IN_PLACE) {
        if (place == KA_LIMITS_MOVED)
            snprintf(why, sizeof(why),
                     "out_of_place: written for offset %lld (a concurrent change came first, or "
                     "it is a copy of an old record)",
                     (long long)rec.at);
        else
            snprintf(why, sizeof(why),
                     "out_of_place: it names no offset (an older writer, or a tombstone), and a "
                     "cluster secret is set");
        refuse(l, m, KA_OWN_AUTHENTIC, why);
        ka_limits_record_clear(&rec);
        return;
    }
    char *layer = strdup(rec.overrides != NULL ? rec.overrides : "{}");
    if (layer != NULL) {
        free(l->applied_layer);
        l->applied_layer = layer;
        l->applied_offset = m->offset;
    }
    l->newest_refused = false;
    l->repair_at = 0;
    l->problem[0] = '\0';
    if (l->h.record != NULL)
        l->h.record(l->h.arg, &rec, m->offset);
    ka_limits_record_clear(&rec);
}

/* Fetched records, and the end of the partition (a consumer error event). */
static void consumer_event_cb(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev)
{
    ka_limits_t *l = arg;
    const rd_kafka_message_t *m;
    char why[600];

    (void)rdk;
    if (l->closing)
        return;
    if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_FETCH) {
        while ((m = rd_kafka_event_message_next(ev)) != NULL)
            on_message(l, m);
    } else if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_ERROR) {
        if (rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            on_end(l);
        } else {
            snprintf(why, sizeof(why), "limits topic %s: %s", l->topic,
                     rd_kafka_event_error_string(ev));
            report(l, why);
        }
    }
    confirm_read_back(l);
}

static void create_topic(ka_limits_t *l, int brokers)
{
    int rf = brokers < 3 ? brokers : 3;
    char errstr[256], isr[16];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(l->topic, 1, rf, errstr, sizeof(errstr));
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(ka_rdk_handle(l->producer), RD_KAFKA_ADMIN_OP_CREATETOPICS);

    snprintf(isr, sizeof(isr), "%d", rf < 2 ? rf : 2);
    if (nt == NULL || opts == NULL ||
        rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact") != 0 ||
        rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", isr) != 0) {
        report(l, "limits topic: librdkafka refused the topic's settings");
    } else {
        rd_kafka_AdminOptions_set_request_timeout(opts, CREATE_TIMEOUT_MS, errstr, sizeof(errstr));
        rd_kafka_CreateTopics(ka_rdk_handle(l->producer), &nt, 1, opts, ka_rdk_queue(l->producer));
        l->state = CREATING;
    }
    if (opts != NULL)
        rd_kafka_AdminOptions_destroy(opts);
    if (nt != NULL)
        rd_kafka_NewTopic_destroy(nt);
}

static int write_record(ka_limits_t *l, const char *layer, bool repair, ka_limits_written_fn done,
                        void *arg, char *err, size_t errlen);

static void timer_cb(uv_timer_t *t)
{
    ka_limits_t *l = t->data;
    uint64_t now = uv_now(l->loop);
    int brokers;

    if (l->state == WAIT_BROKERS && now >= l->retry_at) {
        brokers = l->h.broker_count ? l->h.broker_count(l->h.arg) : 0;
        if (brokers > 0 && l->h.topic_exists != NULL && l->h.topic_exists(l->h.arg, l->topic))
            start_consuming(l);
        else if (brokers > 0)
            create_topic(l, brokers);
    }
    if (l->repair_at != 0 && now >= l->repair_at) {
        l->repair_at = 0;
        if (l->newest_refused && !l->loading && l->applied_layer != NULL &&
            in_flight_writes(l) == 0)
            write_record(l, l->applied_layer, true, NULL, NULL, NULL, 0);
    }
    for (pending_write_t *w = l->pending; w != NULL; w = w->next) {
        if (now >= w->deadline)
            w->repair = false;
        if (w->done != NULL && now >= w->deadline)
            finish(w,
                   w->offset < 0        ? KA_EINVALID
                   : w->offset == w->at ? 0
                                        : KA_ECONFLICT,
                   w->offset,
                   w->offset < 0        ? "no acknowledgement from the topic's in-sync replicas "
                                          "in time"
                   : w->offset == w->at ? "the record was acknowledged but not yet read back here"
                                        : "another change of the limits reached the topic first; "
                                          "this one changed nothing");
    }
    confirm_read_back(l);
}

static int make_handles(ka_limits_t *l, const ka_limits_settings_t *settings, char *err,
                        size_t errlen)
{
    ka_rdk_settings_t s = {.role = KA_RDK_PRODUCER,
                           .bootstrap = l->bootstrap,
                           .client_id = "kadmit-limits",
                           .props = ka_rdk_side_props(KA_RDK_USE_LIMITS_PRODUCER)};
    int rc;

    if (settings->security != NULL)
        s.security = *settings->security;
    rc = ka_rdk_new(l->loop, &s, producer_event_cb, l, &l->producer, err, errlen);
    if (rc < 0)
        return rc;
    s.role = KA_RDK_CONSUMER;
    s.props = ka_rdk_side_props(KA_RDK_USE_LIMITS_CONSUMER);
    rc = ka_rdk_new(l->loop, &s, consumer_event_cb, l, &l->consumer, err, errlen);
    return rc;
}

static void destroy_clients(ka_limits_t *l)
{
    if (l->consume_topic != NULL && l->state == CONSUMING)
        rd_kafka_consume_stop(l->consume_topic, 0);
    if (l->produce_topic != NULL)
        rd_kafka_topic_destroy(l->produce_topic);
    if (l->consume_topic != NULL)
        rd_kafka_topic_destroy(l->consume_topic);
    /* The producer's undelivered records are purged, not flushed: a write
     * not yet acknowledged has been answered as failed. */
    ka_rdk_close(l->producer);
    ka_rdk_close(l->consumer);
    l->produce_topic = l->consume_topic = NULL;
    l->producer = l->consumer = NULL;
}

static void timer_closed_cb(uv_handle_t *h)
{
    ka_limits_t *l = h->data;

    while (l->pending != NULL) {
        pending_write_t *w = l->pending;
        l->pending = w->next;
        free(w);
    }
    free(l->applied_layer);
    free(l);
}

int ka_limits_start(uv_loop_t *loop, const ka_limits_settings_t *settings,
                    const ka_limits_handlers_t *handlers, ka_limits_t **out, char *err,
                    size_t errlen)
{
    ka_limits_t *l = calloc(1, sizeof(*l));
    int rc;

    *out = NULL;
    if (l == NULL) {
        snprintf(err, errlen, "limits topic: out of memory");
        return KA_ENOMEM;
    }
    l->loop = loop;
    l->h = *handlers;
    l->offset = -1;
    l->next_offset = 0;
    l->applied_offset = -1;
    l->loading = true;
    l->jitter_state = uv_hrtime() | 1;
    for (const char *c = settings->writer; c != NULL && *c != '\0'; c++)
        l->jitter_state = (l->jitter_state ^ (uint8_t)*c) * 0x100000001b3ull;
    if (l->jitter_state == 0)
        l->jitter_state = 1;
    l->m = settings->metrics;
    if (settings->security != NULL)
        l->key = settings->security->records;
    if (l->m != NULL)
        l->m->limits_loaded = 0;
    snprintf(l->bootstrap, sizeof(l->bootstrap), "%s", settings->bootstrap);
    snprintf(l->topic, sizeof(l->topic), "%s", settings->topic);
    snprintf(l->writer, sizeof(l->writer), "%s", settings->writer);
    rc = make_handles(l, settings, err, errlen);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    if (rc < 0) {
        ka_limits_close(l);
        return rc;
    }
    uv_timer_start(&l->timer, timer_cb, 0, TICK_MS);
    uv_unref((uv_handle_t *)&l->timer); /* a drain ends without waiting for it */
    *out = l;
    return 0;
}

/* Signs and queues one record of `layer`, written for the topic's end. */
static int write_record(ka_limits_t *l, const char *layer, bool repair, ka_limits_written_fn done,
                        void *arg, char *err, size_t errlen)
{
    uint8_t mac[KA_OWN_MAC_LEN];
    pending_write_t *w;
    char *value = NULL;
    size_t len;
    int rc;

    rc = ka_limits_record_encode(layer, l->next_offset, l->writer, wall_ms(), &value, &len);
    if (rc == 0 && ka_own_key_set(&l->key))
        rc = ka_own_mac_sign(&l->key, KA_OWN_LIMITS, KA_LIMITS_RECORD_KEY,
                             strlen(KA_LIMITS_RECORD_KEY), value, len, mac);
    w = rc == 0 ? calloc(1, sizeof(*w)) : NULL;
    if (w == NULL) {
        rc = rc < 0 ? rc : KA_ENOMEM;
        free(value);
        snprintf(err, errlen, "the new layer could not be encoded: %s", ka_strerror(rc));
        return rc;
    }
    w->done = done;
    w->arg = arg;
    w->offset = -1;
    w->at = l->next_offset;
    w->repair = repair;
    w->deadline = uv_now(l->loop) + KA_LIMITS_WRITE_TIMEOUT_MS + 1000;
    /* Without a secret the header is left out: records stay as before. */
    rd_kafka_resp_err_t e =
        ka_own_key_set(&l->key)
            ? rd_kafka_producev(ka_rdk_handle(l->producer), RD_KAFKA_V_RKT(l->produce_topic),
                                RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                                RD_KAFKA_V_KEY(KA_LIMITS_RECORD_KEY, strlen(KA_LIMITS_RECORD_KEY)),
                                RD_KAFKA_V_VALUE(value, len),
                                RD_KAFKA_V_HEADER(KA_OWN_MAC_HEADER, mac, sizeof(mac)),
                                RD_KAFKA_V_OPAQUE(w), RD_KAFKA_V_END)
            : rd_kafka_producev(ka_rdk_handle(l->producer), RD_KAFKA_V_RKT(l->produce_topic),
                                RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                                RD_KAFKA_V_KEY(KA_LIMITS_RECORD_KEY, strlen(KA_LIMITS_RECORD_KEY)),
                                RD_KAFKA_V_VALUE(value, len), RD_KAFKA_V_OPAQUE(w), RD_KAFKA_V_END);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (err != NULL)
            snprintf(err, errlen, "the record could not be queued: %s", rd_kafka_err2str(e));
        free(value);
        free(w);
        return KA_EINVALID;
    }
    if (repair) {
        l->last_repair_at = uv_now(l->loop);
        if (l->m != NULL)
            l->m->limits_repairs++;
        ka_log(KA_LOG_INFO,
               "limits topic: the newest record was refused; writing the layer in "
               "force again",
               KA_KS("topic", l->topic), KA_KI("at", w->at),
               KA_KI("applied_offset", l->applied_offset));
    }
    w->in_flight = true;
    w->next = l->pending;
    l->pending = w;
    return 0;
}

int ka_limits_write(ka_limits_t *l, const char *layer, ka_limits_written_fn done, void *arg,
                    char *err, size_t errlen)
{
    if (l->loading) {
        /* A change composed on a layer not yet read would drop others' changes. */
        snprintf(err, errlen, "the limits topic %s has not been read to its end yet; retry",
                 l->topic);
        return KA_EINVALID;
    }
    if (in_flight_writes(l) > 0) {
        /* The layer it was composed on is not in force until the write
         * before it is read back: it would be refused when read. */
        if (l->m != NULL)
            l->m->limits_conflicts++;
        snprintf(err, errlen,
                 "another change of the limits through this sidecar is being written to %s; "
                 "read the limits again and retry",
                 l->topic);
        return KA_ECONFLICT;
    }
    return write_record(l, layer, false, done, arg, err, errlen);
}

bool ka_limits_loading(const ka_limits_t *l)
{
    return l->loading;
}

int64_t ka_limits_offset(const ka_limits_t *l)
{
    return l->offset;
}

const char *ka_limits_last_problem(const ka_limits_t *l)
{
    return l->problem;
}

void ka_limits_close(ka_limits_t *l)
{
    if (l == NULL || l->closing)
        return;
    l->closing = true;
    for (pending_write_t *w = l->pending; w != NULL; w = w->next) {
        w->in_flight = false;
        finish(w, KA_EINVALID, -1, "kadmit is shutting down");
    }
    destroy_clients(l);
    uv_close((uv_handle_t *)&l->timer, timer_closed_cb);
}
