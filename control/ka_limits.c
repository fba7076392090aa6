/*
 * ka_limits.c: see ka_limits.h.
 *
 * Two librdkafka handles: an idempotent producer, whose main queue carries
 * delivery reports and the CreateTopics result, and a consumer that reads
 * the topic's one partition from the beginning into a queue of its own
 * (no consumer group: every sidecar reads everything, and commits nothing).
 * Each queue writes a byte into a pipe when it turns non-empty; uv_poll
 * watches the pipe and the callback drains the queue without waiting.
 *
 * The state moves one way: wait until the cluster view knows the brokers,
 * create the topic (an existing one is fine), then consume for good. A timer
 * drives the first two steps, retries a failed creation, and fails writes
 * whose read-back does not come in time.
 */
#include "ka_limits.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "ka_error.h"

#define TICK_MS           100
#define CREATE_RETRY_MS   1000
#define CREATE_TIMEOUT_MS 10000
#define DRAIN_MAX         256 /* events handled per wake-up; the rest on the next tick */

enum limits_state { WAIT_BROKERS, CREATING, CONSUMING };

typedef struct pending_write {
    struct pending_write *next;
    ka_limits_written_fn done;
    void *arg;
    int64_t offset;    /* -1 until the replicas acknowledged it */
    uint64_t deadline; /* loop time by which it must be read back */
    bool in_flight;    /* librdkafka still holds it (a delivery report will come) */
} pending_write_t;

/* One librdkafka queue and the pipe and poll handle that announce it. */
typedef struct queue_watch {
    rd_kafka_queue_t *queue;
    int fds[2];
    uv_poll_t poll;
    bool started;
} queue_watch_t;

struct ka_limits {
    uv_loop_t *loop;
    char bootstrap[300], topic[250], writer[KA_LIMITS_WRITER_MAX];
    ka_limits_handlers_t h;
    rd_kafka_t *producer, *consumer;
    rd_kafka_topic_t *produce_topic, *consume_topic;
    queue_watch_t produced, consumed;
    uv_timer_t timer;
    int handles_open;
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

static int set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen)
{
    char why[256];

    if (rd_kafka_conf_set(conf, name, value, why, sizeof(why)) == RD_KAFKA_CONF_OK)
        return 0;
    snprintf(err, errlen, "librdkafka setting %s=%s: %s", name, value, why);
    return KA_EINVALID;
}

