/*
 * ka_placement.c: limit-aware replica placement, the greedy pass, and the
 * sessions it runs in (the scans by definition, which this calls, are in
 * ka_place_scan.c; the worst case in ka_bound.c).
 *
 * Placement is greedy, one partition at a time, choosing by a lexicographic
 * key that encodes the StripedReplicaPlacer's goals in its order:
 *   leader:   fewest leaders so far, then fewest replicas, then most
 *             headroom, then the seeded order (leaders spread within ±1);
 *   follower: a rack this partition does not use yet, unfenced, the rack
 *             with fewest replicas so far (racks round-robin), the broker
 *             with fewest replicas, most headroom, the seeded order.
 * Counts are per item ("so far" within the item); headroom is what is left
 * before the item. Only brokers with headroom left are candidates, so no
 * broker ever ends over its limit. Spreading can paint itself into a corner
 * when headroom is tight, so when the greedy pass fails a second pass fills
 * each partition from the brokers with the most headroom left (the
 * Gale-Ryser greedy), which finds an assignment whenever one exists; rack
 * spread is then only a tie-break.
 *
 * A session places the items of one request in turn. Its brokers stay
 * sorted per rack by the static part of the keys (unfenced, headroom,
 * order) from one item to the next: an item re-sorts only the brokers it
 * used. A broker the item has not used yet ("fresh") has count 0 and so
 * beats every used one of its kind, so a rack's best fresh broker is the
 * first fresh one in its sorted run, found by a cursor, and the best fresh
 * leader is the best of the racks' first fresh unfenced ones. The used ones
 * wait in heaps by their whole key, and enter them only once a pick needs
 * them (while fresh brokers last, none does). An item therefore costs
 * O(racks + replicas * (racks + log brokers)) plus merging what it used
 * back into the runs.
 */
#include "ka_placement.h"
#include "ka_place_state.h"

#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t order_of(uint64_t seed, int32_t id)
{
    return splitmix64(seed ^ (uint64_t)(uint32_t)id * 0x9e3779b97f4a7c15ull);
}

/* better_follower on the packed keys, for broker i of rack a and broker j of rack b. */
static bool greedy_follower(const struct ka_place_state *p, uint32_t i, int32_t a, uint32_t j,
                            int32_t b)
{
    BETTER(rack_used(p, a), rack_used(p, b));
    BETTER(p->brokers[i].fenced, p->brokers[j].fenced);
    BETTER(p->rack_assigned[a], p->rack_assigned[b]);
    return p->rkey[i] < p->rkey[j];
}

static void heap_set(struct heap *h, uint32_t at, uint32_t broker)
{
    h->item[at] = broker;
    h->pos[broker] = at;
}

