/*
 * ka_place_broker.h: one row of the broker table that placement
 * (ka_placement.c, ka_place_scan.c) and the worst-case bound (ka_bound.c)
 * read. A header of its own so that the scans, below the sessions, use it
 * without ka_placement.h; everyone else gets it through ka_placement.h.
 */
#ifndef KA_PLACE_BROKER_H
#define KA_PLACE_BROKER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ka_place_broker {
    int32_t id;
    int32_t rack;     /* rack group, 0..rack_count-1; brokers without a rack share one */
    bool fenced;      /* never a leader; a follower only when nothing else fits */
    int64_t headroom; /* limit - hosted - reserved, clamped at 0 */
} ka_place_broker_t;

#endif
