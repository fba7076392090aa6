/*
 * ka_reservations.c: the reservation ledger.
 *
 * Outstanding reservations are few (one per admitted item still in
 * flight), so they live in a plain array searched linearly. The per-broker
 * totals the engine reads on every decision are kept up to date on each
 * add and removal in a small array sorted by broker id.
 */
#include "ka_reservations.h"

#include <stdlib.h>
#include <string.h>

struct ka_reservation {
    uint64_t id;
    enum ka_reservation_kind kind;
    char *topic;
    size_t topic_len;
    int32_t partition_count;
    int32_t partition;
    int32_t *replicas;
    int32_t replica_count;
    int32_t new_partitions;
    ka_broker_delta_t *deltas;
    size_t delta_count;
    int64_t expires_at_ms;
    uint64_t order; /* ledger offset of its announcement, or KA_RESERVATION_UNORDERED */
};

struct ka_broker_total {
    int32_t broker_id;
    int64_t replicas;
};

struct ka_reservations {
    struct ka_reservation *entries;
    size_t count, capacity;
    struct ka_broker_total *totals; /* sorted by broker_id; entries at 0 are kept */
    size_t total_count, total_capacity;
    int64_t partitions; /* sum of new_partitions over entries */
    uint64_t next_id;   /* ids are never reused, so a late release cannot hit another */
};

int ka_reservations_new(ka_reservations_t **out)
{
    *out = calloc(1, sizeof(**out));
    if (*out == NULL)
        return KA_ENOMEM;
    (*out)->next_id = 1;
    return 0;
}

static void free_entry(struct ka_reservation *e)
{
    free(e->topic);
    free(e->replicas);
    free(e->deltas);
}

void ka_reservations_free(ka_reservations_t *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        free_entry(&l->entries[i]);
    free(l->entries);
    free(l->totals);
    free(l);
}

