/*
 * ka_ledger_health.c: what the ledger client sees, in figures and
 * sentences (see ka_ledger_health.h).
 *
 * Everything runs on the loop but the topic check, a Metadata request on
 * the consumer's client (rd_kafka_metadata blocks) run on the thread pool
 * through ka_rdk_blocking_run; its result is applied on the loop. The
 * consumer's client is never recreated, so a check in flight always has a
 * client to finish on.
 *
 * Errors are remembered for ERROR_HOLD_MS: an error with nothing good
 * since keeps decisions refused that long, so a persistent one (librdkafka
 * reports it again at each retry) stays, and a passing one clears even when
 * no traffic would prove it gone (refused decisions append nothing).
 */
#include "ka_ledger_health.h"

#include <uv.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"
#include "ka_log.h"

#define TOPIC_MAX         249
#define CHECK_MS          2000 /* between two topic checks */
#define CHECK_TIMEOUT_MS  3000 /* one Metadata request, at most (half the ledger timeout) */
#define WATERMARK_MS      250  /* between two looks at the cached high watermark */
#define ERROR_HOLD_MS     5000 /* an error with nothing good since counts this long */
#define TEST_FATAL_ENV    "KADMIT_TEST_LEDGER_FATAL_AFTER_MS"
#define TEST_FATAL_MAX_MS (24LL * 3600 * 1000)

/* One topic as a Metadata answer showed it (filled on the pool). */
typedef struct topic_seen {
    int answered; /* the request got an answer */
    int exists;
    int32_t partitions;
    int32_t replicas, isr; /* the fewest over the partitions */
    int32_t leaderless;    /* partitions without a leader */
    int32_t brokers;       /* brokers in the answer */
    char err[160];         /* the request's or the topic's error, "" for none */
} topic_seen_t;

/* A check of both topics, on the pool. */
typedef struct check {
    ka_rdk_work_t w;       /* first: the work is the check */
    ka_ledger_health_t *h; /* NULL once the health was freed */
    char topics[2][TOPIC_MAX + 1];
    int timeout_ms; /* of each Metadata request */
    int stale;      /* asked before the ledger was read: its answer may predate the topic */
    topic_seen_t seen[2];
} check_t;

/* What the last check made of a topic (index 0: the ledger's, 1: the limits'). */
typedef struct topic_state {
    int known; /* a check answered */
    int unavailable, under;
} topic_state_t;

struct ka_ledger_health {
    ka_metrics_t *m;
    ka_rdk_t *producer, *consumer; /* borrowed */
    char topic[TOPIC_MAX + 1], limits_topic[TOPIC_MAX + 1];
    int64_t timeout_ms;
    /* The consumer: the offset after the last message read (-1 before reading), the highest
     * end offset known (the cached high watermark, or after our own delivered appends). */
    int64_t next_offset, high;
    int64_t behind_since_ms; /* when the lag began; -1 while caught up */
    int64_t next_watermark_ms;
    int64_t consumer_err_ms, consumer_read_ms; /* loop clock; 0: never */
    int64_t producer_err_ms, producer_ok_ms;
    /* A fatal error of the producer: from its discovery until the new client delivers. */
    int fatal;
    int recreate_due; /* the producer must be (made) again */
    char fatal_why[200];
    check_t *check; /* in flight, or NULL */
    int64_t next_check_ms;
    topic_state_t topics[2];
    /* The test-only fatal error (TEST_FATAL_ENV): 0 when not armed. */
    int64_t test_fatal_after_ms;
    int64_t first_read_ms;
    int test_fatal_done;
};

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t test_fatal_after(void)
{
    const char *v = getenv(TEST_FATAL_ENV);
    char *end = NULL;
    if (v == NULL || v[0] == '\0')
        return 0;
    long long ms = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || ms <= 0 || ms > TEST_FATAL_MAX_MS) {
        ka_log(KA_LOG_WARN, "ignored: not a duration in ms", KA_KS("variable", TEST_FATAL_ENV),
               KA_KS("value", v));
        return 0;
    }
    ka_log(KA_LOG_WARN, "test hook armed: the ledger producer will be failed on purpose",
           KA_KS("variable", TEST_FATAL_ENV), KA_KI("after_ms", ms));
    return ms;
}

