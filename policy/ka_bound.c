/*
 * ka_bound.c: the most replicas Kafka's own placer can put on each broker
 * (KIP-578 bound mode), declared in ka_placement.h.
 */
#include "ka_placement.h"

#include <stdlib.h>
#include <string.h>

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
    int64_t *size = calloc(2 * ((size_t)racks + 1), sizeof(*size)), *share;
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
    /* A broker's share depends only on its rack's size: once per rack. */
    share = size + racks + 1;
    for (int32_t r = 0; r < racks; r++) {
        int64_t k = size[r], m, q = P / B, rest = P % B;

        if (k == 0)
            continue;
        /* At most m replicas of one partition land in this rack, spread
         * round-robin over its k brokers; the placer reshuffles every B
         * partitions, so count whole rounds of B and the remainder. */
        m = min64(k, per_rack + shortfall);
        share[r] = q * min64(B, ceil_div(B * m, k)) +
                   min64(rest, ceil_div(rest * m, k) > m ? ceil_div(rest * m, k) : m);
        share[r] = min64(share[r], P);
    }
    for (size_t i = 0; i < n; i++)
        shares[i] = !use_fenced && brokers[i].fenced ? 0 : share[brokers[i].rack];
out:
    free(size);
}
