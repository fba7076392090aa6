/*
 * ka_pool.h: the memory pool that bounds every buffered byte (KIP-81).
 *
 * The pool is an accountant in front of malloc, after Kafka's
 * SimpleMemoryPool in strict mode: an allocation succeeds only when the
 * bytes fit under the capacity. There are three classes of bytes:
 *   general   read buffers of streamed traffic; they may use the capacity
 *             minus the reserved share;
 *   priority  frames kadmit buffers whole on its own account (ApiVersions
 *             and merged responses, local answers, re-encoded requests,
 *             decode arenas, its own metadata);
 *   held      admission requests held whole on a client's behalf.
 * The two priority classes may use the reserved share and general memory,
 * but together never more than the priority limit (half the pool by
 * default), so frames held whole can never take the memory that streamed
 * traffic needs, and streamed traffic can never take the reserved share.
 * Held requests, which a client controls, may take at most half of the
 * priority limit, so the responses and arenas kadmit needs always find room.
 *
 * When an allocation cannot be served, the stream stops reading and waits
 * in its class's FIFO. As memory comes back, each queue's waiters are
 * resumed in arrival order; a resumed waiter has its bytes set aside
 * (granted) so that streams that did not wait cannot overtake it. A waiter
 * of one class never holds up the other class: a connection that waits for
 * memory to hold a frame does not stop connections that only stream. The
 * pool knows nothing about libuv: a waiter is a callback.
 *
 * Buffers are reference counted because one read buffer can back several
 * writes (pass-through bytes on both sides of a buffered frame).
 */
#ifndef KA_POOL_H
#define KA_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "ka_arena.h"

/* The size of a read buffer when memory is plentiful, like libuv's own. */
#define KA_POOL_READ_SIZE (64 * 1024)
/* The smallest read buffer worth a system call; below this a read waits. */
#define KA_POOL_READ_MIN (4 * 1024)
/* KIP-81-style metrics use Kafka's default of two 30 s sample windows. */
#define KA_POOL_WINDOW_NS (30ull * 1000000000ull)

/* By default the priority classes may take at most this share of the pool, */
#define KA_POOL_PRIORITY_PERCENT 50
/* and held requests this share of the priority limit. */
#define KA_POOL_HELD_PERCENT 50
/* The priority argument of a held request's allocations (0 general, 1
 * priority), and of a small one's (its whole frame fits in KA_POOL_SMALL_HELD
 * bytes): same class, but large ones leave KA_POOL_SMALL_PERCENT of the
 * class's limit to small ones, which also go past large ones that wait. */
#define KA_POOL_HELD          2
#define KA_POOL_HELD_SMALL    3
#define KA_POOL_CLASSES       3
#define KA_POOL_SMALL_HELD    (64 * 1024)
#define KA_POOL_SMALL_PERCENT 25

typedef struct ka_pbuf {
    uint32_t refs;     /* writes and readers still using the bytes */
    uint32_t cap;      /* usable bytes in data, as charged to the pool */
    uint32_t priority; /* the class charged, so release credits the same one */
    uint32_t small;    /* a small held request's buffer (KA_POOL_HELD_SMALL) */
    uint8_t data[];
} ka_pbuf_t;

typedef struct ka_pool_waiter ka_pool_waiter_t;
typedef void (*ka_pool_resume_cb)(ka_pool_waiter_t *w);

struct ka_pool_waiter {
    ka_pool_waiter_t *next, *prev; /* FIFO links while queued */
    ka_pool_resume_cb resume_cb;   /* called once the waiter's bytes are set aside */
    size_t need;                   /* the bytes it cannot proceed without */
    size_t granted;                /* bytes set aside for it, until it allocates or cancels */
    int priority;                  /* the class waited in (0, 1 or KA_POOL_HELD) */
    int small;                     /* waits for a small held request (goes first) */
    int queued;
};

