/*
 * ka_ledger_start.c: the ledger client's start-up sequence (see
 * ka_ledger.c's header for the phases): the two librdkafka handles, the
 * topic created when the view lacks it, a heartbeat whose delivery report
 * anchors the ledger's clock, the start offset looked up on the thread pool,
 * then reading for good.
 */
#include "ka_ledger_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"
#include "ka_ledger_record.h"
#include "ka_ledger_health.h"
#include "ka_log.h"
#include "ka_rdk_side.h"
#include "ka_rdk_topic.h"

/* How long the start-up waits for a new topic to show up with a leader before going on. */
#define AWAIT_TOPIC_MS 3000

static void learn_clock(ka_ledger_t *l);
static void append_heartbeat(ka_ledger_t *l);

void ka_ledger_mark(ka_ledger_t *l, enum ka_ledger_step step)
{
    if (l->step_ms[step] == 0)
        l->step_ms[step] = ka_ledger_loop_ms(l);
}

/* Milliseconds from the client's start to a step (-1: the step was skipped or not reached). */
static int64_t step_after(const ka_ledger_t *l, enum ka_ledger_step step)
{
    return l->step_ms[step] != 0 ? l->step_ms[step] - l->started_ms : -1;
}

void ka_ledger_on_created(ka_ledger_t *l, rd_kafka_event_t *ev)
{
    size_t n = 0;
    const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
    const rd_kafka_topic_result_t **topics =
        res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
    rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && n == 1)
        e = rd_kafka_topic_result_error(topics[0]);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        ka_ledger_retry_later(l, "create topic",
                              n == 1 && rd_kafka_topic_result_error_string(topics[0])
                                  ? rd_kafka_topic_result_error_string(topics[0])
                                  : rd_kafka_err2str(e));
        return;
    }
    ka_log(KA_LOG_INFO, e ? "ledger topic already exists" : "ledger topic created",
           KA_KS("topic", l->topic));
    l->topic_known = 1;
    ka_ledger_mark(l, KA_LEDGER_STEP_TOPIC);
    learn_clock(l);
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
        ka_ledger_retry_later(l, "create topic", why);
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
    if (k->ends_only) {
        k->empty = low >= high;
        k->offset = high;
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
        ka_ledger_retry_later(l, "find the start offset", k->err);
        free(k);
        return;
    }
    if (k->ends_only && !k->empty) { /* records to judge by age: learn the clock first */
        free(k);
        append_heartbeat(l);
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
        ka_ledger_retry_later(l, "start reading", rd_kafka_err2str(rd_kafka_last_error()));
        free(k);
        return;
    }
    l->phase = PH_READING;
    ka_ledger_health_reading(l->health, k->offset, ka_ledger_loop_ms(l));
    l->m->ledger_usable =
        !ka_ledger_health_blocking(l->health, ka_ledger_loop_ms(l), l->m->ledger_blocked_why,
                                   sizeof(l->m->ledger_blocked_why));
    ka_ledger_set_connected(l, 1);
    int first = l->step_ms[KA_LEDGER_STEP_READING] == 0;
    ka_ledger_mark(l, KA_LEDGER_STEP_READING);
    if (first)
        l->m->ledger_ready_ms = (uint64_t)step_after(l, KA_LEDGER_STEP_READING);
    /* The start-up's profile: each step's end, in ms since the client started. */
    ka_log(KA_LOG_INFO, "ledger reading", KA_KS("topic", l->topic), KA_KI("from_offset", k->offset),
           KA_KS("sidecar", l->sidecar), KA_KI("view_ms", step_after(l, KA_LEDGER_STEP_VIEW)),
           KA_KI("topic_ms", step_after(l, KA_LEDGER_STEP_TOPIC)),
           KA_KI("clock_ms", step_after(l, KA_LEDGER_STEP_CLOCK)),
           KA_KI("ready_ms", step_after(l, KA_LEDGER_STEP_READING)));
    free(k);
}

static void start_lookup_of(ka_ledger_t *l, int ends_only)
{
    lookup_t *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        ka_ledger_retry_later(l, "find the start offset", "out of memory");
        return;
    }
    k->w.run = lookup_run;
    k->w.done = lookup_done;
    k->l = l;
    snprintf(k->topic, sizeof(k->topic), "%s", l->topic);
    k->since_ms = ka_ledger_now(l) - l->ttl_ms;
    k->ends_only = ends_only;
    if (ka_rdk_blocking_run(l->consumer, &k->w) < 0) {
        free(k);
        ka_ledger_retry_later(l, "find the start offset", "cannot queue the lookup");
        return;
    }
    l->lookup = k;
    l->phase = PH_LOOKUP;
}

void ka_ledger_start_lookup(ka_ledger_t *l)
{
    start_lookup_of(l, 0);
}

/* The producer's broker shows the topic (or the wait ran out: librdkafka finds it itself). */
static void start_lookup_of(ka_ledger_t *l, int ends_only);

/*
 * The producer's broker shows the topic (or the wait ran out: librdkafka finds it itself).
 * An empty ledger (a fresh cluster) is read from its end at once: no record is there to be
 * judged by its age, so the heartbeat that anchors the clock is not waited for (on a topic
 * just created, its acks=all append waits for the followers to start fetching). Otherwise
 * the heartbeat comes first.
 */
static void topic_visible_cb(void *arg, int ready)
{
    ka_ledger_t *l = arg;
    (void)ready;
    if (l->phase == PH_AWAIT_TOPIC)
        start_lookup_of(l, 1);
}

