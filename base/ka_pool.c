/*
 * ka_pool.c: memory accounting, the waiter FIFO and KIP-81's figures
 * (see ka_pool.h).
 */
#include "ka_pool.h"

#include <assert.h>
#include <stdlib.h>

#include "ka_error.h"

static int budget_charge(void *ctx, size_t n)
{
    return ka_pool_charge(ctx, n);
}

static void budget_uncharge(void *ctx, size_t n)
{
    ka_pool_uncharge(ctx, n);
}

void ka_pool_init(ka_pool_t *p, uint64_t capacity, uint64_t reserved, uint64_t (*now_ns)(void))
{
    assert(reserved <= capacity);
    uint64_t share = capacity * KA_POOL_PRIORITY_PERCENT / 100;
    *p = (ka_pool_t){.capacity = capacity,
                     .reserved = reserved,
                     .priority_limit = share > reserved ? share : reserved,
                     .now_ns = now_ns};
    p->held_limit = p->priority_limit * KA_POOL_HELD_PERCENT / 100;
    p->budget = (ka_arena_budget_t){budget_charge, budget_uncharge, p};
    /* Both windows start now; the other one only counts once it is older. */
    p->win_start_ns[0] = p->win_start_ns[1] = now_ns();
}

static uint64_t room(uint64_t limit, uint64_t taken)
{
    return taken >= limit ? 0 : limit - taken;
}

/* The class of a caller's priority argument. */
static int class_of(int priority)
{
    return priority <= 0 ? 0 : priority >= KA_POOL_HELD ? KA_POOL_HELD : 1;
}

static uint64_t taken(const ka_pool_t *p, int c)
{
    return p->class_used[c] + p->class_granted[c];
}

uint64_t ka_pool_available(const ka_pool_t *p, int priority)
{
    int c = class_of(priority);
    uint64_t whole = room(p->capacity, p->used + p->granted);
    uint64_t prio = taken(p, 1) + taken(p, KA_POOL_HELD), mine;
    if (c == 0) {
        /* Streams never dip into the reserved share, whatever the priority
         * classes hold. */
        uint64_t above = prio > p->reserved ? prio - p->reserved : 0;
        mine = room(p->capacity - p->reserved, taken(p, 0) + above);
    } else {
        /* Both priority classes together stay under the priority limit, and
         * held requests under their own, so they leave room for responses,
         * answers and decode arenas. */
        mine = room(p->priority_limit, prio);
        /* Large held requests leave a share of their class to small ones
         * (Metadata, most admin requests), however many large ones stall. */
        uint64_t held = priority == KA_POOL_HELD
                            ? p->held_limit - p->held_limit * KA_POOL_SMALL_PERCENT / 100
                            : p->held_limit;
        if (c == KA_POOL_HELD && room(held, taken(p, c)) < mine)
            mine = room(held, taken(p, c));
    }
    return mine < whole ? mine : whole;
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
        p->class_granted[w->priority] -= w->granted;
        w->granted = 0;
    }
}

static void account(ka_pool_t *p, int c, size_t n)
{
    p->used += n;
    p->class_used[c] += n;
}

static void unaccount(ka_pool_t *p, int c, size_t n)
{
    assert(p->class_used[c] >= n);
    p->used -= n;
    p->class_used[c] -= n;
}

/*
 * What a caller of class c may take now. A grant counts only for the class
 * it was made in. FIFO fairness within a class: while streams of it wait,
 * only resumed ones may take memory. A priority caller with no waiter (an
 * answer, kadmit's own metadata) works for a frame already held, and goes on.
 */
static uint64_t may_take(const ka_pool_t *p, int priority, const ka_pool_waiter_t *w, int *resumed)
{
    int c = class_of(priority);
    *resumed = w != NULL && w->granted > 0 && w->priority == c;
    /* Small held requests go past the large ones that wait: they are
     * cheap, and what they need is kept for them. */
    int fifo = c == 0 || (c == 1 && w != NULL) || priority == KA_POOL_HELD;
    if (!*resumed && p->head[c] != NULL && fifo)
        return 0;
    return ka_pool_available(p, priority) + (*resumed ? w->granted : 0);
}

