/*
 * ka_view_build.c: the cluster view from decoded answers (see ka_view_build.h).
 */
#include "ka_view_build.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* policy/ links no protocol/ code, so the two failures a builder reports are named here. */
static const char *why(int rc)
{
    return rc == KA_ENOMEM ? "out of memory" : "listed twice, negative or too many replicas";
}

static bool slice_is(ka_slice_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == (int32_t)n && memcmp(s.ptr, lit, n) == 0;
}

/* A config value as a decimal integer (sign allowed); 0, or -1 when it is not one. */
static int parse_integer(ka_slice_t v, int64_t *out)
{
    char buf[32];
    char *end;

    if (v.len <= 0 || v.len >= (int32_t)sizeof(buf))
        return -1;
    memcpy(buf, v.ptr, (size_t)v.len);
    buf[v.len] = '\0';
    *out = strtoll(buf, &end, 10);
    return *end == '\0' && end != buf ? 0 : -1;
}

/* A config value as a decimal integer in [1, max]; 0, or -1 when it is not one. */
static int parse_positive(ka_slice_t v, long max, long *out)
{
    int64_t x;

    if (parse_integer(v, &x) < 0 || x <= 0 || x > max)
        return -1;
    *out = (long)x;
    return 0;
}

/* The topic-config defaults named like the broker's settings, each with its bit. */
static const struct {
    const char *broker_key;
    unsigned bit;
    size_t offset;
} topic_defaults[] = {
    {"min.insync.replicas", KA_TOPIC_DEFAULT_MIN_INSYNC_REPLICAS,
     offsetof(ka_broker_defaults_t, min_insync_replicas)},
    {"log.retention.bytes", KA_TOPIC_DEFAULT_RETENTION_BYTES,
     offsetof(ka_broker_defaults_t, retention_bytes)},
    {"message.max.bytes", KA_TOPIC_DEFAULT_MAX_MESSAGE_BYTES,
     offsetof(ka_broker_defaults_t, max_message_bytes)},
    {"log.segment.bytes", KA_TOPIC_DEFAULT_SEGMENT_BYTES,
     offsetof(ka_broker_defaults_t, segment_bytes)},
};

/*
 * The broker's retention as Kafka resolves it: log.retention.ms when set,
 * else log.retention.minutes, else log.retention.hours; a negative result
 * is unlimited (-1). unit[0..3) are ms, minutes, hours; known[] says which
 * the answer gave a number for.
 */
static void resolve_retention(const int64_t unit[3], const bool known[3], ka_broker_defaults_t *d)
{
    static const int64_t scale[3] = {1, 60 * 1000, 60 * 60 * 1000};

    for (int u = 0; u < 3; u++) {
        if (!known[u])
            continue;
        if (unit[u] < 0)
            d->retention_ms = -1;
        else if (unit[u] > INT64_MAX / scale[u])
            d->retention_ms = INT64_MAX;
        else
            d->retention_ms = unit[u] * scale[u];
        d->topic_known |= KA_TOPIC_DEFAULT_RETENTION_MS;
        return;
    }
}

static void read_topic_default(
    const struct ka_describeconfigs_response_describe_configs_resource_result *config,
    ka_broker_defaults_t *d, int64_t retention[3], bool retention_known[3])
{
    static const char *const retention_keys[3] = {"log.retention.ms", "log.retention.minutes",
                                                  "log.retention.hours"};
    int64_t x;

    for (size_t i = 0; i < sizeof(topic_defaults) / sizeof(topic_defaults[0]); i++)
        if (slice_is(config->name, topic_defaults[i].broker_key) &&
            parse_integer(config->value, &x) == 0) {
            *(int64_t *)((char *)d + topic_defaults[i].offset) = x;
            d->topic_known |= topic_defaults[i].bit;
        }
    for (int u = 0; u < 3; u++)
        if (slice_is(config->name, retention_keys[u]) &&
            parse_integer(config->value, &retention[u]) == 0)
            retention_known[u] = true;
    if (slice_is(config->name, "log.cleanup.policy") && config->value.len >= 0 &&
        config->value.len < (int32_t)sizeof(d->cleanup_policy)) {
        memcpy(d->cleanup_policy, config->value.ptr, (size_t)config->value.len);
        d->cleanup_policy[config->value.len] = '\0';
        d->topic_known |= KA_TOPIC_DEFAULT_CLEANUP_POLICY;
    }
}