/* The settings both handles share. */
static rd_kafka_conf_t *common_conf(const ka_limits_t *l, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    if (set(conf, "bootstrap.servers", l->bootstrap, err, errlen) < 0 ||
        set(conf, "client.id", "kadmit-limits", err, errlen) < 0 ||
        /* Only CreateTopics, with the topic's own settings, may create it. */
        set(conf, "allow.auto.create.topics", "false", err, errlen) < 0 ||
        set(conf, "log.connection.close", "false", err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

static int watch_start(ka_limits_t *l, queue_watch_t *qw, uv_poll_cb cb, char *err, size_t errlen)
{
    if (pipe2(qw->fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "limits topic: cannot create a pipe");
        return KA_ENOMEM;
    }
    rd_kafka_queue_io_event_enable(qw->queue, qw->fds[1], "1", 1);
    uv_poll_init(l->loop, &qw->poll, qw->fds[0]);
    qw->poll.data = l;
    qw->started = true;
    l->handles_open++;
    uv_poll_start(&qw->poll, UV_READABLE, cb);
    return 0;
}

static void drain_pipe(queue_watch_t *qw)
{
    char buf[64];

    while (read(qw->fds[0], buf, sizeof(buf)) > 0) {
    }
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
        if (rd_kafka_consume_start_queue(l->consume_topic, 0, RD_KAFKA_OFFSET_BEGINNING,
                                         l->consumed.queue) < 0) {
            report(l, "limits topic: the consumer did not start");
            return;
        }
        l->state = CONSUMING;
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
            snprintf(why, sizeof(why),
                     "the record was not acknowledged by the in-sync replicas of %s: %s", l->topic,
                     rd_kafka_err2str(m->err));
            finish(w, KA_EINVALID, -1, why);
        } else {
            w->offset = m->offset;
        }
    }
    confirm_read_back(l);
}

static void produced_cb(uv_poll_t *poll, int status, int events)
{
    ka_limits_t *l = poll->data;
    rd_kafka_event_t *ev;

    (void)status, (void)events;
    drain_pipe(&l->produced);
    for (int i = 0; i < DRAIN_MAX && !l->closing; i++) {
        ev = rd_kafka_queue_poll(l->produced.queue, 0);
        if (ev == NULL)
            break;
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
        rd_kafka_event_destroy(ev);
    }
}

static void on_message(ka_limits_t *l, const rd_kafka_message_t *m)
{
    ka_limits_record_t rec;
    char why[600], err[400] = "";

    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (l->loading) {
            l->loading = false;
            if (l->h.loaded != NULL)
                l->h.loaded(l->h.arg);
        }
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

static void consumed_cb(uv_poll_t *poll, int status, int events)
{
    ka_limits_t *l = poll->data;
    rd_kafka_message_t *m;

    (void)status, (void)events;
    drain_pipe(&l->consumed);
    for (int i = 0; i < DRAIN_MAX && !l->closing; i++) {
        m = rd_kafka_consume_queue(l->consumed.queue, 0);
        if (m == NULL)
            break;
        on_message(l, m);
        rd_kafka_message_destroy(m);
    }
    confirm_read_back(l);
}

static void create_topic(ka_limits_t *l, int brokers)
{
    int rf = brokers < 3 ? brokers : 3;
    char errstr[256], isr[16];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(l->topic, 1, rf, errstr, sizeof(errstr));
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(l->producer, RD_KAFKA_ADMIN_OP_CREATETOPICS);

    snprintf(isr, sizeof(isr), "%d", rf < 2 ? rf : 2);
    if (nt == NULL || opts == NULL ||
        rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact") != 0 ||
        rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", isr) != 0) {
        report(l, "limits topic: librdkafka refused the topic's settings");
    } else {
        rd_kafka_AdminOptions_set_request_timeout(opts, CREATE_TIMEOUT_MS, errstr, sizeof(errstr));
        rd_kafka_CreateTopics(l->producer, &nt, 1, opts, l->produced.queue);
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
        if (brokers > 0)
            create_topic(l, brokers);
    }
    /* Events that arrived beyond DRAIN_MAX are taken here. */
    produced_cb(&l->produced.poll, 0, 0);
    consumed_cb(&l->consumed.poll, 0, 0);
    for (pending_write_t *w = l->pending; w != NULL; w = w->next) {
        if (w->done != NULL && now >= w->deadline)
            finish(w, w->offset >= 0 ? 0 : KA_EINVALID, w->offset,
                   w->offset >= 0 ? "the record was acknowledged but not yet read back here"
                                  : "no acknowledgement from the topic's in-sync replicas in time");
    }
    confirm_read_back(l);
}

static int make_handles(ka_limits_t *l, char *err, size_t errlen)
{
    rd_kafka_conf_t *pconf = common_conf(l, err, errlen), *cconf = NULL;
    char why[512];

    if (pconf == NULL)
        return KA_EINVALID;
    /* Idempotence implies acks=all; a write not acknowledged in time fails. */
    if (set(pconf, "enable.idempotence", "true", err, errlen) < 0 ||
        set(pconf, "message.timeout.ms", "5000", err, errlen) < 0 ||
        set(pconf, "linger.ms", "0", err, errlen) < 0) {
        rd_kafka_conf_destroy(pconf);
        return KA_EINVALID;
    }
    rd_kafka_conf_set_events(pconf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR |
                                        RD_KAFKA_EVENT_CREATETOPICS_RESULT);
    l->producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, why, sizeof(why));
    if (l->producer == NULL) {
        rd_kafka_conf_destroy(pconf);
        snprintf(err, errlen, "limits topic producer: %s", why);
        return KA_EINVALID;
    }
    cconf = common_conf(l, err, errlen);
    if (cconf == NULL || set(cconf, "enable.partition.eof", "true", err, errlen) < 0 ||
        set(cconf, "fetch.wait.max.ms", "100", err, errlen) < 0) {
        if (cconf != NULL)
            rd_kafka_conf_destroy(cconf);
        return KA_EINVALID;
    }
    l->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, why, sizeof(why));
    if (l->consumer == NULL) {
        rd_kafka_conf_destroy(cconf);
        snprintf(err, errlen, "limits topic consumer: %s", why);
        return KA_EINVALID;
    }
    l->produce_topic = rd_kafka_topic_new(l->producer, l->topic, NULL);
    l->consume_topic = rd_kafka_topic_new(l->consumer, l->topic, NULL);
    l->produced.queue = rd_kafka_queue_get_main(l->producer);
    l->consumed.queue = rd_kafka_queue_new(l->consumer);
    if (l->produce_topic == NULL || l->consume_topic == NULL || l->produced.queue == NULL ||
        l->consumed.queue == NULL) {
        snprintf(err, errlen, "limits topic: out of memory");
        return KA_ENOMEM;
    }
    return 0;
}

