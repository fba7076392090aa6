/*
 * ka_place_scan.c: placement by scanning every broker, over a session's
 * state (ka_place_state.h). The greedy pass's keys written as comparisons
 * (the picks of ka_place_greedy_reference, the definition ka_placement.c is
 * tested against) and the fallback that fills each partition from the
 * brokers with the most headroom left. It knows no session: ka_placement.c
 * starts them and calls in here.
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

size_t ka_place_scan_pick(const struct ka_place_state *p, bool leader)
{
    return pick(p, leader, leader ? better_leader : better_follower);
}
