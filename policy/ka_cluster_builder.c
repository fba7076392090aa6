/*
 * ka_cluster_builder.c: building the immutable cluster view (ka_cluster.h)
 * into the layout of ka_cluster_layout.h; ka_cluster_view.c reads it.
 *
 * While building, partitions are appended in arrival order, tagged with
 * their topic; finishing groups them by topic (a counting sort, only when
 * topics arrived interleaved), sorts each topic's run by partition number
 * when it is not sorted already, and lays them out densely, indexed by
 * partition number. Replicas are counted per broker through a table by id.
 */
#include "ka_cluster_layout.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int ka_cluster_builder_new(int64_t taken_at_ms, ka_cluster_builder_t **out)
{
    ka_cluster_builder_t *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return KA_ENOMEM;
    b->view.taken_at_ms = taken_at_ms;
    b->view.answered_at_ms = INT64_MAX;
    b->view.defaults = (ka_broker_defaults_t){1, 1, true};
    *out = b;
    return 0;
}

void ka_cluster_builder_free(ka_cluster_builder_t *b)
{
    if (b == NULL)
        return;
    ka_cluster_free_view(&b->view);
    free(b);
}

int ka_cluster_builder_reserve(ka_cluster_builder_t *b, size_t topics, size_t partitions,
                               size_t replicas)
{
    struct ka_cluster *c = &b->view;

    if (grow((void **)&c->topics, &c->topic_capacity, topics, sizeof(*c->topics)) < 0 ||
        grow((void **)&c->entries, &c->entry_capacity, partitions, sizeof(*c->entries)) < 0 ||
        grow((void **)&c->pool, &c->pool_capacity, replicas, sizeof(*c->pool)) < 0)
        return KA_ENOMEM;
    return 0;
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

void ka_cluster_builder_set_answered_at(ka_cluster_builder_t *b, int64_t answered_at_ms)
{
    b->view.answered_at_ms = answered_at_ms;
}

void ka_cluster_builder_set_lists_fenced(ka_cluster_builder_t *b, bool lists_fenced)
{
    b->view.lists_fenced = lists_fenced;
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
    /* Partitions of one topic usually arrive together: no hashing for those. */
    if (c->topic_count > 0 && name_is(c, &c->topics[c->topic_count - 1], name)) {
        *out = &c->topics[c->topic_count - 1];
        return 0;
    }
    hash = hash_name(name.ptr, (size_t)name.len);
    *out = lookup(c, name, hash);
    if (*out != NULL)
        return 0;
    if (c->topic_count >= UINT32_MAX - 1 || c->names_used + (size_t)name.len > UINT32_MAX)
        return KA_ELIMIT;
    if (rehash(c) < 0 ||
        grow((void **)&c->topics, &c->topic_capacity, c->topic_count + 1, sizeof(*c->topics)) < 0 ||
        grow((void **)&c->names, &c->names_capacity, c->names_used + (size_t)name.len, 1) < 0)
        return KA_ENOMEM;
    t = &c->topics[c->topic_count];
    *t = (ka_cluster_topic_t){0};
    memcpy(c->names + c->names_used, name.ptr, (size_t)name.len);
    t->name_off = (uint32_t)c->names_used;
    t->name_len = (uint32_t)name.len;
    c->names_used += (size_t)name.len;
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

int ka_cluster_builder_set_topic_id(ka_cluster_builder_t *b, ka_slice_t name, const uint8_t id[16])
{
    ka_cluster_topic_t *t;
    int rc = declare_topic(&b->view, name, &t);

    if (rc == 0)
        memcpy(t->id, id, sizeof(t->id));
    return rc;
}

int ka_cluster_builder_add_partition(ka_cluster_builder_t *b, ka_slice_t topic, int32_t partition,
                                     const int32_t *replicas, int32_t replica_count)
{
    struct ka_cluster *c = &b->view;
    ka_cluster_topic_t *t;
    uint32_t ti;
    int rc;

    if (partition < 0 || replica_count < 0 || replica_count > INT16_MAX)
        return KA_EINVALID;
    rc = declare_topic(c, topic, &t);
    if (rc < 0)
        return rc;
    /* Duplicates are found when finishing; a search here would be quadratic. */
    if (c->pool_used + (size_t)replica_count > UINT32_MAX || c->entry_count >= UINT32_MAX - 1)
        return KA_ELIMIT;
    if (grow((void **)&c->entries, &c->entry_capacity, c->entry_count + 1, sizeof(*c->entries)) <
            0 ||
        grow((void **)&c->pool, &c->pool_capacity, c->pool_used + (size_t)replica_count,
             sizeof(*c->pool)) < 0)
        return KA_ENOMEM;
    if (replica_count > 0)
        memcpy(c->pool + c->pool_used, replicas, (size_t)replica_count * sizeof(*replicas));
    ti = (uint32_t)(t - c->topics);
    if (t->last_entry != 0 && t->last_entry != c->entry_count)
        c->interleaved = true;
    c->entries[c->entry_count++] =
        (struct ka_entry){ti, partition, replica_count, (uint32_t)c->pool_used};
    t->last_entry = (uint32_t)c->entry_count;
    t->used++;
    c->pool_used += (size_t)replica_count;
    return 0;
}

static int compare_entry(const void *a, const void *b)
{
    const struct ka_entry *x = a, *y = b;

    return (x->index > y->index) - (x->index < y->index);
}

static int compare_broker(const void *a, const void *b)
{
    const ka_cluster_broker_t *x = a, *y = b;

    return (x->id > y->id) - (x->id < y->id);
}

/* Makes each topic's entries contiguous (a stable counting sort by topic). */
static int group_entries(struct ka_cluster *c)
{
    size_t *end;
    struct ka_entry *sorted;

    if (!c->interleaved)
        return 0;
    end = calloc(c->topic_count + 1, sizeof(*end));
    sorted = malloc((c->entry_count + 1) * sizeof(*sorted));
    if (end == NULL || sorted == NULL) {
        free(end);
        free(sorted);
        return KA_ENOMEM;
    }
    for (size_t i = 0; i < c->entry_count; i++)
        end[c->entries[i].topic + 1]++;
    for (size_t t = 0; t < c->topic_count; t++)
        end[t + 1] += end[t];
    for (size_t i = 0; i < c->entry_count; i++)
        sorted[end[c->entries[i].topic]++] = c->entries[i];
    for (size_t t = 0; t < c->topic_count; t++)
        c->topics[t].last_entry = (uint32_t)end[t];
    free(c->entries);
    c->entries = sorted;
    free(end);
    return 0;
}

static struct ka_entry *run_of(const struct ka_cluster *c, const ka_cluster_topic_t *t)
{
    return c->entries + (t->last_entry - t->used);
}

/* Sorts a topic's run by partition number (when needed) and sizes its dense array. */
static int size_topic(struct ka_cluster *c, ka_cluster_topic_t *t, size_t *slots)
{
    struct ka_entry *run = run_of(c, t);
    bool sorted = true;
    int32_t count;

    if (t->used == 0)
        return 0;
    for (size_t i = 1; i < t->used && sorted; i++)
        sorted = run[i].index > run[i - 1].index;
    if (!sorted) {
        qsort(run, t->used, sizeof(*run), compare_entry);
        for (size_t i = 1; i < t->used; i++)
            if (run[i].index == run[i - 1].index)
                return KA_EINVALID;
    }
    count = run[t->used - 1].index + 1;
    if ((size_t)count != t->used && count > 4 * 1024 * 1024)
        return KA_ELIMIT;
    t->partition_count = count;
    c->total_partitions += t->used;
    *slots += (size_t)count;
    return 0;
}

/* Lays every topic's partitions out at their numbers, in one array. */
static int densify(struct ka_cluster *c)
{
    size_t slots = 0, base = 0;
    int rc = group_entries(c);

    for (size_t i = 0; i < c->topic_count && rc == 0; i++)
        rc = size_topic(c, &c->topics[i], &slots);
    if (rc < 0)
        return rc;
    c->partitions = calloc(slots + 1, sizeof(*c->partitions));
    if (c->partitions == NULL)
        return KA_ENOMEM;
    c->partition_slots = slots;
    for (size_t i = 0; i < c->topic_count; i++) {
        ka_cluster_topic_t *t = &c->topics[i];
        const struct ka_entry *run = run_of(c, t);

        for (size_t k = 0; k < t->used; k++)
            c->partitions[base + (size_t)run[k].index] =
                (struct ka_partition){run[k].count, run[k].offset};
        t->partitions = c->partitions + base;
        base += (size_t)t->partition_count;
    }
    free(c->entries);
    c->entries = NULL;
    c->entry_count = c->entry_capacity = 0;
    return 0;
}

static void sort_brokers(struct ka_cluster *c)
{
    if (c->broker_count > 1)
        qsort(c->brokers, c->broker_count, sizeof(*c->brokers), compare_broker);
}

/* Broker ids up to this get a direct table while counting; larger ones a search. */
#define ID_TABLE_MAX 65535

/* Counts one replica on an id no broker lists: an unlisted broker. */
static int count_unlisted(struct ka_cluster *c, size_t listed, int32_t id)
{
    for (size_t i = listed; i < c->broker_count; i++) {
        if (c->brokers[i].id == id) {
            c->brokers[i].replicas++;
            return 0;
        }
    }
    if (grow((void **)&c->brokers, &c->broker_capacity, c->broker_count + 1, sizeof(*c->brokers)) <
        0)
        return KA_ENOMEM;
    c->brokers[c->broker_count++] = (ka_cluster_broker_t){id, NULL, false, false, 1};
    return 0;
}

/* Counts replicas per broker, adding unlisted entries for ids not listed. */
static int count_replicas(struct ka_cluster *c)
{
    size_t listed = c->broker_count;
    int32_t max_id = -1;
    int32_t *table;
    int rc = 0;

    sort_brokers(c);
    for (size_t i = 0; i < listed; i++)
        max_id = c->brokers[i].id > max_id ? c->brokers[i].id : max_id;
    if (max_id > ID_TABLE_MAX)
        max_id = ID_TABLE_MAX;
    table = malloc(((size_t)max_id + 2) * sizeof(*table));
    if (table == NULL)
        return KA_ENOMEM;
    memset(table, 0xff, ((size_t)max_id + 2) * sizeof(*table));
    for (size_t i = 0; i < listed; i++)
        if (c->brokers[i].id >= 0 && c->brokers[i].id <= max_id)
            table[c->brokers[i].id] = (int32_t)i;
    for (size_t i = 0; i < c->pool_used && rc == 0; i++) {
        int32_t id = c->pool[i];
        long at;

        if (id < 0)
            continue;
        at = id <= max_id ? table[id] : broker_index(c->brokers, listed, id);
        if (at >= 0)
            c->brokers[at].replicas++;
        else
            rc = count_unlisted(c, listed, id);
    }
    free(table);
    if (c->broker_count > listed)
        sort_brokers(c);
    return rc;
}

int ka_cluster_builder_finish(ka_cluster_builder_t *b, ka_cluster_t **out)
{
    struct ka_cluster *c = &b->view;
    int rc;

    *out = NULL;
    rc = densify(c);
    if (rc == 0)
        rc = count_replicas(c);
    if (rc < 0) {
        ka_cluster_builder_free(b);
        return rc;
    }
    if (c->pool_capacity > c->pool_used + 1024) { /* give back what growing left over */
        int32_t *pool = realloc(c->pool, (c->pool_used + 1) * sizeof(*pool));

        if (pool != NULL) {
            c->pool = pool;
            c->pool_capacity = c->pool_used + 1;
        }
    }
    for (size_t i = 0; i < c->topic_count; i++)
        c->topics[i].pool = c->pool;
    atomic_init(&c->refs, 1);
    /* The builder is the view's first member, so the view is the builder. */
    *out = &b->view;
    return 0;
}
