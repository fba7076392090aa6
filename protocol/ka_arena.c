/*
 * ka_arena.c: chunked bump allocation with a byte cap (see ka_arena.h).
 *
 * Chunks double in size from KA_ARENA_MIN_CHUNK, so a large frame needs few
 * mallocs and a small one wastes little. An allocation larger than half a
 * chunk gets a chunk of its own.
 */
#include "ka_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KA_ARENA_MIN_CHUNK 4096
#define KA_ARENA_MAX_CHUNK ((size_t)16 * 1024 * 1024)

struct ka_arena_chunk {
    struct ka_arena_chunk *next; /* older chunk, or NULL */
    size_t size;                 /* usable bytes in data */
    size_t off;                  /* next free byte in data */
    alignas(max_align_t) unsigned char data[];
};

int ka_arena_budget_charge(const ka_arena_budget_t *b, size_t n)
{
    return b != NULL ? b->charge(b->ctx, n) : 0;
}

void ka_arena_budget_uncharge(const ka_arena_budget_t *b, size_t n)
{
    if (b != NULL)
        b->uncharge(b->ctx, n);
}

void ka_arena_init(ka_arena_t *a, size_t cap)
{
    a->head = NULL;
    a->used = 0;
    a->cap = cap;
    a->budget = NULL;
}

void ka_arena_set_budget(ka_arena_t *a, const ka_arena_budget_t *b)
{
    a->budget = b;
}

static void chunk_free(ka_arena_t *a, struct ka_arena_chunk *c)
{
    ka_arena_budget_uncharge(a->budget, sizeof(*c) + c->size);
    free(c);
}

void ka_arena_destroy(ka_arena_t *a)
{
    struct ka_arena_chunk *c = a->head;
    while (c != NULL) {
        struct ka_arena_chunk *next = c->next;
        chunk_free(a, c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}

void ka_arena_reset(ka_arena_t *a)
{
    /* Keep the newest chunk, which is the largest, and free the rest. */
    struct ka_arena_chunk *keep = a->head;
    if (keep != NULL) {
        struct ka_arena_chunk *c = keep->next;
        while (c != NULL) {
            struct ka_arena_chunk *next = c->next;
            chunk_free(a, c);
            c = next;
        }
        keep->next = NULL;
        keep->off = 0;
    }
    a->used = 0;
}

static size_t align_up(size_t n)
{
    size_t al = alignof(max_align_t);
    return (n + al - 1) & ~(al - 1);
}

int ka_arena_alloc_array(ka_arena_t *a, size_t n, size_t size, void **out)
{
    *out = NULL;
    if (n == 0 || size == 0)
        return 0;
    if (n > SIZE_MAX / size)
        return KA_ELIMIT;
    size_t bytes = n * size;
    if (bytes > a->cap || bytes > SIZE_MAX / 2)
        return KA_ELIMIT;
    bytes = align_up(bytes);
    if (a->used > a->cap || bytes > a->cap - a->used)
        return KA_ELIMIT;
    struct ka_arena_chunk *c = a->head;
    if (c == NULL || c->size - c->off < bytes) {
        size_t size_next = c ? c->size * 2 : KA_ARENA_MIN_CHUNK;
        if (size_next > KA_ARENA_MAX_CHUNK)
            size_next = KA_ARENA_MAX_CHUNK;
        if (size_next < bytes)
            size_next = bytes;
        if (ka_arena_budget_charge(a->budget, sizeof(struct ka_arena_chunk) + size_next) < 0)
            return KA_ENOMEM;
        struct ka_arena_chunk *fresh = malloc(sizeof(*fresh) + size_next);
        if (fresh == NULL) {
            ka_arena_budget_uncharge(a->budget, sizeof(*fresh) + size_next);
            return KA_ENOMEM;
        }
        fresh->size = size_next;
        fresh->off = 0;
        fresh->next = c;
        a->head = fresh;
        c = fresh;
    }
    void *p = c->data + c->off;
    c->off += bytes;
    a->used += bytes;
    memset(p, 0, bytes);
    *out = p;
    return 0;
}

void *ka_arena_alloc(ka_arena_t *a, size_t size)
{
    void *p = NULL;
    if (ka_arena_alloc_array(a, 1, size, &p) < 0)
        return NULL;
    return p;
}
