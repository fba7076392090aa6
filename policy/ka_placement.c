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

struct heap {
    uint32_t *item; /* broker indexes, heap-ordered */
    uint32_t len;
    uint32_t *pos;       /* per broker: its place in item, or NOT_IN when absent */
    const uint64_t *key; /* per broker: the first half of the order, then rank */
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
    /* The greedy keys packed: leaders << 32 | assigned, fenced << 63 | assigned,
     * and the static rest of both (headroom before this call, most first, then
     * the seeded order). Within one assigned count, headroom now orders like
     * headroom before, so comparing these is comparing the keys above. */
    uint64_t *lkey, *rkey, *rank;
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
    return h->key[a] != h->key[b] ? h->key[a] < h->key[b] : p->rank[a] < p->rank[b];
}

/* better_follower on the packed keys. */
static bool greedy_follower(const struct placer *p, uint32_t i, uint32_t j)
{
    int32_t a = p->brokers[i].rack, b = p->brokers[j].rack;

    BETTER(p->rack_in_partition[a], p->rack_in_partition[b]);
    BETTER(p->brokers[i].fenced, p->brokers[j].fenced);
    BETTER(p->rack_assigned[a], p->rack_assigned[b]);
    BETTER(p->rkey[i], p->rkey[j]);
    return p->rank[i] < p->rank[j];
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

static void heapify(const struct placer *p, struct heap *h)
{
    for (uint32_t at = h->len / 2; at-- > 0;)
        sift_down(p, h, at);
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

/* Fills the heaps: every key only grows while placing, so a heap holds each
 * one's best at its top after a sift down. */
static void heaps_init(struct placer *p, int32_t racks)
{
    uint32_t *next = p->heap_items + p->n;
    int64_t *size = p->rack_assigned; /* per-rack sizes, before any replica */

    p->leader_heap = (struct heap){p->heap_items, 0, p->lpos, p->lkey};
    memset(size, 0, (size_t)racks * sizeof(*size));
    for (size_t i = 0; i < p->n; i++) {
        uint64_t h = (uint64_t)(p->headroom[i] < INT32_MAX ? p->headroom[i] : INT32_MAX);

        p->lpos[i] = p->rpos[i] = NOT_IN;
        p->lkey[i] = 0;
        p->rkey[i] = (uint64_t)p->brokers[i].fenced << 63;
        p->rank[i] = (INT32_MAX - h) << 32 | p->order[i] >> 32;
        size[p->brokers[i].rack]++;
    }
    for (int32_t r = 0; r < racks; r++) {
        p->rack_heaps[r] = (struct heap){next, 0, p->rpos, p->rkey};
        next += (size_t)size[r];
    }
    memset(size, 0, (size_t)racks * sizeof(*size));
    for (size_t i = 0; i < p->n; i++) {
        struct heap *rh = &p->rack_heaps[p->brokers[i].rack];

        if (p->headroom[i] <= 0)
            continue;
        heap_set(rh, rh->len++, (uint32_t)i);
        if (!p->brokers[i].fenced)
            heap_set(&p->leader_heap, p->leader_heap.len++, (uint32_t)i);
    }
    heapify(p, &p->leader_heap);
    for (int32_t r = 0; r < racks; r++)
        heapify(p, &p->rack_heaps[r]);
}

/* take() for the greedy pass, keeping the heaps in step. */
static void take_greedy(struct placer *p, uint32_t i, bool leader)
{
    take(p, i, leader);
    p->lkey[i] += ((uint64_t)leader << 32) + 1;
    p->rkey[i]++;
    if (p->lpos[i] != NOT_IN) {
        if (p->headroom[i] <= 0)
            heap_remove(p, &p->leader_heap, i);
        else
            sift_down(p, &p->leader_heap, p->lpos[i]);
    }
    heap_remove(p, &p->rack_heaps[p->brokers[i].rack], i);
}

/* The best follower: the best of each rack's top, so O(racks + log n). */
static size_t pick_follower(const struct placer *p, int32_t racks)
{
    size_t best = p->n;

    for (int32_t r = 0; r < racks; r++) {
        const struct heap *rh = &p->rack_heaps[r];

        if (rh->len > 0 && (best == p->n || greedy_follower(p, rh->item[0], (uint32_t)best)))
            best = rh->item[0];
    }
    return best;
}

static int place_greedy(struct placer *p, int32_t racks, int32_t partitions, int32_t replication,
                        int32_t *out)
{
    heaps_init(p, racks);
    memset(p->rack_assigned, 0, (size_t)racks * sizeof(*p->rack_assigned));
    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;

        memset(p->rack_in_partition, 0, (size_t)racks);
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = slot == 0 ? (p->leader_heap.len > 0 ? p->leader_heap.item[0] : p->n)
                                 : pick_follower(p, racks);

            if (i == p->n)
                return KA_ELIMIT;
            take_greedy(p, (uint32_t)i, slot == 0);
            p->row[slot] = (uint32_t)i;
            row[slot] = p->brokers[i].id;
        }
        /* Back into their racks' heaps for the next partition, if room is left. */
        for (int32_t slot = 0; slot < replication; slot++) {
            uint32_t i = p->row[slot];

            p->in_partition[i] = 0;
            if (p->headroom[i] > 0)
                heap_push(p, &p->rack_heaps[p->brokers[i].rack], i);
        }
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

/* One zeroed block for all of a call's arrays, widest alignment first. */
static void *placer_alloc(struct placer *p, size_t n, size_t racks, size_t replication)
{
    size_t size = racks * sizeof(struct heap) + (7 * n + racks) * sizeof(int64_t) +
                  (4 * n + replication) * sizeof(uint32_t) + n + racks;
    uint8_t *at = calloc(1, size);
    void *block = at;

    if (at == NULL)
        return NULL;
#define CARVE(field, count)                                                                        \
    do {                                                                                           \
        p->field = (void *)at;                                                                     \
        at += (count) * sizeof(*p->field);                                                         \
    } while (0)
    CARVE(rack_heaps, racks);
    CARVE(headroom, n);
    CARVE(assigned, n);
    CARVE(leaders, n);
    CARVE(order, n);
    CARVE(lkey, n);
    CARVE(rkey, n);
    CARVE(rank, n);
    CARVE(rack_assigned, racks);
    CARVE(lpos, n);
    CARVE(rpos, n);
    CARVE(heap_items, 2 * n);
    CARVE(row, replication);
    CARVE(in_partition, n);
    CARVE(rack_in_partition, racks);
#undef CARVE
    return block;
}

int ka_place(const ka_place_broker_t *brokers, size_t n, int32_t racks, int32_t partitions,
             int32_t replication, uint64_t seed, int32_t *out, int64_t *added)
{
    struct placer p = {.brokers = brokers, .n = n};
    void *block;
    int rc;

    if (partitions <= 0 || replication <= 0 || racks <= 0 || (size_t)replication > n ||
        !may_fit(brokers, n, partitions, replication))
        return KA_ELIMIT;
    block = placer_alloc(&p, n, (size_t)racks, (size_t)replication);
    if (block == NULL)
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
    free(block);
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
    int64_t *size = calloc((size_t)racks + 1, sizeof(*size));
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
    for (size_t i = 0; i < n; i++) {
        int64_t k = size[brokers[i].rack], m, q = P / B, rest = P % B;

        if (!use_fenced && brokers[i].fenced)
            continue;
        /* At most m replicas of one partition land in this rack, spread
         * round-robin over its k brokers; the placer reshuffles every B
         * partitions, so count whole rounds of B and the remainder. */
        m = min64(k, per_rack + shortfall);
        shares[i] = q * min64(B, ceil_div(B * m, k)) +
                    min64(rest, ceil_div(rest * m, k) > m ? ceil_div(rest * m, k) : m);
        shares[i] = min64(shares[i], P);
    }
out:
    free(size);
}
