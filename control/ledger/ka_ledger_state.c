/*
 * ka_ledger_state.c: applying ledger records to the mirror (see
 * ka_ledger_state.h).
 *
 * Intents live for at most the TTL and a sidecar has few in flight, so the
 * bookkeeping is a plain array searched linearly by (sidecar, seq). The
 * highest seq per sidecar is another small array, one entry per sidecar
 * that wrote an intent within one TTL (at most SEEN_MAX; beyond, the
 * entry nearest its end is reused).
 */
#include "ka_ledger_state.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_ledger_record.h"

typedef struct intent {
    char sidecar[KA_LEDGER_SIDECAR_MAX + 1];
    uint64_t seq;
    bool own;       /* appended by this sidecar in this run */
    bool abandoned; /* own: given up, skip it when read back */
    uint64_t *ids;  /* its reservations in the mirror, in item order */
    size_t n;
    int64_t expires_ms; /* loop clock: the bookkeeping goes after this */
} intent_t;

#define SEEN_MAX 1024

/* The highest intent seq read from one sidecar, against replays. */
typedef struct seen {
    char sidecar[KA_LEDGER_SIDECAR_MAX + 1];
    uint64_t seq;
    int64_t expires_ms; /* loop clock: one TTL after its last intent was read */
} seen_t;

struct ka_ledger_state {
    char sidecar[KA_LEDGER_SIDECAR_MAX + 1];
    ka_reservations_t *mirror;
    int64_t ttl_ms;
    intent_t *intents;
    size_t count, capacity;
    seen_t *seen; /* SEEN_MAX entries, the first seen_count in use */
    size_t seen_count;
};

int ka_ledger_state_new(const char *sidecar, ka_reservations_t *mirror, int64_t ttl_ms,
                        ka_ledger_state_t **out)
{
    if (strlen(sidecar) == 0 || strlen(sidecar) > KA_LEDGER_SIDECAR_MAX)
        return KA_EINVALID;
    ka_ledger_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return KA_ENOMEM;
    snprintf(s->sidecar, sizeof(s->sidecar), "%s", sidecar);
    s->mirror = mirror;
    s->ttl_ms = ttl_ms;
    if ((s->seen = calloc(SEEN_MAX, sizeof(*s->seen))) == NULL) {
        free(s);
        return KA_ENOMEM;
    }
    *out = s;
    return 0;
}

static seen_t *seen_find(ka_ledger_state_t *s, const char *sidecar)
{
    for (size_t i = 0; i < s->seen_count; i++) {
        if (strcmp(s->seen[i].sidecar, sidecar) == 0)
            return &s->seen[i];
    }
    return NULL;
}

/* True when intent (sidecar, seq) is not newer than one already read from sidecar. */
static bool seen_replayed(ka_ledger_state_t *s, const char *sidecar, uint64_t seq)
{
    const seen_t *e = seen_find(s, sidecar);
    return e != NULL && seq <= e->seq;
}

static void seen_note(ka_ledger_state_t *s, const char *sidecar, uint64_t seq, int64_t loop_now_ms)
{
    seen_t *e = seen_find(s, sidecar);

    if (e == NULL && s->seen_count < SEEN_MAX) {
        e = &s->seen[s->seen_count++];
    } else if (e == NULL) {
        e = &s->seen[0];
        for (size_t i = 1; i < s->seen_count; i++) {
            if (s->seen[i].expires_ms < e->expires_ms)
                e = &s->seen[i];
        }
    }
    if (strcmp(e->sidecar, sidecar) != 0) {
        snprintf(e->sidecar, sizeof(e->sidecar), "%s", sidecar);
        e->seq = 0;
    }
    if (seq > e->seq)
        e->seq = seq;
    /* One TTL, the window a starting sidecar reads: so a sidecar remembers
     * no seq its writer could not have read back itself (a writer keeps its
     * seqs above those, ka_ledger_state_seq_floor). A copy read later is
     * older than its TTL by its own timestamp, give or take the clocks' skew,
     * and counts for that skew at most. */
    e->expires_ms = loop_now_ms + s->ttl_ms;
}

