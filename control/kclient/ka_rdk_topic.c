/*
 * ka_rdk_topic.c: see ka_rdk_topic.h. The work owns a copy of the topic's
 * name and opens its own topic handle on the pool thread, so nothing of the
 * caller's is touched off the loop.
 */
#include "ka_rdk_topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"

#define TOPIC_NAME_MAX 249 /* Kafka's own bound */
#define RETRY_SLEEP_MS 20  /* between two metadata requests */

typedef struct await {
    ka_rdk_work_t w; /* first: the work is the wait */
    char topic[TOPIC_NAME_MAX + 1];
    int timeout_ms;
    int ready; /* result */
    ka_rdk_topic_ready_cb cb;
    void *arg;
} await_t;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* True when md shows the topic with partition 0 led by a broker. */
static int has_leader(const rd_kafka_metadata_t *md)
{
    return md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
           md->topics[0].partition_cnt >= 1 && md->topics[0].partitions[0].leader >= 0;
}

static void await_run(ka_rdk_work_t *w, rd_kafka_t *rk)
{
    await_t *a = (await_t *)w;
    int64_t deadline = mono_ms() + a->timeout_ms;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, a->topic, NULL);
    if (rkt == NULL)
        return;
    for (;;) {
        int64_t left = deadline - mono_ms();
        const struct rd_kafka_metadata *md = NULL;
        if (left <= 0)
            break;
        if (rd_kafka_metadata(rk, 0, rkt, &md, (int)left) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            a->ready = has_leader(md);
            rd_kafka_metadata_destroy(md);
            if (a->ready)
                break;
        }
        struct timespec pause = {0, RETRY_SLEEP_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    rd_kafka_topic_destroy(rkt);
}

static void await_done(ka_rdk_work_t *w, int closed)
{
    await_t *a = (await_t *)w;
    if (!closed)
        a->cb(a->arg, a->ready);
    free(a);
}

int ka_rdk_topic_await(ka_rdk_t *r, const char *topic, int timeout_ms, ka_rdk_topic_ready_cb cb,
                       void *arg)
{
    if (strlen(topic) > TOPIC_NAME_MAX || timeout_ms <= 0)
        return KA_EINVALID;
    await_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return KA_ENOMEM;
    snprintf(a->topic, sizeof(a->topic), "%s", topic);
    a->timeout_ms = timeout_ms;
    a->cb = cb;
    a->arg = arg;
    a->w.run = await_run;
    a->w.done = await_done;
    if (ka_rdk_blocking_run(r, &a->w) < 0) {
        free(a);
        return KA_EINVALID;
    }
    return 0;
}
