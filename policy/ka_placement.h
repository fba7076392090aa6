/*
 * ka_placement.h: replica placement and the worst-case bound, for the
 * engine only (not part of policy/'s public face).
 *
 * Both work on a flat table of brokers that the engine prepares from the
 * view, the policy and the ledger: rack as a small index, fenced flag, and
 * headroom (replicas the broker can still take without exceeding its
 * limit).
 */
#ifndef KA_PLACEMENT_H
#define KA_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"
#include "ka_place_broker.h"

/* Places the items of one request in turn (zero-initialise it). */
typedef struct ka_place_session {
    struct ka_place_state *state;
} ka_place_session_t;

/*
 * Starts a session over brokers[0..n) (kept by reference: their id, rack
 * and fenced flag must not change until ka_place_end; headroom is read
 * here only). Ties are broken by an order derived from seed, the same for
 * every item of the session. 0, KA_EINVALID (racks <= 0) or KA_ENOMEM.
 * Cost: O(brokers log brokers).
 */
int ka_place_begin(ka_place_session_t *s, const ka_place_broker_t *brokers, size_t n, int32_t racks,
                   uint64_t seed);

/*
 * Computes an assignment of `partitions` rows of `replication` distinct
 * brokers into out (leader first), rack-aware and spread like Kafka's
 * StripedReplicaPlacer, using no broker beyond its headroom left by the
 * session's earlier items, and takes it from that headroom. On success,
 * when added is not NULL, adds each broker's replicas in out to
 * added[index] (so the caller needs no lookup by id). Returns 0, KA_ELIMIT
 * when no assignment fits (the session is then unchanged), or KA_EINVALID
 * without a session.
 *
 * Cost: O(racks + partitions * replication * (racks + log brokers)) plus
 * re-sorting the brokers it used; independent of how many brokers it does
 * not use, except when the greedy pass fails and the fallback scans all.
 */
int ka_place_next(ka_place_session_t *s, int32_t partitions, int32_t replication, int32_t *out,
                  int64_t *added);

/* The brokers the last successful ka_place_next used, by ascending index. */
size_t ka_place_touched(const ka_place_session_t *s, const uint32_t **index);

void ka_place_end(ka_place_session_t *s);

/* One item in a session of its own: ka_place_begin, ka_place_next, ka_place_end. */
int ka_place(const ka_place_broker_t *brokers, size_t broker_count, int32_t rack_count,
             int32_t partitions, int32_t replication, uint64_t seed, int32_t *out, int64_t *added);

/*
 * The greedy pass of ka_place written as its definition: every choice a scan
 * of all brokers by the keys in ka_placement.c. Slow (O(brokers) per
 * replica); tests check ka_place against it. Returns 0, KA_ELIMIT when the
 * greedy pass alone finds no fit, or KA_ENOMEM.
 */
int ka_place_greedy_reference(const ka_place_broker_t *brokers, size_t broker_count,
                              int32_t rack_count, int32_t partitions, int32_t replication,
                              uint64_t seed, int32_t *out);

/*
 * The most replicas Kafka's own placer can put on each broker for
 * `partitions` x `replication` (KIP-578 bound mode): q*R + min(r, R) with
 * P = q*B + r on a single rack, and a conservative per-rack generalisation
 * otherwise (docs/admission.md). Fenced brokers get 0 unless fewer than R
 * brokers are unfenced. Writes broker_count entries to shares.
 */
void ka_bound_shares(const ka_place_broker_t *brokers, size_t broker_count, int32_t rack_count,
                     int64_t partitions, int32_t replication, int64_t *shares);

/* What ka_bound_shares needs of the brokers besides the item, counted once for many
 * items over the same brokers (their rack and fenced flag). */
typedef struct ka_bound {
    int32_t racks;
    int64_t n, unfenced;
    int64_t *size;     /* unfenced brokers per rack */
    int64_t *size_all; /* brokers per rack */
    int64_t *share;    /* scratch: the last fill's share per rack */
} ka_bound_t;

/* 0 or KA_ENOMEM (then ka_bound_fill assumes the worst: P on every broker). */
int ka_bound_init(ka_bound_t *b, const ka_place_broker_t *brokers, size_t broker_count,
                  int32_t rack_count);
/* ka_bound_shares over the brokers b was counted from: O(racks + brokers). */
void ka_bound_fill(ka_bound_t *b, const ka_place_broker_t *brokers, size_t broker_count,
                   int64_t partitions, int32_t replication, int64_t *shares);
void ka_bound_free(ka_bound_t *b);

#endif