int ka_ledger_health_new(ka_metrics_t *m, ka_rdk_t *producer, ka_rdk_t *consumer, const char *topic,
                         const char *limits_topic, int64_t timeout_ms, ka_ledger_health_t **out)
{
    ka_ledger_health_t *h = calloc(1, sizeof(*h));
    *out = NULL;
    if (h == NULL)
        return KA_ENOMEM;
    h->m = m;
    h->producer = producer;
    h->consumer = consumer;
    snprintf(h->topic, sizeof(h->topic), "%s", topic);
    snprintf(h->limits_topic, sizeof(h->limits_topic), "%s",
             limits_topic != NULL && limits_topic[0] != '\0' ? limits_topic : "__kadmit_limits");
    h->timeout_ms = timeout_ms;
    h->next_offset = -1;
    h->high = -1;
    h->behind_since_ms = -1;
    h->test_fatal_after_ms = test_fatal_after();
    *out = h;
    return 0;
}

void ka_ledger_health_free(ka_ledger_health_t *h)
{
    if (h == NULL)
        return;
    if (h->check != NULL)
        h->check->h = NULL; /* it frees itself when done */
    h->m->ledger_usable = 0;
    free(h);
}

void ka_ledger_health_reading(ka_ledger_health_t *h, int64_t offset, int64_t now_ms)
{
    h->next_offset = offset;
    h->behind_since_ms = -1;
    if (h->first_read_ms == 0)
        h->first_read_ms = now_ms;
    /* Reading it proves the topic is there with a leader: a check that answered (or asked)
     * before then, e.g. "does not exist" while it was being created, no longer counts. The
     * next check comes at once. */
    h->topics[0].known = 0;
    if (h->check != NULL)
        h->check->stale = 1;
    h->next_check_ms = now_ms;
}

void ka_ledger_health_read(ka_ledger_health_t *h, const rd_kafka_message_t *msg, int64_t now_ms)
{
    if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
        return;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (msg->offset >= h->next_offset)
            h->next_offset = msg->offset + 1;
        h->consumer_read_ms = now_ms;
        return;
    }
    /* librdkafka reports a lasting error at each retry: the first of a run is logged. */
    if (h->consumer_err_ms <= h->consumer_read_ms || now_ms - h->consumer_err_ms >= ERROR_HOLD_MS)
        ka_log(KA_LOG_WARN, "ledger read error", KA_KS("topic", h->topic),
               KA_KS("error", rd_kafka_err2str(msg->err)));
    h->consumer_err_ms = now_ms;
    h->m->ledger_consumer_errors++;
    snprintf(h->m->ledger_consumer_last_error, sizeof(h->m->ledger_consumer_last_error), "%s",
             rd_kafka_err2str(msg->err));
    h->m->ledger_consumer_last_error_unix_ms = unix_ms();
}

void ka_ledger_health_delivered(ka_ledger_health_t *h, const rd_kafka_message_t *msg,
                                int64_t now_ms)
{
    if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        h->producer_err_ms = now_ms;
        snprintf(h->m->ledger_producer_last_error, sizeof(h->m->ledger_producer_last_error), "%s",
                 rd_kafka_err2str(msg->err));
        h->m->ledger_producer_last_error_unix_ms = unix_ms();
        return;
    }
    h->producer_ok_ms = now_ms;
    if (msg->offset >= 0 && msg->offset + 1 > h->high)
        h->high = msg->offset + 1;
    if (h->fatal && !h->recreate_due) {
        h->fatal = 0;
        h->m->ledger_producer_fatal = 0;
        ka_log(KA_LOG_INFO, "ledger producer recreated and delivering", KA_KS("topic", h->topic));
    }
}

