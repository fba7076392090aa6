/*
 * ka_arena.h: a bump allocator for everything one decoded frame needs.
 *
 * Decoders allocate their arrays here instead of calling malloc per
 * element, so a whole decoded message is freed in one call and a hostile
 * frame cannot make kadmit allocate without bound: the arena has a byte cap
 * and refuses (KA_ELIMIT) to go past it. Memory comes in chunks from malloc;
 * a failed malloc is KA_ENOMEM.
 */
#ifndef KA_ARENA_H
#define KA_ARENA_H

#include <stddef.h>

#include "ka_error.h"

/*
 * The cap kadmit uses when nothing else is configured. A decoded struct can
 * be several times larger than its wire form (an 18-byte Metadata partition
 * becomes an 80-byte struct), so this leaves room for a Metadata response of
 * a few hundred thousand partitions while bounding what one frame may cost.
 */
#define KA_ARENA_DEFAULT_CAP ((size_t)256 * 1024 * 1024)

struct ka_arena_chunk;

/*
 * Where an arena's memory is accounted (in the proxy, the memory pool, so
 * that decoding a held request counts against --buffer-memory). charge
 * returns 0, or a negative ka_err to refuse the bytes; the allocation then
 * fails with KA_ENOMEM. Pure code only calls through it.
 */
typedef struct ka_arena_budget {
    int (*charge)(void *ctx, size_t n);
    void (*uncharge)(void *ctx, size_t n);
    void *ctx;
} ka_arena_budget_t;

/* Charges n bytes to b (0 when b is NULL: nothing is accounted). */
int ka_arena_budget_charge(const ka_arena_budget_t *b, size_t n);
void ka_arena_budget_uncharge(const ka_arena_budget_t *b, size_t n);

typedef struct ka_arena {
    struct ka_arena_chunk *head;     /* the chunk being filled; older chunks follow */
    size_t used;                     /* bytes handed out since init or reset, padding included */
    size_t cap;                      /* most bytes used may reach */
    const ka_arena_budget_t *budget; /* where chunks are accounted; NULL: nowhere */
} ka_arena_t;

void ka_arena_init(ka_arena_t *a, size_t cap);
/* Accounts the arena's chunks to b from now on (call before the first allocation). */
void ka_arena_set_budget(ka_arena_t *a, const ka_arena_budget_t *b);
/* Frees every chunk; the arena can be reused after ka_arena_init. */
void ka_arena_destroy(ka_arena_t *a);
/* Forgets every allocation but keeps the largest chunk for the next frame. */
void ka_arena_reset(ka_arena_t *a);

/*
 * Allocates n * size zeroed bytes aligned for any type. n == 0 gives NULL and
 * success, so empty arrays cost nothing. Fails with KA_ELIMIT past the cap
 * (or on multiplication overflow) and KA_ENOMEM when malloc fails.
 */
int ka_arena_alloc_array(ka_arena_t *a, size_t n, size_t size, void **out);

/* The single-object form of ka_arena_alloc_array; NULL on failure. */
void *ka_arena_alloc(ka_arena_t *a, size_t size);

#endif