static size_t total_index(const ka_reservations_t *l, int32_t broker_id)
{
    size_t lo = 0, hi = l->total_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (l->totals[mid].broker_id < broker_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * total_index for deltas in ascending id order (as the engine writes
 * them): the slot is a few steps past the last one, so an item of a
 * hundred brokers costs a hundred steps, not a hundred searches.
 */
static size_t total_index_after(const ka_reservations_t *l, size_t hint, int32_t broker_id)
{
    size_t at = hint;

    if (at > l->total_count || (at > 0 && l->totals[at - 1].broker_id >= broker_id))
        return total_index(l, broker_id); /* out of order: search it all */
    for (int step = 0; at < l->total_count && l->totals[at].broker_id < broker_id; step++, at++)
        if (step == 8)
            return total_index(l, broker_id);
    return at;
}

/* Makes sure every broker in the deltas has a totals slot, before any change. */
static int prepare_totals(ka_reservations_t *l, const ka_broker_delta_t *d, size_t n)
{
    for (size_t i = 0, at = 0; i < n; i++, at++) {
        at = total_index_after(l, at, d[i].broker_id);

        if (at < l->total_count && l->totals[at].broker_id == d[i].broker_id)
            continue;
        if (l->total_count == l->total_capacity) {
            size_t cap = l->total_capacity ? l->total_capacity * 2 : 16;
            void *p = realloc(l->totals, cap * sizeof(*l->totals));

            if (p == NULL)
                return KA_ENOMEM;
            l->totals = p;
            l->total_capacity = cap;
        }
        memmove(&l->totals[at + 1], &l->totals[at], (l->total_count - at) * sizeof(*l->totals));
        l->totals[at] = (struct ka_broker_total){d[i].broker_id, 0};
        l->total_count++;
    }
    return 0;
}

static void apply(ka_reservations_t *l, const struct ka_reservation *e, int sign)
{
    for (size_t i = 0, at = 0; i < e->delta_count; i++, at++) {
        at = total_index_after(l, at, e->deltas[i].broker_id);

        l->totals[at].replicas += sign * (int64_t)e->deltas[i].replicas;
    }
    l->partitions += sign * (int64_t)e->new_partitions;
}

static void *copy(const void *src, size_t size)
{
    void *p = malloc(size ? size : 1);

    if (p != NULL && size > 0)
        memcpy(p, src, size);
    return p;
}

static int add_entry(ka_reservations_t *l, const ka_reservation_spec_t *s, uint64_t id,
                     uint64_t order)
{
    struct ka_reservation e = {0};

    if (s->topic.len < 0 || s->replica_count < 0 || s->new_partitions < 0)
        return KA_EINVALID;
    if (l->count == l->capacity) {
        size_t cap = l->capacity ? l->capacity * 2 : 16;
        void *p = realloc(l->entries, cap * sizeof(*l->entries));

        if (p == NULL)
            return KA_ENOMEM;
        l->entries = p;
        l->capacity = cap;
    }
    e.id = id;
    e.order = order;
    e.kind = s->kind;
    e.topic = copy(s->topic.ptr, (size_t)s->topic.len);
    e.topic_len = (size_t)s->topic.len;
    e.partition_count = s->partition_count;
    e.partition = s->partition;
    e.replicas = copy(s->replicas, (size_t)s->replica_count * sizeof(int32_t));
    e.replica_count = s->replica_count;
    e.new_partitions = s->new_partitions;
    e.deltas = copy(s->deltas, s->delta_count * sizeof(*s->deltas));
    e.delta_count = s->delta_count;
    e.expires_at_ms = s->expires_at_ms;
    if (e.topic == NULL || e.replicas == NULL || e.deltas == NULL ||
        prepare_totals(l, s->deltas, s->delta_count) < 0) {
        free_entry(&e);
        return KA_ENOMEM;
    }
    apply(l, &e, 1);
    l->entries[l->count++] = e;
    return 0;
}

int ka_reservations_add(ka_reservations_t *l, const ka_reservation_spec_t *s, uint64_t *id)
{
    int rc = add_entry(l, s, l->next_id, KA_RESERVATION_UNORDERED);

    if (rc < 0)
        return rc;
    *id = l->next_id++;
    return 0;
}

static struct ka_reservation *find(const ka_reservations_t *l, uint64_t id)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->entries[i].id == id)
            return &l->entries[i];
    }
    return NULL;
}

int ka_reservations_set_order(ka_reservations_t *l, uint64_t id, uint64_t order)
{
    struct ka_reservation *e = find(l, id);

    if (e == NULL)
        return KA_EINVALID;
    e->order = order;
    return 0;
}

static void spec_of(const struct ka_reservation *e, ka_reservation_spec_t *s)
{
    *s = (ka_reservation_spec_t){.kind = e->kind,
                                 .topic = {(const uint8_t *)e->topic, (int32_t)e->topic_len},
                                 .partition_count = e->partition_count,
                                 .partition = e->partition,
                                 .replicas = e->replicas,
                                 .replica_count = e->replica_count,
                                 .new_partitions = e->new_partitions,
                                 .deltas = e->deltas,
                                 .delta_count = e->delta_count,
                                 .expires_at_ms = e->expires_at_ms};
}

int ka_reservations_describe(const ka_reservations_t *l, uint64_t id, ka_reservation_spec_t *spec,
                             uint64_t *order)
{
    const struct ka_reservation *e = find(l, id);

    if (e == NULL)
        return KA_EINVALID;
    spec_of(e, spec);
    if (order != NULL)
        *order = e->order;
    return 0;
}

void ka_reservations_spec_at(const ka_reservations_t *l, size_t index, ka_reservation_spec_t *spec)
{
    spec_of(&l->entries[index], spec);
}