static void sift_up(struct heap *h, uint32_t at)
{
    uint32_t broker = h->item[at];

    while (at > 0 && h->key[broker] < h->key[h->item[(at - 1) / 2]]) {
        heap_set(h, at, h->item[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    heap_set(h, at, broker);
}

static void sift_down(struct heap *h, uint32_t at)
{
    uint32_t broker = h->item[at];

    for (;;) {
        uint32_t child = 2 * at + 1;

        if (child >= h->len)
            break;
        if (child + 1 < h->len && h->key[h->item[child + 1]] < h->key[h->item[child]])
            child++;
        if (!(h->key[h->item[child]] < h->key[broker]))
            break;
        heap_set(h, at, h->item[child]);
        at = child;
    }
    heap_set(h, at, broker);
}

static void heap_push(struct heap *h, uint32_t broker)
{
    heap_set(h, h->len++, broker);
    sift_up(h, h->len - 1);
}

static void heap_remove(struct heap *h, uint32_t broker)
{
    uint32_t at = h->pos[broker], moved;

    h->pos[broker] = NOT_IN;
    if (at == --h->len)
        return;
    moved = h->item[h->len];
    heap_set(h, at, moved);
    sift_down(h, at);
    sift_up(h, h->pos[moved]);
}

/* The static keys of broker i from its headroom now, with no replica of an item. */
static inline void set_keys(struct ka_place_state *p, size_t i)
{
    uint64_t h = (uint64_t)(p->headroom[i] < INT32_MAX ? p->headroom[i] : INT32_MAX);

    p->rank[i] = (uint64_t)p->brokers[i].fenced << 63 | (INT32_MAX - h) << 32 | p->order[i] >> 32;
    p->lkey[i] = p->rank[i];
    p->rkey[i] = (ka_order_t)((uint64_t)p->brokers[i].fenced << 63) << 64 | p->rank[i];
}

/* Sorts idx[0..len) by rkey, with no replica of an item on them (so by rank, which orders
 * them the same): insertion sort for the few an item uses, else a heap sort. */
static void sort_by_rkey(const struct ka_place_state *p, uint32_t *idx, uint32_t len)
{
    if (len <= 32) {
        for (uint32_t k = 1; k < len; k++) {
            uint32_t v = idx[k], at = k;

            for (; at > 0 && p->rank[v] < p->rank[idx[at - 1]]; at--)
                idx[at] = idx[at - 1];
            idx[at] = v;
        }
        return;
    }
    /* A heap over idx itself (pos is not needed for a sort), then repeated pops. */
    uint32_t *pos = p->lpos; /* any n-entry array works: heap_set only writes it */
    struct heap h = {idx, len, pos, p->rkey};

    for (uint32_t at = len / 2; at-- > 0;)
        sift_down(&h, at);
    for (uint32_t end = len; end > 1; end--) {
        uint32_t top = idx[0];

        h.len = end - 1;
        heap_set(&h, 0, idx[end - 1]);
        sift_down(&h, 0);
        idx[end - 1] = top;
    }
    /* The pops left the largest first: reverse into ascending order. */
    for (uint32_t a = 0, b = len - 1; a < b; a++, b--) {
        uint32_t t = idx[a];
        idx[a] = idx[b];
        idx[b] = t;
    }
    for (uint32_t k = 0; k < len; k++)
        pos[idx[k]] = NOT_IN;
}

/* The greedy keys of a used broker from its counts (take_greedy keeps them so after). */
static inline void used_keys(struct ka_place_state *p, uint32_t i)
{
    uint64_t a = (uint64_t)p->assigned[i];

    p->lkey[i] = (ka_order_t)((uint64_t)p->leaders[i] << 32 | a) << 64 | p->rank[i];
    p->rkey[i] = (ka_order_t)(((uint64_t)p->brokers[i].fenced << 63) + a) << 64 | p->rank[i];
}

/* Takes the used unfenced brokers with headroom left into the leader heap. */
static void flush_leaders(struct ka_place_state *p)
{
    for (; p->lflushed < p->touched_len; p->lflushed++) {
        uint32_t i = p->touched[p->lflushed];

        if (p->headroom[i] > 0 && !p->brokers[i].fenced) {
            used_keys(p, i);
            heap_push(&p->leader_heap, i);
        }
    }
}

/* Takes rack r's used brokers with headroom left into its heap. */
static void flush_rack(struct ka_place_state *p, int32_t r)
{
    for (; p->rflushed[r] < p->touched_len; p->rflushed[r]++) {
        uint32_t i = p->touched[p->rflushed[r]];

        if (p->headroom[i] > 0 && p->brokers[i].rack == r) {
            used_keys(p, i);
            heap_push(&p->rack_heaps[r], i);
        }
    }
}

/* Rack r's first fresh broker, or NOT_IN. Picks take fresh brokers only from the
 * front of their run, so every one before the cursor is used and none after it. */
static inline uint32_t fresh_in_rack(const struct ka_place_state *p, int32_t r)
{
    return p->head[r];
}

/* Moves rack r's cursor past its first fresh broker, just taken. */
static inline void pass_head(struct ka_place_state *p, int32_t r)
{
    uint32_t c = ++p->rcursor[r];

    p->head[r] = c < p->rlen[r] ? p->rsorted[p->rstart[r] + c] : NOT_IN;
}

/* The best leader: a fresh unfenced broker (count 0) beats every used one; the racks'
 * runs put unfenced ones first, so the best is among their first fresh ones. */
static uint32_t pick_leader(struct ka_place_state *p)
{
    uint32_t best = NOT_IN;
    uint64_t best_rank = (uint64_t)1 << 63; /* a fenced broker's rank is this or more */

    for (int32_t r = 0; r < p->racks; r++) {
        uint32_t f = fresh_in_rack(p, r);

        if (f != NOT_IN && p->rank[f] < best_rank) {
            best = f;
            best_rank = p->rank[f];
        }
    }
    if (best != NOT_IN)
        return best;
    flush_leaders(p);
    return p->leader_heap.len > 0 ? p->leader_heap.item[0] : NOT_IN;
}

/* Rack r's best follower: its first fresh broker unless that one is fenced and a used
 * unfenced one waits. A used broker of this partition stays in its heap until it
 * reaches the top; then it goes to the stash, and back after the partition. */
static uint32_t best_in_rack(struct ka_place_state *p, int32_t r)
{
    struct heap *rh = &p->rack_heaps[r];
    uint32_t f = fresh_in_rack(p, r);

    if (f != NOT_IN && !p->brokers[f].fenced)
        return f;
    flush_rack(p, r);
    while (rh->len > 0 && p->in_partition[rh->item[0]]) {
        p->stash[p->stash_len++] = rh->item[0];
        heap_remove(rh, rh->item[0]);
    }
    if (rh->len == 0)
        return f;
    if (f == NOT_IN || !p->brokers[rh->item[0]].fenced)
        return rh->item[0];
    return f; /* both fenced: the fresh one has fewer replicas */
}

/* The best follower: the best of each rack's best, so O(racks) besides the heaps. */
static uint32_t pick_follower(struct ka_place_state *p)
{
    uint32_t best = NOT_IN;
    int32_t best_rack = 0;

    for (int32_t r = 0; r < p->racks; r++) {
        uint32_t i = best_in_rack(p, r);

        if (i != NOT_IN && (best == NOT_IN || greedy_follower(p, i, r, best, best_rack))) {
            best = i;
            best_rack = r;
        }
    }
    return best;
}

/* take() for the greedy pass, keeping the heaps in step; a fresh broker waits in
 * touched[] to enter them (its keys are set then). */
static void take_greedy(struct ka_place_state *p, uint32_t i, bool leader)
{
    int32_t r = p->brokers[i].rack;
    struct heap *rh = &p->rack_heaps[r];
    bool fresh = p->assigned[i] == 0;

    take(p, i, leader);
    if (fresh) {
        p->touched[p->touched_len++] = i;
        pass_head(p, r);
        return;
    }
    p->lkey[i] += (ka_order_t)(((uint64_t)leader << 32) + 1) << 64;
    p->rkey[i] += (ka_order_t)1 << 64;
    if (p->lpos[i] != NOT_IN) {
        if (p->headroom[i] <= 0)
            heap_remove(&p->leader_heap, i);
        else
            sift_down(&p->leader_heap, p->lpos[i]);
    }
    if (p->rpos[i] != NOT_IN) {
        if (p->headroom[i] <= 0)
            heap_remove(rh, i);
        else
            sift_down(rh, p->rpos[i]);
    }
}

/* Empties the heaps and starts the cursors over (the last item's end or undo took its
 * brokers out of the heaps). */
static void start_item(struct ka_place_state *p)
{
    p->touched_len = 0;
    p->leader_heap.len = p->lflushed = 0;
    for (int32_t r = 0; r < p->racks; r++) {
        p->rack_heaps[r].len = p->rcursor[r] = p->rflushed[r] = 0;
        p->head[r] = p->rlen[r] > 0 ? p->rsorted[p->rstart[r]] : NOT_IN;
    }
    memset(p->rack_assigned, 0, (size_t)p->racks * sizeof(*p->rack_assigned));
}

static int place_greedy(struct ka_place_state *p, int32_t partitions, int32_t replication,
                        int32_t *out)
{
    for (int32_t part = 0; part < partitions; part++) {
        int32_t *row = out + (size_t)part * (size_t)replication;
        int32_t slot;

        p->part++;
        p->stash_len = 0;
        for (slot = 0; slot < replication; slot++) {
            uint32_t i = slot == 0 ? pick_leader(p) : pick_follower(p);

            if (i == NOT_IN)
                break;
            take_greedy(p, i, slot == 0);
            p->row[slot] = i;
            row[slot] = p->brokers[i].id;
        }
        for (int32_t k = 0; k < slot; k++)
            p->in_partition[p->row[k]] = 0;
        if (slot < replication)
            return KA_ELIMIT;
        /* Those that surfaced go back into their racks' heaps (they have room left:
         * a broker without leaves its heap when it takes its last replica). */
        for (uint32_t k = 0; k < p->stash_len; k++)
            heap_push(&p->rack_heaps[p->brokers[p->stash[k]].rack], p->stash[k]);
    }
    return 0;
}

/* Undoes the current item's replicas: headroom back, counts and keys to 0, heaps
 * empty (the sorted runs never changed). */
static void undo_item(struct ka_place_state *p)
{
    for (uint32_t k = 0; k < p->touched_len; k++) {
        uint32_t i = p->touched[k];

        p->headroom[i] += p->assigned[i];
        p->total_headroom += p->assigned[i];
        p->assigned[i] = p->leaders[i] = 0;
        p->lpos[i] = p->rpos[i] = NOT_IN;
        set_keys(p, i);
    }
    p->touched_len = 0;
    p->leader_heap.len = p->lflushed = 0;
    for (int32_t r = 0; r < p->racks; r++)
        p->rack_heaps[r].len = p->rflushed[r] = 0;
    memset(p->rack_assigned, 0, (size_t)p->racks * sizeof(*p->rack_assigned));
}

/* The fallback marks every broker it used as touched (it scans them all anyway). */
static void touched_by_scan(struct ka_place_state *p)
{
    p->touched_len = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->assigned[i] > 0)
            p->touched[p->touched_len++] = (uint32_t)i;
    memset(p->in_partition, 0, p->n);
}

/*
 * Rack r's touched brokers after the greedy pass, run[0..c) (it takes fresh brokers
 * from the front only), re-keyed: sorted among themselves (nearly sorted already: they
 * were in run order and mostly lost the same headroom), then merged in place with the
 * untouched rest run[c..*len), which stays sorted. Those without headroom leave.
 */
static void merge_prefix(struct ka_place_state *p, uint32_t *run, uint32_t *len, uint32_t c)
{
    uint32_t *buf = p->stash, kept = 0, a = c, out = 0;

    for (uint32_t k = 0; k < c; k++)
        if (p->headroom[run[k]] > 0)
            buf[kept++] = run[k];
    sort_by_rkey(p, buf, kept);
    /* Each one goes after the untouched brokers with smaller keys, found by binary search
     * (they are sorted, and so are the touched ones: the searches move only forward).
     * out <= a throughout (b <= kept <= c), so moving a block down never overwrites
     * unread brokers. */
    for (uint32_t b = 0; b < kept; b++) {
        uint64_t key = p->rank[buf[b]];
        uint32_t lo = a, hi = *len;

        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;

            if (p->rank[run[mid]] < key)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* Often a few entries: a loop beats a memmove call (forward is safe, out <= a). */
        if (out == a) {
            out = lo;
        } else if (lo - a > 16) {
            memmove(run + out, run + a, (lo - a) * sizeof(*run));
            out += lo - a;
        } else {
            for (; a < lo; a++)
                run[out++] = run[a];
        }
        a = lo;
        run[out++] = buf[b];
    }
    if (out != a)
        memmove(run + out, run + a, (*len - a) * sizeof(*run));
    *len = out + (*len - a);
}

/* Every rack's run from scratch: its brokers with headroom, sorted. O(n log n). */
static void build_runs(struct ka_place_state *p)
{
    for (int32_t r = 0; r < p->racks; r++)
        p->rlen[r] = 0;
    for (size_t i = 0; i < p->n; i++) {
        int32_t r = p->brokers[i].rack;

        if (p->headroom[i] > 0)
            p->rsorted[p->rstart[r] + p->rlen[r]++] = (uint32_t)i;
    }
    for (int32_t r = 0; r < p->racks; r++)
        sort_by_rkey(p, p->rsorted + p->rstart[r], p->rlen[r]);
}

/* Ends an item: counts to `added`, keys from the new headroom, the runs re-sorted
 * (greedy: the item's brokers are its racks' run prefixes; the fallback, which scans
 * every broker anyway, sorts them all again). */
static void end_item(struct ka_place_state *p, int64_t *added, bool greedy)
{
    uint32_t *t = p->touched, tlen = p->touched_len;
    uint64_t *bits = p->touched_bits; /* all 0 between items */

    for (uint32_t k = 0; k < tlen; k++) {
        uint32_t i = t[k];

        if (added != NULL)
            added[i] += p->assigned[i];
        p->assigned[i] = p->leaders[i] = 0;
        p->lpos[i] = p->rpos[i] = NOT_IN;
        set_keys(p, i);
        bits[i / 64] |= (uint64_t)1 << (i % 64);
    }
    /* Heaps are empty now, so sort_by_rkey may use lpos. */
    p->leader_heap.len = 0;
    for (int32_t r = 0; r < p->racks; r++)
        p->rack_heaps[r].len = 0;
    if (greedy) {
        for (int32_t r = 0; r < p->racks; r++)
            if (p->rcursor[r] > 0)
                merge_prefix(p, p->rsorted + p->rstart[r], &p->rlen[r], p->rcursor[r]);
    } else {
        build_runs(p);
    }
    /* The engine reads the item's brokers in index (= id) order: from the bitmap, a word
     * (64 brokers) at a time, up to the last one set. */
    for (uint32_t w = 0, k = 0; k < tlen; w++) {
        for (uint64_t x = bits[w]; x != 0; x &= x - 1)
            t[k++] = w * 64 + (uint32_t)__builtin_ctzll(x);
        bits[w] = 0;
    }
}

/* One block for all of a session's arrays, widest alignment first. */
static struct ka_place_state *state_alloc(size_t n, size_t racks)
{
    /* The arrays start after the state, rounded up for the 16-byte keys. */
    size_t head = (sizeof(struct ka_place_state) + 15) & ~(size_t)15;
    size_t size = head + 2 * n * sizeof(ka_order_t) + racks * sizeof(struct heap) +
                  (5 * n + 2 * racks + (n + 63) / 64) * sizeof(int64_t) +
                  (10 * n + 5 * racks) * sizeof(uint32_t) + n;
    struct ka_place_state *p = calloc(1, size);
    uint8_t *at = (uint8_t *)p + head;

    if (p == NULL)
        return NULL;
#define CARVE(field, count)                                                                        \
    do {                                                                                           \
        p->field = (void *)at;                                                                     \
        at += (count) * sizeof(*p->field);                                                         \
    } while (0)
    CARVE(lkey, n); /* 16-byte entries first, on calloc's alignment */
    CARVE(rkey, n);
    CARVE(rack_heaps, racks);
    CARVE(headroom, n);
    CARVE(assigned, n);
    CARVE(leaders, n);
    CARVE(order, n);
    CARVE(rank, n);
    CARVE(rack_assigned, racks);
    CARVE(rack_part, racks);
    CARVE(touched_bits, (n + 63) / 64);
    CARVE(rsorted, n);
    CARVE(lpos, n);
    CARVE(rpos, n);
    CARVE(heap_items, 2 * n);
    CARVE(row, n);
    CARVE(stash, n);
    CARVE(touched, n);
    CARVE(rstart, racks);
    CARVE(rlen, racks);
    CARVE(rcursor, racks);
    CARVE(rflushed, racks);
    CARVE(head, racks);
    CARVE(in_partition, n);
#undef CARVE
    return p;
}

void ka_place_end(ka_place_session_t *s)
{
    free(s->state);
    s->state = NULL;
}

int ka_place_begin(ka_place_session_t *s, const ka_place_broker_t *brokers, size_t n, int32_t racks,
                   uint64_t seed)
{
    struct ka_place_state *p;

    ka_place_end(s);
    if (racks <= 0 || n >= NOT_IN)
        return KA_EINVALID;
    if ((p = state_alloc(n, (size_t)racks)) == NULL)
        return KA_ENOMEM;
    p->brokers = brokers;
    p->n = n;
    p->racks = racks;
    p->part = 1; /* rack_part starts at 0: no rack holds a replica */
    for (size_t i = 0; i < n; i++) {
        int64_t h = brokers[i].headroom > 0 ? brokers[i].headroom : 0;

        p->headroom[i] = h;
        /* Saturated: only compared with an item's replica count. */
        p->total_headroom += h < INT32_MAX ? h : INT32_MAX;
        p->order[i] = order_of(seed, brokers[i].id);
        p->lpos[i] = p->rpos[i] = NOT_IN;
        set_keys(p, i);
        p->rlen[brokers[i].rack]++; /* the rack's size, for its regions */
    }
    for (int32_t r = 0, at = 0; r < racks; r++) {
        p->rstart[r] = (uint32_t)at;
        p->rack_heaps[r] = (struct heap){p->heap_items + n + at, 0, p->rpos, p->rkey};
        at += (int32_t)p->rlen[r];
        p->rlen[r] = 0;
    }
    p->leader_heap = (struct heap){p->heap_items, 0, p->lpos, p->lkey};
    build_runs(p);
    s->state = p;
    return 0;
}

int ka_place_next(ka_place_session_t *s, int32_t partitions, int32_t replication, int32_t *out,
                  int64_t *added)
{
    struct ka_place_state *p = s->state;
    int rc;

    if (p == NULL)
        return KA_EINVALID;
    start_item(p);
    if (partitions <= 0 || replication <= 0 || (size_t)replication > p->n ||
        p->total_headroom < (int64_t)partitions * replication)
        return KA_ELIMIT;
    rc = place_greedy(p, partitions, replication, out);
    if (rc == KA_ELIMIT) {
        undo_item(p);
        if (!ka_place_may_fit(p, partitions, replication))
            return KA_ELIMIT;
        rc = ka_place_by_capacity(p, partitions, replication, out);
        touched_by_scan(p);
        if (rc == KA_ELIMIT) {
            undo_item(p);
            return KA_ELIMIT;
        }
        end_item(p, added, false);
        return 0;
    }
    end_item(p, added, true);
    return 0;
}

size_t ka_place_touched(const ka_place_session_t *s, const uint32_t **index)
{
    const struct ka_place_state *p = s->state;

    *index = p != NULL ? p->touched : NULL;
    return p != NULL ? p->touched_len : 0;
}

int ka_place(const ka_place_broker_t *brokers, size_t n, int32_t racks, int32_t partitions,
             int32_t replication, uint64_t seed, int32_t *out, int64_t *added)
{
    ka_place_session_t s = {0};
    int rc = ka_place_begin(&s, brokers, n, racks, seed);

    if (rc == KA_EINVALID)
        rc = KA_ELIMIT;
    if (rc == 0)
        rc = ka_place_next(&s, partitions, replication, out, added);
    ka_place_end(&s);
    return rc;
}

/* The greedy pass by its definition: each pick a scan (ka_place_scan.c). */
int ka_place_greedy_reference(const ka_place_broker_t *brokers, size_t n, int32_t racks,
                              int32_t partitions, int32_t replication, uint64_t seed, int32_t *out)
{
    ka_place_session_t s = {0};
    struct ka_place_state *p;
    int rc = 0;

    if (partitions <= 0 || replication <= 0 || racks <= 0 || (size_t)replication > n)
        return KA_ELIMIT;
    if ((rc = ka_place_begin(&s, brokers, n, racks, seed)) < 0)
        return rc;
    p = s.state;
    for (int32_t part = 0; part < partitions && rc == 0; part++) {
        memset(p->in_partition, 0, n);
        p->part++;
        for (int32_t slot = 0; slot < replication && rc == 0; slot++) {
            size_t i = ka_place_scan_pick(p, slot == 0);

            if (i == n) {
                rc = KA_ELIMIT;
                break;
            }
            take(p, i, slot == 0);
            out[(size_t)part * (size_t)replication + (size_t)slot] = brokers[i].id;
        }
    }
    ka_place_end(&s);
    return rc;
}