/* The consumer's lag, from the cached high watermark (no request is sent). */
static void update_lag(ka_ledger_health_t *h, int reading, int64_t now_ms)
{
    int64_t low = 0, high = -1;
    if (!reading || h->next_offset < 0) {
        h->behind_since_ms = -1;
        h->m->ledger_consumer_lag_records = 0;
        h->m->ledger_consumer_lag_ms = 0;
        return;
    }
    if (now_ms >= h->next_watermark_ms) {
        h->next_watermark_ms = now_ms + WATERMARK_MS;
        if (rd_kafka_get_watermark_offsets(ka_rdk_handle(h->consumer), h->topic, 0, &low, &high) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            high > h->high)
            h->high = high;
    }
    int64_t lag = h->high > h->next_offset ? h->high - h->next_offset : 0;
    if (lag == 0)
        h->behind_since_ms = -1;
    else if (h->behind_since_ms < 0)
        h->behind_since_ms = now_ms;
    h->m->ledger_consumer_lag_records = (uint64_t)lag;
    h->m->ledger_consumer_lag_ms =
        h->behind_since_ms < 0 ? 0 : (uint64_t)(now_ms - h->behind_since_ms);
}

static void check_run(ka_rdk_work_t *w, rd_kafka_t *rk)
{
    check_t *c = (check_t *)w;
    for (int i = 0; i < 2; i++) {
        topic_seen_t *s = &c->seen[i];
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, c->topics[i], NULL);
        if (rkt == NULL) {
            snprintf(s->err, sizeof(s->err), "cannot open the topic");
            continue;
        }
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, c->timeout_ms);
        rd_kafka_topic_destroy(rkt);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            snprintf(s->err, sizeof(s->err), "metadata: %s", rd_kafka_err2str(e));
            continue;
        }
        s->answered = 1;
        s->brokers = md->broker_cnt;
        for (int t = 0; t < md->topic_cnt; t++) {
            const rd_kafka_metadata_topic_t *mt = &md->topics[t];
            if (strcmp(mt->topic, c->topics[i]) != 0)
                continue;
            if (mt->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                snprintf(s->err, sizeof(s->err), "%s", rd_kafka_err2str(mt->err));
                if (mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                    break;
            }
            s->exists = mt->partition_cnt > 0;
            s->partitions = mt->partition_cnt;
            s->replicas = s->isr = INT32_MAX;
            for (int p = 0; p < mt->partition_cnt; p++) {
                const rd_kafka_metadata_partition_t *mp = &mt->partitions[p];
                if (mp->leader < 0)
                    s->leaderless++;
                if (mp->replica_cnt < s->replicas)
                    s->replicas = mp->replica_cnt;
                if (mp->isr_cnt < s->isr)
                    s->isr = mp->isr_cnt;
            }
        }
        rd_kafka_metadata_destroy(md);
    }
}

/* Applies a check's view of topic i: metrics, the sentence, a log line when it changes. */
static void apply_topic(ka_ledger_health_t *h, int i, const topic_seen_t *s)
{
    uint64_t *replicas = i == 0 ? &h->m->ledger_topic_replicas : &h->m->limits_topic_replicas;
    uint64_t *isr = i == 0 ? &h->m->ledger_topic_isr : &h->m->limits_topic_isr;
    uint64_t *under =
        i == 0 ? &h->m->ledger_topic_under_replicated : &h->m->limits_topic_under_replicated;
    uint64_t *unavail = i == 0 ? &h->m->ledger_topic_unavailable : &h->m->limits_topic_unavailable;
    char *state = i == 0 ? h->m->ledger_topic_state : h->m->limits_topic_state;
    size_t state_len = i == 0 ? sizeof(h->m->ledger_topic_state) : sizeof(h->m->limits_topic_state);
    const char *name = i == 0 ? h->topic : h->limits_topic;
    topic_state_t *ts = &h->topics[i];
    topic_state_t was = *ts;

    if (!s->answered) {
        /* No answer says nothing of the topic: the clients' own errors say the rest. */
        snprintf(state, state_len, "not checked: %s", s->err);
        return;
    }
    ts->known = 1;
    if (!s->exists) {
        ts->unavailable = 1;
        ts->under = 0;
        *replicas = *isr = 0;
        snprintf(state, state_len, "unavailable: the topic does not exist (%s)",
                 s->err[0] ? s->err : "no partitions");
    } else {
        int32_t want = s->brokers < 3 ? s->brokers : 3;
        int32_t min_isr = s->replicas < 2 ? s->replicas : 2;
        ts->unavailable = s->leaderless > 0 || s->isr < min_isr;
        ts->under = s->isr < s->replicas || s->replicas < want;
        *replicas = (uint64_t)s->replicas;
        *isr = (uint64_t)s->isr;
        if (s->leaderless > 0)
            snprintf(state, state_len,
                     "unavailable: %d of %d partitions have no leader (replicas %d, in sync %d)",
                     (int)s->leaderless, (int)s->partitions, (int)s->replicas, (int)s->isr);
        else if (s->isr < min_isr)
            snprintf(state, state_len,
                     "unavailable: %d in-sync replicas, fewer than min.insync.replicas %d, so "
                     "acks=all appends are refused (replicas %d)",
                     (int)s->isr, (int)min_isr, (int)s->replicas);
        else if (ts->under)
            snprintf(state, state_len,
                     "under-replicated: replicas %d, in sync %d, brokers %d (wanted: %d "
                     "replicas, min(3, brokers), all in sync)",
                     (int)s->replicas, (int)s->isr, (int)s->brokers, (int)want);
        else
            snprintf(state, state_len, "ok: replicas %d, in sync %d, brokers %d", (int)s->replicas,
                     (int)s->isr, (int)s->brokers);
    }
    *under = (uint64_t)ts->under;
    *unavail = (uint64_t)ts->unavailable;
    if (!was.known || was.unavailable != ts->unavailable || was.under != ts->under)
        ka_log(ts->unavailable || ts->under ? KA_LOG_WARN : KA_LOG_INFO, "kadmit topic health",
               KA_KS("topic", name), KA_KS("state", state));
}

