/*
 * ka_ledger_claims.h: which reservations a two-phase decision announced in
 * the ledger, and what became of each.
 *
 * Phase 1 (ka_adm_judge) reserves the admitted items in the mirror; those
 * reservations are announced in the sidecar's intent and stay in the
 * mirror for other decisions. Phase 2 (ka_adm_rejudge) checks the items
 * again in a scratch copy holding only earlier intents, so the request's
 * items end up naming the scratch reservations. The claims tie each
 * phase-1 reservation back to its item (by topic, and partition for
 * reassignments, in item order), so that:
 *   - an item phase 2 rejected has its mirror reservation released;
 *   - an item forwarded names its mirror reservation, which the response
 *     path releases if the broker fails it;
 *   - the outcome record says, per intent item, "admitted" or "released".
 *
 * Pure: no I/O.
 */
#ifndef KA_LEDGER_CLAIMS_H
#define KA_LEDGER_CLAIMS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_admission.h"
#include "ka_reservations.h"

typedef struct ka_ledger_claims {
    size_t n;
    uint64_t *ids;       /* phase-1 reservations in the mirror, in item order */
    char **topics;       /* each one's topic (NUL-terminated copy) */
    int32_t *partitions; /* each one's partition for reassignments, else -1 */
    uint8_t *admitted;   /* per claim: 1 admitted so far, 0 released */
    ptrdiff_t *item;     /* per claim: index of its item in the pending items, or -1 */
} ka_ledger_claims_t;

/* Copies what the mirror says about ids (phase-1 reservations). 0, KA_ENOMEM or KA_EINVALID. */
int ka_ledger_claims_take(ka_ledger_claims_t *c, const ka_reservations_t *mirror,
                          const uint64_t *ids, size_t n);
/*
 * After ka_adm_finish of phase 2. p may be NULL (no response is awaited:
 * Metadata); `forwarded` then says whether the request went on with its
 * claims (not answered locally, auto-creation not denied). Releases, in
 * the mirror, every claim whose item is now rejected; the others stay
 * admitted, and each pending item with a claim names its mirror
 * reservation (any other reservation id is cleared: it was phase 2's
 * scratch).
 */
void ka_ledger_claims_bind(ka_ledger_claims_t *c, ka_adm_pending_t *p, int forwarded,
                           ka_reservations_t *mirror);
/* After the broker's response: claims whose item the broker failed are released. */
void ka_ledger_claims_settle(ka_ledger_claims_t *c, const ka_adm_pending_t *p);
void ka_ledger_claims_free(ka_ledger_claims_t *c);

#endif
