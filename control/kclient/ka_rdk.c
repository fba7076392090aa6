/*
 * ka_rdk.c: a librdkafka handle served on the libuv loop (see ka_rdk.h).
 *
 * librdkafka writes one byte to the queue's wake-up fd when the queue turns
 * non-empty after having been served; the loop then drains the pipe and
 * polls the queue without waiting. At most EVENTS_PER_WAKE events are served
 * per wake-up so that a backlog (a consumer catching up at startup) never
 * holds the loop for long; when more remain, a byte written to our own pipe
 * brings the loop back on its next turn.
 *
 * A fatal error (rd_kafka_fatal_error: an idempotent producer that lost
 * its sequence, a fenced one) leaves the handle unusable for good. The
 * handle keeps a copy of the configuration it was made from, so that its
 * owner can make a new librdkafka client in place (ka_rdk_recreate): the
 * ka_rdk_t, its pipe and its watch stay, only rd_kafka_t and its queue are
 * new, and events of the old client still queued are dropped with it.
 */
#include "ka_rdk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ka_error.h"
#include "ka_log.h"

#define EVENTS_PER_WAKE 256

struct ka_rdk {
    uv_loop_t *loop;
    rd_kafka_t *rk;
    rd_kafka_conf_t *conf;   /* a copy of rk's configuration, to make it again */
    rd_kafka_queue_t *queue; /* every event of the handle ends up here */
    enum ka_rdk_role role;
    ka_rdk_event_cb cb;
    void *arg;
    int pipe_fd[2];   /* [0] watched by poll, [1] given to librdkafka */
    uv_poll_t poll;   /* watches pipe_fd[0] */
    int poll_started; /* poll is initialised (it must then be closed) */
    int closing;      /* ka_rdk_close was called */
    int poll_closed;  /* poll's close callback has run (or poll never started) */
    size_t works;     /* blocking works not yet done */
};

static int set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen)
{
    char why[256];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "librdkafka property %s: %s", name, why);
        return KA_EINVALID;
    }
    return 0;
}

static int is_set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static int apply_security(rd_kafka_conf_t *conf, const ka_rdk_security_t *sec, char *err,
                          size_t errlen)
{
    int sasl = is_set(sec->mechanism);
    const char *protocol =
        sec->tls ? (sasl ? "SASL_SSL" : "SSL") : (sasl ? "SASL_PLAINTEXT" : "PLAINTEXT");
    if (set(conf, "security.protocol", protocol, err, errlen) < 0)
        return KA_EINVALID;
    if (sec->tls) {
        if ((is_set(sec->ca_file) && set(conf, "ssl.ca.location", sec->ca_file, err, errlen) < 0) ||
            (is_set(sec->cert_file) &&
             set(conf, "ssl.certificate.location", sec->cert_file, err, errlen) < 0) ||
            (is_set(sec->key_file) &&
             set(conf, "ssl.key.location", sec->key_file, err, errlen) < 0))
            return KA_EINVALID;
        if (set(conf, "enable.ssl.certificate.verification", sec->verify ? "true" : "false", err,
                errlen) < 0 ||
            set(conf, "ssl.endpoint.identification.algorithm", sec->verify ? "https" : "none", err,
                errlen) < 0)
            return KA_EINVALID;
    }
    if (sasl) {
        /* librdkafka before 2.6.1 fails SCRAM against Kafka 4.x brokers, with or without
         * kadmit (docs/tls-sasl.md): say so once, so the operator does not look for it here. */
        static int scram_warned;
        if (strncmp(sec->mechanism, "SCRAM-", 6) == 0 && rd_kafka_version() < 0x020601ff &&
            !scram_warned) {
            scram_warned = 1;
            ka_log(KA_LOG_WARN,
                   "this librdkafka is older than 2.6.1, whose SCRAM fails against Kafka 4.x "
                   "brokers: kadmit's own clients may not log in",
                   KA_KS("librdkafka", rd_kafka_version_str()), KA_KS("mechanism", sec->mechanism));
        }
        if (set(conf, "sasl.mechanisms", sec->mechanism, err, errlen) < 0 ||
            set(conf, "sasl.username", sec->username ? sec->username : "", err, errlen) < 0 ||
            set(conf, "sasl.password", sec->password ? sec->password : "", err, errlen) < 0)
            return KA_EINVALID;
    }
    return 0;
}