uint64_t ka_ledger_state_seq_floor(const ka_ledger_state_t *s)
{
    for (size_t i = 0; i < s->seen_count; i++) {
        if (strcmp(s->seen[i].sidecar, s->sidecar) == 0)
            return s->seen[i].seq + 1;
    }
    return 0;
}

void ka_ledger_state_free(ka_ledger_state_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->intents[i].ids);
    free(s->intents);
    free(s->seen);
    free(s);
}

static intent_t *find(ka_ledger_state_t *s, const char *sidecar, uint64_t seq)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->intents[i].seq == seq && strcmp(s->intents[i].sidecar, sidecar) == 0)
            return &s->intents[i];
    }
    return NULL;
}

static intent_t *push(ka_ledger_state_t *s, const char *sidecar, uint64_t seq, size_t n)
{
    if (s->count == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 16;
        intent_t *p = realloc(s->intents, cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        s->intents = p;
        s->capacity = cap;
    }
    intent_t *it = &s->intents[s->count];
    memset(it, 0, sizeof(*it));
    if ((it->ids = calloc(n + 1, sizeof(uint64_t))) == NULL)
        return NULL;
    snprintf(it->sidecar, sizeof(it->sidecar), "%s", sidecar);
    it->seq = seq;
    it->n = n;
    s->count++;
    return it;
}

static void drop(ka_ledger_state_t *s, intent_t *it)
{
    free(it->ids);
    *it = s->intents[--s->count];
}

static void release_all(ka_ledger_state_t *s, const intent_t *it)
{
    for (size_t i = 0; i < it->n; i++)
        ka_reservations_release(s->mirror, it->ids[i]); /* may have ended already */
}

int ka_ledger_state_own_begin(ka_ledger_state_t *s, uint64_t seq, const uint64_t *ids, size_t n,
                              int64_t loop_now_ms)
{
    if (find(s, s->sidecar, seq) != NULL)
        return KA_EINVALID;
    intent_t *it = push(s, s->sidecar, seq, n);
    if (it == NULL)
        return KA_ENOMEM;
    memcpy(it->ids, ids, n * sizeof(uint64_t));
    it->own = true;
    it->expires_ms = loop_now_ms + s->ttl_ms;
    return 0;
}

int ka_ledger_state_own_abandon(ka_ledger_state_t *s, uint64_t seq)
{
    intent_t *it = find(s, s->sidecar, seq);
    if (it == NULL || !it->own)
        return KA_EINVALID;
    release_all(s, it);
    it->abandoned = true;
    return (int)it->n;
}

void ka_ledger_state_own_end(ka_ledger_state_t *s, uint64_t seq)
{
    intent_t *it = find(s, s->sidecar, seq);
    if (it != NULL && it->own && !it->abandoned)
        drop(s, it);
}

/* Another sidecar's intent: its items join the mirror at `offset`. */
static enum ka_ledger_applied add_foreign(ka_ledger_state_t *s, const ka_ledger_record_t *r,
                                          uint64_t offset, int64_t born_ms, int64_t now_ms,
                                          int64_t loop_now_ms, char *err, size_t errlen)
{
    int64_t left = born_ms + s->ttl_ms - now_ms;
    if (left <= 0)
        return KA_LEDGER_TOO_OLD;
    if (find(s, r->sidecar, r->seq) != NULL)
        return KA_LEDGER_IGNORED; /* written twice: counted once */
    if (left > s->ttl_ms)
        left = s->ttl_ms; /* a clock ahead of ours does not buy more time */
    intent_t *it = push(s, r->sidecar, r->seq, r->count);
    if (it == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_LEDGER_MALFORMED;
    }
    it->expires_ms = loop_now_ms + left;
    for (size_t i = 0; i < r->count; i++) {
        ka_reservation_spec_t spec = r->items[i].spec;
        spec.expires_at_ms = it->expires_ms;
        /* When the intent was appended, on the loop's clock: a view requested after it may show
         * the item's result, one requested before cannot (ka_reservations_reconcile). */
        spec.added_at_ms = loop_now_ms - (now_ms > born_ms ? now_ms - born_ms : 0);
        if (ka_reservations_add(s->mirror, &spec, &it->ids[i]) < 0 ||
            ka_reservations_set_order(s->mirror, it->ids[i], offset) < 0) {
            snprintf(err, errlen, "item %zu cannot be reserved", i);
            it->n = i;
            release_all(s, it);
            drop(s, it);
            return KA_LEDGER_MALFORMED;
        }
    }
    return KA_LEDGER_APPLIED;
}

static enum ka_ledger_applied apply_intent(ka_ledger_state_t *s, const ka_ledger_record_t *r,
                                           uint64_t offset, int64_t born_ms, int64_t now_ms,
                                           int64_t loop_now_ms, uint64_t *own_seq, char *err,
                                           size_t errlen)
{
    if (seen_replayed(s, r->sidecar, r->seq))
        return KA_LEDGER_REPLAYED;
    seen_note(s, r->sidecar, r->seq, loop_now_ms);
    intent_t *it = find(s, r->sidecar, r->seq);
    if (it == NULL || !it->own)
        return add_foreign(s, r, offset, born_ms, now_ms, loop_now_ms, err, errlen);
    if (it->abandoned) {
        drop(s, it);
        return KA_LEDGER_OWN_ABANDONED;
    }
    for (size_t i = 0; i < it->n; i++)
        ka_reservations_set_order(s->mirror, it->ids[i], offset); /* may have been reconciled */
    *own_seq = r->seq;
    return KA_LEDGER_OWN_INTENT;
}

static enum ka_ledger_applied apply_outcome(ka_ledger_state_t *s, const ka_ledger_record_t *r)
{
    intent_t *it = find(s, r->sidecar, r->seq);
    if (it == NULL || it->own)
        return KA_LEDGER_IGNORED; /* own outcomes were applied when written */
    for (size_t i = 0; i < it->n && i < r->count; i++) {
        if (!r->admitted[i])
            ka_reservations_release(s->mirror, it->ids[i]);
    }
    drop(s, it);
    return KA_LEDGER_APPLIED;
}

enum ka_ledger_applied ka_ledger_state_apply_at(ka_ledger_state_t *s, const void *bytes, size_t len,
                                                uint64_t offset, int64_t appended_ms,
                                                int64_t now_ms, int64_t loop_now_ms,
                                                uint64_t *own_seq, char *err, size_t errlen)
{
    ka_ledger_record_t r;
    enum ka_ledger_applied what = KA_LEDGER_IGNORED;

    if (ka_ledger_decode(bytes, len, &r, err, errlen) < 0)
        return KA_LEDGER_MALFORMED;
    if (r.type == KA_LEDGER_INTENT)
        what = apply_intent(s, &r, offset, appended_ms > 0 ? appended_ms : r.ts_ms, now_ms,
                            loop_now_ms, own_seq, err, errlen);
    else if (r.type == KA_LEDGER_OUTCOME)
        what = apply_outcome(s, &r);
    ka_ledger_record_free(&r);
    return what;
}

enum ka_ledger_applied ka_ledger_state_apply(ka_ledger_state_t *s, const void *bytes, size_t len,
                                             uint64_t offset, int64_t wall_now_ms,
                                             int64_t loop_now_ms, uint64_t *own_seq, char *err,
                                             size_t errlen)
{
    return ka_ledger_state_apply_at(s, bytes, len, offset, 0, wall_now_ms, loop_now_ms, own_seq,
                                    err, errlen);
}

size_t ka_ledger_state_expire(ka_ledger_state_t *s, int64_t loop_now_ms)
{
    size_t ended = 0;
    for (size_t i = 0; i < s->seen_count;) {
        if (s->seen[i].expires_ms <= loop_now_ms)
            s->seen[i] = s->seen[--s->seen_count];
        else
            i++;
    }
    for (size_t i = 0; i < s->count;) {
        if (s->intents[i].expires_ms <= loop_now_ms) {
            drop(s, &s->intents[i]);
            ended++;
        } else {
            i++;
        }
    }
    return ended;
}

size_t ka_ledger_state_live(const ka_ledger_state_t *s)
{
    return s->count;
}
