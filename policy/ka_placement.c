/*
 * ka_placement.c: limit-aware replica placement and Kafka's worst case.
 *
 * Placement is greedy, one partition at a time, choosing by a lexicographic
 * key that encodes the StripedReplicaPlacer's goals in its order:
 *   leader:   fewest leaders so far, then fewest replicas, then most
 *             headroom, then the seeded order (leaders spread within ±1);
 *   follower: a rack this partition does not use yet, unfenced, the rack
 *             with fewest replicas so far (racks round-robin), the broker
 *             with fewest replicas, most headroom, the seeded order.
 * Only brokers with headroom left are candidates, so no broker ever ends
 * over its limit. Spreading can paint itself into a corner when headroom
 * is tight, so when the greedy pass fails a second pass fills each
 * partition from the brokers with the most headroom left (the Gale-Ryser
 * greedy), which finds an assignment whenever one exists; rack spread is
 * then only a tie-break.
 */
#include "ka_placement.h"

#include <stdlib.h>
#include <string.h>

/* A heap's order in one compare: the greedy key in the high half, rank in the low. */
typedef unsigned __int128 ka_order_t;

struct heap {
    uint32_t *item; /* broker indexes, heap-ordered */
    uint32_t len;
    uint32_t *pos;         /* per broker: its place in item, or NOT_IN when absent */
    const ka_order_t *key; /* per broker: the whole order */
};

#define NOT_IN UINT32_MAX

struct placer {
    const ka_place_broker_t *brokers;
    size_t n;
    int64_t *headroom;      /* left after this request's replicas so far */
    int64_t *assigned;      /* replicas of this request per broker */
    int64_t *leaders;       /* leaders of this request per broker */
    uint64_t *order;        /* seeded tie-break, distinct per broker */
    int64_t *rack_assigned; /* replicas of this request per rack */
    uint8_t *in_partition;  /* broker already holds a replica of this partition */
    uint8_t *rack_in_partition;
    /* The greedy pass only: unfenced brokers with headroom by the leader key,
     * and per rack the brokers with headroom not in the current partition. */
    struct heap leader_heap;
    struct heap *rack_heaps;
    uint32_t *lpos, *rpos, *heap_items; /* heap_items: n for leaders, n for the racks */
    uint32_t *row;                      /* the current partition's broker indexes */
    uint32_t *stash, stash_len;         /* of those, the ones out of their rack heaps */
    /* Per rack: brokers with headroom (size), how many of them its heap has taken in
     * (pulled, the rest waiting behind them in item[pulled..size)), how many of those
     * are still at key 0 (fresh), and how many the next refill takes in (batch). */
    uint32_t *rack_size, *rack_pulled, *rack_fresh, *rack_batch;
    /* The greedy keys packed: leaders << 32 | assigned, fenced << 63 | assigned,
     * each above the static rest of both (rank: headroom before this call, most
     * first, then the seeded order). Within one assigned count, headroom now
     * orders like headroom before, so comparing these is comparing the keys above. */
    ka_order_t *lkey, *rkey;
    uint64_t *rank;
};

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Decides on the first key that differs; the smaller value is the better. */
#define BETTER(a, b)                                                                               \
    do {                                                                                           \
        if ((a) != (b))                                                                            \
            return (a) < (b);                                                                      \
    } while (0)

static bool better_leader(const struct placer *p, size_t i, size_t j)
{
    BETTER(p->leaders[i], p->leaders[j]);
    BETTER(p->assigned[i], p->assigned[j]);
    BETTER(-p->headroom[i], -p->headroom[j]);
    return p->order[i] < p->order[j];
}

/* The follower key without its rack terms, which brokers of one rack share. */
static bool better_in_rack(const struct placer *p, size_t i, size_t j)
{
    BETTER(p->brokers[i].fenced, p->brokers[j].fenced);
    BETTER(p->assigned[i], p->assigned[j]);
    BETTER(-p->headroom[i], -p->headroom[j]);
    return p->order[i] < p->order[j];
}

