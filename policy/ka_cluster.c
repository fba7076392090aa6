/*
 * ka_cluster.c: building and reading the immutable cluster view.
 *
 * The builder and the view share one layout: a broker array (sorted by id
 * when finished), a topic array with an open-addressing hash index over
 * names, and one pool of replica ids that partitions point into. Finishing
 * sorts each topic's partitions into a dense array indexed by partition
 * number and counts replicas per broker, so every lookup the engine makes
 * afterwards is a hash probe or a binary search.
 */
#include "ka_cluster.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct ka_partition {
    int32_t index;   /* partition number; equals the array position once finished */
    int32_t count;   /* replicas in the list; 0 for a hole in the numbering */
    uint32_t offset; /* first replica in the view's replica pool */
};

struct ka_cluster_topic {
    char *name;
    size_t name_len;
    uint32_t hash;
    int32_t partition_count; /* highest index + 1 */
    struct ka_partition *partitions;
    size_t used, capacity; /* while building: partitions added, room */
    const int32_t *pool;   /* the view's replica pool, set when finished */
};

struct ka_cluster {
    atomic_int refs; /* shared by the engine, the admin API and the metadata client */
    int64_t taken_at_ms;
    ka_broker_defaults_t defaults;
    ka_cluster_broker_t *brokers;
    size_t broker_count, broker_capacity;
    ka_cluster_topic_t *topics;
    size_t topic_count, topic_capacity;
    uint32_t *slots; /* topic index + 1, or 0 for an empty slot */
    size_t slot_count;
    int32_t *pool; /* every replica list, back to back */
    size_t pool_used, pool_capacity;
    int64_t total_partitions;
};

/* The builder is a view under construction; only finish hands it out. */
struct ka_cluster_builder {
    struct ka_cluster view;
};

static int grow(void **array, size_t *capacity, size_t need, size_t size)
{
    size_t n = *capacity ? *capacity : 8;
    void *p;

    if (need <= *capacity)
        return 0;
    while (n < need)
        n *= 2;
    p = realloc(*array, n * size);
    if (p == NULL)
        return KA_ENOMEM;
    *array = p;
    *capacity = n;
    return 0;
}

static uint32_t hash_name(const uint8_t *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

int ka_cluster_builder_new(int64_t taken_at_ms, ka_cluster_builder_t **out)
{
    ka_cluster_builder_t *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return KA_ENOMEM;
    b->view.taken_at_ms = taken_at_ms;
    b->view.defaults = (ka_broker_defaults_t){1, 1, true};
    *out = b;
    return 0;
}

static void free_view(struct ka_cluster *c)
{
    for (size_t i = 0; i < c->broker_count; i++)
        free((char *)c->brokers[i].rack);
    for (size_t i = 0; i < c->topic_count; i++) {
        free(c->topics[i].name);
        free(c->topics[i].partitions);
    }
    free(c->brokers);
    free(c->topics);
    free(c->slots);
    free(c->pool);
}

void ka_cluster_builder_free(ka_cluster_builder_t *b)
{
    if (b == NULL)
        return;
    free_view(&b->view);
    free(b);
}

int ka_cluster_builder_add_broker(ka_cluster_builder_t *b, int32_t broker_id, ka_slice_t rack,
                                  bool fenced)
{
    struct ka_cluster *c = &b->view;
    ka_cluster_broker_t *broker;
    char *rack_copy = NULL;

    for (size_t i = 0; i < c->broker_count; i++)
        if (c->brokers[i].id == broker_id)
            return KA_EINVALID;
    if (rack.len >= 0) {
        rack_copy = malloc((size_t)rack.len + 1);
        if (rack_copy == NULL)
            return KA_ENOMEM;
        if (rack.len > 0)
            memcpy(rack_copy, rack.ptr, (size_t)rack.len);
        rack_copy[rack.len] = '\0';
    }
    if (grow((void **)&c->brokers, &c->broker_capacity, c->broker_count + 1, sizeof(*c->brokers)) <
        0) {
        free(rack_copy);
        return KA_ENOMEM;
    }
    broker = &c->brokers[c->broker_count++];
    *broker = (ka_cluster_broker_t){broker_id, rack_copy, fenced, true, 0};
    return 0;
}

void ka_cluster_builder_set_defaults(ka_cluster_builder_t *b, const ka_broker_defaults_t *d)
{
    b->view.defaults = *d;
}

static ka_cluster_topic_t *lookup(const struct ka_cluster *c, ka_slice_t name, uint32_t hash)
{
    size_t mask = c->slot_count - 1;

    if (c->slot_count == 0 || name.len < 0)
        return NULL;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        ka_cluster_topic_t *t;

        if (c->slots[i] == 0)
            return NULL;
        t = &c->topics[c->slots[i] - 1];
        if (t->hash == hash && t->name_len == (size_t)name.len &&
            memcmp(t->name, name.ptr, t->name_len) == 0)
            return t;
    }
}

