/*
 * ka_cluster.h: the cluster view, an immutable snapshot of what the
 * brokers host.
 *
 * ka_view_build (ka_view_build.h) fills a builder from the metadata client's
 * Metadata, DescribeCluster and DescribeConfigs answers, then finishes it into
 * a view that never changes and is shared by reference count
 * (ka_cluster_ref / ka_cluster_unref, thread-safe). The view answers what
 * the admission engine asks: which brokers exist, on which rack, whether
 * fenced, how many partition replicas each hosts (internal topics
 * included), how many partitions the cluster has, and the replicas of any
 * partition by topic name (a hash lookup). It is sized for a few hundred
 * brokers and a million partitions: flat arrays, about 8 bytes per
 * partition and 4 per replica, built in time linear in the partitions.
 *
 * Broker ids that appear in replica lists but not in the broker list
 * (offline or unregistered brokers) are kept as "unlisted" brokers: their
 * replicas are counted, but the engine never places anything on them.
 *
 * A face without a source of its own name: ka_cluster_builder.c builds a
 * view, ka_cluster_view.c reads, shares and frees it, both over the layout
 * of ka_cluster_layout.h.
 */
#ifndef KA_CLUSTER_H
#define KA_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"
#include "ka_reader.h"

/* The topic configs whose broker default the view may know (bits of topic_known). */
enum ka_topic_default {
    KA_TOPIC_DEFAULT_MIN_INSYNC_REPLICAS = 1u << 0, /* min.insync.replicas */
    KA_TOPIC_DEFAULT_RETENTION_MS = 1u << 1,        /* log.retention.{ms,minutes,hours} */
    KA_TOPIC_DEFAULT_RETENTION_BYTES = 1u << 2,     /* log.retention.bytes */
    KA_TOPIC_DEFAULT_CLEANUP_POLICY = 1u << 3,      /* log.cleanup.policy */
    KA_TOPIC_DEFAULT_MAX_MESSAGE_BYTES = 1u << 4,   /* message.max.bytes */
    KA_TOPIC_DEFAULT_SEGMENT_BYTES = 1u << 5,       /* log.segment.bytes */
};

/* Broker settings that decide what a request with -1 fields creates. */
typedef struct ka_broker_defaults {
    int32_t num_partitions;             /* num.partitions, used for num_partitions = -1 */
    int16_t default_replication_factor; /* default.replication.factor, for -1 */
    bool auto_create_topics_enable;     /* auto.create.topics.enable: Metadata can create */
    /* What a topic gets for a config it does not set, judged against topic rules' config
     * bounds. A field counts only when its enum ka_topic_default bit is in topic_known: a
     * default kadmit did not read is never guessed. -1 retention means unlimited. */
    unsigned topic_known;
    int64_t min_insync_replicas;
    int64_t retention_ms;
    int64_t retention_bytes;
    int64_t max_message_bytes;
    int64_t segment_bytes;
    char cleanup_policy[32]; /* as the broker lists it, e.g. "delete" or "compact,delete" */
} ka_broker_defaults_t;

typedef struct ka_cluster_broker {
    int32_t id;
    const char *rack; /* NUL-terminated, or NULL when the broker has no rack */
    bool fenced;      /* true only when known to be fenced; placement avoids it */
    bool listed;      /* false when seen only in replica lists (offline, unregistered) */
    int64_t replicas; /* partition replicas it hosts, internal topics included */
} ka_cluster_broker_t;

typedef struct ka_cluster ka_cluster_t;
typedef struct ka_cluster_builder ka_cluster_builder_t;
typedef struct ka_cluster_topic ka_cluster_topic_t;

/*
 * Starts a view of the cluster as of taken_at_ms (the caller's clock, best
 * taken when the Metadata request was sent, so the view's age is never
 * underestimated). Defaults start at Kafka's: 1 partition, replication
 * factor 1, auto-creation enabled.
 */
int ka_cluster_builder_new(int64_t taken_at_ms, ka_cluster_builder_t **out);
void ka_cluster_builder_free(ka_cluster_builder_t *builder);
/* Room for this many topics, partitions and replicas in all, so that a
 * builder fed a known answer never grows an array. 0 or KA_ENOMEM. */
int ka_cluster_builder_reserve(ka_cluster_builder_t *builder, size_t topics, size_t partitions,
                               size_t replicas);

/* rack.len == -1 means no rack. A broker id added twice is KA_EINVALID. */
int ka_cluster_builder_add_broker(ka_cluster_builder_t *builder, int32_t broker_id, ka_slice_t rack,
                                  bool fenced);
void ka_cluster_builder_set_defaults(ka_cluster_builder_t *builder,
                                     const ka_broker_defaults_t *defaults);
/* When the Metadata answer arrived (the caller's clock): the view shows no change made after
 * it. Unset, the view may show any change made before it is used. */
