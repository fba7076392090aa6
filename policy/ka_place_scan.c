/*
 * ka_place_scan.c: placement by scanning every broker. The greedy pass's
 * keys written as comparisons (ka_place_greedy_reference, the definition
 * ka_placement.c is tested against) and the fallback that fills each
 * partition from the brokers with the most headroom left.
 */
#include "ka_place_state.h"

#include <string.h>

static bool better_leader(const struct ka_place_state *p, size_t i, size_t j)
{
    BETTER(p->leaders[i], p->leaders[j]);
    BETTER(p->assigned[i], p->assigned[j]);
    BETTER(-p->headroom[i], -p->headroom[j]);
    return p->order[i] < p->order[j];
}

/* The follower key without its rack terms, which brokers of one rack share. */
static bool better_in_rack(const struct ka_place_state *p, size_t i, size_t j)
{
    BETTER(p->brokers[i].fenced, p->brokers[j].fenced);
    BETTER(p->assigned[i], p->assigned[j]);
    BETTER(-p->headroom[i], -p->headroom[j]);
    return p->order[i] < p->order[j];
}

static bool better_follower(const struct ka_place_state *p, size_t i, size_t j)
{
    const ka_place_broker_t *a = &p->brokers[i], *b = &p->brokers[j];

    BETTER(rack_used(p, a->rack), rack_used(p, b->rack));
    BETTER(a->fenced, b->fenced);
    BETTER(p->rack_assigned[a->rack], p->rack_assigned[b->rack]);
    return better_in_rack(p, i, j);
}

/* The fallback's key: most headroom first, spreading only among equals. */
static bool better_capacity(const struct ka_place_state *p, size_t i, size_t j)
{
    BETTER(-p->headroom[i], -p->headroom[j]);
    return better_follower(p, i, j);
}

/* Picks the best candidate under `better` by a scan, or returns n when none is left. */
static size_t pick(const struct ka_place_state *p, bool leader,
                   bool (*better)(const struct ka_place_state *, size_t, size_t))
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

int ka_place_by_capacity(struct ka_place_state *p, int32_t partitions, int32_t replication,
                         int32_t *out)
{
    uint32_t *chosen = p->row;

    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;
        size_t lead = p->n;
        int32_t lead_slot = -1;

        memset(p->in_partition, 0, p->n);
        p->part++;
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = pick(p, false, better_capacity);

            if (i == p->n)
                return KA_ELIMIT;
            chosen[slot] = (uint32_t)i;
            p->in_partition[i] = 1;
            p->rack_part[p->brokers[i].rack] = p->part;
        }
        for (int32_t slot = 0; slot < replication; slot++) {
            size_t i = chosen[slot];

            if (!p->brokers[i].fenced && (lead == p->n || better_leader(p, i, lead))) {
                lead = i;
                lead_slot = slot;
            }
        }
        if (lead_slot < 0)
            return KA_ELIMIT; /* every broker with headroom left is fenced */
        chosen[lead_slot] = chosen[0];
        chosen[0] = (uint32_t)lead;
        for (int32_t slot = 0; slot < replication; slot++) {
            take(p, chosen[slot], slot == 0);
            row[slot] = p->brokers[chosen[slot]].id;
        }
    }
    return 0;
}

/* Necessary conditions, checked before the fallback's work. */
bool ka_place_may_fit(const struct ka_place_state *p, int32_t partitions, int32_t replication)
{
    int64_t capacity = 0;
    bool leader = false;

    for (size_t i = 0; i < p->n; i++) {
        capacity += p->headroom[i] < partitions ? p->headroom[i] : partitions;
        leader |= p->headroom[i] > 0 && !p->brokers[i].fenced;
    }
    return leader && capacity >= (int64_t)partitions * replication;
}

int ka_place_greedy_reference(const ka_place_broker_t *brokers, size_t n, int32_t racks,
                              int32_t partitions, int32_t replication, uint64_t seed, int32_t *out)
{
    ka_place_session_t s = {0};
    struct ka_place_state *p;
    int rc = 0;

    if (partitions <= 0 || replication <= 0 || racks <= 0 || (size_t)replication > n)
        return KA_ELIMIT;
    if ((rc = ka_place_begin(&s, brokers, n, racks, seed)) < 0)
        return rc;
    p = s.state;
    for (int32_t part = 0; part < partitions && rc == 0; part++) {
        memset(p->in_partition, 0, n);
        p->part++;
        for (int32_t slot = 0; slot < replication && rc == 0; slot++) {
            size_t i = pick(p, slot == 0, slot == 0 ? better_leader : better_follower);

            if (i == n) {
                rc = KA_ELIMIT;
                break;
            }
            take(p, i, slot == 0);
            out[(size_t)part * (size_t)replication + (size_t)slot] = brokers[i].id;
        }
    }
    ka_place_end(&s);
    return rc;
}
