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

static bool better_follower(const struct placer *p, size_t i, size_t j)
{
    const ka_place_broker_t *a = &p->brokers[i], *b = &p->brokers[j];

    BETTER(p->rack_in_partition[a->rack], p->rack_in_partition[b->rack]);
    BETTER(a->fenced, b->fenced);
    BETTER(p->rack_assigned[a->rack], p->rack_assigned[b->rack]);
    BETTER(p->assigned[i], p->assigned[j]);
    BETTER(-p->headroom[i], -p->headroom[j]);
    return p->order[i] < p->order[j];
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

static int place_greedy(struct placer *p, int32_t racks, int32_t partitions, int32_t replication,
                        int32_t *out)
{
    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;

        memset(p->in_partition, 0, p->n);
        memset(p->rack_in_partition, 0, (size_t)racks);
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = pick(p, slot == 0, slot == 0 ? better_leader : better_follower);

            if (i == p->n)
                return KA_ELIMIT;
            take(p, i, slot == 0);
            row[slot] = p->brokers[i].id;
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

int ka_place(const ka_place_broker_t *brokers, size_t n, int32_t racks, int32_t partitions,
             int32_t replication, uint64_t seed, int32_t *out)
{
    struct placer p = {brokers, n};
    int rc = KA_ENOMEM;

    if (partitions <= 0 || replication <= 0 || (size_t)replication > n ||
        !may_fit(brokers, n, partitions, replication))
        return KA_ELIMIT;
    p.headroom = malloc(n * sizeof(int64_t));
    p.assigned = malloc(n * sizeof(int64_t));
    p.leaders = malloc(n * sizeof(int64_t));
    p.order = malloc(n * sizeof(uint64_t));
    p.rack_assigned = malloc((size_t)racks * sizeof(int64_t));
    p.in_partition = malloc(n);
    p.rack_in_partition = malloc((size_t)racks);
    if (!p.headroom || !p.assigned || !p.leaders || !p.order || !p.rack_assigned ||
        !p.in_partition || !p.rack_in_partition)
        goto out;
    for (size_t i = 0; i < n; i++)
        p.order[i] = splitmix64(seed ^ splitmix64((uint64_t)(uint32_t)brokers[i].id));
    reset(&p, brokers, n, racks);
    rc = place_greedy(&p, racks, partitions, replication, out);
    if (rc == KA_ELIMIT) {
        reset(&p, brokers, n, racks);
        rc = place_by_capacity(&p, racks, partitions, replication, out);
    }
out:
    free(p.headroom);
    free(p.assigned);
    free(p.leaders);
    free(p.order);
    free(p.rack_assigned);
    free(p.in_partition);
    free(p.rack_in_partition);
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