/* The topic exists: opens the producer's handle of it, waits until its broker shows it with a
 * leader, then looks up its ends (an empty ledger is read at once; otherwise a heartbeat
 * anchors the clock first). */
static void learn_clock(ka_ledger_t *l)
{
    if (l->ptopic == NULL &&
        (l->ptopic = rd_kafka_topic_new(ka_rdk_handle(l->producer), l->topic, NULL)) == NULL) {
        ka_ledger_retry_later(l, "learn the ledger's clock", "cannot open the topic");
        return;
    }
    l->phase = PH_AWAIT_TOPIC;
    if (ka_rdk_topic_await(l->producer, l->topic, AWAIT_TOPIC_MS, topic_visible_cb, l) < 0)
        start_lookup_of(l, 1);
}

/* Appends a heartbeat; its delivery report anchors the ledger's clock, then the lookup. */
static void append_heartbeat(ka_ledger_t *l)
{
    char *json = NULL;
    size_t len = 0;

    if (ka_ledger_encode_heartbeat(l->sidecar, ka_ledger_wall_ms(), &json, &len) < 0 ||
        ka_ledger_produce(l, json, len, HEARTBEAT_OPAQUE) < 0) {
        ka_ledger_retry_later(l, "learn the ledger's clock", "cannot append a heartbeat");
        return;
    }
    l->phase = PH_CLOCK;
    l->retry_at_ms = ka_ledger_loop_ms(l) + LOOKUP_TIMEOUT_MS; /* no report by then: retry */
}

/* Takes the next setup step the phase allows. */
void ka_ledger_advance(ka_ledger_t *l)
{
    if (l->phase != PH_WAIT_VIEW)
        return;
    if (l->topic_known)
        learn_clock(l);
    else if (l->brokers > 0)
        create_topic(l);
}

/* Longest list of settings a ledger handle takes: kadmit's, then the message timeout. */
#define HANDLE_PROPS_MAX 48

static int new_handle(ka_ledger_t *l, const ka_ledger_config_t *cfg, enum ka_rdk_role role,
                      ka_rdk_t **out, char *err, size_t errlen)
{
    char client_id[KA_LEDGER_SIDECAR_MAX + 32], timeout[32];
    const char *props[HANDLE_PROPS_MAX + 3];
    size_t n = 0;
    snprintf(client_id, sizeof(client_id), "kadmit-ledger-%s", cfg->sidecar_id);
    snprintf(timeout, sizeof(timeout), "%" PRId64, cfg->timeout_ms);
    /* kadmit's settings for the ledger's clients (ka_rdk_side.c); a record not
     * acknowledged within --ledger-timeout-ms fails like its intent. */
    for (const char *const *p = ka_rdk_side_props(
             role == KA_RDK_PRODUCER ? KA_RDK_USE_LEDGER_PRODUCER : KA_RDK_USE_LEDGER_CONSUMER);
         *p != NULL && n + 2 <= HANDLE_PROPS_MAX; p += 2) {
        props[n++] = p[0];
        props[n++] = p[1];
    }
    if (role == KA_RDK_PRODUCER) {
        props[n++] = "message.timeout.ms";
        props[n++] = timeout;
    }
    props[n] = NULL;
    ka_rdk_settings_t s = {.role = role,
                           .bootstrap = cfg->bootstrap,
                           .client_id = client_id,
                           .security = cfg->security,
                           .props = props};
    return ka_rdk_new(l->loop, &s, ka_ledger_event_cb, l, out, err, errlen);
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
    l->started_ms = ka_ledger_loop_ms(l);
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
    l->next_seq = (uint64_t)ka_ledger_wall_ms() * 1000;
    int rc = ka_ledger_state_new(l->sidecar, mirror, l->ttl_ms, &l->state);
    if (rc < 0) {
        snprintf(err, errlen, "--sidecar-id must have 1 to %d bytes", KA_LEDGER_SIDECAR_MAX);
        free(l);
        return rc;
    }
    /* The producer's topic handle is opened once the topic exists (learn_clock): opening it
     * asks for its metadata at once, where a handle of a topic not there yet waits for
     * librdkafka's once-a-second scan of unknown topics after it is created. */
    if ((rc = new_handle(l, cfg, KA_RDK_PRODUCER, &l->producer, err, errlen)) < 0 ||
        (rc = new_handle(l, cfg, KA_RDK_CONSUMER, &l->consumer, err, errlen)) < 0 ||
        (rc = ka_ledger_health_new(metrics, l->producer, l->consumer, l->topic, l->limits_topic,
                                   l->timeout_ms, &l->health)) < 0) {
        ka_rdk_close(l->producer);
        ka_rdk_close(l->consumer);
        ka_ledger_state_free(l->state);
        free(l);
        return rc;
    }
    uv_timer_init(loop, &l->tick);
    l->tick.data = l;
    uv_timer_start(&l->tick, ka_ledger_tick_cb, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&l->tick); /* never keeps the loop alive: a drain can end */
    *out = l;
    return 0;
}

void ka_ledger_on_view(ka_ledger_t *l, const ka_cluster_t *view)
{
    ka_slice_t name = {(const uint8_t *)l->topic, (int32_t)strlen(l->topic)};
    l->brokers = (int)ka_cluster_broker_count(view);
    if (l->brokers > 0)
        ka_ledger_mark(l, KA_LEDGER_STEP_VIEW);
    if (ka_cluster_find_topic(view, name) != NULL) {
        l->topic_known = 1;
        ka_ledger_mark(l, KA_LEDGER_STEP_TOPIC);
    }
    ka_ledger_advance(l);
}
