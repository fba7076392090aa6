/*
 * test_pool.c: the memory pool's accounting, its reserved share, FIFO
 * resumption of waiting streams and KIP-81's depleted-time figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_pool.h"

static uint64_t fake_now;
static uint64_t clock_fn(void)
{
    return fake_now;
}

static int resumed[16], nresumed;

typedef struct tagged_waiter {
    ka_pool_waiter_t w;
    int id;
} tagged_waiter_t;

static void tagged_resume_cb(ka_pool_waiter_t *w)
{
    resumed[nresumed++] = ((tagged_waiter_t *)(void *)w)->id;
}

static void test_accounting_and_strict_bound(void **state)
{
    (void)state;
    ka_pool_t p;
    fake_now = 1000;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    ka_pbuf_t *a = ka_pool_alloc(&p, 65536, 4096, 0, NULL);
    assert_non_null(a);
    assert_int_equal(a->cap, 65536);
    assert_int_equal(ka_pool_used_bytes(&p), 65536);
    /* Only 90000 - 65536 = 24464 general bytes remain: a smaller buffer. */
    ka_pbuf_t *b = ka_pool_alloc(&p, 65536, 4096, 0, NULL);
    assert_non_null(b);
    assert_int_equal(b->cap, 24464);
    assert_null(ka_pool_alloc(&p, 65536, 4096, 0, NULL));
    /* The reserved share is there for priority (whole-frame) buffers only. */
    ka_pbuf_t *c = ka_pool_alloc(&p, 8000, 8000, 1, NULL);
    assert_non_null(c);
    assert_int_equal(ka_pool_free_bytes(&p), 100000 - 65536 - 24464 - 8000);
    ka_pbuf_ref(a);
    ka_pbuf_unref(&p, a);
    assert_int_equal(ka_pool_used_bytes(&p), 65536 + 24464 + 8000);
    ka_pbuf_unref(&p, a);
    ka_pbuf_unref(&p, b);
    ka_pbuf_unref(&p, c);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
    assert_int_equal(ka_pool_free_bytes(&p), 100000);
}

static void test_waiters_resume_in_fifo_order(void **state)
{
    (void)state;
    ka_pool_t p;
    tagged_waiter_t w[4];
    ka_pbuf_t *held[4];
    fake_now = 1;
    nresumed = 0;
    ka_pool_init(&p, 4 * 4096, 0, clock_fn);
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].w.resume_cb = tagged_resume_cb;
        w[i].id = i;
        held[i] = ka_pool_alloc(&p, 4096, 4096, 0, NULL);
        assert_non_null(held[i]);
    }
    /* Three streams fail to read, in the order 2, 0, 3. */
    int order[3] = {2, 0, 3};
    for (int i = 0; i < 3; i++) {
        assert_null(ka_pool_alloc(&p, 4096, 4096, 0, &w[order[i]].w));
        ka_pool_wait(&p, &w[order[i]].w, 4096, 0);
    }
    assert_int_equal(ka_pool_waiters(&p), 3);
    assert_int_equal(nresumed, 0);
    /* A stream that did not wait cannot overtake the queue. */
    ka_pbuf_unref(&p, held[0]);
    assert_int_equal(nresumed, 1);
    assert_int_equal(resumed[0], 2);
    assert_null(ka_pool_alloc(&p, 4096, 4096, 0, &w[1].w));
    /* The resumed stream gets the bytes set aside for it. */
    ka_pbuf_t *got = ka_pool_alloc(&p, 65536, 4096, 0, &w[2].w);
    assert_non_null(got);
    assert_int_equal(got->cap, 4096);
    ka_pbuf_unref(&p, held[1]);
    ka_pbuf_unref(&p, held[2]);
    assert_int_equal(nresumed, 3);
    assert_int_equal(resumed[1], 0);
    assert_int_equal(resumed[2], 3);
    assert_int_equal(ka_pool_waiters(&p), 0);
    /* A resumed stream that closes gives its grant back. */
    ka_pool_cancel(&p, &w[0].w);
    ka_pool_cancel(&p, &w[3].w);
    assert_int_equal(p.granted, 0);
    ka_pbuf_unref(&p, got);
    ka_pbuf_unref(&p, held[3]);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

