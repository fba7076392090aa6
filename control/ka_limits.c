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
 */
#include "ka_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"

#define TICK_MS           100
#define CREATE_RETRY_MS   1000
#define CREATE_TIMEOUT_MS 10000

enum limits_state { WAIT_BROKERS, CREATING, CONSUMING };

typedef struct pending_write {
    struct pending_write *next;
    ka_limits_written_fn done;
    void *arg;
    int64_t offset;    /* -1 until the replicas acknowledged it */
    uint64_t deadline; /* loop time by which it must be read back */
    bool in_flight;    /* librdkafka still holds it (a delivery report will come) */
} pending_write_t;

struct ka_limits {
    uv_loop_t *loop;
    char bootstrap[300], topic[250], writer[KA_LIMITS_WRITER_MAX];
    ka_limits_handlers_t h;
    ka_rdk_t *producer, *consumer;
    rd_kafka_topic_t *produce_topic, *consume_topic;
    uv_timer_t timer;
    enum limits_state state;
    uint64_t retry_at;
    bool loading;
    bool closing;
    int64_t offset; /* of the last record read */
    pending_write_t *pending;
    char problem[768];
};

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

    while (*p != NULL) {
        pending_write_t *w = *p;
        if (w->done != NULL && w->offset >= 0 && w->offset <= l->offset) {
            finish(w, 0, w->offset, "");
        }
        if (w->done == NULL && !w->in_flight) {
            *p = w->next;
            free(w);
        } else {
            p = &w->next;
        }
    }
}

/* The topic exists: read it from the beginning, for good. */
static void start_consuming(ka_limits_t *l)
{
    if (rd_kafka_consume_start_queue(l->consume_topic, 0, RD_KAFKA_OFFSET_BEGINNING,
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

/* The end of the partition: the first time, the topic has been read. */
static void on_end(ka_limits_t *l)
{
    if (l->loading) {
        l->loading = false;
        if (l->h.loaded != NULL)
            l->h.loaded(l->h.arg);
    }
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
    if (ka_limits_record_decode(m->payload, m->len, &rec, err, sizeof(err)) < 0) {
        snprintf(why, sizeof(why), "limits topic %s, offset %lld: skipped: %s", l->topic,
                 (long long)m->offset, err);
        report(l, why);
        return;
    }
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
    for (pending_write_t *w = l->pending; w != NULL; w = w->next) {
        if (w->done != NULL && now >= w->deadline)
            finish(w, w->offset >= 0 ? 0 : KA_EINVALID, w->offset,
                   w->offset >= 0 ? "the record was acknowledged but not yet read back here"
                                  : "no acknowledgement from the topic's in-sync replicas in time");
    }
    confirm_read_back(l);
}

/* librdkafka properties: a NULL-terminated list of name, value pairs. */
static const char *const PRODUCER_PROPS[] = {
    /* Idempotence implies acks=all; a write not acknowledged in time fails. */
    "enable.idempotence", "true", "message.timeout.ms", "5000", "linger.ms", "0",
    /* Only CreateTopics, with the topic's own settings, may create it. */
    "allow.auto.create.topics", "false", NULL};
static const char *const CONSUMER_PROPS[] = {"enable.partition.eof",
                                             "true",
                                             "fetch.wait.max.ms",
                                             "100",
                                             "allow.auto.create.topics",
                                             "false",
                                             NULL};

static int make_handles(ka_limits_t *l, const ka_limits_settings_t *settings, char *err,
                        size_t errlen)
{
    ka_rdk_settings_t s = {.role = KA_RDK_PRODUCER,
                           .bootstrap = l->bootstrap,
                           .client_id = "kadmit-limits",
                           .props = PRODUCER_PROPS};
    int rc;

    if (settings->security != NULL)
        s.security = *settings->security;
    rc = ka_rdk_new(l->loop, &s, producer_event_cb, l, &l->producer, err, errlen);
    if (rc < 0)
        return rc;
    s.role = KA_RDK_CONSUMER;
    s.props = CONSUMER_PROPS;
    rc = ka_rdk_new(l->loop, &s, consumer_event_cb, l, &l->consumer, err, errlen);
    if (rc < 0)
        return rc;
    l->produce_topic = rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL);
    l->consume_topic = rd_kafka_topic_new(ka_rdk_handle(l->consumer), l->topic, NULL);
    if (l->produce_topic == NULL || l->consume_topic == NULL) {
        snprintf(err, errlen, "limits topic: out of memory");
        return KA_ENOMEM;
    }
    return 0;
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
    l->loading = true;
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

int ka_limits_write(ka_limits_t *l, const char *layer, ka_limits_written_fn done, void *arg,
                    char *err, size_t errlen)
{
    pending_write_t *w;
    char *value = NULL;
    size_t len;
    int rc;

    if (l->loading) {
        /* A change composed on a layer not yet read would drop others' changes. */
        snprintf(err, errlen, "the limits topic %s has not been read to its end yet; retry",
                 l->topic);
        return KA_EINVALID;
    }
    rc = ka_limits_record_encode(layer, l->writer, wall_ms(), &value, &len);
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
    w->deadline = uv_now(l->loop) + KA_LIMITS_WRITE_TIMEOUT_MS + 1000;
    if (rd_kafka_produce(l->produce_topic, 0, RD_KAFKA_MSG_F_FREE, value, len, KA_LIMITS_RECORD_KEY,
                         strlen(KA_LIMITS_RECORD_KEY), w) < 0) {
        snprintf(err, errlen, "the record could not be queued: %s",
                 rd_kafka_err2str(rd_kafka_last_error()));
        free(value);
        free(w);
        return KA_EINVALID;
    }
    w->in_flight = true;
    w->next = l->pending;
    l->pending = w;
    return 0;
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
