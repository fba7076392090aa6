/*
 * ka_reservations.h: the reservation ledger (ARCHITECTURE invariant 6).
 *
 * Between the moment kadmit admits a request and the moment a refreshed
 * cluster view shows its result, the replicas it will create are invisible
 * to the view. The ledger holds them: each admitted item reserves replicas
 * on brokers (and partitions against max.partitions) under an id, and the
 * engine counts every outstanding reservation as if it were already
 * hosted. A reservation ends in one of three ways:
 *   - ka_reservations_release: the broker answered with an error for it;
 *   - ka_reservations_reconcile: a new cluster view already shows it (the
 *     topic has its partitions, the partition's replica list contains the
 *     targets), so the view counts it from now on;
 *   - ka_reservations_expire: its expiry passed, a safety net for answers
 *     that never came back (the client went away) and views that never show
 *     it (the topic was deleted at once).
 *
 * With the cluster-wide ledger (control/ledger/ka_ledger.h) each reservation also
 * has an order: the offset of the ledger record that announced it, or
 * KA_RESERVATION_UNORDERED while its record has not been read back yet.
 * ka_reservations_copy_before() then gives the reservations a decision at
 * offset O must count: those announced before O.
 *
 * The ledger is mutable and not thread-safe: one owner (the proxy's loop)
 * calls it, and the engine adds to it while deciding.
 */
#ifndef KA_RESERVATIONS_H
#define KA_RESERVATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_error.h"
#include "ka_reader.h"

/* How a cluster view shows that a reservation has happened. */
enum ka_reservation_kind {
    /* The topic exists with at least partition_count partitions (and, with
     * replaces_topic_id, under another id than that one). */
    KA_RESERVATION_PARTITIONS,
    /* The partition's replica list contains every broker in replicas. */
    KA_RESERVATION_REPLICAS,
};

typedef struct ka_broker_delta {
    int32_t broker_id;
    int32_t replicas; /* replicas reserved on the broker (> 0) */
} ka_broker_delta_t;

/* What to reserve; everything is copied by ka_reservations_add. */
typedef struct ka_reservation_spec {
    enum ka_reservation_kind kind;
    ka_slice_t topic;
    int32_t partition_count; /* PARTITIONS: the total the view must show */
    int32_t partition;       /* REPLICAS: the partition being reassigned */
    const int32_t *replicas; /* REPLICAS: the target replica list */
    int32_t replica_count;   /* REPLICAS: entries in replicas */
    int32_t new_partitions;  /* partitions counted against max.partitions */
    /* PARTITIONS: a topic of that name that this one replaces (deleted, then created again
     * while a view still showed it): only a view listing the topic with another, nonzero id
     * shows the reservation. All zero: none. */
    uint8_t replaces_topic_id[16];
    /* PARTITIONS: the item creates the topic (CreateTopics, auto-creation) rather than grows
     * it. An incarnation of the name that a view listed before the reservation, or that showed
     * an earlier reservation of the name, is then never its result (see reconcile). */
    bool creates_topic;
    const ka_broker_delta_t *deltas; /* replicas per broker */
    size_t delta_count;
    int64_t expires_at_ms; /* the caller's clock */
    /* The caller's clock when it was reserved (another sidecar's item: when its intent was
     * appended to the ledger): only a view taken later can show it (0: any view). */
    int64_t added_at_ms;
} ka_reservation_spec_t;

typedef struct ka_reservations ka_reservations_t;

/* The order of a reservation not (yet) announced in the cluster-wide ledger. */
#define KA_RESERVATION_UNORDERED UINT64_MAX

int ka_reservations_new(ka_reservations_t **out);
void ka_reservations_free(ka_reservations_t *ledger);

/* Records a reservation and returns its id (never 0) in *id. */
int ka_reservations_add(ka_reservations_t *ledger, const ka_reservation_spec_t *spec, uint64_t *id);
/* Ends a reservation; KA_EINVALID when the id is not outstanding. */
int ka_reservations_release(ka_reservations_t *ledger, uint64_t id);
/*
 * Ends every reservation that `view` already shows. Call it with each new
 * view, in the order the views were taken, before deciding against that
 * view. Returns how many ended.
 *
 * A view shows a reservation only when it was taken after the reservation
 * was added: one requested before may list an older incarnation of the
 * topic (created, deleted, and now created again) and would end the
 * reservation while the new topic is still on its way. A broker's view can
 * also lag its controller, so a view taken later may still list the older
 * incarnation; for the reservations that create a topic the ledger
 * therefore remembers which incarnation it has seen for the name: the one a
 * view answered before the reservation was added listed, and the one that showed an
 * earlier reservation of the name (reservations are settled in ledger
 * order). A create is shown only by another incarnation than that one.
 */
size_t ka_reservations_reconcile(ka_reservations_t *ledger, const ka_cluster_t *view);
/* Ends every reservation whose expiry is at or before now_ms; returns how many. */
size_t ka_reservations_expire(ka_reservations_t *ledger, int64_t now_ms);

/* Sets the order of an outstanding reservation; KA_EINVALID when it is not. */
int ka_reservations_set_order(ka_reservations_t *ledger, uint64_t id, uint64_t order);
/*
 * The spec of an outstanding reservation, its order and expiry; pointers
 * into the ledger stay valid until the reservation ends. KA_EINVALID when
 * the id is not outstanding.
 */
int ka_reservations_describe(const ka_reservations_t *ledger, uint64_t id,
                             ka_reservation_spec_t *spec, uint64_t *order);
/*
 * A new ledger holding a copy of every reservation of src whose order is
 * below `order` (ids kept). Reservations added to the copy get ids src has
 * never used, so nothing in the copy can be mistaken for one of src.
 */
int ka_reservations_copy_before(const ka_reservations_t *src, uint64_t order,
                                ka_reservations_t **out);
/* A new ledger holding a copy of every reservation of src, ordered or not, on the same
 * terms as ka_reservations_copy_before (what-if answers judge against one). */
int ka_reservations_copy(const ka_reservations_t *src, ka_reservations_t **out);

/* Replicas reserved on a broker by all outstanding reservations. */
int64_t ka_reservations_broker_replicas(const ka_reservations_t *ledger, int32_t broker_id);
/* Partitions reserved against max.partitions. */
int64_t ka_reservations_partitions(const ka_reservations_t *ledger);
size_t ka_reservations_count(const ka_reservations_t *ledger);
/* The spec of outstanding reservation `index` (< ka_reservations_count), as describe gives it;
 * for walks over every reservation (budgets of topic rules). */
void ka_reservations_spec_at(const ka_reservations_t *ledger, size_t index,
                             ka_reservation_spec_t *spec);
/* True when a PARTITIONS reservation for this topic is outstanding. */
bool ka_reservations_has_topic(const ka_reservations_t *ledger, ka_slice_t topic);

#endif