static bool better_follower(const struct placer *p, size_t i, size_t j)
{
    const ka_place_broker_t *a = &p->brokers[i], *b = &p->brokers[j];

    BETTER(p->rack_in_partition[a->rack], p->rack_in_partition[b->rack]);
    BETTER(a->fenced, b->fenced);
    BETTER(p->rack_assigned[a->rack], p->rack_assigned[b->rack]);
    return better_in_rack(p, i, j);
}

static inline bool heap_less(const struct placer *p, const struct heap *h, uint32_t a, uint32_t b)
{
    (void)p;
    return h->key[a] < h->key[b];
}

/* better_follower on the packed keys. */
static bool greedy_follower(const struct placer *p, uint32_t i, uint32_t j)
{
    int32_t a = p->brokers[i].rack, b = p->brokers[j].rack;

    BETTER(p->rack_in_partition[a], p->rack_in_partition[b]);
    BETTER(p->brokers[i].fenced, p->brokers[j].fenced);
    BETTER(p->rack_assigned[a], p->rack_assigned[b]);
    return p->rkey[i] < p->rkey[j];
}

static void heap_set(struct heap *h, uint32_t at, uint32_t broker)
{
    h->item[at] = broker;
    h->pos[broker] = at;
}

static void sift_up(const struct placer *p, struct heap *h, uint32_t at)
{
    uint32_t broker = h->item[at];

    while (at > 0 && heap_less(p, h, broker, h->item[(at - 1) / 2])) {
        heap_set(h, at, h->item[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    heap_set(h, at, broker);
}

static void sift_down(const struct placer *p, struct heap *h, uint32_t at)
{
    uint32_t broker = h->item[at];

    for (;;) {
        uint32_t child = 2 * at + 1;

        if (child >= h->len)
            break;
        if (child + 1 < h->len && heap_less(p, h, h->item[child + 1], h->item[child]))
            child++;
        if (!heap_less(p, h, h->item[child], broker))
            break;
        heap_set(h, at, h->item[child]);
        at = child;
    }
    heap_set(h, at, broker);
}

static void heap_push(const struct placer *p, struct heap *h, uint32_t broker)
{
    heap_set(h, h->len++, broker);
    sift_up(p, h, h->len - 1);
}

static void heap_remove(const struct placer *p, struct heap *h, uint32_t broker)
{
    uint32_t at = h->pos[broker];

    uint32_t moved;

    h->pos[broker] = NOT_IN;
    if (at == --h->len)
        return;
    moved = h->item[h->len];
    heap_set(h, at, moved);
    sift_down(p, h, at);
    sift_up(p, h, h->pos[moved]);
}

/* The fallback's key: most headroom first, spreading only among equals. */
static bool better_capacity(const struct placer *p, size_t i, size_t j)
{
    BETTER(-p->headroom[i], -p->headroom[j]);
    return better_follower(p, i, j);
}

static void take(struct placer *p, size_t i, bool leader)
{
    p->headroom[i]--;
    p->assigned[i]++;
    p->leaders[i] += leader;
    p->rack_assigned[p->brokers[i].rack]++;
    p->in_partition[i] = 1;
    p->rack_in_partition[p->brokers[i].rack] = 1;
}

static void reset(struct placer *p, const ka_place_broker_t *brokers, size_t n, int32_t racks)
{
    for (size_t i = 0; i < n; i++)
        p->headroom[i] = brokers[i].headroom > 0 ? brokers[i].headroom : 0;
    memset(p->assigned, 0, n * sizeof(*p->assigned));
    memset(p->leaders, 0, n * sizeof(*p->leaders));
    memset(p->rack_assigned, 0, (size_t)racks * sizeof(*p->rack_assigned));
}

/* Picks the best candidate under `better`, or returns n when none is left. */
static size_t pick(const struct placer *p, bool leader,
                   bool (*better)(const struct placer *, size_t, size_t))
{
    size_t best = p->n;

    for (size_t i = 0; i < p->n; i++) {
        if (p->headroom[i] <= 0 || p->in_partition[i] || (leader && p->brokers[i].fenced))
            continue;
        if (best == p->n || better(p, i, best))
            best = i;
    }
    return best;
}

/*
 * A rack heap takes in only the first brokers of its rack in the heap's order
 * (unfenced first, then rank), a batch at a time. Every key starts at 0 and only
 * grows, and a broker leaves key 0 only by taking a replica, so while one broker
 * taken in is still at key 0 it beats every broker behind it, in its rack heap
 * and (being unfenced whenever one behind it is) in the leader heap. When the
 * last one leaves key 0, the next batch comes in. So a request of few replicas on
 * many brokers heaps only what it uses, and places exactly as over all of them.
 */

/* Moves the `keep` first of items[0..len) in the rack heap's order (rkey, rank below)
 * to the front, in any order: quickselect with Hoare's partition, O(len) expected. */
static void select_first(const struct placer *p, uint32_t *items, uint32_t len, uint32_t keep)
{
    int64_t lo = 0, hi = len; /* the boundary `keep` lies in (lo, hi) */

    while (lo < keep && keep < hi) {
        uint32_t mid = items[lo + (hi - lo - 1) / 2];
        ka_order_t pivot = p->rkey[mid];
        int64_t i = lo - 1, j = hi;

        /* Afterwards items[lo..j] are all <= the pivot and items[j+1..hi) all >= it,
         * with lo <= j < hi - 1. */
        for (;;) {
            do
                i++;
            while (p->rkey[items[i]] < pivot);
            do
                j--;
            while (p->rkey[items[j]] > pivot);
            if (i >= j)
                break;
            uint32_t t = items[i];
            items[i] = items[j];
            items[j] = t;
        }
        if (keep <= j + 1)
            hi = j + 1;
        else
            lo = j + 1;
    }
}

static void heapify(const struct placer *p, struct heap *h)
{
    for (uint32_t at = h->len / 2; at-- > 0;)
        sift_down(p, h, at);
}

/* Takes rack r's next batch into its heap and, unfenced, into the leader heap;
 * the first batch unordered (heaps_init heapifies), later ones pushed. */
static void refill(struct placer *p, int32_t r, bool first)
{
    struct heap *rh = &p->rack_heaps[r];
    uint32_t from = p->rack_pulled[r], left = p->rack_size[r] - from;
    uint32_t take_in = p->rack_batch[r] < left ? p->rack_batch[r] : left;

    select_first(p, rh->item + from, left, take_in);
    p->rack_pulled[r] += take_in;
    p->rack_fresh[r] += take_in;
    p->rack_batch[r] *= 2;
    /* The heap's free slots lie below `from`, so each pushed broker is read from
     * item[from + k] before any push can write there. */
    for (uint32_t k = 0; k < take_in; k++) {
        uint32_t i = rh->item[from + k];

        if (first) {
            heap_set(rh, rh->len++, i);
            if (!p->brokers[i].fenced)
                heap_set(&p->leader_heap, p->leader_heap.len++, i);
            continue;
        }
        heap_push(p, rh, i);
        if (!p->brokers[i].fenced)
            heap_push(p, &p->leader_heap, i);
    }
}

/* Fills the heaps: every key only grows while placing, so a heap holds each
 * one's best at its top after a sift down. A rack's first batch is its even
 * share of the request's replicas and one partition's more. */
static void heaps_init(struct placer *p, int32_t racks, int32_t partitions, int32_t replication)
{
    uint32_t *next = p->heap_items + p->n;
    uint32_t *size = p->rack_size;
    int64_t share = ((int64_t)partitions * replication + racks - 1) / racks + replication;

    p->leader_heap = (struct heap){p->heap_items, 0, p->lpos, p->lkey};
    memset(size, 0, (size_t)racks * sizeof(*size));
    for (size_t i = 0; i < p->n; i++) {
        uint64_t h = (uint64_t)(p->headroom[i] < INT32_MAX ? p->headroom[i] : INT32_MAX);

        p->lpos[i] = p->rpos[i] = NOT_IN;
        p->rank[i] = (INT32_MAX - h) << 32 | p->order[i] >> 32;
        p->lkey[i] = p->rank[i];
        p->rkey[i] = (ka_order_t)((uint64_t)p->brokers[i].fenced << 63) << 64 | p->rank[i];
        size[p->brokers[i].rack]++;
    }
    for (int32_t r = 0; r < racks; r++) {
        p->rack_heaps[r] = (struct heap){next, 0, p->rpos, p->rkey};
        next += size[r];
        size[r] = 0;
    }
    for (size_t i = 0; i < p->n; i++) {
        int32_t r = p->brokers[i].rack;

        if (p->headroom[i] > 0)
            p->rack_heaps[r].item[size[r]++] = (uint32_t)i;
    }
    for (int32_t r = 0; r < racks; r++) {
        p->rack_pulled[r] = p->rack_fresh[r] = 0;
        p->rack_batch[r] = share < (int64_t)size[r] ? (uint32_t)share : size[r];
        if (size[r] > 0)
            refill(p, r, true);
        heapify(p, &p->rack_heaps[r]);
    }
    heapify(p, &p->leader_heap);
}

/* take() for the greedy pass, keeping the heaps in step. */
static void take_greedy(struct placer *p, uint32_t i, bool leader)
{
    int32_t r = p->brokers[i].rack;

    if (p->assigned[i] == 0 && --p->rack_fresh[r] == 0 && p->rack_pulled[r] < p->rack_size[r])
        refill(p, r, false);
    take(p, i, leader);
    p->lkey[i] += (ka_order_t)(((uint64_t)leader << 32) + 1) << 64;
    p->rkey[i] += (ka_order_t)1 << 64;
    if (p->lpos[i] != NOT_IN) {
        if (p->headroom[i] <= 0)
            heap_remove(p, &p->leader_heap, i);
        else
            sift_down(p, &p->leader_heap, p->lpos[i]);
    }
    if (p->headroom[i] <= 0)
        heap_remove(p, &p->rack_heaps[r], i);
    else
        sift_down(p, &p->rack_heaps[r], p->rpos[i]);
}

/* The best follower: the best of each rack's top, so O(racks + log n). A rack
 * heap keeps the partition's brokers (their keys grew, so they sink) and drops
 * one only when it surfaces; ka_place puts those back after the partition. */
static size_t pick_follower(struct placer *p, int32_t racks)
{
    size_t best = p->n;

    for (int32_t r = 0; r < racks; r++) {
        struct heap *rh = &p->rack_heaps[r];

        /* A broker of this partition stays in its heap until it reaches the top. */
        while (rh->len > 0 && p->in_partition[rh->item[0]]) {
            p->stash[p->stash_len++] = rh->item[0];
            heap_remove(p, rh, rh->item[0]);
        }
        if (rh->len > 0 && (best == p->n || greedy_follower(p, rh->item[0], (uint32_t)best)))
            best = rh->item[0];
    }
    return best;
}

static int place_greedy(struct placer *p, int32_t racks, int32_t partitions, int32_t replication,
                        int32_t *out)
{
    heaps_init(p, racks, partitions, replication);
    memset(p->rack_assigned, 0, (size_t)racks * sizeof(*p->rack_assigned));
    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;

        memset(p->rack_in_partition, 0, (size_t)racks);
        p->stash_len = 0;
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = slot == 0 ? (p->leader_heap.len > 0 ? p->leader_heap.item[0] : p->n)
                                 : pick_follower(p, racks);

            if (i == p->n)
                return KA_ELIMIT;
            take_greedy(p, (uint32_t)i, slot == 0);
            p->row[slot] = (uint32_t)i;
            row[slot] = p->brokers[i].id;
        }
        for (int32_t slot = 0; slot < replication; slot++)
            p->in_partition[p->row[slot]] = 0;
        /* Those that surfaced go back into their racks' heaps (they have room left:
         * a broker without leaves its heap when it takes its last replica). */
        for (uint32_t k = 0; k < p->stash_len; k++)
            heap_push(p, &p->rack_heaps[p->brokers[p->stash[k]].rack], p->stash[k]);
    }
    return 0;
}

static int place_by_capacity(struct placer *p, int32_t racks, int32_t partitions,
                             int32_t replication, int32_t *out)
{
    size_t *chosen = malloc((size_t)replication * sizeof(*chosen));

    if (chosen == NULL)
        return KA_ENOMEM;
    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;
        size_t lead = p->n;
        int32_t lead_slot = -1;

        memset(p->in_partition, 0, p->n);
        memset(p->rack_in_partition, 0, (size_t)racks);
        for (int32_t slot = 0; slot < replication; slot++) {
            chosen[slot] = pick(p, false, better_capacity);
            if (chosen[slot] == p->n) {
                free(chosen);
                return KA_ELIMIT;
            }
            p->in_partition[chosen[slot]] = 1;
            p->rack_in_partition[p->brokers[chosen[slot]].rack] = 1;
        }
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = chosen[slot];

            if (!p->brokers[i].fenced && (lead == p->n || better_leader(p, i, lead))) {
                lead = i;
                lead_slot = slot;
            }
        }
        if (lead_slot < 0) {
            free(chosen);
            return KA_ELIMIT; /* every broker with headroom left is fenced */
        }
        chosen[lead_slot] = chosen[0];
        chosen[0] = lead;
        for (int32_t slot = 0; slot < replication; slot++) {
            take(p, chosen[slot], slot == 0);
            row[slot] = p->brokers[chosen[slot]].id;
        }
    }
    free(chosen);
    return 0;
}