/* The reservations of src ordered before `order`, or all of them (`all`). */
static int copy_where(const ka_reservations_t *src, uint64_t order, bool all,
                      ka_reservations_t **out)
{
    ka_reservations_t *dst;
    int rc = ka_reservations_new(&dst);

    if (rc < 0)
        return rc;
    dst->next_id = src->next_id;
    for (size_t i = 0; i < src->count; i++) {
        const struct ka_reservation *e = &src->entries[i];
        ka_reservation_spec_t s;

        if (!all && e->order >= order)
            continue;
        spec_of(e, &s);
        if ((rc = add_entry(dst, &s, e->id, e->order)) < 0) {
            ka_reservations_free(dst);
            return rc;
        }
    }
    *out = dst;
    return 0;
}

int ka_reservations_copy_before(const ka_reservations_t *src, uint64_t order,
                                ka_reservations_t **out)
{
    return copy_where(src, order, false, out);
}

int ka_reservations_copy(const ka_reservations_t *src, ka_reservations_t **out)
{
    return copy_where(src, 0, true, out);
}

static void remove_at(ka_reservations_t *l, size_t i)
{
    apply(l, &l->entries[i], -1);
    free_entry(&l->entries[i]);
    l->entries[i] = l->entries[--l->count];
}

int ka_reservations_release(ka_reservations_t *l, uint64_t id)
{
    struct ka_reservation *e = find(l, id);

    if (e == NULL)
        return KA_EINVALID;
    remove_at(l, (size_t)(e - l->entries));
    return 0;
}

static bool shown_by(const struct ka_reservation *e, const ka_cluster_t *view)
{
    ka_slice_t name = {(const uint8_t *)e->topic, (int32_t)e->topic_len};
    const ka_cluster_topic_t *t = ka_cluster_find_topic(view, name);
    const int32_t *replicas;
    int32_t count;

    if (t == NULL)
        return false;
    if (e->kind == KA_RESERVATION_PARTITIONS)
        return ka_cluster_topic_partition_count(t) >= e->partition_count;
    /* During a reassignment Kafka lists old and new replicas together, so the
     * targets are counted by the view as soon as they are all listed. */
    replicas = ka_cluster_topic_replicas(t, e->partition, &count);
    for (int32_t i = 0; i < e->replica_count; i++) {
        bool found = false;

        for (int32_t j = 0; j < count && !found; j++)
            found = replicas[j] == e->replicas[i];
        if (!found)
            return false;
    }
    return true;
}

size_t ka_reservations_reconcile(ka_reservations_t *l, const ka_cluster_t *view)
{
    size_t ended = 0;

    for (size_t i = 0; i < l->count;) {
        if (shown_by(&l->entries[i], view)) {
            remove_at(l, i);
            ended++;
        } else {
            i++;
        }
    }
    return ended;
}

size_t ka_reservations_expire(ka_reservations_t *l, int64_t now_ms)
{
    size_t ended = 0;

    for (size_t i = 0; i < l->count;) {
        if (l->entries[i].expires_at_ms <= now_ms) {
            remove_at(l, i);
            ended++;
        } else {
            i++;
        }
    }
    return ended;
}

int64_t ka_reservations_broker_replicas(const ka_reservations_t *l, int32_t broker_id)
{
    size_t at = total_index(l, broker_id);

    if (at < l->total_count && l->totals[at].broker_id == broker_id)
        return l->totals[at].replicas;
    return 0;
}

int64_t ka_reservations_partitions(const ka_reservations_t *l)
{
    return l->partitions;
}

size_t ka_reservations_count(const ka_reservations_t *l)
{
    return l->count;
}

bool ka_reservations_has_topic(const ka_reservations_t *l, ka_slice_t topic)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct ka_reservation *e = &l->entries[i];

        if (e->kind == KA_RESERVATION_PARTITIONS && topic.len > 0 &&
            e->topic_len == (size_t)topic.len && memcmp(e->topic, topic.ptr, e->topic_len) == 0)
            return true;
    }
    return false;
}
