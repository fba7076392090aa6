/*
 * ka_cluster_view.c: the finished cluster view (ka_cluster.h): reading it,
 * sharing it by reference count, and freeing it. Every lookup the engine
 * makes is a hash probe or an index into the layout ka_cluster_builder.c
 * laid out (ka_cluster_layout.h).
 */
#include "ka_cluster_layout.h"

#include <stdio.h>
#include <stdlib.h>

void ka_cluster_free_view(struct ka_cluster *c)
{
    for (size_t i = 0; i < c->broker_count; i++)
        free((char *)c->brokers[i].rack);
    free(c->brokers);
    free(c->topics);
    free(c->slots);
    free(c->names);
    free(c->pool);
    free(c->entries);
    free(c->partitions);
}

bool ka_cluster_lists_fenced(const ka_cluster_t *c)
{
    return c != NULL && c->lists_fenced;
}

static ka_cluster_broker_t *find_broker(const struct ka_cluster *c, int32_t id)
{
    long at = broker_index(c->brokers, c->broker_count, id);

    return at < 0 ? NULL : &c->brokers[at];
}

size_t ka_cluster_memory(const ka_cluster_t *c)
{
    size_t bytes = sizeof(struct ka_cluster_builder) + c->broker_capacity * sizeof(*c->brokers) +
                   c->topic_capacity * sizeof(*c->topics) + c->slot_count * sizeof(*c->slots) +
                   c->names_capacity + c->pool_capacity * sizeof(*c->pool) +
                   (c->partition_slots + 1) * sizeof(*c->partitions);

    for (size_t i = 0; i < c->broker_count; i++)
        bytes += c->brokers[i].rack != NULL ? strlen(c->brokers[i].rack) + 1 : 0;
    return bytes;
}

ka_cluster_t *ka_cluster_ref(ka_cluster_t *c)
{
    if (c != NULL)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void ka_cluster_unref(ka_cluster_t *c)
{
    if (c == NULL || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    ka_cluster_free_view(c);
    free((ka_cluster_builder_t *)c);
}

int64_t ka_cluster_taken_at_ms(const ka_cluster_t *c)
{
    return c->taken_at_ms;
}

int64_t ka_cluster_answered_at_ms(const ka_cluster_t *c)
{
    return c->answered_at_ms;
}

void ka_cluster_mark_partial(ka_cluster_t *c, const char *why)
{
    snprintf(c->partial, sizeof(c->partial), "%s", why);
}

const char *ka_cluster_partial_reason(const ka_cluster_t *c)
{
    return c->partial[0] ? c->partial : NULL;
}

const ka_broker_defaults_t *ka_cluster_broker_defaults(const ka_cluster_t *c)
{
    return &c->defaults;
}

size_t ka_cluster_broker_count(const ka_cluster_t *c)
{
    return c->broker_count;
}

const ka_cluster_broker_t *ka_cluster_broker_at(const ka_cluster_t *c, size_t index)
{
    return index < c->broker_count ? &c->brokers[index] : NULL;
}

const ka_cluster_broker_t *ka_cluster_broker(const ka_cluster_t *c, int32_t broker_id)
{
    return find_broker(c, broker_id);
}

int64_t ka_cluster_total_partitions(const ka_cluster_t *c)
{
    return c->total_partitions;
}

size_t ka_cluster_topic_count(const ka_cluster_t *c)
{
    return c->topic_count;
}

const ka_cluster_topic_t *ka_cluster_find_topic(const ka_cluster_t *c, ka_slice_t name)
{
    if (name.len <= 0)
        return NULL;
    return lookup(c, name, hash_name(name.ptr, (size_t)name.len));
}

/*
 * A scan, not an index: ids are asked for only by DeleteTopics v6+, which
 * is rare and names few topics, and comparing 16 bytes per topic stays in
 * the microseconds for the views kadmit is sized for.
 */
bool ka_cluster_topic_id(const ka_cluster_topic_t *t, uint8_t out[16])
{
    static const uint8_t zero[16];

    memcpy(out, t->id, 16);
    return memcmp(t->id, zero, sizeof(zero)) != 0;
}

const ka_cluster_topic_t *ka_cluster_find_topic_id(const ka_cluster_t *c, const uint8_t id[16])
{
    static const uint8_t zero[16];

    if (memcmp(id, zero, sizeof(zero)) == 0)
        return NULL;
    for (size_t i = 0; i < c->topic_count; i++)
        if (memcmp(c->topics[i].id, id, sizeof(zero)) == 0)
            return &c->topics[i];
    return NULL;
}

ka_slice_t ka_cluster_topic_name(const ka_cluster_t *c, const ka_cluster_topic_t *t)
{
    return (ka_slice_t){(const uint8_t *)c->names + t->name_off, (int32_t)t->name_len};
}

int32_t ka_cluster_topic_partition_count(const ka_cluster_topic_t *t)
{
    return t->partition_count;
}

const int32_t *ka_cluster_topic_replicas(const ka_cluster_topic_t *t, int32_t partition,
                                         int32_t *count)
{
    *count = 0;
    if (partition < 0 || partition >= t->partition_count || t->partitions[partition].count == 0)
        return NULL;
    *count = t->partitions[partition].count;
    return t->pool + t->partitions[partition].offset;
}

const ka_cluster_topic_t *ka_cluster_topic_at(const ka_cluster_t *c, size_t index, ka_slice_t *name)
{
    const ka_cluster_topic_t *t = &c->topics[index];

    *name = (ka_slice_t){(const uint8_t *)c->names + t->name_off, (int32_t)t->name_len};
    return t;
}