/* Necessary conditions, checked cheaply before any work. */
static bool may_fit(const ka_place_broker_t *brokers, size_t n, int32_t partitions,
                    int32_t replication)
{
    int64_t capacity = 0;
    bool leader = false;

    for (size_t i = 0; i < n; i++) {
        int64_t h = brokers[i].headroom;

        capacity += h <= 0 ? 0 : (h < partitions ? h : partitions);
        leader |= h > 0 && !brokers[i].fenced;
    }
    return leader && capacity >= (int64_t)partitions * replication;
}

/* One block for all of a call's arrays, widest alignment first; reused from scratch
 * when it is large enough. Only in_partition must start zeroed: the rest is set
 * before it is read. */
static void *placer_alloc(struct placer *p, size_t n, size_t racks, size_t replication,
                          ka_place_scratch_t *scratch)
{
    size_t size = 2 * n * sizeof(ka_order_t) + racks * sizeof(struct heap) +
                  (5 * n + racks) * sizeof(int64_t) +
                  (4 * n + 2 * replication + 4 * racks) * sizeof(uint32_t) + n + racks;
    uint8_t *at;

    if (scratch->size < size) {
        free(scratch->block);
        scratch->block = malloc(size);
        scratch->size = scratch->block != NULL ? size : 0;
    }
    if ((at = scratch->block) == NULL)
        return NULL;
#define CARVE(field, count)                                                                        \
    do {                                                                                           \
        p->field = (void *)at;                                                                     \
        at += (count) * sizeof(*p->field);                                                         \
    } while (0)
    CARVE(lkey, n); /* 16-byte entries first, on malloc's alignment */
    CARVE(rkey, n);
    CARVE(rack_heaps, racks);
    CARVE(headroom, n);
    CARVE(assigned, n);
    CARVE(leaders, n);
    CARVE(order, n);
    CARVE(rank, n);
    CARVE(rack_assigned, racks);
    CARVE(lpos, n);
    CARVE(rpos, n);
    CARVE(heap_items, 2 * n);
    CARVE(row, replication);
    CARVE(stash, replication);
    CARVE(rack_size, racks);
    CARVE(rack_pulled, racks);
    CARVE(rack_fresh, racks);
    CARVE(rack_batch, racks);
    CARVE(in_partition, n);
    CARVE(rack_in_partition, racks);
#undef CARVE
    memset(p->in_partition, 0, n);
    return scratch->block;
}

