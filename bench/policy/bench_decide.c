/*
 * bench_decide.c: how long the admission engine takes to decide a large
 * CreateTopics request.
 *
 * The view is 100 brokers on 3 racks hosting 200,000 partitions (20,000
 * topics x 10 partitions x RF 3); the request creates 1,000 topics x 10
 * partitions x RF 3. Each run decides the whole request against a fresh
 * ledger, in place mode and in bound mode, and the median of the runs is
 * printed. The first run is a warm-up and is not counted. The clock is
 * read here, never in policy/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_cluster.h"
#include "ka_engine.h"
#include "ka_policy.h"
#include "ka_reservations.h"

#define BROKERS        100
#define VIEW_TOPICS    20000
#define REQUEST_TOPICS 1000
#define PARTITIONS     10
#define REPLICATION    3
#define RUNS           9

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static ka_slice_t slice(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

static ka_cluster_t *build_view(void)
{
    static const char *const racks[] = {"rack-a", "rack-b", "rack-c"};
    ka_cluster_builder_t *b = NULL;
    ka_cluster_t *view = NULL;
    char name[32];

    if (ka_cluster_builder_new(0, &b) < 0)
        return NULL;
    for (int32_t id = 0; id < BROKERS; id++)
        ka_cluster_builder_add_broker(b, id, slice(racks[id % 3]), false);
    for (int32_t t = 0; t < VIEW_TOPICS; t++) {
        snprintf(name, sizeof(name), "existing-%d", t);
        for (int32_t p = 0; p < PARTITIONS; p++) {
            int32_t replicas[REPLICATION];

            for (int32_t r = 0; r < REPLICATION; r++)
                replicas[r] = (t * 7 + p + r * 33) % BROKERS;
            ka_cluster_builder_add_partition(b, slice(name), p, replicas, REPLICATION);
        }
    }
    if (ka_cluster_builder_finish(b, &view) < 0)
        return NULL;
    return view;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static int run(const char *mode, ka_cluster_t *view, const ka_create_topic_t *topics,
               ka_verdict_t *verdicts)
{
    char json[256];
    ka_policy_t *policy = NULL;
    double times[RUNS];
    char err[256];
    size_t admitted = 0;

    snprintf(json, sizeof(json),
             "{\"max.broker.partitions\": 7000, \"max.partitions\": 300000, "
             "\"auto.assignment\": \"%s\"}",
             mode);
    if (ka_policy_parse(json, strlen(json), 1, &policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "policy: %s\n", err);
        return 1;
    }
    for (int i = -1; i < RUNS; i++) {
        ka_reservations_t *ledger = NULL;
        ka_decision_context_t ctx = {policy, view, NULL, 1000, (uint64_t)i};
        double start;

        if (ka_reservations_new(&ledger) < 0)
            return 1;
        ctx.ledger = ledger;
        start = now_ms();
        if (ka_engine_create_topics(&ctx, topics, REQUEST_TOPICS, verdicts) < 0)
            return 1;
        if (i >= 0)
            times[i] = now_ms() - start;
        admitted = 0;
        for (size_t t = 0; t < REQUEST_TOPICS; t++) {
            admitted += verdicts[t].kind == KA_VERDICT_ADMIT ||
                        verdicts[t].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT;
            ka_verdict_release(&verdicts[t]);
        }
        ka_reservations_free(ledger);
    }
    qsort(times, RUNS, sizeof(times[0]), compare_double);
    printf("%-5s  %4d topics x %d partitions x RF %d vs %d brokers / %d partitions: "
           "median %.2f ms (min %.2f, max %.2f, %d runs), %zu admitted\n",
           mode, REQUEST_TOPICS, PARTITIONS, REPLICATION, BROKERS, VIEW_TOPICS * PARTITIONS,
           times[RUNS / 2], times[0], times[RUNS - 1], RUNS, admitted);
    ka_policy_unref(policy);
    return 0;
}

int main(void)
{
    static char names[REQUEST_TOPICS][32];
    static ka_create_topic_t topics[REQUEST_TOPICS];
    static ka_verdict_t verdicts[REQUEST_TOPICS];
    double start = now_ms();
    ka_cluster_t *view = build_view();
    int rc;

    if (view == NULL) {
        fprintf(stderr, "could not build the view\n");
        return 1;
    }
    printf("view built in %.1f ms\n", now_ms() - start);
    for (int t = 0; t < REQUEST_TOPICS; t++) {
        snprintf(names[t], sizeof(names[t]), "new-topic-%d", t);
        topics[t] = (ka_create_topic_t){.name = slice(names[t]),
                                        .num_partitions = PARTITIONS,
                                        .replication_factor = REPLICATION};
    }
    rc = run("place", view, topics, verdicts) || run("bound", view, topics, verdicts);
    ka_cluster_unref(view);
    return rc;
}