static rd_kafka_conf_t *build_conf(const ka_rdk_settings_t *s, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (conf == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* Log lines come to the queue too, so they are written from the loop. */
    if (set(conf, "bootstrap.servers", s->bootstrap, err, errlen) < 0 ||
        set(conf, "client.id", is_set(s->client_id) ? s->client_id : "kadmit", err, errlen) < 0 ||
        set(conf, "log.queue", "true", err, errlen) < 0 ||
        apply_security(conf, &s->security, err, errlen) < 0)
        goto fail;
    for (const char *const *p = s->props; p != NULL && p[0] != NULL; p += 2) {
        if (set(conf, p[0], p[1], err, errlen) < 0)
            goto fail;
    }
    for (const char *const *p = s->security.user_props; p != NULL && p[0] != NULL; p += 2) {
        if (set(conf, p[0], p[1], err, errlen) < 0)
            goto fail;
    }
    rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_LOG |
                                       RD_KAFKA_EVENT_FETCH);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

static void log_event(const ka_rdk_t *r, rd_kafka_event_t *ev)
{
    const char *fac = NULL, *line = NULL;
    int level = 6;
    if (rd_kafka_event_log(ev, &fac, &line, &level) != 0)
        return;
    /* syslog levels. A broker that refuses connections is an error to
     * librdkafka, a warning to kadmit: the callers say what it means. */
    enum ka_log_level lvl = level <= 4 ? KA_LOG_WARN : KA_LOG_DEBUG;
    ka_log(lvl, "librdkafka", KA_KS("client", rd_kafka_name(r->rk)), KA_KS("facility", fac),
           KA_KS("line", line));
}

/* Makes the loop serve the queue on its next turn. */
static void kick(ka_rdk_t *r)
{
    char one = 1;
    if (write(r->pipe_fd[1], &one, 1) < 0 && errno != EAGAIN)
        ka_log(KA_LOG_WARN, "librdkafka queue wake-up failed", KA_KS("error", strerror(errno)));
}

static void serve(ka_rdk_t *r)
{
    for (int i = 0; i < EVENTS_PER_WAKE && !r->closing; i++) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(r->queue, 0);
        if (ev == NULL)
            return;
        switch (rd_kafka_event_type(ev)) {
        case RD_KAFKA_EVENT_LOG:
            log_event(r, ev);
            break;
        case RD_KAFKA_EVENT_ERROR:
            if (rd_kafka_event_error_is_fatal(ev)) {
                char why[256] = "";
                rd_kafka_fatal_error(r->rk, why, sizeof(why));
                ka_log(KA_LOG_ERROR, "librdkafka fatal error: the client must be recreated",
                       KA_KS("client", rd_kafka_name(r->rk)), KA_KS("error", why));
            } else {
                ka_log(KA_LOG_DEBUG, "librdkafka error", KA_KS("client", rd_kafka_name(r->rk)),
                       KA_KS("error", rd_kafka_event_error_string(ev)));
            }
            r->cb(r->arg, r, ev);
            break;
        case RD_KAFKA_EVENT_NONE:
            break;
        default:
            r->cb(r->arg, r, ev);
            break;
        }
        rd_kafka_event_destroy(ev);
    }
    /* More may wait: come back on the next turn rather than hold the loop. */
    if (!r->closing)
        kick(r);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    ka_rdk_t *r = h->data;
    char drain[64];
    (void)events;
    if (status < 0) {
        ka_log(KA_LOG_WARN, "librdkafka queue watch failed", KA_KS("error", uv_strerror(status)));
        return;
    }
    while (read(r->pipe_fd[0], drain, sizeof(drain)) > 0)
        ;
    serve(r);
}

