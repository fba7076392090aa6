/*
 * ka_ledger_claims.c: tying phase-1 reservations to their items (see
 * ka_ledger_claims.h).
 */
#include "ka_ledger_claims.h"

#include <stdlib.h>
#include <string.h>

int ka_ledger_claims_take(ka_ledger_claims_t *c, const ka_reservations_t *mirror,
                          const uint64_t *ids, size_t n)
{
    memset(c, 0, sizeof(*c));
    c->ids = calloc(n + 1, sizeof(*c->ids));
    c->topics = calloc(n + 1, sizeof(*c->topics));
    c->partitions = calloc(n + 1, sizeof(*c->partitions));
    c->admitted = calloc(n + 1, sizeof(*c->admitted));
    c->item = calloc(n + 1, sizeof(*c->item));
    if (c->ids == NULL || c->topics == NULL || c->partitions == NULL || c->admitted == NULL ||
        c->item == NULL) {
        ka_ledger_claims_free(c);
        return KA_ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        ka_reservation_spec_t spec;
        int rc = ka_reservations_describe(mirror, ids[k], &spec, NULL);
        if (rc < 0 || (c->topics[k] = malloc((size_t)spec.topic.len + 1)) == NULL) {
            c->n = k;
            ka_ledger_claims_free(c);
            return rc < 0 ? rc : KA_ENOMEM;
        }
        memcpy(c->topics[k], spec.topic.ptr, (size_t)spec.topic.len);
        c->topics[k][spec.topic.len] = '\0';
        c->partitions[k] = spec.kind == KA_RESERVATION_REPLICAS ? spec.partition : -1;
        c->ids[k] = ids[k];
        c->admitted[k] = 1;
        c->item[k] = -1;
    }
    c->n = n;
    return 0;
}

static int same(const ka_ledger_claims_t *c, size_t k, const ka_adm_item_t *it)
{
    return strcmp(c->topics[k], it->topic) == 0 &&
           (c->partitions[k] < 0 || c->partitions[k] == it->partition);
}

void ka_ledger_claims_bind(ka_ledger_claims_t *c, ka_adm_pending_t *p, int forwarded,
                           ka_reservations_t *mirror)
{
    size_t k = 0;
    if (p != NULL) {
        /* Claims are a subsequence of the items: match them in order. */
        for (size_t i = 0; i < p->count; i++) {
            ka_adm_item_t *it = &p->items[i];
            it->reservation_id = 0;
            if (k < c->n && same(c, k, it)) {
                c->item[k] = (ptrdiff_t)i;
                c->admitted[k] = !it->local;
                if (!it->local)
                    it->reservation_id = c->ids[k];
                k++;
            }
        }
        forwarded = 0; /* a claim without an item was not forwarded */
    }
    for (; k < c->n; k++)
        c->admitted[k] = (uint8_t)(forwarded != 0);
    for (k = 0; k < c->n; k++) {
        if (!c->admitted[k])
            ka_reservations_release(mirror, c->ids[k]);
    }
}

void ka_ledger_claims_settle(ka_ledger_claims_t *c, const ka_adm_pending_t *p)
{
    for (size_t k = 0; k < c->n; k++) {
        ptrdiff_t i = c->item[k];
        if (i >= 0 && (size_t)i < p->count &&
            ka_adm_error_created_nothing(p->api_key, p->items[i].broker_error))
            c->admitted[k] = 0; /* the response path released its reservation */
    }
}

void ka_ledger_claims_free(ka_ledger_claims_t *c)
{
    if (c->topics != NULL) {
        for (size_t k = 0; k < c->n; k++)
            free(c->topics[k]);
    }
    free(c->ids);
    free(c->topics);
    free(c->partitions);
    free(c->admitted);
    free(c->item);
    memset(c, 0, sizeof(*c));
}
