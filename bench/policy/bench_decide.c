/*
 * bench_decide.c: how long the admission engine takes to decide, and how
 * long the view it decides against takes to build, as the cluster grows.
 *
 * The view is 100 brokers on 3 racks hosting N partitions (N/10 topics x 10
 * partitions x RF 3), built by ka_view_build from a decoded Metadata answer,
 * as the metadata client builds it. Against it: CreateTopics of 1,000 topics
 * x 10 partitions x RF 3 in place mode and in bound mode, of 100 topics
 * (cost against request size), and of one topic. Each decision runs
 * against a fresh ledger; the first run is a warm-up; medians are printed,
 * wall clock and (in brackets) this thread's CPU time, which a loaded
 * machine inflates less. The clock is read here, never in policy/.
 *
 *   bench_policy_decide                       N = 200,000
 *   bench_policy_decide --sweep 10000,100000,200000,1000000 [--runs 9]
 *   bench_policy_decide --rules 1 [...]      the same with guardrails (issue #19): a name
 *                                             pattern, two topic rules (one with a budget) and
 *                                             a principal with topics and a budget
 *   bench_policy_decide --only place|bound   only the 1,000-topic case of that mode (for a
 *                                             profiler's count of one kind of decision)
 *
 * The lines `view built in X ms` and `place ... median X ms` keep the form
 * of earlier versions, so runs stay comparable.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_cluster.h"
#include "ka_engine.h"
#include "ka_policy.h"
#include "ka_reservations.h"
#include "ka_view_build.h"

#define BROKERS        100
#define PER_TOPIC      10
#define REPLICATION    3
#define REQUEST_TOPICS 1000
#define MAX_RUNS       1001

struct clocks {
    double wall, cpu; /* ms */
};

static struct clocks now(void)
{
    struct timespec w, c;

    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    return (struct clocks){(double)w.tv_sec * 1e3 + (double)w.tv_nsec / 1e6,
                           (double)c.tv_sec * 1e3 + (double)c.tv_nsec / 1e6};
}

static struct clocks since(struct clocks start)
{
    struct clocks end = now();

