/*
 * bench_endpoints.c: the cost of the gateway's endpoint rewrite
 * (protocol/ka_endpoints.h) on a Metadata v12 response of 200,000
 * partitions, against a plain memcpy of the same bytes.
 *
 * The response is synthesized with the generated encoder from a captured
 * one (tests/data/frames/gateway/metadata-v12-response-kafka-4.4.0-three.bin):
 * its three brokers (ids, hosts, ports, racks), cluster id and controller id,
 * then 2,000 topics of 100 partitions, replication factor 3. Cases:
 *   memcpy         a copy of the body into a buffer already allocated;
 *   malloc+memcpy  the same into a fresh buffer each time;
 *   rewrite        every broker mapped (hosts change length), into a writer
 *                  reset and reused each time;
 *   rewrite fresh  the same into a fresh writer (its one allocation included);
 *   nothing        a map that gives each broker's own endpoint back: the walk
 *                  of the brokers only, no copy (changed = 0).
 * Each case runs WARMUP iterations first, timed and reported on their own,
 * then ITERS steady-state ones: their median, min and max. Any error (the
 * frame missing, an encode or rewrite failing, a rewrite whose output is not
 * what it must be) exits non-zero.
 *
 * Usage: bench_protocol_endpoints [captured-frame] [iters]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_codecs.h"
#include "ka_endpoints.h"
#include "ka_header.h"

#define WARMUP 5
#define TOPICS 2000
#define PER    100

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_endpoints: FAILED: %s: %s\n", what, rc ? ka_strerror(rc) : "");
    exit(1);
}

static int map_gw(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    static char hosts[64][40];
    (void)ctx, (void)host, (void)port;
    if (node_id < 0 || node_id >= 64)
        return -1;
    int n = snprintf(hosts[node_id], sizeof(hosts[node_id]), "broker-%d.gw.example", node_id);
    out->host = hosts[node_id];
    out->host_len = (size_t)n;
    out->port = 29000 + node_id;
    return 0;
}

static int map_same(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    (void)ctx, (void)node_id;
    out->host = (const char *)host.ptr;
    out->host_len = (size_t)host.len;
    out->port = port;
    return 0;
}

/* The body of a Metadata v12 response with the captured one's brokers and 200,000 partitions. */
static void build(const char *path, ka_writer_t *w)
{
    static uint8_t buf[1 << 16];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die(path, 0);
    size_t len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    ka_reader_t r;
    struct ka_response_header h;
    ka_reader_init(&r, buf, len);
    if (ka_response_header_decode(&r, 1, &h) < 0)
        die("the captured frame's header", r.err);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 20);
    struct ka_metadata_response cap;
    int rc = ka_metadata_response_decode(&r, 12, &arena, &cap);
    if (rc < 0)
        die("decode the captured frame", rc);
    static int32_t replicas[3][3];
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 3; k++)
            replicas[b][k] = cap.brokers.items[(b + k) % cap.brokers.count].node_id;
    struct ka_metadata_response_metadata_response_partition *parts = calloc(PER, sizeof(*parts));
    for (int p = 0; p < PER; p++) {
        ka_metadata_response_metadata_response_partition_init(&parts[p]);
        parts[p].partition_index = p;
        parts[p].leader_id = replicas[p % 3][0];
        parts[p].leader_epoch = 1;
        parts[p].replica_nodes = (ka_i32_array_t){3, replicas[p % 3]};
        parts[p].isr_nodes = (ka_i32_array_t){3, replicas[p % 3]};
    }
    struct ka_metadata_response_metadata_response_topic *ts = calloc(TOPICS, sizeof(*ts));
    char(*names)[32] = calloc(TOPICS, 32);
    for (int t = 0; t < TOPICS; t++) {
        ka_metadata_response_metadata_response_topic_init(&ts[t]);
        int n = snprintf(names[t], 32, "topic-%d", t);
        ts[t].name = (ka_slice_t){(const uint8_t *)names[t], n};
        ts[t].topic_id[0] = (uint8_t)t;
        ts[t].topic_id[1] = (uint8_t)(t >> 8);
        ts[t].partitions.count = PER;
        ts[t].partitions.items = parts;
    }
    cap.topics.count = TOPICS;
    cap.topics.items = ts;
    if ((rc = ka_metadata_response_encode(w, 12, &cap)) < 0)
        die("encode Metadata", rc);
    free(parts);
    free(ts);
    free(names);
    ka_arena_destroy(&arena);
}