static void read_defaults(const struct ka_describeconfigs_response_describe_configs_result *res,
                          ka_broker_defaults_t *d)
{
    int64_t retention[3] = {0, 0, 0};
    bool retention_known[3] = {false, false, false};

    for (int32_t k = 0; k < res->configs.count; k++) {
        const struct ka_describeconfigs_response_describe_configs_resource_result *config =
            &res->configs.items[k];
        long x;

        if (slice_is(config->name, "num.partitions") &&
            parse_positive(config->value, INT32_MAX, &x) == 0)
            d->num_partitions = (int32_t)x;
        else if (slice_is(config->name, "default.replication.factor") &&
                 parse_positive(config->value, INT16_MAX, &x) == 0)
            d->default_replication_factor = (int16_t)x;
        else if (slice_is(config->name, "auto.create.topics.enable"))
            d->auto_create_topics_enable = slice_is(config->value, "true");
        else
            read_topic_default(config, d, retention, retention_known);
    }
    resolve_retention(retention, retention_known, d);
}

int ka_view_broker_defaults(const struct ka_describeconfigs_response *const *configs, size_t count,
                            ka_broker_defaults_t *out)
{
    for (size_t i = 0; i < count; i++) {
        if (configs[i] == NULL)
            continue;
        for (int32_t r = 0; r < configs[i]->results.count; r++) {
            const struct ka_describeconfigs_response_describe_configs_result *res =
                &configs[i]->results.items[r];

            if (res->error_code != 0)
                continue;
            *out = (ka_broker_defaults_t){.num_partitions = 1,
                                          .default_replication_factor = 1,
                                          .auto_create_topics_enable = true};
            read_defaults(res, out);
            return 1;
        }
    }
    return 0;
}

/* True when DescribeCluster lists broker_id (its lists are a few hundred long). */
static bool described(const struct ka_describecluster_response *cluster, int32_t broker_id)
{
    for (int32_t i = 0; i < cluster->brokers.count; i++)
        if (cluster->brokers.items[i].broker_id == broker_id)
            return true;
    return false;
}

static int add_brokers(ka_cluster_builder_t *builder, const ka_view_answers_t *in, char *err,
                       size_t errlen)
{
    const struct ka_describecluster_response *cluster = in->cluster;
    const struct ka_metadata_response *metadata = in->metadata;
    int rc;

    if (cluster != NULL && cluster->error_code != 0)
        cluster = NULL; /* refused (e.g. not authorized): Metadata's list still stands */
    for (int32_t i = 0; cluster != NULL && i < cluster->brokers.count; i++) {
        const struct ka_describecluster_response_describe_cluster_broker *b =
            &cluster->brokers.items[i];

        rc = ka_cluster_builder_add_broker(builder, b->broker_id, b->rack, b->is_fenced != 0);
        if (rc < 0) {
            snprintf(err, errlen, "broker %d from DescribeCluster cannot be added: %s",
                     b->broker_id, rc == KA_EINVALID ? "listed twice" : why(rc));
            return rc;
        }
    }
    for (int32_t i = 0; i < metadata->brokers.count; i++) {
        const struct ka_metadata_response_metadata_response_broker *b = &metadata->brokers.items[i];

        if (cluster != NULL && described(cluster, b->node_id))
            continue;
        rc = ka_cluster_builder_add_broker(builder, b->node_id, b->rack, false);
        if (rc < 0) {
            snprintf(err, errlen, "broker %d from Metadata cannot be added: %s", b->node_id,
                     rc == KA_EINVALID ? "listed twice" : why(rc));
            return rc;
        }
    }
    return 0;
}

