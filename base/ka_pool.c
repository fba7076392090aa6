/*
 * ka_pool.c: memory accounting, the waiter FIFO and KIP-81's figures
 * (see ka_pool.h).
 */
#include "ka_pool.h"

#include <assert.h>
#include <stdlib.h>

void ka_pool_init(ka_pool_t *p, uint64_t capacity, uint64_t reserved, uint64_t (*now_ns)(void))
{
    assert(reserved <= capacity);
    *p = (ka_pool_t){.capacity = capacity, .reserved = reserved, .now_ns = now_ns};
    /* Both windows start now; the other one only counts once it is older. */
    p->win_start_ns[0] = p->win_start_ns[1] = now_ns();
}

uint64_t ka_pool_available(const ka_pool_t *p, int priority)
{
    uint64_t limit = priority ? p->capacity : p->capacity - p->reserved;
    uint64_t taken = p->used + p->granted;
    return taken >= limit ? 0 : limit - taken;
}

/* Moves the sample window forward, dropping samples older than two windows. */
static void window_roll(ka_pool_t *p, uint64_t now)
{
    int c = p->win_cur;
    if (now - p->win_start_ns[c] < KA_POOL_WINDOW_NS)
        return;
    c ^= 1;
    p->win_cur = c;
    p->win_start_ns[c] = now;
    p->win_depleted_ns[c] = 0;
    if (now - p->win_start_ns[c ^ 1] >= 2 * KA_POOL_WINDOW_NS) {
        p->win_start_ns[c ^ 1] = now;
        p->win_depleted_ns[c ^ 1] = 0;
    }
}

static void dry_spell_end(ka_pool_t *p)
{
    if (p->dry_start_ns == 0)
        return;
    uint64_t now = p->now_ns(), spell = now - p->dry_start_ns;
    p->dry_start_ns = 0;
    p->depleted_ns_total += spell;
    window_roll(p, now);
    p->win_depleted_ns[p->win_cur] += spell;
}

static void dry_spell_begin(ka_pool_t *p)
{
    p->alloc_failures++;
    if (p->dry_start_ns == 0)
        p->dry_start_ns = p->now_ns() | 1; /* 0 means "no spell" */
}

static void take_grant(ka_pool_t *p, ka_pool_waiter_t *w)
{
    if (w != NULL && w->granted > 0) {
        p->granted -= w->granted;
        w->granted = 0;
    }
}

ka_pbuf_t *ka_pool_alloc(ka_pool_t *p, size_t want, size_t min, int priority, ka_pool_waiter_t *w)
{
    assert(min <= want && want <= UINT32_MAX);
    int resumed = w != NULL && w->granted > 0;
    uint64_t avail = ka_pool_available(p, priority) + (resumed ? w->granted : 0);

    /* FIFO fairness: while streams wait, only resumed ones may read. */
    if ((!priority && !resumed && p->head != NULL) || avail < min) {
        dry_spell_begin(p);
        return NULL;
    }
    size_t n = avail < want ? (size_t)avail : want;
    ka_pbuf_t *b = malloc(sizeof(*b) + n);
    if (b == NULL)
        return NULL;
    take_grant(p, w);
    b->refs = 1;
    b->cap = (uint32_t)n;
    p->used += n;
    dry_spell_end(p);
    return b;
}

static void unlink_waiter(ka_pool_t *p, ka_pool_waiter_t *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        p->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        p->tail = w->prev;
    w->next = w->prev = NULL;
    w->queued = 0;
}

/* Resumes waiters in order while the head's need can be set aside. */
static void kick(ka_pool_t *p)
{
    if (p->kicking)
        return;
    p->kicking = 1;
    while (p->head != NULL && ka_pool_available(p, p->head->priority) >= p->head->need) {
        ka_pool_waiter_t *w = p->head;
        unlink_waiter(p, w);
        w->granted = w->need;
        p->granted += w->need;
        w->resume_cb(w);
    }
    p->kicking = 0;
}

void ka_pool_wait(ka_pool_t *p, ka_pool_waiter_t *w, size_t need, int priority)
{
    if (w->queued)
        return;
    /* A resumed waiter that must wait again (it needs more than it was
     * granted) keeps its place at the front; everyone else queues last. */
    int front = w->granted > 0;
    take_grant(p, w);
    w->need = need;
    w->priority = priority;
    w->queued = 1;
    if (front) {
        w->prev = NULL;
        w->next = p->head;
        if (p->head)
            p->head->prev = w;
        else
            p->tail = w;
        p->head = w;
    } else {
        w->next = NULL;
        w->prev = p->tail;
        if (p->tail)
            p->tail->next = w;
        else
            p->head = w;
        p->tail = w;
    }
    kick(p);
}

void ka_pool_cancel(ka_pool_t *p, ka_pool_waiter_t *w)
{
    if (w->queued)
        unlink_waiter(p, w);
    if (w->granted > 0) {
        take_grant(p, w);
        kick(p);
    }
}

void ka_pbuf_unref(ka_pool_t *p, ka_pbuf_t *b)
{
    assert(b->refs > 0);
    if (--b->refs > 0)
        return;
    p->used -= b->cap;
    free(b);
    dry_spell_end(p);
    kick(p);
}

uint64_t ka_pool_free_bytes(const ka_pool_t *p)
{
    return p->capacity - p->used;
}

uint64_t ka_pool_used_bytes(const ka_pool_t *p)
{
    return p->used;
}

/* Unlike Kafka, which records a spell only when it ends, the figures here
 * include a spell in progress, so a pool stuck at zero shows as depleted. */
double ka_pool_depleted_time_total_s(ka_pool_t *p)
{
    uint64_t ns = p->depleted_ns_total;
    if (p->dry_start_ns != 0)
        ns += p->now_ns() - p->dry_start_ns;
    return (double)ns / 1e9;
}

double ka_pool_avg_depleted_percent(ka_pool_t *p)
{
    uint64_t now = p->now_ns();
    window_roll(p, now);
    int c = p->win_cur, o = c ^ 1;
    uint64_t depleted = p->win_depleted_ns[c], oldest = p->win_start_ns[c];
    if (p->win_start_ns[o] < oldest && now - p->win_start_ns[o] < 2 * KA_POOL_WINDOW_NS) {
        depleted += p->win_depleted_ns[o];
        oldest = p->win_start_ns[o];
    }
    if (p->dry_start_ns != 0)
        depleted += now - (p->dry_start_ns > oldest ? p->dry_start_ns : oldest);
    /* Kafka's Rate never divides by less than one full window. */
    uint64_t elapsed = now - oldest;
    if (elapsed < KA_POOL_WINDOW_NS)
        elapsed = KA_POOL_WINDOW_NS;
    double pct = 100.0 * (double)depleted / (double)elapsed;
    return pct > 100.0 ? 100.0 : pct;
}

size_t ka_pool_waiters(const ka_pool_t *p)
{
    size_t n = 0;
    for (const ka_pool_waiter_t *w = p->head; w; w = w->next)
        n++;
    return n;
}
