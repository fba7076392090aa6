/*
 * test_placement.c: ka_place's greedy pass against its definition.
 *
 * ka_place keeps each rack's brokers sorted, takes fresh ones from the
 * front and used ones from heaps; ka_place_greedy_reference scans every
 * broker for every replica by the same keys. On random clusters (racks,
 * fenced brokers, headroom from none to plenty, requests from one replica to
 * more than the brokers) both must give the same assignment whenever the
 * greedy pass finds one, for one item and for every item of a session,
 * whose later items see the headroom its earlier ones left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ka_placement.h"

#define MAX_BROKERS 300
#define MAX_CELLS   (64 * 5)

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random brokers into b[0..n): ids ascending, racks, some fenced, headroom by `tight`. */
static void random_brokers(uint64_t *s, ka_place_broker_t *b, size_t n, int32_t racks, int tight)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next(s);

        b[i] = (ka_place_broker_t){
            .id = (int32_t)(i * 7 + 1),
            .rack = (int32_t)(r % (uint64_t)racks),
            .fenced = (r >> 8) % 10 == 0,
            .headroom = tight == 0   ? (int64_t)((r >> 16) % 5)
                        : tight == 1 ? (int64_t)((r >> 16) % 50)
                                     : 1000 + (int64_t)((r >> 16) % 3),
        };
    }
}

static void test_place_assigns_as_the_greedy_definition_does(void **state)
{
    static ka_place_broker_t b[MAX_BROKERS];
    static int32_t fast[MAX_CELLS], slow[MAX_CELLS];
    uint64_t s = 0x2545f4914f6cdd1dull;
    int compared = 0, truncated = 0;

    (void)state;
    for (int t = 0; t < 20000; t++) {
        size_t n = 1 + next(&s) % (t % 10 == 0 ? MAX_BROKERS : 40);
        int32_t racks = 1 + (int32_t)(next(&s) % (n < 4 ? n : 4));
        int tight = (int)(next(&s) % 3);
        int32_t partitions = 1 + (int32_t)(next(&s) % (tight ? 64 : 8));
        int32_t replication = 1 + (int32_t)(next(&s) % 5);
        uint64_t seed = next(&s);

        random_brokers(&s, b, n, racks, tight);
        int ref = ka_place_greedy_reference(b, n, racks, partitions, replication, seed, slow);
        int rc = ka_place(b, n, racks, partitions, replication, seed, fast, NULL);

        if (ref == 0) {
            assert_int_equal(rc, 0);
            assert_memory_equal(fast, slow, (size_t)partitions * (size_t)replication * 4);
            compared++;
            truncated += (size_t)partitions * (size_t)replication * 4 < n;
        }
    }
    /* The comparison covered many fits, many of them using only some of the brokers. */
    assert_true(compared > 5000);
    assert_true(truncated > 500);
}

static void test_session_items_place_as_the_definition_on_what_is_left(void **state)
{
    static ka_place_broker_t b[MAX_BROKERS], left[MAX_BROKERS];
    static int32_t fast[MAX_CELLS], slow[MAX_CELLS];
    static int64_t added[MAX_BROKERS], counted[MAX_BROKERS];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    int compared = 0, later = 0, failed = 0, fallback = 0;

    (void)state;
    for (int t = 0; t < 3000; t++) {
        size_t n = 1 + next(&s) % (t % 10 == 0 ? MAX_BROKERS : 40);
        int32_t racks = 1 + (int32_t)(next(&s) % (n < 4 ? n : 4));
        int tight = (int)(next(&s) % 3), items = 1 + (int)(next(&s) % 8);
        uint64_t seed = next(&s);
        ka_place_session_t session = {0};

        random_brokers(&s, b, n, racks, tight);
        memcpy(left, b, n * sizeof(*b));
        assert_int_equal(ka_place_begin(&session, b, n, racks, seed), 0);
        for (int item = 0; item < items; item++) {
            int32_t partitions = 1 + (int32_t)(next(&s) % (tight ? 64 : 8));
            int32_t replication = 1 + (int32_t)(next(&s) % 5);
            size_t cells = (size_t)partitions * (size_t)replication;
            int ref =
                ka_place_greedy_reference(left, n, racks, partitions, replication, seed, slow);
            int rc;
            const uint32_t *touched;
            size_t touched_count, used = 0;

            memset(added, 0, n * sizeof(*added));
            rc = ka_place_next(&session, partitions, replication, fast, added);
            if (ref == 0) {
                assert_int_equal(rc, 0);
                assert_memory_equal(fast, slow, cells * sizeof(*fast));
                compared++;
                later += item > 0;
            }
            fallback += ref != 0 && rc == 0;
            if (rc != 0) {
                assert_int_equal(rc, KA_ELIMIT);
                failed++;
                continue; /* the session is unchanged, as left is */
            }
            /* added counts the assignment; touched lists its brokers in index order. */
            memset(counted, 0, n * sizeof(*counted));
            for (size_t c = 0; c < cells; c++) {
                size_t i = (size_t)(fast[c] - 1) / 7;

                assert_int_equal(fast[c], b[i].id);
                counted[i]++;
                /* A row holds distinct brokers, and its leader is unfenced. */
                for (size_t d = c - c % (size_t)replication; d < c; d++)
                    assert_int_not_equal(fast[d], fast[c]);
                if (c % (size_t)replication == 0)
                    assert_false(b[i].fenced);
            }
            touched_count = ka_place_touched(&session, &touched);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(added[i], counted[i]);
                assert_true(left[i].headroom >= counted[i]);
                left[i].headroom -= counted[i];
                if (counted[i] > 0) {
                    assert_true(used < touched_count);
                    assert_int_equal(touched[used++], i);
                }
            }
            assert_int_equal(used, touched_count);
        }
        ka_place_end(&session);
    }
    assert_true(compared > 3000);
    assert_true(later > 2000);
    assert_true(failed > 100);
    assert_true(fallback > 50); /* items after a fallback placed too, runs re-sorted */
    printf("session: %d compared (%d later items), %d fallbacks, %d failed\n", compared, later,
           fallback, failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_assigns_as_the_greedy_definition_does),
        cmocka_unit_test(test_session_items_place_as_the_definition_on_what_is_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
