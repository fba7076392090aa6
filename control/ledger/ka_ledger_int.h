/*
 * ka_ledger_int.h: what the ledger client's two files share (ka_ledger.c:
 * records, intents, the tick; ka_ledger_start.c: the start-up sequence,
 * from creating the topic to reading it). Not part of the ledger's public
 * face (ka_ledger.h).
 */
#ifndef KA_LEDGER_INT_H
#define KA_LEDGER_INT_H

#include <stdint.h>
#include <time.h>

#include "ka_ledger.h"
#include "ka_ledger_record.h"
#include "ka_ledger_state.h"

#define TICK_MS           50
#define RETRY_MS          1000
#define LOOKUP_TIMEOUT_MS 5000
#define CREATE_TIMEOUT_MS 10000
#define RETENTION_TTLS    4 /* records are kept this many TTLs */

/* The start-up's steps, in order, for its profile (ka_ledger_mark). */
enum ka_ledger_step {
    KA_LEDGER_STEP_VIEW = 0, /* a cluster view with brokers */
    KA_LEDGER_STEP_TOPIC,    /* the topic is known to exist (the view, or CreateTopics) */
    KA_LEDGER_STEP_CLOCK,    /* the heartbeat's delivery report: appends work, clock anchored */
    KA_LEDGER_STEP_READING,  /* the start offset found and the consumer started */
    KA_LEDGER_STEPS
};

/* PH_AWAIT_TOPIC: the topic exists; waiting until the producer's broker shows it with a
 * leader (ka_rdk_topic.h), so the heartbeat does not wait for librdkafka's scan. */
enum phase {
    PH_WAIT_VIEW = 0,
    PH_CREATING,
    PH_AWAIT_TOPIC,
    PH_CLOCK,
    PH_LOOKUP,
    PH_RETRY,
    PH_READING
};

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
    /* Only the ends: an empty ledger is read from its end at once, with no clock needed
     * (every record read anchors the clock before it is applied). */
    int ends_only;
    int empty;      /* result of an ends-only lookup: no record retained */
    int64_t offset; /* result */
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
    /* Every broker was down before the ledger was first read: the ledger is unreachable,
     * not starting, so held intents fail at --ledger-timeout-ms (fail closed) instead of
     * waiting as long as their requests may. */
    int start_failed;
    lookup_t *lookup; /* in flight on the pool */
    pending_t *pending;
    uint64_t next_seq;
    ka_own_key_t key;                /* the cluster secret (borrowed), or none */
    ka_own_warn_t warn;              /* rate limit of the refusal log lines */
    struct ka_ledger_health *health; /* whether decisions can work (ka_ledger_health.h) */
    uv_timer_t tick;
    /* The start-up's profile, loop ms: when the client started, and when each
     * step (enum ka_ledger_step) first completed; 0 until then. Logged once
     * reading starts, and kept in the ledger_ready_ms gauge. */
    int64_t started_ms;
    int64_t step_ms[KA_LEDGER_STEPS];
};

static inline int64_t ka_ledger_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t ka_ledger_loop_ms(ka_ledger_t *l)
{
    uv_update_time(l->loop);
    return (int64_t)uv_now(l->loop);
}

/* The ledger's now: a lower bound of its leader's clock (wall clock until one is known). */
static inline int64_t ka_ledger_now(ka_ledger_t *l)
{
    return l->clock_known ? ka_ledger_loop_ms(l) + l->clock_offset_ms : ka_ledger_wall_ms();
}

/* ka_ledger.c */
void ka_ledger_set_connected(ka_ledger_t *l, int up);
/* A setup step failed: logged, and the start-up begins again after RETRY_MS. */
void ka_ledger_retry_later(ka_ledger_t *l, const char *what, const char *why);
/* Appends a record (json is freed); opaque_seq is 0 for outcomes. */
int ka_ledger_produce(ka_ledger_t *l, char *json, size_t len, uint64_t opaque_seq);
/* Both handles' events: the consumer's fetches, the producer's reports and results. */
void ka_ledger_event_cb(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev);
void ka_ledger_tick_cb(uv_timer_t *t);

/* ka_ledger_start.c */
/* Notes the first time a start-up step completed. */
void ka_ledger_mark(ka_ledger_t *l, enum ka_ledger_step step);
/* The CreateTopics result while the topic is being created. */
void ka_ledger_on_created(ka_ledger_t *l, rd_kafka_event_t *ev);
/* The clock is anchored: finds where to start reading, on the thread pool. */
void ka_ledger_start_lookup(ka_ledger_t *l);
/* Takes the next setup step the phase allows. */
void ka_ledger_advance(ka_ledger_t *l);

#endif