/* Destroys the librdkafka client and its queue (the pipe and the watch stay). */
static void destroy_client(ka_rdk_t *r)
{
    if (r->queue != NULL) {
        rd_kafka_queue_io_event_enable(r->queue, -1, NULL, 0);
        rd_kafka_queue_destroy(r->queue);
        r->queue = NULL;
    }
    if (r->rk != NULL) {
        if (r->role == KA_RDK_PRODUCER)
            rd_kafka_purge(r->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_destroy_flags(r->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        r->rk = NULL;
    }
}

static void destroy(ka_rdk_t *r)
{
    destroy_client(r);
    if (r->conf != NULL)
        rd_kafka_conf_destroy(r->conf);
    for (int i = 0; i < 2; i++) {
        if (r->pipe_fd[i] >= 0)
            close(r->pipe_fd[i]);
    }
    free(r);
}

static void maybe_destroy(ka_rdk_t *r)
{
    if (r->closing && r->poll_closed && r->works == 0)
        destroy(r);
}

static void poll_closed_cb(uv_handle_t *h)
{
    ka_rdk_t *r = h->data;
    r->poll_closed = 1;
    maybe_destroy(r);
}

/* Makes r->rk from conf (consumed) and routes its events to r->queue, whose wake-up is the pipe. */
static int new_client(ka_rdk_t *r, rd_kafka_conf_t *conf, char *err, size_t errlen)
{
    char why[512];
    rd_kafka_type_t type = r->role == KA_RDK_PRODUCER ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER;
    r->rk = rd_kafka_new(type, conf, why, sizeof(why));
    if (r->rk == NULL) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "cannot create the librdkafka client: %s", why);
        return KA_EINVALID;
    }
    /* One served queue: the main queue (delivery reports, errors) and the
     * log queue are forwarded into it. */
    r->queue = rd_kafka_queue_new(r->rk);
    rd_kafka_queue_t *main_queue = rd_kafka_queue_get_main(r->rk);
    if (r->queue == NULL || main_queue == NULL) {
        if (main_queue != NULL)
            rd_kafka_queue_destroy(main_queue);
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    rd_kafka_queue_forward(main_queue, r->queue);
    rd_kafka_queue_destroy(main_queue);
    rd_kafka_set_log_queue(r->rk, r->queue);
    static const char wake = 1;
    rd_kafka_queue_io_event_enable(r->queue, r->pipe_fd[1], &wake, 1);
    return 0;
}

int ka_rdk_new(uv_loop_t *loop, const ka_rdk_settings_t *s, ka_rdk_event_cb cb, void *arg,
               ka_rdk_t **out, char *err, size_t errlen)
{
    *out = NULL;
    ka_rdk_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    r->loop = loop;
    r->role = s->role;
    r->cb = cb;
    r->arg = arg;
    r->pipe_fd[0] = r->pipe_fd[1] = -1;
    r->poll_closed = 1;
    if (pipe2(r->pipe_fd, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot make a pipe for librdkafka's queue: %s", strerror(errno));
        destroy(r);
        return KA_EINVALID;
    }
    rd_kafka_conf_t *conf = build_conf(s, err, errlen);
    if (conf == NULL) {
        destroy(r);
        return KA_EINVALID;
    }
    r->conf = rd_kafka_conf_dup(conf);
    if (r->conf == NULL) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "out of memory");
        destroy(r);
        return KA_ENOMEM;
    }
    int rc = new_client(r, conf, err, errlen);
    if (rc < 0) {
        destroy(r);
        return rc;
    }
    rc = uv_poll_init(loop, &r->poll, r->pipe_fd[0]);
    if (rc < 0) {
        snprintf(err, errlen, "cannot watch librdkafka's queue: %s", uv_strerror(rc));
        destroy(r);
        return KA_EINVALID;
    }
    r->poll.data = r;
    r->poll_started = 1;
    r->poll_closed = 0;
    uv_poll_start(&r->poll, UV_READABLE, poll_cb);
    uv_unref((uv_handle_t *)&r->poll); /* never keeps the loop alive: a drain can end */
    /* librdkafka only signals a queue that turns non-empty: events queued
     * before the fd was enabled would wait for the next one. Serve once. */
    kick(r);
    *out = r;
    return 0;
}

rd_kafka_t *ka_rdk_handle(const ka_rdk_t *r)
{
    return r->rk;
}

rd_kafka_queue_t *ka_rdk_queue(const ka_rdk_t *r)
{
    return r->queue;
}

static void work_run_cb(uv_work_t *req)
{
    ka_rdk_work_t *w = req->data;
    w->run(w, w->rdk->rk);
}

static void work_done_cb(uv_work_t *req, int status)
{
    ka_rdk_work_t *w = req->data;
    ka_rdk_t *r = w->rdk;
    (void)status;
    r->works--;
    w->done(w, r->closing);
    maybe_destroy(r);
}

int ka_rdk_blocking_run(ka_rdk_t *r, ka_rdk_work_t *w)
{
    if (r->closing)
        return KA_EINVALID;
    w->rdk = r;
    w->req.data = w;
    int rc = uv_queue_work(r->loop, &w->req, work_run_cb, work_done_cb);
    if (rc < 0)
        return KA_EINVALID;
    r->works++;
    return 0;
}

void ka_rdk_close(ka_rdk_t *r)
{
    if (r == NULL || r->closing)
        return;
    r->closing = 1;
    if (r->poll_started) {
        uv_poll_stop(&r->poll);
        uv_close((uv_handle_t *)&r->poll, poll_closed_cb);
        return;
    }
    maybe_destroy(r);
}

int ka_rdk_fatal(const ka_rdk_t *r, char *why, size_t len)
{
    if (r == NULL || r->rk == NULL)
        return 0;
    return rd_kafka_fatal_error(r->rk, why, len) != RD_KAFKA_RESP_ERR_NO_ERROR;
}

int ka_rdk_recreate(ka_rdk_t *r, char *err, size_t errlen)
{
    if (r->closing) {
        snprintf(err, errlen, "the client is closing");
        return KA_EINVALID;
    }
    if (r->works > 0) { /* a pool thread still uses the client: not now */
        snprintf(err, errlen, "a blocking call is still running on the client");
        return KA_ECONFLICT;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_dup(r->conf);
    if (conf == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    destroy_client(r);
    int rc = new_client(r, conf, err, errlen);
    if (rc < 0) {
        destroy_client(r);
        return rc;
    }
    kick(r); /* events queued before the wake-up fd was enabled */
    return 0;
}