static void test_cancelled_waiter_leaves_the_queue(void **state)
{
    (void)state;
    ka_pool_t p;
    tagged_waiter_t a = {.id = 1}, b = {.id = 2};
    a.w.resume_cb = b.w.resume_cb = tagged_resume_cb;
    nresumed = 0;
    ka_pool_init(&p, 4096, 0, clock_fn);
    ka_pbuf_t *x = ka_pool_alloc(&p, 4096, 4096, 0, NULL);
    ka_pool_wait(&p, &a.w, 4096, 0);
    ka_pool_wait(&p, &b.w, 4096, 0);
    ka_pool_cancel(&p, &a.w);
    ka_pbuf_unref(&p, x);
    assert_int_equal(nresumed, 1);
    assert_int_equal(resumed[0], 2);
    ka_pool_cancel(&p, &b.w);
}

static void test_depleted_time_follows_dry_spells(void **state)
{
    (void)state;
    ka_pool_t p;
    fake_now = 1000000000ull;
    ka_pool_init(&p, 8192, 0, clock_fn);
    ka_pbuf_t *a = ka_pool_alloc(&p, 8192, 8192, 0, NULL);
    assert_true(ka_pool_depleted_time_total_s(&p) == 0.0);
    /* The spell starts at the first failed allocation... */
    fake_now += 1000000000ull;
    assert_null(ka_pool_alloc(&p, 4096, 4096, 0, NULL));
    fake_now += 500000000ull;
    assert_null(ka_pool_alloc(&p, 4096, 4096, 0, NULL));
    /* ...a spell in progress already counts... */
    fake_now += 1500000000ull;
    assert_true(ka_pool_depleted_time_total_s(&p) > 1.99 &&
                ka_pool_depleted_time_total_s(&p) < 2.01);
    /* ...and ends at the next release: 3 s in all. */
    fake_now += 1000000000ull;
    ka_pbuf_unref(&p, a);
    fake_now += 5000000000ull;
    double total = ka_pool_depleted_time_total_s(&p);
    assert_true(total > 2.99 && total < 3.01);
    /* 3 s depleted out of a 30 s window (Rate never divides by less). */
    double pct = ka_pool_avg_depleted_percent(&p);
    assert_true(pct > 9.9 && pct < 10.1);
    /* Two windows later the spell has aged out of the average. */
    fake_now += 3 * KA_POOL_WINDOW_NS;
    assert_true(ka_pool_avg_depleted_percent(&p) < 0.01);
    assert_true(ka_pool_depleted_time_total_s(&p) > 2.99);
}