/* Keeps the table at most half full so probes stay short. */
static int rehash(struct ka_cluster *c)
{
    size_t n = c->slot_count ? c->slot_count : 64;
    uint32_t *slots;

    if ((c->topic_count + 1) * 2 <= c->slot_count)
        return 0;
    while ((c->topic_count + 1) * 2 > n)
        n *= 2;
    slots = calloc(n, sizeof(*slots));
    if (slots == NULL)
        return KA_ENOMEM;
    for (size_t t = 0; t < c->topic_count; t++) {
        size_t i = c->topics[t].hash & (n - 1);

        while (slots[i] != 0)
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)t + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->slot_count = n;
    return 0;
}

static int declare_topic(struct ka_cluster *c, ka_slice_t name, ka_cluster_topic_t **out)
{
    uint32_t hash;
    ka_cluster_topic_t *t;
    size_t i;

    if (name.len <= 0)
        return KA_EINVALID;
    hash = hash_name(name.ptr, (size_t)name.len);
    *out = lookup(c, name, hash);
    if (*out != NULL)
        return 0;
    if (rehash(c) < 0 ||
        grow((void **)&c->topics, &c->topic_capacity, c->topic_count + 1, sizeof(*c->topics)) < 0)
        return KA_ENOMEM;
    t = &c->topics[c->topic_count];
    *t = (ka_cluster_topic_t){0};
    t->name = malloc((size_t)name.len + 1);
    if (t->name == NULL)
        return KA_ENOMEM;
    memcpy(t->name, name.ptr, (size_t)name.len);
    t->name[name.len] = '\0';
    t->name_len = (size_t)name.len;
    t->hash = hash;
    for (i = hash & (c->slot_count - 1); c->slots[i] != 0; i = (i + 1) & (c->slot_count - 1))
        ;
    c->slots[i] = (uint32_t)++c->topic_count;
    *out = t;
    return 0;
}

int ka_cluster_builder_add_topic(ka_cluster_builder_t *b, ka_slice_t name)
{
    ka_cluster_topic_t *t;

    return declare_topic(&b->view, name, &t);
}

int ka_cluster_builder_add_partition(ka_cluster_builder_t *b, ka_slice_t topic, int32_t partition,
                                     const int32_t *replicas, int32_t replica_count)
{
    struct ka_cluster *c = &b->view;
    ka_cluster_topic_t *t;
    int rc;

    if (partition < 0 || replica_count < 0 || replica_count > INT16_MAX)
        return KA_EINVALID;
    rc = declare_topic(c, topic, &t);
    if (rc < 0)
        return rc;
    /* Duplicates are found when finishing; a linear scan here would be quadratic. */
    if (c->pool_used + (size_t)replica_count > UINT32_MAX)
        return KA_ELIMIT;
    if (grow((void **)&t->partitions, &t->capacity, t->used + 1, sizeof(*t->partitions)) < 0 ||
        grow((void **)&c->pool, &c->pool_capacity, c->pool_used + (size_t)replica_count,
             sizeof(*c->pool)) < 0)
        return KA_ENOMEM;
    if (replica_count > 0)
        memcpy(c->pool + c->pool_used, replicas, (size_t)replica_count * sizeof(*replicas));
    t->partitions[t->used++] =
        (struct ka_partition){partition, replica_count, (uint32_t)c->pool_used};
    c->pool_used += (size_t)replica_count;
    return 0;
}

