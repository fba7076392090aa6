/*
 * ka_mdc_refresh.h: one metadata refresh's answers, and the two steps that
 * run on libuv's worker threads (see ka_metadata_client.c).
 *
 * The metadata client fills a refresh on the loop (frames, decoded
 * DescribeCluster and DescribeConfigs answers) and hands it to a worker for
 * the two steps whose cost grows with the cluster: decoding the Metadata
 * answer and building the view. While a worker holds it (busy), nothing on
 * the loop reads or writes it.
 */
#ifndef KA_MDC_REFRESH_H
#define KA_MDC_REFRESH_H

#include <stdint.h>
#include <uv.h>

#include "ka_cluster.h"
#include "ka_mdc_logdirs.h"
#include "ka_pool.h"
#include "ka_protocol.h"

struct ka_mdc;

/* Metadata, DescribeCluster, DescribeConfigs, DescribeLogDirs. */
#define KA_MDC_REFRESH_FRAMES 4

struct ka_mdc_refresh {
    uv_work_t work; /* work.data is the refresh */
    struct ka_mdc *owner;
    int busy;      /* a worker holds it */
    int abandoned; /* failed or stopped while busy: the completion frees it */
    int rc;        /* the worker's result, with err */
    char err[300];
    ka_reader_t metadata_reader; /* the Metadata body after its header */
    int16_t metadata_version;
    ka_broker_defaults_t fallback; /* the defaults known before this refresh */
    int have_fallback;
    ka_cluster_t *view; /* built, until handed over */
    uint64_t work_ns;   /* worker time since the last completion */
    int64_t taken_at_ms;
    int64_t answered_at_ms;                   /* when the Metadata answer arrived */
    ka_arena_t arena;                         /* every decoded answer of this refresh */
    ka_pbuf_t *frames[KA_MDC_REFRESH_FRAMES]; /* the frames the decoded answers point into */
    int frame_count;
    struct ka_metadata_response metadata;
    struct ka_describecluster_response cluster;
    struct ka_describeconfigs_response configs;
    int have_cluster, have_configs;
    int16_t cluster_version; /* the DescribeCluster version asked (2+ lists fenced brokers) */
    int asked_logdirs, have_logdirs; /* DescribeLogDirs, compared with the view on the worker */
    ka_reader_t logdirs_reader;      /* its body after the header */
    int16_t logdirs_version;
    ka_logdirs_check_t logdirs;
};

/* On a worker: decodes metadata_reader into metadata (rc, err). */
void ka_mdc_refresh_decode_work(uv_work_t *work);
/* The brokers' defaults this refresh's DescribeConfigs gave, into *known (logged when they
 * change); nothing when it gave none. Moved here from the state machine, unchanged. */
void ka_mdc_refresh_note_defaults(const struct ka_mdc_refresh *f, ka_broker_defaults_t *known,
                                  int *have_known);
/* On a worker: builds view from the answers (rc, err), then frees the
 * decoded answers (the frames stay: the pool is the loop's). */
void ka_mdc_refresh_build_work(uv_work_t *work);

/*
 * The DescribeConfigs request of a refresh: every broker md lists, asked for
 * the settings that decide -1 fields and the topic-config defaults that topic
 * rules' config bounds judge a key left out at. *storage (free()) holds what
 * req points to. Returns 0 or KA_ENOMEM.
 */
int ka_mdc_configs_request(const struct ka_metadata_response *md,
                           struct ka_describeconfigs_request *req, void **storage);

#endif
