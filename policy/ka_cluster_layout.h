/*
 * ka_cluster_layout.h: the layout of a cluster view, shared by its builder
 * (ka_cluster_builder.c) and the finished view (ka_cluster_view.c), with the
 * name hash and the lookups both use. Private to policy/; other modules use
 * ka_cluster.h, which has no source of its own name.
 *
 * Flat arrays, so that a view of a few hundred thousand partitions costs a
 * handful of allocations to build and to free: brokers (sorted by id when
 * finished), topics with an open-addressing hash index over their names,
 * one pool of names, one pool of replica ids, and one array of partitions.
 * Memory, finished: 8 bytes per partition + 4 per replica + about 48 per
 * topic (entry, name, two hash slots) + the brokers; ka_cluster_memory says
 * what a given view holds.
 */
#ifndef KA_CLUSTER_LAYOUT_H
#define KA_CLUSTER_LAYOUT_H

#include <stdatomic.h>
#include <string.h>

#include "ka_cluster.h"

/* A partition while building: appended in arrival order. */
struct ka_entry {
    uint32_t topic;  /* index in topics */
    int32_t index;   /* partition number */
    int32_t count;   /* replicas in the list */
    uint32_t offset; /* first replica in the replica pool */
};

/* A partition of the finished view, at its partition number. */
struct ka_partition {
    int32_t count;   /* replicas in the list; 0 for a hole in the numbering */
    uint32_t offset; /* first replica in the view's replica pool */
};

struct ka_cluster_topic {
    uint32_t name_off, name_len; /* in the view's name pool */
    uint32_t hash;
    uint8_t id[16];                        /* the topic id, all zero when not known */
    int32_t partition_count;               /* highest index + 1 */
    uint32_t used;                         /* partitions added */
    uint32_t last_entry;                   /* while building: index of its last entry + 1, or 0 */
    const struct ka_partition *partitions; /* set when finished */
    const int32_t *pool;                   /* the view's replica pool, set when finished */
};

struct ka_cluster {
    atomic_int refs; /* shared by the engine, the admin API and the metadata client */
    int64_t taken_at_ms;
    /* When the Metadata answer arrived: the view shows nothing newer. INT64_MAX: not known. */
    int64_t answered_at_ms;
    ka_broker_defaults_t defaults;
    ka_cluster_broker_t *brokers;
    size_t broker_count, broker_capacity;
    ka_cluster_topic_t *topics;
    size_t topic_count, topic_capacity;
    uint32_t *slots; /* topic index + 1, or 0 for an empty slot */
    size_t slot_count;
    char *names; /* every topic name, back to back, no NUL */
    size_t names_used, names_capacity;
    int32_t *pool; /* every replica list, back to back */
    size_t pool_used, pool_capacity;
    struct ka_entry *entries; /* while building */
    size_t entry_count, entry_capacity;
    bool interleaved;                /* some topic's entries are not contiguous */
    struct ka_partition *partitions; /* finished: every topic's, densely */
    size_t partition_slots;
    int64_t total_partitions;
    char partial[KA_CLUSTER_PARTIAL_MAX]; /* why the view may be partial; empty when complete */
    /* The broker list is every registered broker, fenced ones included (DescribeCluster v2+),
     * not only the unfenced ones Metadata and DescribeCluster v1 list. */
    bool lists_fenced;
};

/* The builder is a view under construction; only finish hands it out. */
struct ka_cluster_builder {
    struct ka_cluster view;
};

static inline uint32_t hash_name(const uint8_t *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

static inline bool name_is(const struct ka_cluster *c, const ka_cluster_topic_t *t, ka_slice_t name)
{
    return t->name_len == (uint32_t)name.len &&
           memcmp(c->names + t->name_off, name.ptr, t->name_len) == 0;
}

static inline ka_cluster_topic_t *lookup(const struct ka_cluster *c, ka_slice_t name, uint32_t hash)
{
    size_t mask = c->slot_count - 1;

    if (c->slot_count == 0 || name.len < 0)
        return NULL;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        ka_cluster_topic_t *t;

        if (c->slots[i] == 0)
            return NULL;
        t = &c->topics[c->slots[i] - 1];
        if (t->hash == hash && name_is(c, t, name))
            return t;
    }
}

/* The broker's index among the first n brokers (sorted by id), or -1. */
static inline long broker_index(const ka_cluster_broker_t *brokers, size_t n, int32_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (brokers[mid].id == id)
            return (long)mid;
        if (brokers[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Frees what a view (or a builder's view) holds, not the view itself. */
void ka_cluster_free_view(struct ka_cluster *c);

#endif
