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

int ka_bound_init(ka_bound_t *b, const ka_place_broker_t *brokers, size_t n, int32_t racks)
{
    *b = (ka_bound_t){.racks = racks > 0 ? racks : 0};
    b->size = calloc(3 * ((size_t)b->racks + 1), sizeof(*b->size));
    if (b->size == NULL)
        return KA_ENOMEM;
    b->size_all = b->size + b->racks + 1;
    b->share = b->size_all + b->racks + 1;
    for (size_t i = 0; i < n; i++) {
        b->size_all[brokers[i].rack]++;
        b->size[brokers[i].rack] += !brokers[i].fenced;
        b->unfenced += !brokers[i].fenced;
    }
    b->n = (int64_t)n;
    return 0;
}

void ka_bound_free(ka_bound_t *b)
{
    free(b->size);
    *b = (ka_bound_t){0};
}

void ka_bound_fill(ka_bound_t *b, const ka_place_broker_t *brokers, size_t n, int64_t P, int32_t R,
                   int64_t *shares)
{
    /* Kafka's placer falls back to fenced brokers only when it must. */
    bool use_fenced = b->unfenced < R;
    const int64_t *size = use_fenced ? b->size_all : b->size;
    int64_t B = use_fenced ? b->n : b->unfenced, K = 0, per_rack, shortfall = 0;

    if (b->size == NULL || P <= 0 || R <= 0 || B == 0) {
        /* Without memory, assume the worst: every partition on every broker. */
        for (size_t i = 0; i < n; i++)
            shares[i] = b->size == NULL && P > 0 ? P : 0;
        return;
    }
    for (int32_t r = 0; r < b->racks; r++)
        K += size[r] > 0;
    per_rack = ceil_div(R, K);
    for (int32_t r = 0; r < b->racks; r++)
        if (size[r] > 0 && size[r] < per_rack)
            shortfall += per_rack - size[r];
    /* A broker's share depends only on its rack's size: once per rack. */
    for (int32_t r = 0; r < b->racks; r++) {
        int64_t k = size[r], m, q = P / B, rest = P % B;

        b->share[r] = 0;
        if (k == 0)
            continue;
        /* At most m replicas of one partition land in this rack, spread
         * round-robin over its k brokers; the placer reshuffles every B
         * partitions, so count whole rounds of B and the remainder. */
        m = min64(k, per_rack + shortfall);
        b->share[r] = q * min64(B, ceil_div(B * m, k)) +
                      min64(rest, ceil_div(rest * m, k) > m ? ceil_div(rest * m, k) : m);
        b->share[r] = min64(b->share[r], P);
    }
    if (use_fenced)
        for (size_t i = 0; i < n; i++)
            shares[i] = b->share[brokers[i].rack];
    else /* a fenced broker's share is 0, without a branch */
        for (size_t i = 0; i < n; i++)
            shares[i] = b->share[brokers[i].rack] & -(int64_t)!brokers[i].fenced;
}

void ka_bound_shares(const ka_place_broker_t *brokers, size_t n, int32_t racks, int64_t P,
                     int32_t R, int64_t *shares)
{
    ka_bound_t b;

    ka_bound_init(&b, brokers, n, racks); /* without memory, fill assumes the worst */
    ka_bound_fill(&b, brokers, n, P, R, shares);
    ka_bound_free(&b);
}
