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

typedef struct ka_arena {
    struct ka_arena_chunk *head; /* the chunk being filled; older chunks follow */
    size_t used;                 /* bytes handed out since init or reset, padding included */
    size_t cap;                  /* most bytes used may reach */
} ka_arena_t;

void ka_arena_init(ka_arena_t *a, size_t cap);
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

#endif
