/*
 * md_serve: a bench-only metadata broker. It answers kadmit's metadata
 * client with a generated cluster of any size, so the forwarding benchmark
 * can refresh a 200,000-partition view every second on a machine whose one
 * real broker could never hold that many. Never used by tests.
 *
 *   md_serve --listen HOST:PORT [--partitions N] [--brokers B]
 *
 * It answers ApiVersions (offering Metadata only, so the client skips
 * DescribeCluster and DescribeConfigs) and Metadata with N/10 topics x 10
 * partitions x RF 3 over B brokers (defaults 200,000 and 100), encoded once
 * per version by the generated encoders. Every other request closes the
 * connection. One connection at a time, blocking. On each Metadata answer
 * it prints its size to stderr (the bytes one sidecar pulls per refresh).
 */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fwd_common.h"
#include "ka_codecs.h"
#include "ka_header.h"

#define PROG      "md_serve"
#define PER_TOPIC 10
#define RF        3

/* Reads (out == NULL) into in, or writes out, all n bytes; -1 when the peer is gone. */
static int io_full(int fd, uint8_t *in, const uint8_t *out, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t k = out != NULL ? write(fd, out + done, n - done) : read(fd, in + done, n - done);

        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

/* The Metadata answer's body at one version, built once. */
static ka_writer_t *metadata_body(int16_t version, int32_t partitions, int32_t brokers)
{
    static ka_writer_t cache[32];
    static int built[32];
    struct ka_metadata_response resp;
    struct ka_metadata_response_metadata_response_broker *bs;
    struct ka_metadata_response_metadata_response_topic *ts;
    struct ka_metadata_response_metadata_response_partition *ps;
    int32_t *replicas, topics = partitions / PER_TOPIC;
    char(*names)[24];

    if (version < 0 || version >= 32)
        return NULL;
    if (built[version])
        return &cache[version];
    bs = calloc((size_t)brokers, sizeof(*bs));
    ts = calloc((size_t)topics, sizeof(*ts));
    ps = calloc((size_t)topics * PER_TOPIC, sizeof(*ps));
    replicas = calloc((size_t)topics * PER_TOPIC * RF, sizeof(*replicas));
    names = calloc((size_t)topics, sizeof(*names));
    for (int32_t b = 0; b < brokers; b++) {
        ka_metadata_response_metadata_response_broker_init(&bs[b]);
        bs[b].node_id = b;
        bs[b].host = KA_SLICE_LIT("broker.bench.internal");
        bs[b].port = 9092;
    }
    for (int32_t t = 0; t < topics; t++) {
        ka_metadata_response_metadata_response_topic_init(&ts[t]);
        int len = snprintf(names[t], sizeof(names[t]), "bench-%d", t);
        ts[t].name = (ka_slice_t){(const uint8_t *)names[t], len};
        ts[t].topic_id[0] = (uint8_t)t;
        ts[t].topic_id[1] = (uint8_t)(t >> 8);
        ts[t].topic_id[2] = (uint8_t)(t >> 16);
        ts[t].partitions.count = PER_TOPIC;
        ts[t].partitions.items = ps + (size_t)t * PER_TOPIC;
        for (int32_t p = 0; p < PER_TOPIC; p++) {
            struct ka_metadata_response_metadata_response_partition *part =
                &ts[t].partitions.items[p];
            int32_t *r = replicas + ((size_t)t * PER_TOPIC + (size_t)p) * RF;

            ka_metadata_response_metadata_response_partition_init(part);
            for (int k = 0; k < RF; k++)
                r[k] = (t * 7 + p + k * (brokers / RF)) % brokers;
            part->partition_index = p;
            part->leader_id = r[0];
            part->replica_nodes = (ka_i32_array_t){RF, r};
            part->isr_nodes = (ka_i32_array_t){RF, r};
        }
    }
    ka_metadata_response_init(&resp);
    resp.brokers.count = brokers;
    resp.brokers.items = bs;
    resp.cluster_id = KA_SLICE_LIT("bench-cluster");
    resp.controller_id = 0;
    resp.topics.count = topics;
    resp.topics.items = ts;
    ka_writer_init(&cache[version], (size_t)1 << 30);
    if (ka_metadata_response_encode(&cache[version], version, &resp) < 0) {
        fprintf(stderr, PROG ": cannot encode Metadata v%d\n", version);
        exit(1);
    }
    free(bs);
    free(ts);
    free(ps);
    free(replicas);
    free(names);
    built[version] = 1;
    return &cache[version];
}

static void versions_body(ka_writer_t *w)
{
    struct ka_apiversions_response resp;
    struct ka_apiversions_response_api_version md;

    ka_apiversions_response_init(&resp);
    ka_apiversions_response_api_version_init(&md);
    md.api_key = KA_METADATA_REQUEST_API_KEY;
    md.min_version = 0;
    md.max_version = 12;
    resp.api_keys.count = 1;
    resp.api_keys.items = &md;
    ka_apiversions_response_encode(w, 0, &resp);
}

/* Answers one request; -1 to close. */
static int serve_one(int fd, const uint8_t *req, size_t len, int32_t partitions, int32_t brokers)
{
    ka_reader_t r;
    ka_writer_t head, versions;
    struct ka_response_header rh = {0};
    ka_writer_t *body = &versions;
    int16_t api, ver;
    int rc;

    if (len < 8)
        return -1;
    api = (int16_t)(req[0] << 8 | req[1]);
    ver = (int16_t)(req[2] << 8 | req[3]);
    ka_reader_init(&r, req + 4, 4);
    ka_read_i32(&r, &rh.correlation_id);
    ka_writer_init(&versions, 4096);
    if (api == KA_APIVERSIONS_REQUEST_API_KEY)
        versions_body(&versions);
    else if (api == KA_METADATA_REQUEST_API_KEY)
        body = metadata_body(ver, partitions, brokers);
    else
        body = NULL;
    if (body == NULL) {
        ka_writer_free(&versions);
        return -1;
    }
    ka_writer_init(&head, 64);
    ka_write_i32(&head, 0);
    ka_response_header_encode(
        &head, api == KA_APIVERSIONS_REQUEST_API_KEY ? 0 : ka_response_header_version(api, ver),
        &rh);
    ka_writer_patch_i32(&head, 0, (int32_t)(head.len - 4 + body->len));
    rc = io_full(fd, NULL, head.buf, head.len) < 0 || io_full(fd, NULL, body->buf, body->len) < 0
             ? -1
             : 0;
    if (api == KA_METADATA_REQUEST_API_KEY)
        fprintf(stderr, PROG ": Metadata v%d answer %zu bytes\n", ver, head.len + body->len);
    ka_writer_free(&head);
    ka_writer_free(&versions);
    return rc;
}

int main(int argc, char **argv)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    const char *listen_at = NULL;
    int32_t partitions = 200000, brokers = 100;
    int one = 1, lfd;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--listen") == 0)
            listen_at = argv[i + 1];
        else if (strcmp(argv[i], "--partitions") == 0)
            partitions = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--brokers") == 0)
            brokers = atoi(argv[i + 1]);
    }
    if (listen_at == NULL || partitions < PER_TOPIC || brokers < RF) {
        fprintf(stderr, "usage: " PROG " --listen HOST:PORT [--partitions N] [--brokers B]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    ka_fwd_parse_addr(PROG, listen_at, &ss, &sslen);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&ss, sslen) < 0 || listen(lfd, 8) < 0)
        ka_fwd_die(PROG, "listen");
    metadata_body(12, partitions, brokers); /* the usual version, before any client waits */
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        uint8_t size[4];

        if (fd < 0)
            continue;
        while (io_full(fd, size, NULL, 4) == 0) {
            size_t len = ka_fwd_get_u32(size);
            uint8_t *req = len <= (1u << 20) ? malloc(len) : NULL;
            int rc = req == NULL || io_full(fd, req, NULL, len) < 0
                         ? -1
                         : serve_one(fd, req, len, partitions, brokers);

            free(req);
            if (rc < 0)
                break;
        }
        close(fd);
    }
}