    return (struct clocks){end.wall - start.wall, end.cpu - start.cpu};
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Medians of n samples (sorted in place). */
static struct clocks median(double *wall, double *cpu, int n)
{
    qsort(wall, (size_t)n, sizeof(*wall), compare_double);
    qsort(cpu, (size_t)n, sizeof(*cpu), compare_double);
    return (struct clocks){wall[n / 2], cpu[n / 2]};
}

/* --rules: guardrails every new topic passes, so that admissions stay comparable. */
static bool with_rules;
static const char *only_mode; /* --only: NULL, "place" or "bound" */
#define GUARDRAILS                                                                                 \
    ", \"topic.name.pattern\": \"[a-z0-9][a-z0-9._-]*\", \"topic.rules\": ["                       \
    "{\"match\": \"existing-1.*\", \"partitions.max\": 100},"                                      \
    " {\"match\": \"new-topic-.*\", \"replication.factor.min\": 2, \"partitions.max\": 100,"       \
    " \"budget.partitions\": 100000000}], \"principals\": {\"User:bench\": {\"topics\":"           \
    " [\"new-topic-.*\"], \"budget.partitions\": 100000000}}"

static ka_slice_t slice(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

/* A decoded Metadata answer of `topics` x PER_TOPIC partitions x RF 3. */
struct answer {
    struct ka_metadata_response md;
    struct ka_metadata_response_metadata_response_broker brokers[BROKERS];
    struct ka_metadata_response_metadata_response_topic *topics;
    /* 100 patterns of partitions, shared by the topics: (t*7 + p + r*33) % 100. */
    struct ka_metadata_response_metadata_response_partition parts[100][PER_TOPIC];
    int32_t replicas[100][PER_TOPIC][REPLICATION];
    char (*names)[24];
};

static struct answer *make_answer(int32_t topics)
{
    static const char *const racks[] = {"rack-a", "rack-b", "rack-c"};
    struct answer *a = calloc(1, sizeof(*a));

    a->topics = calloc((size_t)topics, sizeof(*a->topics));
    a->names = calloc((size_t)topics, sizeof(*a->names));
    for (int32_t b = 0; b < BROKERS; b++) {
        a->brokers[b].node_id = b;
        a->brokers[b].rack = slice(racks[b % 3]);
    }
    for (int32_t k = 0; k < 100; k++) {
        for (int32_t p = 0; p < PER_TOPIC; p++) {
            for (int32_t r = 0; r < REPLICATION; r++)
                a->replicas[k][p][r] = (k * 7 + p + r * 33) % BROKERS;
            a->parts[k][p].partition_index = p;
            a->parts[k][p].replica_nodes = (ka_i32_array_t){REPLICATION, a->replicas[k][p]};
        }
    }
    for (int32_t t = 0; t < topics; t++) {
        snprintf(a->names[t], sizeof(a->names[t]), "existing-%d", t);
        a->topics[t].name = slice(a->names[t]);
        a->topics[t].partitions.count = PER_TOPIC;
        a->topics[t].partitions.items = a->parts[t % 100];
    }
    a->md.brokers.count = BROKERS;
    a->md.brokers.items = a->brokers;
    a->md.topics.count = topics;
    a->md.topics.items = a->topics;
    return a;
}

static void free_answer(struct answer *a)
{
    free(a->topics);
    free(a->names);
    free(a);
}

static ka_cluster_t *build_view(const struct answer *a, int runs)
{
    static double wall[MAX_RUNS], cpu[MAX_RUNS];
    ka_view_answers_t in = {.taken_at_ms = 0, .metadata = &a->md};
    ka_cluster_t *view = NULL;
    char err[256];
    int64_t replicas;

    for (int i = 0; i < runs; i++) {
        struct clocks start = now(), took;

        ka_cluster_unref(view);
        if (ka_view_build(&in, &view, err, sizeof(err)) < 0) {
            fprintf(stderr, "view: %s\n", err);
            return NULL;
        }
        took = since(start);
        wall[i] = took.wall;
        cpu[i] = took.cpu;
    }
    struct clocks m = median(wall, cpu, runs);
    replicas = ka_cluster_total_partitions(view) * REPLICATION;
    printf("view built in %.1f ms [cpu %.1f ms] (%lld partitions, %lld replicas; view memory %zu "
           "bytes, %.1f B per partition replica)\n",
           m.wall, m.cpu, (long long)ka_cluster_total_partitions(view), (long long)replicas,
           ka_cluster_memory(view), (double)ka_cluster_memory(view) / (double)replicas);
    return view;
}

/* Decides `count` topics `runs` times; prints the medians. */
static int decide(const char *mode, ka_cluster_t *view, int count, int runs,
                  const ka_create_topic_t *topics, ka_verdict_t *verdicts)
{
    static double wall[MAX_RUNS], cpu[MAX_RUNS];
    int64_t per_broker = ka_cluster_total_partitions(view) * REPLICATION / BROKERS;
    char json[1024], err[256];
    ka_policy_t *policy = NULL;
    size_t admitted = 0;

    snprintf(json, sizeof(json),
             "{\"max.broker.partitions\": %lld, \"max.partitions\": %lld, "
             "\"auto.assignment\": \"%s\"%s}",
             (long long)(per_broker + 1000), (long long)ka_cluster_total_partitions(view) + 20000,
             mode, with_rules ? GUARDRAILS : "");
    if (ka_policy_parse(json, strlen(json), 1, &policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "policy: %s\n", err);
        return 1;
    }
    for (int i = -1; i < runs; i++) {
        ka_reservations_t *ledger = NULL;
        ka_decision_context_t ctx = {policy, view, NULL, 1000, (uint64_t)i, "User:bench"};
        struct clocks start, took;

        if (ka_reservations_new(&ledger) < 0)
            return 1;
        ctx.ledger = ledger;
        start = now();
        if (ka_engine_create_topics(&ctx, topics, (size_t)count, verdicts) < 0)
            return 1;
        took = since(start);
        if (i >= 0) {
            wall[i] = took.wall;
            cpu[i] = took.cpu;
        } else if (with_rules) {
            printf("first decision against the view (counts the budgets' partitions once): "
                   "%.2f ms [cpu %.2f ms]\n",
                   took.wall, took.cpu);
        }
        admitted = 0;
        for (int t = 0; t < count; t++) {
            admitted += verdicts[t].kind == KA_VERDICT_ADMIT ||
                        verdicts[t].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT;
            ka_verdict_release(&verdicts[t]);
        }
        ka_reservations_free(ledger);
    }
    struct clocks m = median(wall, cpu, runs);
    if (count == 1)
        printf("create 1 topic x %d partitions x RF %d (%s) vs %d brokers / %lld partitions: "
               "median %.1f us [cpu %.1f us] (%d runs), %zu admitted\n",
               PER_TOPIC, REPLICATION, mode, BROKERS, (long long)ka_cluster_total_partitions(view),
               m.wall * 1e3, m.cpu * 1e3, runs, admitted);
    else
        printf("%-5s  %4d topics x %d partitions x RF %d vs %d brokers / %lld partitions: "
               "median %.2f ms [cpu %.2f ms] (min %.2f, max %.2f, %d runs), %zu admitted\n",
               mode, count, PER_TOPIC, REPLICATION, BROKERS,
               (long long)ka_cluster_total_partitions(view), m.wall, m.cpu, wall[0], wall[runs - 1],
               runs, admitted);
    ka_policy_unref(policy);
    return 0;
}

static int one_size(int64_t partitions, int runs)
{
    static char names[REQUEST_TOPICS][32];
    static ka_create_topic_t topics[REQUEST_TOPICS];
    static ka_verdict_t verdicts[REQUEST_TOPICS];
    struct answer *a = make_answer((int32_t)(partitions / PER_TOPIC));
    ka_cluster_t *view = build_view(a, runs < 5 ? runs : 5);
    int rc;

    if (view == NULL)
        return 1;
    for (int t = 0; t < REQUEST_TOPICS; t++) {
        snprintf(names[t], sizeof(names[t]), "new-topic-%d", t);
        topics[t] = (ka_create_topic_t){.name = slice(names[t]),
                                        .num_partitions = PER_TOPIC,
                                        .replication_factor = REPLICATION};
    }
    if (only_mode != NULL)
        rc = decide(only_mode, view, REQUEST_TOPICS, runs, topics, verdicts);
    else
        rc = decide("place", view, REQUEST_TOPICS, runs, topics, verdicts) ||
             decide("bound", view, REQUEST_TOPICS, runs, topics, verdicts) ||
             decide("place", view, REQUEST_TOPICS / 10, runs, topics, verdicts) ||
             decide("place", view, 1, runs * 20 + 1, topics, verdicts);
    ka_cluster_unref(view);
    free_answer(a);
    return rc;
}

int main(int argc, char **argv)
{
    const char *sweep = "200000";
    int runs = 9;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--sweep") == 0)
            sweep = argv[i + 1];
        else if (strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rules") == 0)
            with_rules = atoi(argv[i + 1]) != 0;
        else if (strcmp(argv[i], "--only") == 0)
            only_mode = argv[i + 1];
    }
    if (only_mode != NULL && strcmp(only_mode, "place") != 0 && strcmp(only_mode, "bound") != 0) {
        fprintf(stderr, "bench_policy_decide: --only takes place or bound\n");
        return 2;
    }
    if (runs < 1 || runs * 20 + 1 > MAX_RUNS)
        runs = 9;
    for (const char *p = sweep; *p != '\0';) {
        char *end;
        long long n = strtoll(p, &end, 10);

        if (end == p || n < PER_TOPIC) {
            fprintf(stderr, "usage: bench_policy_decide [--sweep N,N,...] [--runs R] [--rules 0|1] "
                            "[--only place|bound]\n");
            return 2;
        }
        printf("== %lld partitions\n", n);
        if (one_size(n, runs) != 0)
            return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}
