/*
 * ka_place_state.h: the placement session's state, shared by the greedy
 * pass (ka_placement.c) and the scans by definition (ka_place_scan.c),
 * which ka_placement.c calls. It includes ka_place_broker.h, not
 * ka_placement.h, so that the scans need nothing of the sessions. Internal
 * to policy/.
 */
#ifndef KA_PLACE_STATE_H
#define KA_PLACE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"
#include "ka_place_broker.h"

/* A heap's order in one compare: the greedy key in the high half, rank in the low. */
typedef unsigned __int128 ka_order_t;

struct heap {
    uint32_t *item; /* broker indexes, heap-ordered */
    uint32_t len;
    uint32_t *pos;         /* per broker: its place in item, or NOT_IN when absent */
    const ka_order_t *key; /* per broker: the whole order */
};

#define NOT_IN UINT32_MAX

struct ka_place_state {
    const ka_place_broker_t *brokers;
    size_t n;
    int32_t racks;
    int64_t *headroom;      /* left after the session's items so far */
    int64_t total_headroom; /* their sum */
    int64_t *assigned;      /* replicas of the current item per broker; 0 between items */
    int64_t *leaders;       /* leaders of the current item per broker; 0 between items */
    uint64_t *order;        /* seeded tie-break, distinct per broker */
    int64_t *rack_assigned; /* replicas of the current item per rack */
    uint8_t *in_partition;  /* broker already holds a replica of this partition */
    /* A rack holds a replica of this partition when its rack_part is the partition's
     * number, part (counted over the session, so nothing is cleared per partition). */
    uint64_t *rack_part, part;
    /* The static part of the keys, as of the item's start: rank (unfenced first, then
     * headroom, most first, then the seeded order) and the greedy keys packed over it:
     * leaders << 32 | assigned for leaders, fenced << 63 | assigned for followers, in the
     * high half. Without a replica of the item, rank orders brokers as rkey does. */
    uint64_t *rank;
    ka_order_t *lkey, *rkey;
    /* Per rack r its brokers with headroom, by rkey, in rsorted[rstart[r] ..
     * rstart[r] + rlen[r]); the cursor passes the ones the current item has used. */
    uint32_t *rsorted, *rstart, *rlen, *rcursor;
    /* The brokers the current item has used and that have headroom left: in the heaps,
     * or waiting in touched[] to enter them. */
    struct heap leader_heap;
    struct heap *rack_heaps;
    /* How many of touched[] each heap has taken in: a broker enters a heap only when a
     * pick needs the used ones, with its keys computed from its counts then. */
    uint32_t *rflushed, lflushed;
    uint32_t *head;                     /* per rack: its first fresh broker, or NOT_IN */
    uint32_t *lpos, *rpos, *heap_items; /* heap_items: n for leaders, n for the racks */
    uint32_t *row;                      /* the current partition's broker indexes */
    uint32_t *stash, stash_len;         /* of those, the ones out of their rack heaps */
    uint32_t *touched, touched_len;     /* brokers the item used, ascending once it ends */
    uint64_t *touched_bits;             /* the same as a bitmap while the item ends; else 0 */
};

/* Decides on the first key that differs; the smaller value is the better. */
#define BETTER(a, b)                                                                               \
    do {                                                                                           \
        if ((a) != (b))                                                                            \
            return (a) < (b);                                                                      \
    } while (0)

static inline bool rack_used(const struct ka_place_state *p, int32_t r)
{
    return p->rack_part[r] == p->part;
}

static inline void take(struct ka_place_state *p, size_t i, bool leader)
{
    p->headroom[i]--;
    p->total_headroom--;
    p->assigned[i]++;
    p->leaders[i] += leader;
    p->rack_assigned[p->brokers[i].rack]++;
    p->in_partition[i] = 1;
    p->rack_part[p->brokers[i].rack] = p->part;
}

/* The fallback: fills each partition from the brokers with the most headroom left.
 * 0 or KA_ELIMIT (with the item's replicas taken so far left in place). */
int ka_place_by_capacity(struct ka_place_state *p, int32_t partitions, int32_t replication,
                         int32_t *out);
/* Necessary conditions for any fit, checked before the fallback's work. */
bool ka_place_may_fit(const struct ka_place_state *p, int32_t partitions, int32_t replication);
/* The greedy pass's next pick by a scan of all brokers: the leader key, or the follower key;
 * p->n when no broker is left (ka_place_greedy_reference). */
size_t ka_place_scan_pick(const struct ka_place_state *p, bool leader);

#endif
