/*
 * ka_ledger_state.h: what a sidecar knows from the ledger, applied record
 * by record in ledger order.
 *
 * The mirror is the reservation ledger the engine decides against
 * (policy/ka_reservations.h). Every live intent of every sidecar is in it,
 * each reservation ordered by the offset of the intent that announced it:
 *   - another sidecar's intent (or one of this sidecar's from before a
 *     restart) adds its items when read, ordered at its offset, expiring
 *     TTL after the time written in the record;
 *   - this sidecar's own intent was reserved by its first judgement
 *     (unordered) before it was appended; reading it back orders those
 *     reservations at its offset, and tells the caller that the decision
 *     can now be checked against everything ordered before it;
 *   - an outcome releases the items it marks "released".
 * Reservations also end as the mirror's always do: reconciled against a
 * view that shows them, or expired.
 *
 * Replays: a sidecar numbers its intents with seqs that only grow, and
 * appends them in that order, so an intent whose seq is not above the
 * highest this state has read from its sidecar is a copy of an old record
 * (KA_LEDGER_REPLAYED) and changes nothing. That highest seq is kept for
 * one TTL after the sidecar's last intent; an older copy is older than its
 * TTL by its own (signed) timestamp anyway. An outcome's intent is dropped
 * when the outcome is read, so a copy of an outcome finds nothing to release.
 *
 * Pure: no I/O; clocks are passed in (the record's wall clock for TTLs,
 * the loop's clock for expiries).
 */
#ifndef KA_LEDGER_STATE_H
#define KA_LEDGER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "ka_reservations.h"

typedef struct ka_ledger_state ka_ledger_state_t;

/* What ka_ledger_state_apply did with a record. */
enum ka_ledger_applied {
    KA_LEDGER_APPLIED = 0,   /* another sidecar's intent or outcome, now in the mirror */
    KA_LEDGER_OWN_INTENT,    /* this sidecar's pending intent read back: *own_seq */
    KA_LEDGER_OWN_ABANDONED, /* this sidecar's intent it gave up on (its items are released) */
    KA_LEDGER_IGNORED,       /* nothing to do: an own outcome, an outcome of an unknown intent */
    KA_LEDGER_TOO_OLD,       /* an intent older than the TTL */
    KA_LEDGER_REPLAYED,      /* an intent whose sidecar already used its seq: a copy */
    KA_LEDGER_MALFORMED,     /* refused; err says why */
};

/* sidecar: this sidecar's id (copied). mirror is borrowed and must outlive the state. */
int ka_ledger_state_new(const char *sidecar, ka_reservations_t *mirror, int64_t ttl_ms,
                        ka_ledger_state_t **out);
void ka_ledger_state_free(ka_ledger_state_t *s);

/*
 * Registers this sidecar's intent `seq` before it is appended: ids are its
 * reservations in the mirror (unordered until read back), in item order.
 */
int ka_ledger_state_own_begin(ka_ledger_state_t *s, uint64_t seq, const uint64_t *ids, size_t n,
                              int64_t loop_now_ms);
/*
 * Gives up on a pending own intent (not read back in time, or its request
 * went away): its reservations are released now, and the intent is skipped
 * when read back later. Returns the number of items, or KA_EINVALID.
 */
int ka_ledger_state_own_abandon(ka_ledger_state_t *s, uint64_t seq);
/*
 * Forgets an own intent whose outcome was written. An abandoned one stays
 * known until it is read back (so it is skipped then) or its TTL passes.
 */
void ka_ledger_state_own_end(ka_ledger_state_t *s, uint64_t seq);

/*
 * Applies the record read at `offset`. wall_now_ms is the wall clock (for
 * the record's timestamp), loop_now_ms the clock of the mirror's expiries.
 */
enum ka_ledger_applied ka_ledger_state_apply(ka_ledger_state_t *s, const void *bytes, size_t len,
                                             uint64_t offset, int64_t wall_now_ms,
                                             int64_t loop_now_ms, uint64_t *own_seq, char *err,
                                             size_t errlen);

/*
 * The same, on the ledger's clock (ARCHITECTURE invariant 12): appended_ms is
 * the record's LogAppendTime, set by the partition leader (<= 0: unknown, the
 * record's own "ts" then stands in), and now_ms the reader's estimate of the
 * ledger's clock now (a lower bound: the newest append time read or written,
 * plus the monotonic time since). An intent's age is now_ms - appended_ms, so
 * no sidecar's wall clock decides which intents still count.
 */
enum ka_ledger_applied ka_ledger_state_apply_at(ka_ledger_state_t *s, const void *bytes, size_t len,
                                                uint64_t offset, int64_t appended_ms,
                                                int64_t now_ms, int64_t loop_now_ms,
                                                uint64_t *own_seq, char *err, size_t errlen);

/* Drops the bookkeeping of intents whose TTL passed; returns how many. */
size_t ka_ledger_state_expire(ka_ledger_state_t *s, int64_t loop_now_ms);
/*
 * The lowest seq this sidecar's next intent may take: above every seq read
 * from its own earlier records (its clock may have gone back across a
 * restart), else 0.
 */
uint64_t ka_ledger_state_seq_floor(const ka_ledger_state_t *s);

/* Intents known and not yet ended (own pending included). */
size_t ka_ledger_state_live(const ka_ledger_state_t *s);

#endif