typedef struct ka_pool {
    uint64_t capacity;                    /* --buffer-memory */
    uint64_t reserved;                    /* share only priority allocations may use */
    uint64_t priority_limit;              /* most bytes both priority classes may hold */
    uint64_t held_limit;                  /* most bytes held requests may hold */
    uint64_t used;                        /* bytes in live buffers and charges, both classes */
    uint64_t granted;                     /* bytes set aside for resumed waiters, both classes */
    uint64_t class_used[KA_POOL_CLASSES]; /* used, per class */
    uint64_t class_granted[KA_POOL_CLASSES];
    ka_pool_waiter_t *head[KA_POOL_CLASSES], *tail[KA_POOL_CLASSES]; /* one FIFO per class */
    int kicking;              /* guards against resuming waiters re-entrantly */
    uint64_t (*now_ns)(void); /* monotonic clock, replaceable in tests */

    /* SimpleMemoryPool's dry-spell accounting: a spell starts at the first
     * failed allocation and ends at the next successful one or release. */
    uint64_t dry_start_ns;
    uint64_t depleted_ns_total;
    uint64_t win_start_ns[2]; /* Kafka's Rate over two sample windows */
    uint64_t win_depleted_ns[2];
    int win_cur;

    uint64_t alloc_failures;  /* allocations refused for lack of memory */
    ka_arena_budget_t budget; /* charges decode arenas to the priority class */
} ka_pool_t;

/* The priority limit starts at the larger of the reserved share and
 * KA_POOL_PRIORITY_PERCENT of the capacity; the held limit at
 * KA_POOL_HELD_PERCENT of that. */
void ka_pool_init(ka_pool_t *p, uint64_t capacity, uint64_t reserved, uint64_t (*now_ns)(void));

/*
 * Allocates a buffer of `want` bytes, or less but at least `min` when less
 * is available. `w` (may be NULL) identifies the caller so that a resumed
 * waiter can use its grant; a non-priority caller that is not resumed
 * cannot allocate while others wait. Returns NULL when memory is short.
 */
ka_pbuf_t *ka_pool_alloc(ka_pool_t *p, size_t want, size_t min, int priority, ka_pool_waiter_t *w);

/*
 * Grows b, whose only reference the caller holds, to `want` bytes, or less
 * but at least `min`, charging only the growth to b's class (realloc, so a
 * large buffer is not copied). Returns the buffer, which may have moved, or
 * NULL with b unchanged when memory is short. The same fairness as
 * ka_pool_alloc applies; w's grant pays for the growth.
 */
ka_pbuf_t *ka_pool_grow(ka_pool_t *p, ka_pbuf_t *b, size_t want, size_t min, ka_pool_waiter_t *w);

/* Queues w until `need` bytes can be set aside for it (no-op if queued). */
void ka_pool_wait(ka_pool_t *p, ka_pool_waiter_t *w, size_t need, int priority);

/* Removes w from the queue and gives back any grant (e.g. on close). */
void ka_pool_cancel(ka_pool_t *p, ka_pool_waiter_t *w);

/*
 * Charges n bytes of memory that is not a pool buffer (a decode arena's
 * chunk, a re-encoded frame) to the priority class. Returns 0, or KA_ENOMEM
 * when they do not fit now (nothing is charged then). Waiters do not hold
 * a charge up: it is made on behalf of a frame already held.
 */
int ka_pool_charge(ka_pool_t *p, size_t n);
/* Gives back bytes charged with ka_pool_charge. */
void ka_pool_uncharge(ka_pool_t *p, size_t n);
/* ka_pool_charge and ka_pool_uncharge as an arena's budget (ka_arena.h). */
static inline const ka_arena_budget_t *ka_pool_arena_budget(const ka_pool_t *p)
{
    return &p->budget;
}

static inline void ka_pbuf_ref(ka_pbuf_t *b)
{
    b->refs++;
}

/* Drops one reference; the last one returns the bytes and resumes waiters. */
void ka_pbuf_unref(ka_pool_t *p, ka_pbuf_t *b);
/* The buffer whose data starts at `data` (a pointer ka_pool_alloc handed out). */
static inline ka_pbuf_t *ka_pbuf_of(uint8_t *data)
{
    return (ka_pbuf_t *)(void *)(data - offsetof(ka_pbuf_t, data));
}

/* Bytes an allocation of the given priority could get right now. */
uint64_t ka_pool_available(const ka_pool_t *p, int priority);

/* KIP-81's figures. */
uint64_t ka_pool_free_bytes(const ka_pool_t *p);
uint64_t ka_pool_used_bytes(const ka_pool_t *p);
double ka_pool_depleted_time_total_s(ka_pool_t *p);
double ka_pool_avg_depleted_percent(ka_pool_t *p);
size_t ka_pool_waiters(const ka_pool_t *p);
/* True while streamed reads or priority callers wait for memory (held
 * requests waiting on their own class's limit do not count). */
int ka_pool_starved(const ka_pool_t *p);
/* Bytes held by both priority classes (held frames, their arenas, answers). */
uint64_t ka_pool_priority_used_bytes(const ka_pool_t *p);
/* Bytes held by the held-request class alone. */
uint64_t ka_pool_held_used_bytes(const ka_pool_t *p);

#endif