void ka_place_scratch_free(ka_place_scratch_t *scratch)
{
    free(scratch->block);
    *scratch = (ka_place_scratch_t){0};
}

int ka_place(const ka_place_broker_t *brokers, size_t n, int32_t racks, int32_t partitions,
             int32_t replication, uint64_t seed, int32_t *out, int64_t *added,
             ka_place_scratch_t *scratch)
{
    struct placer p = {.brokers = brokers, .n = n};
    ka_place_scratch_t own = {0};
    int rc;

    if (partitions <= 0 || replication <= 0 || racks <= 0 || (size_t)replication > n ||
        !may_fit(brokers, n, partitions, replication))
        return KA_ELIMIT;
    if (placer_alloc(&p, n, (size_t)racks, (size_t)replication, scratch ? scratch : &own) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        p.order[i] = splitmix64(seed ^ (uint64_t)(uint32_t)brokers[i].id * 0x9e3779b97f4a7c15ull);
    reset(&p, brokers, n, racks);
    rc = place_greedy(&p, racks, partitions, replication, out);
    if (rc == KA_ELIMIT) {
        reset(&p, brokers, n, racks);
        rc = place_by_capacity(&p, racks, partitions, replication, out);
    }
    for (size_t i = 0; i < n && rc == 0 && added != NULL; i++)
        added[i] += p.assigned[i];
    ka_place_scratch_free(&own);
    return rc;
}

int ka_place_greedy_reference(const ka_place_broker_t *brokers, size_t n, int32_t racks,
                              int32_t partitions, int32_t replication, uint64_t seed, int32_t *out)
{
    struct placer p = {.brokers = brokers, .n = n};
    ka_place_scratch_t own = {0};
    int rc = 0;

    if (partitions <= 0 || replication <= 0 || racks <= 0 || (size_t)replication > n)
        return KA_ELIMIT;
    if (placer_alloc(&p, n, (size_t)racks, (size_t)replication, &own) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        p.order[i] = splitmix64(seed ^ (uint64_t)(uint32_t)brokers[i].id * 0x9e3779b97f4a7c15ull);
    reset(&p, brokers, n, racks);
    for (int32_t part = 0; part < partitions && rc == 0; part++) {
        memset(p.in_partition, 0, n);
        memset(p.rack_in_partition, 0, (size_t)racks);
        for (int32_t slot = 0; slot < replication && rc == 0; slot++) {
            size_t i = pick(&p, slot == 0, slot == 0 ? better_leader : better_follower);

            if (i == n) {
                rc = KA_ELIMIT;
                break;
            }
            take(&p, i, slot == 0);
            out[(size_t)part * (size_t)replication + (size_t)slot] = brokers[i].id;
        }
    }
    ka_place_scratch_free(&own);
    return rc;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

void ka_bound_shares(const ka_place_broker_t *brokers, size_t n, int32_t racks, int64_t P,
                     int32_t R, int64_t *shares)
{
    int64_t unfenced = 0, B = 0, K = 0, per_rack, shortfall = 0;
    int64_t *size = calloc(2 * ((size_t)racks + 1), sizeof(*size)), *share;
    bool use_fenced;

    memset(shares, 0, n * sizeof(*shares));
    if (size == NULL || P <= 0 || R <= 0) {
        /* Without memory, assume the worst: every partition on every broker. */
        for (size_t i = 0; i < n && size == NULL && P > 0; i++)
            shares[i] = P;
        free(size);
        return;
    }
    for (size_t i = 0; i < n; i++)
        unfenced += !brokers[i].fenced;
    /* Kafka's placer falls back to fenced brokers only when it must. */
    use_fenced = unfenced < R;
    for (size_t i = 0; i < n; i++) {
        if (use_fenced || !brokers[i].fenced) {
            K += size[brokers[i].rack]++ == 0;
            B++;
        }
    }
    if (B == 0)
        goto out;
    per_rack = ceil_div(R, K);
    for (int32_t r = 0; r < racks; r++)
        if (size[r] > 0 && size[r] < per_rack)
            shortfall += per_rack - size[r];
    /* A broker's share depends only on its rack's size: once per rack. */
    share = size + racks + 1;
    for (int32_t r = 0; r < racks; r++) {
        int64_t k = size[r], m, q = P / B, rest = P % B;

        if (k == 0)
            continue;
        /* At most m replicas of one partition land in this rack, spread
         * round-robin over its k brokers; the placer reshuffles every B
         * partitions, so count whole rounds of B and the remainder. */
        m = min64(k, per_rack + shortfall);
        share[r] = q * min64(B, ceil_div(B * m, k)) +
                   min64(rest, ceil_div(rest * m, k) > m ? ceil_div(rest * m, k) : m);
        share[r] = min64(share[r], P);
    }
    for (size_t i = 0; i < n; i++)
        shares[i] = !use_fenced && brokers[i].fenced ? 0 : share[brokers[i].rack];
out:
    free(size);
}