static void check_done(ka_rdk_work_t *w, int closed)
{
    check_t *c = (check_t *)w;
    ka_ledger_health_t *h = c->h;
    if (!closed && h != NULL) {
        h->check = NULL;
        if (c->stale) {
            free(c);
            return;
        }
        apply_topic(h, 0, &c->seen[0]);
        apply_topic(h, 1, &c->seen[1]);
        /* A topic that turned unavailable blocks at once, with its reason; a recovery waits
         * for the next tick, which judges everything (libuv's loop clock is uv_hrtime in ms). */
        char why[sizeof(h->m->ledger_blocked_why)];
        if (ka_ledger_health_blocking(h, (int64_t)(uv_hrtime() / 1000000), why, sizeof(why))) {
            snprintf(h->m->ledger_blocked_why, sizeof(h->m->ledger_blocked_why), "%s", why);
            h->m->ledger_usable = 0;
        }
    }
    free(c);
}

static void start_check(ka_ledger_health_t *h, int64_t now_ms)
{
    check_t *c = calloc(1, sizeof(*c));
    h->next_check_ms = now_ms + CHECK_MS;
    if (c == NULL)
        return;
    c->w.run = check_run;
    c->w.done = check_done;
    c->h = h;
    snprintf(c->topics[0], sizeof(c->topics[0]), "%s", h->topic);
    snprintf(c->topics[1], sizeof(c->topics[1]), "%s", h->limits_topic);
    c->timeout_ms = (int)(h->timeout_ms / 2 < 250                ? 250
                          : h->timeout_ms / 2 > CHECK_TIMEOUT_MS ? CHECK_TIMEOUT_MS
                                                                 : h->timeout_ms / 2);
    if (ka_rdk_blocking_run(h->consumer, &c->w) < 0) {
        free(c);
        return;
    }
    h->check = c;
}

static void maybe_test_fatal(ka_ledger_health_t *h, int reading, int64_t now_ms)
{
    if (h->test_fatal_after_ms == 0 || h->test_fatal_done || !reading || h->first_read_ms == 0 ||
        now_ms - h->first_read_ms < h->test_fatal_after_ms)
        return;
    h->test_fatal_done = 1;
    ka_log(KA_LOG_WARN, "test hook: failing the ledger producer on purpose",
           KA_KS("variable", TEST_FATAL_ENV));
    rd_kafka_test_fatal_error(ka_rdk_handle(h->producer),
                              RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                              "provoked by " TEST_FATAL_ENV);
}