enum which { MEMCPY, MALLOC_MEMCPY, REWRITE, REWRITE_FRESH, NOTHING };

static const ka_writer_t *g_body;
static uint8_t *g_dst;
static ka_writer_t g_out;
static size_t g_expect_len;

static void run_once(enum which c)
{
    const uint8_t *b = g_body->buf;
    size_t len = g_body->len;
    int changed, rc;
    switch (c) {
    case MEMCPY:
        memcpy(g_dst, b, len);
        break;
    case MALLOC_MEMCPY: {
        uint8_t *p = malloc(len);
        if (p == NULL)
            die("malloc", 0);
        memcpy(p, b, len);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
        break;
    }
    case REWRITE:
        ka_writer_reset(&g_out);
        rc = ka_endpoints_rewrite(3, 12, b, len, map_gw, NULL, &g_out, &changed);
        if (rc < 0 || !changed || g_out.len != g_expect_len)
            die("rewrite", rc);
        break;
    case REWRITE_FRESH: {
        ka_writer_t w;
        ka_writer_init(&w, (size_t)256 << 20);
        rc = ka_endpoints_rewrite(3, 12, b, len, map_gw, NULL, &w, &changed);
        if (rc < 0 || !changed || w.len != g_expect_len)
            die("rewrite (fresh writer)", rc);
        ka_writer_free(&w);
        break;
    }
    case NOTHING:
        ka_writer_reset(&g_out);
        rc = ka_endpoints_rewrite(3, 12, b, len, map_same, NULL, &g_out, &changed);
        if (rc < 0 || changed || g_out.len != 0)
            die("rewrite (nothing to change)", rc);
        break;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs one case; returns its steady-state median in ns (its minimum in *min) and prints it. */
static double run_case(const char *label, enum which c, int iters, double *min)
{
    double warm = 0, *t = calloc((size_t)iters, sizeof(double));
    for (int i = 0; i < WARMUP; i++) {
        double t0 = now_ns();
        run_once(c);
        warm += now_ns() - t0;
    }
    for (int i = 0; i < iters; i++) {
        double t0 = now_ns();
        run_once(c);
        t[i] = now_ns() - t0;
    }
    qsort(t, (size_t)iters, sizeof(double), cmp_double);
    double med = t[iters / 2];
    *min = t[0];
    printf("%-16s %14.0f %14.0f %14.0f %14.0f\n", label, warm / WARMUP, med, t[0], t[iters - 1]);
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    const char *path =
        argc > 1 ? argv[1]
                 : "tests/data/frames/gateway/metadata-v12-response-kafka-4.4.0-three.bin";
    int iters = argc > 2 ? atoi(argv[2]) : 50;
    if (iters < 1)
        iters = 1;
    ka_writer_t body;
    ka_writer_init(&body, (size_t)256 << 20);
    build(path, &body);
    g_body = &body;
    g_dst = malloc(body.len);
    if (g_dst == NULL)
        die("malloc", 0);
    ka_writer_init(&g_out, (size_t)256 << 20);
    int changed;
    int rc = ka_endpoints_rewrite(3, 12, body.buf, body.len, map_gw, NULL, &g_out, &changed);
    if (rc < 0 || !changed)
        die("the first rewrite", rc);
    g_expect_len = g_out.len;
    printf("Metadata v12 response: %d partitions, %zu body bytes (%zu after the rewrite)\n",
           TOPICS * PER, body.len, g_expect_len);
    printf("%-16s %14s %14s %14s %14s\n", "case", "warmup ns", "median ns", "min ns", "max ns");
    double cpy_min, mcpy_min, rw_min, rwf_min, none_min;
    double cpy = run_case("memcpy", MEMCPY, iters, &cpy_min);
    double mcpy = run_case("malloc+memcpy", MALLOC_MEMCPY, iters, &mcpy_min);
    double rw = run_case("rewrite", REWRITE, iters, &rw_min);
    double rwf = run_case("rewrite fresh", REWRITE_FRESH, iters, &rwf_min);
    double none = run_case("nothing", NOTHING, iters, &none_min);
    printf("ratio, median (min): rewrite / memcpy %.2f (%.2f); rewrite fresh / malloc+memcpy "
           "%.2f (%.2f); nothing %.0f ns\n",
           rw / cpy, rw_min / cpy_min, rwf / mcpy, rwf_min / mcpy_min, none);
    ka_writer_free(&g_out);
    ka_writer_free(&body);
    free(g_dst);
    return 0;
}