static void destroy_clients(ka_limits_t *l)
{
    if (l->consume_topic != NULL && l->state == CONSUMING)
        rd_kafka_consume_stop(l->consume_topic, 0);
    if (l->produced.queue != NULL)
        rd_kafka_queue_destroy(l->produced.queue);
    if (l->consumed.queue != NULL)
        rd_kafka_queue_destroy(l->consumed.queue);
    if (l->produce_topic != NULL)
        rd_kafka_topic_destroy(l->produce_topic);
    if (l->consume_topic != NULL)
        rd_kafka_topic_destroy(l->consume_topic);
    /* A producer is destroyed without flushing: a write not yet acknowledged
     * has been answered as failed, so it must not land later unseen. */
    if (l->producer != NULL)
        rd_kafka_destroy_flags(l->producer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    if (l->consumer != NULL)
        rd_kafka_destroy_flags(l->consumer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    l->produced.queue = l->consumed.queue = NULL;
    l->produce_topic = l->consume_topic = NULL;
    l->producer = l->consumer = NULL;
}

static void free_limits(ka_limits_t *l)
{
    for (int i = 0; i < 2; i++) {
        if (l->produced.fds[i] >= 0)
            close(l->produced.fds[i]);
        if (l->consumed.fds[i] >= 0)
            close(l->consumed.fds[i]);
    }
    while (l->pending != NULL) {
        pending_write_t *w = l->pending;
        l->pending = w->next;
        free(w);
    }
    free(l);
}

static void handle_closed_cb(uv_handle_t *h)
{
    ka_limits_t *l = h->data;

    if (--l->handles_open == 0)
        free_limits(l);
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
    l->produced.fds[0] = l->produced.fds[1] = l->consumed.fds[0] = l->consumed.fds[1] = -1;
    snprintf(l->bootstrap, sizeof(l->bootstrap), "%s", settings->bootstrap);
    snprintf(l->topic, sizeof(l->topic), "%s", settings->topic);
    snprintf(l->writer, sizeof(l->writer), "%s", settings->writer);
    rc = make_handles(l, err, errlen);
    if (rc == 0)
        rc = watch_start(l, &l->produced, produced_cb, err, errlen);
    if (rc == 0)
        rc = watch_start(l, &l->consumed, consumed_cb, err, errlen);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    l->handles_open++;
    if (rc < 0) {
        ka_limits_close(l);
        return rc;
    }
    uv_timer_start(&l->timer, timer_cb, 0, TICK_MS);
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
    if (l->produced.started)
        uv_close((uv_handle_t *)&l->produced.poll, handle_closed_cb);
    if (l->consumed.started)
        uv_close((uv_handle_t *)&l->consumed.poll, handle_closed_cb);
    uv_close((uv_handle_t *)&l->timer, handle_closed_cb);
}
