/*
 * ka_view_build.h: the cluster view, built from what the broker answered.
 *
 * The metadata client asks its broker three things and hands the decoded
 * answers here: Metadata (every topic, its partitions and their replica
 * lists, and the live brokers), DescribeCluster (every registered broker,
 * fenced ones included where the broker can say so) and DescribeConfigs
 * (the broker settings that decide what a request with -1 fields creates,
 * and the topic-config defaults topic rules judge a config left out at).
 * The build is a pure function of these answers: no I/O, no clock, so a
 * view can be rebuilt from captured frames in a test, byte for byte.
 *
 * Brokers: DescribeCluster's list when it answered without error, with
 * each broker's fenced flag; any broker that only Metadata lists is added
 * too, as unfenced (Metadata lists only unfenced brokers). Without a
 * DescribeCluster answer the view has Metadata's brokers alone, as before
 * the broker could describe its cluster. Broker ids seen only in replica
 * lists stay "unlisted" (ka_cluster.h).
 */
#ifndef KA_VIEW_BUILD_H
#define KA_VIEW_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_describecluster_response.h"
#include "ka_describeconfigs_response.h"
#include "ka_metadata_response.h"

/* The decoded answers of one refresh. Only metadata is required. */
typedef struct ka_view_answers {
    /* When the Metadata request was sent (the caller's clock), so the view's
     * age is never underestimated. */
    int64_t taken_at_ms;
    /* When the Metadata answer arrived (0: not known). */
    int64_t answered_at_ms;
    const struct ka_metadata_response *metadata;
    /* NULL when the broker does not support DescribeCluster. */
    const struct ka_describecluster_response *cluster;
    /* The DescribeCluster request asked for fenced brokers too (version 2+). */
    bool cluster_lists_fenced;
    /* The DescribeConfigs answers for resource type BROKER; may be none. */
    const struct ka_describeconfigs_response *const *configs;
    size_t config_count;
    /* Used when no configs result carries the defaults (the last known
     * ones, kept across refreshes); NULL means Kafka's own defaults. */
    const ka_broker_defaults_t *fallback_defaults;
} ka_view_answers_t;

/*
 * Finds the broker defaults in DescribeConfigs answers: the first result
 * without error (a KRaft broker answers only for its own id and refuses
 * the others per resource). Keys it does not carry keep Kafka's defaults,
 * except the topic-config defaults, which stay unknown (topic_known).
 * Returns 1 with *out filled, or 0 when no result answered.
 */
int ka_view_broker_defaults(const struct ka_describeconfigs_response *const *configs, size_t count,
                            ka_broker_defaults_t *out);

/*
 * Builds a new immutable view (one reference for the caller). On failure
 * returns a negative ka_err and fills err with a sentence naming what in
 * the answers could not be used.
 */
int ka_view_build(const ka_view_answers_t *answers, ka_cluster_t **out, char *err, size_t errlen);

#endif
