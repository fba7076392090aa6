/*
 * ka_reservations.c: the reservation ledger.
 *
 * The engine adds a reservation for every item it admits, so an add must
 * cost little next to the decision itself (a thousand topics in about a
 * millisecond). Each reservation is one allocation holding its fields, its
 * deltas, its replica list and its topic name; the ledger keeps pointers to
 * them sorted by id (ids only grow), so a lookup by id is a binary search
 * and removals keep that order.
 *
 * The per-broker totals the engine reads on every decision are kept up to
 * date on each add and removal. A cluster's broker ids sit close together
 * in practice (0..n, 1001.., 10001..), so the ids in a window over them get
 * a slot each in a dense array: an add costs a few instructions per broker,
 * in any delta order. Ids outside the window live in a small array sorted
 * by id and are found by search.
 */
#include "ka_reservations.h"

#include <stdlib.h>
#include <string.h>

/*
 * The dense window (its base a multiple of 64, its length a power of two)
 * grows, never shrinks, to cover new ids as long as it spans at most
 * DENSE_IDS ids, so it never takes more than 32 KiB; ids that would
 * stretch it further go to the sparse array.
 */
#define DENSE_IDS 4096

struct ka_reservation {
    uint64_t id;
    uint64_t order; /* ledger offset of its announcement, or KA_RESERVATION_UNORDERED */
    bool shown;     /* a view shows it: it ends at the end of this reconcile */
    /* The spec as added, its topic, replicas and deltas pointing into this allocation. */
    ka_reservation_spec_t spec;
    ka_broker_delta_t deltas[];
};

struct ka_broker_total {
    int32_t broker_id;
    int64_t replicas;
};

struct ka_reservations {
    struct ka_reservation **entries; /* sorted by id */
    size_t count, capacity;
    int64_t *dense;     /* replicas of broker dense_base + i in dense[i], i < dense_len */
    int64_t dense_base; /* int64: a window's base may sit below INT32_MIN */
    size_t dense_len;
    struct ka_broker_total *sparse; /* ids outside the window, sorted; entries at 0 are kept */
    size_t sparse_count, sparse_capacity;
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

void ka_reservations_free(ka_reservations_t *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->entries[i]);
    free(l->entries);
    free(l->dense);
    free(l->sparse);
    free(l);
}

/* The broker's dense slot; dense_len or more when it is outside the window. */
static size_t dense_slot(const ka_reservations_t *l, int32_t broker_id)
{
    return (size_t)((int64_t)broker_id - l->dense_base); /* below the base wraps to huge */
}