static int compare_partition(const void *a, const void *b)
{
    const struct ka_partition *x = a, *y = b;

    return (x->index > y->index) - (x->index < y->index);
}

static int compare_broker(const void *a, const void *b)
{
    const ka_cluster_broker_t *x = a, *y = b;

    return (x->id > y->id) - (x->id < y->id);
}

/* Sorts a topic's partitions into a dense array indexed by partition number. */
static int densify(ka_cluster_topic_t *t, int64_t *total)
{
    struct ka_partition *dense;
    int32_t count;

    if (t->used == 0)
        return 0;
    qsort(t->partitions, t->used, sizeof(*t->partitions), compare_partition);
    for (size_t i = 1; i < t->used; i++)
        if (t->partitions[i].index == t->partitions[i - 1].index)
            return KA_EINVALID;
    count = t->partitions[t->used - 1].index + 1;
    if ((size_t)count == t->used) {
        t->partition_count = count;
        *total += count;
        return 0;
    }
    if (count > 4 * 1024 * 1024)
        return KA_ELIMIT;
    dense = calloc((size_t)count, sizeof(*dense));
    if (dense == NULL)
        return KA_ENOMEM;
    for (int32_t i = 0; i < count; i++)
        dense[i].index = i;
    for (size_t i = 0; i < t->used; i++)
        dense[t->partitions[i].index] = t->partitions[i];
    free(t->partitions);
    t->partitions = dense;
    t->partition_count = count;
    *total += (int64_t)t->used;
    return 0;
}

static ka_cluster_broker_t *find_broker(const struct ka_cluster *c, int32_t id)
{
    ka_cluster_broker_t key = {.id = id};

    if (c->broker_count == 0)
        return NULL;
    return bsearch(&key, c->brokers, c->broker_count, sizeof(key), compare_broker);
}

static void sort_brokers(struct ka_cluster *c)
{
    if (c->broker_count > 1)
        qsort(c->brokers, c->broker_count, sizeof(*c->brokers), compare_broker);
}

/* Counts replicas per broker, adding unlisted entries for ids not listed. */
static int count_replicas(struct ka_cluster *c)
{
    sort_brokers(c);
    for (size_t i = 0; i < c->pool_used; i++) {
        int32_t id = c->pool[i];
        ka_cluster_broker_t *broker;

        if (id < 0)
            continue;
        broker = find_broker(c, id);
        if (broker == NULL) {
            if (grow((void **)&c->brokers, &c->broker_capacity, c->broker_count + 1,
                     sizeof(*c->brokers)) < 0)
                return KA_ENOMEM;
            c->brokers[c->broker_count++] = (ka_cluster_broker_t){id, NULL, false, false, 0};
            sort_brokers(c);
            broker = find_broker(c, id);
        }
        broker->replicas++;
    }
    return 0;
}

int ka_cluster_builder_finish(ka_cluster_builder_t *b, ka_cluster_t **out)
{
    struct ka_cluster *c = &b->view;
    int rc = 0;

    *out = NULL;
    for (size_t i = 0; i < c->topic_count && rc == 0; i++) {
        rc = densify(&c->topics[i], &c->total_partitions);
        c->topics[i].pool = NULL;
    }
    if (rc == 0)
        rc = count_replicas(c);
    if (rc < 0) {
        ka_cluster_builder_free(b);
        return rc;
    }
    for (size_t i = 0; i < c->topic_count; i++)
        c->topics[i].pool = c->pool;
    atomic_init(&c->refs, 1);
    /* The builder is the view's first member, so the view is the builder. */
    *out = &b->view;
    return 0;
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
    free_view(c);
    free((ka_cluster_builder_t *)c);
}

int64_t ka_cluster_taken_at_ms(const ka_cluster_t *c)
{
    return c->taken_at_ms;
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
