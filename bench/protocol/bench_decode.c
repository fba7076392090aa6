/*
 * bench_decode.c: how long the generated decoders take on the frames kadmit
 * decodes on its hot paths: CreateTopics requests of 1, 100 and 1000 topics
 * (the admission path) and a Metadata response of 200,000 partitions (the
 * cluster-view refresh). Frames are built with the generated encoders.
 * Prints a table; never asserts on speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ka_codecs.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_decode: %s: %s\n", what, ka_strerror(rc));
    exit(1);
}

/* A CreateTopics v7 request of n auto-assigned topics with two configs each. */
static void build_createtopics(ka_writer_t *w, int n)
{
    static char names[1000][32];
    struct ka_createtopics_request_creatable_topic *topics = calloc((size_t)n, sizeof(*topics));
    struct ka_createtopics_request_creatable_topic_config configs[2];
    ka_createtopics_request_creatable_topic_config_init(&configs[0]);
    ka_createtopics_request_creatable_topic_config_init(&configs[1]);
    configs[0].name = KA_SLICE_LIT("cleanup.policy");
    configs[0].value = KA_SLICE_LIT("compact");
    configs[1].name = KA_SLICE_LIT("retention.ms");
    configs[1].value = KA_SLICE_LIT("604800000");
    for (int i = 0; i < n; i++) {
        ka_createtopics_request_creatable_topic_init(&topics[i]);
        int len = snprintf(names[i], sizeof(names[i]), "bench.topic.%d", i);
        topics[i].name = (ka_slice_t){(const uint8_t *)names[i], len};
        topics[i].num_partitions = 12;
        topics[i].replication_factor = 3;
        topics[i].configs.count = 2;
        topics[i].configs.items = configs;
    }
    struct ka_createtopics_request req;
    ka_createtopics_request_init(&req);
    req.topics.count = n;
    req.topics.items = topics;
    int rc = ka_createtopics_request_encode(w, 7, &req);
    if (rc < 0)
        die("encode CreateTopics", rc);
    free(topics);
}

/* A Metadata v12 response: 6 brokers, `topics` topics of `per` partitions, RF 3. */
static void build_metadata(ka_writer_t *w, int topics, int per)
{
    struct ka_metadata_response_metadata_response_broker brokers[6];
    for (int b = 0; b < 6; b++) {
        ka_metadata_response_metadata_response_broker_init(&brokers[b]);
        brokers[b].node_id = b;
        brokers[b].host = KA_SLICE_LIT("broker.example.internal");
        brokers[b].port = 9092;
    }
    static int32_t replicas[6][3];
    for (int b = 0; b < 6; b++)
        for (int k = 0; k < 3; k++)
            replicas[b][k] = (b + k) % 6;
    struct ka_metadata_response_metadata_response_partition *parts =
        calloc((size_t)per, sizeof(*parts));
    for (int p = 0; p < per; p++) {
        ka_metadata_response_metadata_response_partition_init(&parts[p]);
        parts[p].partition_index = p;
        parts[p].leader_id = p % 6;
        parts[p].leader_epoch = 1;
        parts[p].replica_nodes = (ka_i32_array_t){3, replicas[p % 6]};
        parts[p].isr_nodes = (ka_i32_array_t){3, replicas[p % 6]};
    }
    struct ka_metadata_response_metadata_response_topic *ts = calloc((size_t)topics, sizeof(*ts));
    char(*names)[32] = calloc((size_t)topics, 32);
    for (int t = 0; t < topics; t++) {
        ka_metadata_response_metadata_response_topic_init(&ts[t]);
        int len = snprintf(names[t], 32, "topic-%d", t);
        ts[t].name = (ka_slice_t){(const uint8_t *)names[t], len};
        ts[t].topic_id[0] = (uint8_t)t;
        ts[t].partitions.count = per;
        ts[t].partitions.items = parts;
    }
    struct ka_metadata_response resp;
    ka_metadata_response_init(&resp);
    resp.brokers.count = 6;
    resp.brokers.items = brokers;
    resp.cluster_id = KA_SLICE_LIT("bench-cluster");
    resp.controller_id = 1;
    resp.topics.count = topics;
    resp.topics.items = ts;
    int rc = ka_metadata_response_encode(w, 12, &resp);
    if (rc < 0)
        die("encode Metadata", rc);
    free(parts);
    free(ts);
    free(names);
}

/* Decodes frame `iters` times with codec c; returns ns per decode. */
static double time_decode(const struct ka_codec *c, int16_t version, const ka_writer_t *frame,
                          int iters, size_t *arena_bytes)
{
    ka_arena_t arena;
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    void *msg = calloc(1, c->struct_size);
    double best = 0;
    /* One untimed warmup decode sizes the arena; then the timed runs. */
    for (int round = 0; round < 2; round++) {
        double t0 = now_ns();
        int n = round == 0 ? 1 : iters;
        for (int i = 0; i < n; i++) {
            ka_arena_reset(&arena);
            ka_reader_t r;
            ka_reader_init(&r, frame->buf, frame->len);
            int rc = c->decode(&r, version, &arena, msg);
            if (rc < 0)
                die("decode", rc);
        }
        best = (now_ns() - t0) / n;
    }
    *arena_bytes = arena.used;
    free(msg);
    ka_arena_destroy(&arena);
    return best;
}

int main(void)
{
    const struct ka_codec *ct = ka_codec_find(19, KA_REQUEST);
    const struct ka_codec *md = ka_codec_find(3, KA_RESPONSE);
    printf("%-40s %12s %14s %14s\n", "frame", "wire bytes", "arena bytes", "decode");
    const int sizes[] = {1, 100, 1000};
    for (size_t i = 0; i < 3; i++) {
        ka_writer_t w;
        ka_writer_init(&w, (size_t)64 << 20);
        build_createtopics(&w, sizes[i]);
        size_t arena_bytes;
        int iters = sizes[i] == 1 ? 1000000 : sizes[i] == 100 ? 20000 : 2000;
        double ns = time_decode(ct, 7, &w, iters, &arena_bytes);
        char label[64];
        snprintf(label, sizeof(label), "CreateTopics v7 request, %d topic%s", sizes[i],
                 sizes[i] == 1 ? "" : "s");
        printf("%-40s %12zu %14zu %11.0f ns\n", label, w.len, arena_bytes, ns);
        ka_writer_free(&w);
    }
    ka_writer_t w;
    ka_writer_init(&w, (size_t)256 << 20);
    build_metadata(&w, 2000, 100);
    size_t arena_bytes;
    double ns = time_decode(md, 12, &w, 20, &arena_bytes);
    printf("%-40s %12zu %14zu %11.2f ms\n", "Metadata v12 response, 200000 partitions", w.len,
           arena_bytes, ns / 1e6);
    ka_writer_free(&w);
    return 0;
}