static void test_priority_waiter_does_not_stop_streamed_reads(void **state)
{
    (void)state;
    ka_pool_t p;
    tagged_waiter_t held = {.id = 7};
    held.w.resume_cb = tagged_resume_cb;
    nresumed = 0;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    /* A held frame waits for more than the priority class can give now. */
    ka_pbuf_t *big = ka_pool_alloc(&p, 45000, 45000, 1, NULL);
    assert_non_null(big);
    assert_null(ka_pool_alloc(&p, 20000, 20000, 1, &held.w));
    ka_pool_wait(&p, &held.w, 20000, 1);
    assert_int_equal(ka_pool_waiters(&p), 1);
    /* A stream that needs only general memory still reads. */
    ka_pbuf_t *read = ka_pool_alloc(&p, 4096, 4096, 0, NULL);
    assert_non_null(read);
    ka_pbuf_unref(&p, read);
    assert_int_equal(nresumed, 0);
    ka_pbuf_unref(&p, big);
    assert_int_equal(nresumed, 1);
    assert_int_equal(resumed[0], 7);
    ka_pool_cancel(&p, &held.w);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

static void test_priority_class_cannot_take_the_streams_half(void **state)
{
    (void)state;
    ka_pool_t p;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    assert_int_equal(p.priority_limit, 50000);
    ka_pbuf_t *a = ka_pool_alloc(&p, 80000, 4096, 1, NULL);
    assert_non_null(a);
    assert_int_equal(a->cap, 50000);
    assert_null(ka_pool_alloc(&p, 4096, 4096, 1, NULL));
    assert_int_equal(ka_pool_charge(&p, 1), KA_ENOMEM);
    /* Streams keep the other half: 90000 general minus the 40000 of
     * priority bytes above the reserved share. */
    assert_int_equal(ka_pool_available(&p, 0), 50000);
    ka_pbuf_t *b = ka_pool_alloc(&p, 65536, 4096, 0, NULL);
    assert_non_null(b);
    assert_int_equal(b->cap, 50000);
    ka_pbuf_unref(&p, a);
    ka_pbuf_unref(&p, b);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

static void test_held_requests_leave_room_for_responses(void **state)
{
    (void)state;
    ka_pool_t p;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    assert_int_equal(p.held_limit, 25000);
    tagged_waiter_t held = {.w.resume_cb = tagged_resume_cb, .id = 3};
    tagged_waiter_t response = {.w.resume_cb = tagged_resume_cb, .id = 4};
    nresumed = 0;
    /* Stalled large held requests fill their part of the class... */
    ka_pbuf_t *a = ka_pool_alloc(&p, 30000, 4096, KA_POOL_HELD, NULL);
    assert_int_equal(a->cap, 18750);
    assert_null(ka_pool_alloc(&p, 4096, 4096, KA_POOL_HELD, &held.w));
    ka_pool_wait(&p, &held.w, 4096, KA_POOL_HELD);
    /* ...a small one (a Metadata request) still goes past the one waiting... */
    ka_pbuf_t *small = ka_pool_alloc(&p, 2000, 2000, KA_POOL_HELD_SMALL, &response.w);
    assert_non_null(small);
    assert_int_equal(ka_pool_held_used_bytes(&p), 20750);
    /* ...and a response that must be held whole still finds room. */
    ka_pbuf_t *b = ka_pool_alloc(&p, 20000, 20000, 1, &response.w);
    assert_non_null(b);
    assert_int_equal(ka_pool_priority_used_bytes(&p), 40750);
    assert_int_equal(nresumed, 0);
    ka_pbuf_unref(&p, a);
    assert_int_equal(nresumed, 1);
    assert_int_equal(resumed[0], 3);
    ka_pool_cancel(&p, &held.w);
    ka_pbuf_unref(&p, b);
    ka_pbuf_unref(&p, small);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

static void test_grow_charges_only_the_growth(void **state)
{
    (void)state;
    ka_pool_t p;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    ka_pbuf_t *b = ka_pool_alloc(&p, 1000, 1000, 1, NULL);
    memset(b->data, 0xab, 1000);
    b = ka_pool_grow(&p, b, 30000, 2000, NULL);
    assert_non_null(b);
    assert_int_equal(b->cap, 30000);
    assert_int_equal(b->data[999], 0xab);
    assert_int_equal(ka_pool_priority_used_bytes(&p), 30000);
    /* Past the priority limit it grows only as far as allowed, or not at all. */
    b = ka_pool_grow(&p, b, 90000, 40000, NULL);
    assert_int_equal(b->cap, 50000);
    assert_null(ka_pool_grow(&p, b, 60000, 60000, NULL));
    assert_int_equal(b->cap, 50000);
    ka_pbuf_unref(&p, b);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

static void test_arena_chunks_are_charged_to_the_pool(void **state)
{
    (void)state;
    ka_pool_t p;
    ka_arena_t arena;
    void *x = NULL;
    ka_pool_init(&p, 100000, 10000, clock_fn);
    ka_arena_init(&arena, 1 << 20);
    ka_arena_set_budget(&arena, ka_pool_arena_budget(&p));
    assert_int_equal(ka_arena_alloc_array(&arena, 10, 100, &x), 0);
    uint64_t charged = ka_pool_priority_used_bytes(&p);
    assert_true(charged >= 1000);
    /* An allocation the pool cannot cover fails as out of memory. */
    assert_int_equal(ka_arena_alloc_array(&arena, 60000, 1, &x), KA_ENOMEM);
    assert_int_equal(ka_pool_priority_used_bytes(&p), charged);
    ka_arena_destroy(&arena);
    assert_int_equal(ka_pool_used_bytes(&p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accounting_and_strict_bound),
        cmocka_unit_test(test_waiters_resume_in_fifo_order),
        cmocka_unit_test(test_cancelled_waiter_leaves_the_queue),
        cmocka_unit_test(test_depleted_time_follows_dry_spells),
        cmocka_unit_test(test_priority_waiter_does_not_stop_streamed_reads),
        cmocka_unit_test(test_priority_class_cannot_take_the_streams_half),
        cmocka_unit_test(test_held_requests_leave_room_for_responses),
        cmocka_unit_test(test_grow_charges_only_the_growth),
        cmocka_unit_test(test_arena_chunks_are_charged_to_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
