/*
 * test_placement.c: ka_place's greedy pass against its definition.
 *
 * ka_place keeps the brokers in heaps and takes a rack's brokers into its
 * heap a batch at a time; ka_place_greedy_reference scans every broker for
 * every replica by the same keys. On random clusters (racks, fenced brokers,
 * headroom from none to plenty, requests from one replica to more than the
 * brokers) both must give the same assignment whenever the greedy pass
 * finds one, and ka_place must reuse its scratch memory without change.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
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

static void test_place_assigns_as_the_greedy_definition_does(void **state)
{
    static ka_place_broker_t b[MAX_BROKERS];
    static int32_t fast[MAX_CELLS], slow[MAX_CELLS];
    ka_place_scratch_t scratch = {0};
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

        for (size_t i = 0; i < n; i++) {
            uint64_t r = next(&s);

            b[i] = (ka_place_broker_t){
                .id = (int32_t)(i * 7 + 1),
                .rack = (int32_t)(r % (uint64_t)racks),
                .fenced = (r >> 8) % 10 == 0,
                .headroom = tight == 0   ? (int64_t)((r >> 16) % 5)
                            : tight == 1 ? (int64_t)((r >> 16) % 50)
                                         : 1000 + (int64_t)((r >> 16) % 3),
            };
        }
        int ref = ka_place_greedy_reference(b, n, racks, partitions, replication, seed, slow);
        int rc = ka_place(b, n, racks, partitions, replication, seed, fast, NULL,
                          t % 2 ? &scratch : NULL);

        if (ref == 0) {
            assert_int_equal(rc, 0);
            assert_memory_equal(fast, slow, (size_t)partitions * (size_t)replication * 4);
            compared++;
            truncated += (size_t)partitions * (size_t)replication * 4 < n;
        }
    }
    ka_place_scratch_free(&scratch);
    /* The comparison covered many fits, many of them with brokers left out of the heaps. */
    assert_true(compared > 5000);
    assert_true(truncated > 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_assigns_as_the_greedy_definition_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