static size_t sparse_index(const ka_reservations_t *l, int32_t broker_id)
{
    size_t lo = 0, hi = l->sparse_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (l->sparse[mid].broker_id < broker_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* An array of `size`-byte elements with twice the room (16 at first); NULL when out of memory. */
static void *grow(void *array, size_t *capacity, size_t size)
{
    size_t cap = *capacity ? *capacity * 2 : 16;
    void *p = realloc(array, cap * size);

    if (p != NULL)
        *capacity = cap;
    return p;
}

static int add_sparse(ka_reservations_t *l, int32_t broker_id)
{
    size_t at = sparse_index(l, broker_id);

    if (at < l->sparse_count && l->sparse[at].broker_id == broker_id)
        return 0;
    if (l->sparse_count == l->sparse_capacity) {
        void *p = grow(l->sparse, &l->sparse_capacity, sizeof(*l->sparse));

        if (p == NULL)
            return KA_ENOMEM;
        l->sparse = p;
    }
    memmove(&l->sparse[at + 1], &l->sparse[at], (l->sparse_count - at) * sizeof(*l->sparse));
    l->sparse[at] = (struct ka_broker_total){broker_id, 0};
    l->sparse_count++;
    return 0;
}

static int64_t floor64(int64_t id)
{
    return id - ((id % 64) + 64) % 64;
}

/*
 * Moves the window to cover ids lo..hi (which cover the current window)
 * and takes in the sparse totals it now covers, so every id has one slot.
 */
static int move_window(ka_reservations_t *l, int64_t lo, int64_t hi)
{
    int64_t base = floor64(lo);
    size_t len = 64, kept = 0;
    int64_t *dense;

    while ((int64_t)len <= hi - base)
        len *= 2;
    if ((dense = calloc(len, sizeof(*dense))) == NULL)
        return KA_ENOMEM;
    if (l->dense_len > 0)
        memcpy(&dense[l->dense_base - base], l->dense, l->dense_len * sizeof(*dense));
    free(l->dense);
    l->dense = dense;
    l->dense_base = base;
    l->dense_len = len;
    for (size_t i = 0; i < l->sparse_count; i++) {
        size_t slot = dense_slot(l, l->sparse[i].broker_id);

        if (slot < len)
            dense[slot] += l->sparse[i].replicas;
        else
            l->sparse[kept++] = l->sparse[i];
    }
    l->sparse_count = kept;
    return 0;
}

/*
 * Makes sure every broker in the deltas has a totals slot: the window grows
 * over all of the new ids when it can, or they get sparse slots (a later
 * add that grows the window over them takes them in).
 */
static int prepare_totals(ka_reservations_t *l, const ka_broker_delta_t *d, size_t n)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int rc;

    for (size_t i = 0; i < n; i++) {
        if (dense_slot(l, d[i].broker_id) < l->dense_len)
            continue;
        lo = d[i].broker_id < lo ? d[i].broker_id : lo;
        hi = d[i].broker_id > hi ? d[i].broker_id : hi;
    }
    if (lo > hi)
        return 0; /* all in the window */
    if (l->dense_len > 0) {
        int64_t top = l->dense_base + (int64_t)l->dense_len - 1;

        lo = l->dense_base < lo ? l->dense_base : lo;
        hi = top > hi ? top : hi;
    }
    if (hi - floor64(lo) < DENSE_IDS)
        return move_window(l, lo, hi);
    for (size_t i = 0; i < n; i++)
        if (dense_slot(l, d[i].broker_id) >= l->dense_len &&
            (rc = add_sparse(l, d[i].broker_id)) < 0)
            return rc;
    return 0;
}

static int64_t *total_of(const ka_reservations_t *l, int32_t broker_id)
{
    size_t slot = dense_slot(l, broker_id), at;

    if (slot < l->dense_len)
        return &l->dense[slot];
    at = sparse_index(l, broker_id);
    if (at < l->sparse_count && l->sparse[at].broker_id == broker_id)
        return &l->sparse[at].replicas;
    return NULL;
}

/*
 * Counts (sign 1) or uncounts (-1) deltas in their dense slots, up to the
 * first delta whose broker has none; returns how many it counted. This is
 * the whole of an add in the common case, so it is kept to a plain loop.
 */
static size_t apply_dense(ka_reservations_t *l, const ka_broker_delta_t *d, size_t n, int64_t sign)
{
    int64_t *dense = l->dense, base = l->dense_base; /* locals, not reloaded after each store */
    size_t len = l->dense_len, i = 0;

    for (; i < n; i++) {
        size_t slot = (size_t)((int64_t)d[i].broker_id - base);

        if (slot >= len)
            break;
        dense[slot] += sign * d[i].replicas;
    }
    return i;
}

/* apply_dense for any deltas, once prepare_totals has made every slot. */
static void apply(ka_reservations_t *l, const ka_broker_delta_t *d, size_t n, int64_t sign)
{
    for (size_t i = apply_dense(l, d, n, sign); i < n; i++)
        *total_of(l, d[i].broker_id) += sign * d[i].replicas;
}

/*
 * Counts a new entry's deltas. Slots are made only for brokers the dense
 * pass could not count, and a failure to make them takes back what it
 * counted, so a failed add leaves the totals as they were.
 */
static int count_deltas(ka_reservations_t *l, const ka_broker_delta_t *d, size_t n)
{
    size_t done = apply_dense(l, d, n, 1);

    if (done == n)
        return 0;
    if (prepare_totals(l, d + done, n - done) < 0) {
        apply_dense(l, d, done, -1);
        return KA_ENOMEM;
    }
    apply(l, d + done, n - done, 1);
    return 0;
}

/* One allocation for the entry and everything it copies from the spec. */
static struct ka_reservation *entry_new(const ka_reservation_spec_t *s, uint64_t id, uint64_t order)
{
    size_t deltas, replicas = (size_t)s->replica_count * sizeof(int32_t);
    struct ka_reservation *e;
    int32_t *targets;
    uint8_t *topic;

    if (s->delta_count > SIZE_MAX / 4 / sizeof(*s->deltas))
        return NULL; /* no allocation could hold it */
    deltas = s->delta_count * sizeof(*s->deltas);
    e = malloc(sizeof(*e) + deltas + replicas + (size_t)s->topic.len);
    if (e == NULL)
        return NULL;
    /* The deltas' size is a multiple of 8, so the replica list after them is aligned. */
    targets = (int32_t *)((uint8_t *)e->deltas + deltas);
    topic = (uint8_t *)targets + replicas;
    *e = (struct ka_reservation){.id = id, .order = order, .spec = *s};
    e->spec.deltas = e->deltas;
    e->spec.replicas = targets;
    e->spec.topic.ptr = topic;
    if (deltas > 0)
        memcpy(e->deltas, s->deltas, deltas);
    if (replicas > 0)
        memcpy(targets, s->replicas, replicas);
    if (s->topic.len > 0)
        memcpy(topic, s->topic.ptr, (size_t)s->topic.len);
    return e;
}

/* Appends an entry; `id` must be above every id the ledger holds. */
static int add_entry(ka_reservations_t *l, const ka_reservation_spec_t *s, uint64_t id,
                     uint64_t order)
{
    struct ka_reservation *e;

    if (s->topic.len < 0 || s->replica_count < 0 || s->new_partitions < 0)
        return KA_EINVALID;
    if (l->count == l->capacity) {
        void *p = grow(l->entries, &l->capacity, sizeof(*l->entries));

        if (p == NULL)
            return KA_ENOMEM;
        l->entries = p;
    }
    if ((e = entry_new(s, id, order)) == NULL)
        return KA_ENOMEM;
    if (count_deltas(l, e->deltas, s->delta_count) < 0) {
        free(e);
        return KA_ENOMEM;
    }
    l->partitions += s->new_partitions;
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

/* The index of the entry with this id, or l->count when there is none. */
static size_t find_index(const ka_reservations_t *l, uint64_t id)
{
    size_t lo = 0, hi = l->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (l->entries[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->count && l->entries[lo]->id == id ? lo : l->count;
}

static struct ka_reservation *find(const ka_reservations_t *l, uint64_t id)
{
    size_t at = find_index(l, id);

    return at < l->count ? l->entries[at] : NULL;
}

int ka_reservations_set_order(ka_reservations_t *l, uint64_t id, uint64_t order)
{
    struct ka_reservation *e = find(l, id);

    if (e == NULL)
        return KA_EINVALID;
    e->order = order;
    return 0;
}

int ka_reservations_describe(const ka_reservations_t *l, uint64_t id, ka_reservation_spec_t *spec,
                             uint64_t *order)
{
    const struct ka_reservation *e = find(l, id);

    if (e == NULL)
        return KA_EINVALID;
    *spec = e->spec;
    if (order != NULL)
        *order = e->order;
    return 0;
}

void ka_reservations_spec_at(const ka_reservations_t *l, size_t index, ka_reservation_spec_t *spec)
{
    *spec = l->entries[index]->spec;
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
    /* src is sorted by id, so appending in its order keeps dst sorted. */
    for (size_t i = 0; i < src->count; i++) {
        const struct ka_reservation *e = src->entries[i];

        if (!all && e->order >= order)
            continue;
        if ((rc = add_entry(dst, &e->spec, e->id, e->order)) < 0) {
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

static void end_entry(ka_reservations_t *l, struct ka_reservation *e)
{
    apply(l, e->deltas, e->spec.delta_count, -1);
    l->partitions -= e->spec.new_partitions;
    free(e);
}

int ka_reservations_release(ka_reservations_t *l, uint64_t id)
{
    size_t at = find_index(l, id);

    if (at == l->count)
        return KA_EINVALID;
    end_entry(l, l->entries[at]);
    memmove(&l->entries[at], &l->entries[at + 1], (l->count - at - 1) * sizeof(*l->entries));
    l->count--;
    return 0;
}

static bool id_is_zero(const uint8_t id[16])
{
    static const uint8_t zero[16];

    return memcmp(id, zero, sizeof(zero)) == 0;
}

/* The view's topic has a known id other than `old`: the topic was created anew. */
static bool topic_id_differs(const ka_cluster_t *view, const ka_cluster_topic_t *t,
                             const uint8_t old[16])
{
    const ka_cluster_topic_t *by_old = ka_cluster_find_topic_id(view, old);
    uint8_t id[16];

    return by_old != t && ka_cluster_topic_id(t, id) && !id_is_zero(id);
}

static bool shown_by(const struct ka_reservation *e, const ka_cluster_t *view)
{
    const ka_reservation_spec_t *s = &e->spec;
    const ka_cluster_topic_t *t = ka_cluster_find_topic(view, s->topic);
    const int32_t *replicas;
    int32_t count;

    if (t == NULL)
        return false;
    if (s->kind == KA_RESERVATION_PARTITIONS)
        return ka_cluster_topic_partition_count(t) >= s->partition_count &&
               (id_is_zero(s->replaces_topic_id) ||
                topic_id_differs(view, t, s->replaces_topic_id));
    /* During a reassignment Kafka lists old and new replicas together, so the
     * targets are counted by the view as soon as they are all listed. */
    replicas = ka_cluster_topic_replicas(t, s->partition, &count);
    for (int32_t i = 0; i < s->replica_count; i++) {
        bool found = false;

        for (int32_t j = 0; j < count && !found; j++)
            found = replicas[j] == s->replicas[i];
        if (!found)
            return false;
    }
    return true;
}

/* Ends the entries that `ends` picks, in one pass that keeps the rest in id order. */
static size_t end_where(ka_reservations_t *l,
                        bool (*ends)(const struct ka_reservation *e, const ka_cluster_t *view,
                                     int64_t now_ms),
                        const ka_cluster_t *view, int64_t now_ms)
{
    size_t kept = 0, ended;

    for (size_t i = 0; i < l->count; i++) {
        if (ends(l->entries[i], view, now_ms))
            end_entry(l, l->entries[i]);
        else
            l->entries[kept++] = l->entries[i];
    }
    ended = l->count - kept;
    l->count = kept;
    return ended;
}

static bool ends_when_shown(const struct ka_reservation *e, const ka_cluster_t *view,
                            int64_t now_ms)
{
    (void)view;
    (void)now_ms;
    return e->shown;
}

static bool ends_when_expired(const struct ka_reservation *e, const ka_cluster_t *view,
                              int64_t now_ms)
{
    (void)view;
    return e->spec.expires_at_ms <= now_ms;
}

static bool same_topic(const struct ka_reservation *a, const struct ka_reservation *b)
{
    return a->spec.topic.len == b->spec.topic.len &&
           memcmp(a->spec.topic.ptr, b->spec.topic.ptr, (size_t)a->spec.topic.len) == 0;
}

/* The nonzero id of the view's topic of e's name, or false. */
static bool listed_id(const struct ka_reservation *e, const ka_cluster_t *view, uint8_t id[16])
{
    const ka_cluster_topic_t *t = ka_cluster_find_topic(view, e->spec.topic);

    return t != NULL && ka_cluster_topic_id(t, id) && !id_is_zero(id);
}

/* By topic, then in ledger order (a reservation not yet announced comes last), then by id. */
static int compare_settling(const void *a, const void *b)
{
    const struct ka_reservation *x = *(struct ka_reservation *const *)a;
    const struct ka_reservation *y = *(struct ka_reservation *const *)b;
    int c;

    if (x->spec.topic.len != y->spec.topic.len)
        return x->spec.topic.len < y->spec.topic.len ? -1 : 1;
    c = memcmp(x->spec.topic.ptr, y->spec.topic.ptr, (size_t)x->spec.topic.len);
    if (c != 0)
        return c;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * e was shown by the view's incarnation `id` of its topic: no reservation
 * that creates the topic and is settled after e can be shown by it.
 */
static void pass_on_incarnation(ka_reservations_t *l, struct ka_reservation **by_order, size_t at,
                                const uint8_t id[16])
{
    const struct ka_reservation *e = by_order[at];

    for (size_t i = at + 1; i < l->count && same_topic(e, by_order[i]); i++) {
        struct ka_reservation *f = by_order[i];

        if (f->spec.kind == KA_RESERVATION_PARTITIONS && f->spec.creates_topic)
            memcpy(f->spec.replaces_topic_id, id, 16);
    }
}

/* Ends the reservations the view shows; see ka_reservations.h. */
size_t ka_reservations_reconcile(ka_reservations_t *l, const ka_cluster_t *view)
{
    int64_t taken = ka_cluster_taken_at_ms(view), answered = ka_cluster_answered_at_ms(view);
    struct ka_reservation **by_order;
    uint8_t id[16];

    /* Each topic's reservations settled in ledger order, so that of two creates of one name
     * the earlier takes the incarnation a view shows first. Without memory for that, nothing
     * ends this time. */
    if (l->count == 0 || (by_order = malloc(l->count * sizeof(*by_order))) == NULL)
        return 0;
    memcpy(by_order, l->entries, l->count * sizeof(*by_order));
    qsort(by_order, l->count, sizeof(*by_order), compare_settling);
    for (size_t i = 0; i < l->count; i++) {
        struct ka_reservation *e = by_order[i];
        bool creates = e->spec.kind == KA_RESERVATION_PARTITIONS && e->spec.creates_topic;

        if (e->spec.added_at_ms != 0 && taken <= e->spec.added_at_ms) {
            /* Answered before the reservation, what this view lists existed before it: never
             * its result. (Answered later, it may list the result already: neither.) */
            if (creates && answered <= e->spec.added_at_ms && listed_id(e, view, id))
                memcpy(e->spec.replaces_topic_id, id, sizeof(id));
            continue;
        }
        if (!shown_by(e, view))
            continue;
        if (e->spec.kind == KA_RESERVATION_PARTITIONS && listed_id(e, view, id))
            pass_on_incarnation(l, by_order, i, id);
        e->shown = true;
    }
    free(by_order);
    return end_where(l, ends_when_shown, view, 0);
}

size_t ka_reservations_expire(ka_reservations_t *l, int64_t now_ms)
{
    return end_where(l, ends_when_expired, NULL, now_ms);
}

int64_t ka_reservations_broker_replicas(const ka_reservations_t *l, int32_t broker_id)
{
    const int64_t *total = total_of(l, broker_id);

    return total != NULL ? *total : 0;
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
        const ka_reservation_spec_t *s = &l->entries[i]->spec;

        if (s->kind == KA_RESERVATION_PARTITIONS && topic.len > 0 && s->topic.len == topic.len &&
            memcmp(s->topic.ptr, topic.ptr, (size_t)topic.len) == 0)
            return true;
    }
    return false;
}