void ka_cluster_builder_set_answered_at(ka_cluster_builder_t *builder, int64_t answered_at_ms);
/* Says the listed brokers are every registered one, fenced included (DescribeCluster v2+).
 * Without it a fenced broker is invisible unless it hosts a replica, and Kafka's placer still
 * uses fenced brokers, so the view cannot tell how many brokers a placement may use. */
void ka_cluster_builder_set_lists_fenced(ka_cluster_builder_t *builder, bool lists_fenced);
/* Declares a topic (which may have no partitions yet); idempotent. */
int ka_cluster_builder_add_topic(ka_cluster_builder_t *builder, ka_slice_t name);
/* Records a topic's id (Metadata v10+); the topic is declared if needed. */
int ka_cluster_builder_set_topic_id(ka_cluster_builder_t *builder, ka_slice_t name,
                                    const uint8_t id[16]);
/*
 * Adds one partition and its replica list (first = preferred leader); the
 * topic is declared if needed. The replicas are copied. A partition added
 * twice, a negative partition index or more than 32767 replicas is
 * KA_EINVALID.
 */
int ka_cluster_builder_add_partition(ka_cluster_builder_t *builder, ka_slice_t topic,
                                     int32_t partition, const int32_t *replicas,
                                     int32_t replica_count);
/* Consumes the builder (also on failure) and yields a view with one reference. */
int ka_cluster_builder_finish(ka_cluster_builder_t *builder, ka_cluster_t **out);

/* Both accept NULL. The last unref frees the view. */
ka_cluster_t *ka_cluster_ref(ka_cluster_t *cluster);
void ka_cluster_unref(ka_cluster_t *cluster);

int64_t ka_cluster_taken_at_ms(const ka_cluster_t *cluster);
/* When its Metadata answer arrived; INT64_MAX when not known. */
int64_t ka_cluster_answered_at_ms(const ka_cluster_t *cluster);
/* True when the listed brokers include the fenced ones (ka_cluster_builder_set_lists_fenced). */
bool ka_cluster_lists_fenced(const ka_cluster_t *cluster);

/*
 * A view may be partial: Metadata leaves out the topics the metadata
 * principal may not Describe, and a view without them undercounts. The
 * metadata client checks that against the broker's own log directories and
 * marks the view, on the one thread that holds it, before handing it over;
 * after that it never changes. The sentence says why and what to grant.
 */
#define KA_CLUSTER_PARTIAL_MAX 400
void ka_cluster_mark_partial(ka_cluster_t *cluster, const char *why);
/* Why the view may be partial, or NULL when nothing says it is. */
const char *ka_cluster_partial_reason(const ka_cluster_t *cluster);
/* The bytes the view holds (its arrays and names), for sizing and /metrics. */
size_t ka_cluster_memory(const ka_cluster_t *cluster);
const ka_broker_defaults_t *ka_cluster_broker_defaults(const ka_cluster_t *cluster);

/* Brokers in ascending id order, listed and unlisted. */
size_t ka_cluster_broker_count(const ka_cluster_t *cluster);
const ka_cluster_broker_t *ka_cluster_broker_at(const ka_cluster_t *cluster, size_t index);
/* NULL when the id is neither listed nor hosting any replica. */
const ka_cluster_broker_t *ka_cluster_broker(const ka_cluster_t *cluster, int32_t broker_id);

/* Partitions in the cluster, each counted once. */
int64_t ka_cluster_total_partitions(const ka_cluster_t *cluster);
size_t ka_cluster_topic_count(const ka_cluster_t *cluster);

/* NULL when the view has no such topic. Valid while the view is. */
const ka_cluster_topic_t *ka_cluster_find_topic(const ka_cluster_t *cluster, ka_slice_t name);
/* The topic with this id, or NULL (also for the all-zero id). Valid while the view is. */
const ka_cluster_topic_t *ka_cluster_find_topic_id(const ka_cluster_t *cluster,
                                                   const uint8_t id[16]);
/* Copies the topic's id into out; false when the view does not know it (all zero). */
bool ka_cluster_topic_id(const ka_cluster_topic_t *topic, uint8_t out[16]);
/* The topic's name, a slice into the view. */
ka_slice_t ka_cluster_topic_name(const ka_cluster_t *cluster, const ka_cluster_topic_t *topic);
/* One more than the highest partition index seen. */
int32_t ka_cluster_topic_partition_count(const ka_cluster_topic_t *topic);
/* The replicas of one partition (count 0 and NULL when the view lacks it). */
const int32_t *ka_cluster_topic_replicas(const ka_cluster_topic_t *topic, int32_t partition,
                                         int32_t *count);
/* Topic `index` (< ka_cluster_topic_count) and its name, a slice into the view; for walks
 * over every topic (budgets of topic rules), in no particular order. */
const ka_cluster_topic_t *ka_cluster_topic_at(const ka_cluster_t *cluster, size_t index,
                                              ka_slice_t *name);

#endif