enum ka_ledger_health_action ka_ledger_health_tick(ka_ledger_health_t *h, int reading,
                                                   int64_t now_ms)
{
    /* Sized to fit the shortest place it is copied to ("fatal: " + it, and fatal_why). */
    char why[sizeof(h->m->ledger_producer_last_error) - 7] = "";
    enum ka_ledger_health_action act = KA_LEDGER_HEALTH_NONE;

    maybe_test_fatal(h, reading, now_ms);
    if (!h->fatal && ka_rdk_fatal(h->producer, why, sizeof(why))) {
        h->fatal = 1;
        h->recreate_due = 1;
        snprintf(h->fatal_why, sizeof(h->fatal_why), "%s", why);
        snprintf(h->m->ledger_producer_last_error, sizeof(h->m->ledger_producer_last_error),
                 "fatal: %s", why);
        h->m->ledger_producer_last_error_unix_ms = unix_ms();
        h->m->ledger_producer_fatal = 1;
        ka_log(KA_LOG_ERROR, "ledger producer hit a fatal error: recreating its client",
               KA_KS("topic", h->topic), KA_KS("error", why));
    }
    if (h->recreate_due)
        act = KA_LEDGER_HEALTH_RECREATE;
    update_lag(h, reading, now_ms);
    if (h->check == NULL && now_ms >= h->next_check_ms)
        start_check(h, now_ms);
    h->m->ledger_consumer_error =
        h->consumer_err_ms > h->consumer_read_ms && now_ms - h->consumer_err_ms < ERROR_HOLD_MS;
    h->m->ledger_producer_error =
        h->producer_err_ms > h->producer_ok_ms && now_ms - h->producer_err_ms < ERROR_HOLD_MS;
    int blocked = ka_ledger_health_blocking(h, now_ms, h->m->ledger_blocked_why,
                                            sizeof(h->m->ledger_blocked_why));
    if (!reading && !blocked)
        snprintf(h->m->ledger_blocked_why, sizeof(h->m->ledger_blocked_why),
                 "is not being read yet");
    h->m->ledger_usable = reading && !blocked;
    return act;
}

void ka_ledger_health_recreated(ka_ledger_health_t *h, int rc, const char *err)
{
    if (rc < 0) {
        /* The next tick tries again; decisions stay refused meanwhile. */
        ka_log(KA_LOG_WARN, "ledger producer not recreated yet", KA_KS("topic", h->topic),
               KA_KS("error", err));
        return;
    }
    h->recreate_due = 0;
    h->m->ledger_client_recreated++;
    ka_log(KA_LOG_WARN, "ledger client recreated after a fatal error", KA_KS("topic", h->topic),
           KA_KS("error", h->fatal_why), KA_KI("recreated_total", h->m->ledger_client_recreated));
}

int ka_ledger_health_recreating(const ka_ledger_health_t *h)
{
    return h->fatal;
}

int ka_ledger_health_blocking(const ka_ledger_health_t *h, int64_t now_ms, char *why, size_t len)
{
    char tmp[8];
    if (why == NULL || len == 0) {
        why = tmp;
        len = sizeof(tmp);
    }
    why[0] = '\0';
    if (h->fatal) {
        snprintf(why, len,
                 "is unusable: its client is being recreated after a fatal librdkafka error (%s)",
                 h->fatal_why);
        return 1;
    }
    if (h->topics[0].known && h->topics[0].unavailable) {
        snprintf(why, len, "is unusable: its topic is %s", h->m->ledger_topic_state);
        return 1;
    }
    if (h->producer_err_ms > h->producer_ok_ms && now_ms - h->producer_err_ms < ERROR_HOLD_MS) {
        snprintf(why, len, "is unusable: appends fail (%s, %" PRId64 " ms ago)",
                 h->m->ledger_producer_last_error, now_ms - h->producer_err_ms);
        return 1;
    }
    if (h->consumer_err_ms > h->consumer_read_ms && now_ms - h->consumer_err_ms < ERROR_HOLD_MS) {
        snprintf(why, len, "is unusable: its consumer fails (%s, %" PRId64 " ms ago)",
                 h->m->ledger_consumer_last_error, now_ms - h->consumer_err_ms);
        return 1;
    }
    if (h->behind_since_ms >= 0 && now_ms - h->behind_since_ms > h->timeout_ms) {
        snprintf(why, len,
                 "is unusable: its consumer is %" PRIu64 " records behind the high watermark "
                 "for %" PRId64 " ms, longer than --ledger-timeout-ms",
                 h->m->ledger_consumer_lag_records, now_ms - h->behind_since_ms);
        return 1;
    }
    return 0;
}