ka_pbuf_t *ka_pool_alloc(ka_pool_t *p, size_t want, size_t min, int priority, ka_pool_waiter_t *w)
{
    assert(min <= want && want <= UINT32_MAX);
    int c = class_of(priority), resumed;
    uint64_t avail = may_take(p, priority, w, &resumed);

    if (avail < min) {
        dry_spell_begin(p);
        return NULL;
    }
    size_t n = avail < want ? (size_t)avail : want;
    ka_pbuf_t *b = malloc(sizeof(*b) + n);
    if (b == NULL)
        return NULL;
    if (resumed)
        take_grant(p, w);
    b->refs = 1;
    b->cap = (uint32_t)n;
    b->priority = (uint32_t)c;
    b->small = priority == KA_POOL_HELD_SMALL;
    account(p, c, n);
    dry_spell_end(p);
    return b;
}

ka_pbuf_t *ka_pool_grow(ka_pool_t *p, ka_pbuf_t *b, size_t want, size_t min, ka_pool_waiter_t *w)
{
    assert(b->refs == 1 && b->cap <= min && min <= want && want <= UINT32_MAX);
    int c = (int)b->priority, resumed;
    uint64_t avail = may_take(p, b->small ? KA_POOL_HELD_SMALL : c, w, &resumed);

    if (avail < min - b->cap) {
        dry_spell_begin(p);
        return NULL;
    }
    size_t n = avail < want - b->cap ? b->cap + (size_t)avail : want;
    ka_pbuf_t *grown = realloc(b, sizeof(*b) + n);
    if (grown == NULL)
        return NULL;
    if (resumed)
        take_grant(p, w);
    account(p, c, n - grown->cap);
    grown->cap = (uint32_t)n;
    dry_spell_end(p);
    return grown;
}

static void unlink_waiter(ka_pool_t *p, ka_pool_waiter_t *w)
{
    int c = w->priority;
    if (w->prev)
        w->prev->next = w->next;
    else
        p->head[c] = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        p->tail[c] = w->prev;
    w->next = w->prev = NULL;
    w->queued = 0;
}

/* Resumes each class's waiters in order while its head's need can be set
 * aside; one class's head never holds up the other class. */
static void kick(ka_pool_t *p)
{
    if (p->kicking)
        return;
    p->kicking = 1;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int c = 0; c < KA_POOL_CLASSES; c++) {
            ka_pool_waiter_t *w = p->head[c];
            if (w == NULL || ka_pool_available(p, w->small ? KA_POOL_HELD_SMALL : c) < w->need)
                continue;
            unlink_waiter(p, w);
            w->granted = w->need;
            p->granted += w->need;
            p->class_granted[c] += w->need;
            w->resume_cb(w);
            progress = 1;
        }
    }
    p->kicking = 0;
}

void ka_pool_wait(ka_pool_t *p, ka_pool_waiter_t *w, size_t need, int priority)
{
    if (w->queued)
        return;
    /* A resumed waiter that must wait again (it needs more than it was
     * granted) keeps its place at the front; everyone else queues last. */
    int c = class_of(priority);
    int front = (w->granted > 0 && w->priority == c) || priority == KA_POOL_HELD_SMALL;
    take_grant(p, w);
    w->need = need;
    w->priority = c;
    w->small = priority == KA_POOL_HELD_SMALL;
    w->queued = 1;
    if (front) {
        w->prev = NULL;
        w->next = p->head[c];
        if (p->head[c])
            p->head[c]->prev = w;
        else
            p->tail[c] = w;
        p->head[c] = w;
    } else {
        w->next = NULL;
        w->prev = p->tail[c];
        if (p->tail[c])
            p->tail[c]->next = w;
        else
            p->head[c] = w;
        p->tail[c] = w;
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
    unaccount(p, (int)b->priority, b->cap);
    free(b);
    dry_spell_end(p);
    kick(p);
}

int ka_pool_charge(ka_pool_t *p, size_t n)
{
    if (ka_pool_available(p, 1) < n) {
        dry_spell_begin(p);
        return KA_ENOMEM;
    }
    account(p, 1, n);
    return 0;
}

void ka_pool_uncharge(ka_pool_t *p, size_t n)
{
    unaccount(p, 1, n);
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
    for (int c = 0; c < KA_POOL_CLASSES; c++)
        for (const ka_pool_waiter_t *w = p->head[c]; w; w = w->next)
            n++;
    return n;
}

int ka_pool_starved(const ka_pool_t *p)
{
    return p->head[0] != NULL || p->head[1] != NULL;
}

uint64_t ka_pool_priority_used_bytes(const ka_pool_t *p)
{
    return p->class_used[1] + p->class_used[KA_POOL_HELD];
}

uint64_t ka_pool_held_used_bytes(const ka_pool_t *p)
{
    return p->class_used[KA_POOL_HELD];
}