/* Sizes the builder for the whole answer up front: no array grows while adding. */
static int reserve(ka_cluster_builder_t *builder, const struct ka_metadata_response *metadata)
{
    size_t partitions = 0, replicas = 0;

    for (int32_t i = 0; i < metadata->topics.count; i++) {
        const struct ka_metadata_response_metadata_response_topic *t = &metadata->topics.items[i];

        partitions += (size_t)(t->partitions.count > 0 ? t->partitions.count : 0);
        for (int32_t p = 0; p < t->partitions.count; p++)
            replicas += (size_t)(t->partitions.items[p].replica_nodes.count > 0
                                     ? t->partitions.items[p].replica_nodes.count
                                     : 0);
    }
    return ka_cluster_builder_reserve(
        builder, (size_t)(metadata->topics.count > 0 ? metadata->topics.count : 0), partitions,
        replicas);
}

static int add_topics(ka_cluster_builder_t *builder, const struct ka_metadata_response *metadata,
                      char *err, size_t errlen)
{
    if (reserve(builder, metadata) < 0) {
        snprintf(err, errlen, "out of memory sizing a view of %d topics", metadata->topics.count);
        return KA_ENOMEM;
    }
    for (int32_t i = 0; i < metadata->topics.count; i++) {
        const struct ka_metadata_response_metadata_response_topic *t = &metadata->topics.items[i];
        int rc;

        /* Versions 12+ may answer a topic by id alone; there is nothing to index it by. */
        if (t->name.len < 0)
            continue;
        if ((rc = ka_cluster_builder_set_topic_id(builder, t->name, t->topic_id)) < 0) {
            snprintf(err, errlen, "topic %.*s cannot be added: %s", (int)t->name.len,
                     (const char *)t->name.ptr, why(rc));
            return rc;
        }
        for (int32_t p = 0; p < t->partitions.count; p++) {
            const struct ka_metadata_response_metadata_response_partition *part =
                &t->partitions.items[p];

            rc = ka_cluster_builder_add_partition(
                builder, t->name, part->partition_index, part->replica_nodes.items,
                part->replica_nodes.count > 0 ? part->replica_nodes.count : 0);
            if (rc < 0) {
                snprintf(err, errlen, "partition %d of topic %.*s cannot be added: %s",
                         part->partition_index, (int)t->name.len, (const char *)t->name.ptr,
                         why(rc));
                return rc;
            }
        }
    }
    return 0;
}

int ka_view_build(const ka_view_answers_t *in, ka_cluster_t **out, char *err, size_t errlen)
{
    ka_cluster_builder_t *builder = NULL;
    ka_broker_defaults_t defaults;
    int rc;

    *out = NULL;
    if (in->metadata == NULL) {
        snprintf(err, errlen, "no Metadata answer to build a view from");
        return KA_EINVALID;
    }
    if ((rc = ka_cluster_builder_new(in->taken_at_ms, &builder)) < 0) {
        snprintf(err, errlen, "out of memory starting a view");
        return rc;
    }
    if (in->answered_at_ms != 0)
        ka_cluster_builder_set_answered_at(builder, in->answered_at_ms);
    if ((rc = add_brokers(builder, in, err, errlen)) < 0 ||
        (rc = add_topics(builder, in->metadata, err, errlen)) < 0) {
        ka_cluster_builder_free(builder);
        return rc;
    }
    ka_cluster_builder_set_lists_fenced(
        builder, in->cluster != NULL && in->cluster->error_code == 0 && in->cluster_lists_fenced);
    if (ka_view_broker_defaults(in->configs, in->config_count, &defaults))
        ka_cluster_builder_set_defaults(builder, &defaults);
    else if (in->fallback_defaults != NULL)
        ka_cluster_builder_set_defaults(builder, in->fallback_defaults);
    if ((rc = ka_cluster_builder_finish(builder, out)) < 0)
        snprintf(err, errlen, "the view cannot be finished: out of memory");
    return rc;
}
