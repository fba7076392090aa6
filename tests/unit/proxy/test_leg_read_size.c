/*
 * test_leg_read_size.c: the read buffer's size follows how full reads are
 * (ka_leg_note_read): it doubles while reads fill it, up to KA_POOL_READ_MAX,
 * halves once reads use under a quarter, never grows on a buffer the pool cut
 * short, and stays at KA_POOL_READ_SIZE on a TLS leg, whose undecrypted input
 * is held outside the pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ka_proxy_internal.h"

static uint32_t size_of(const ka_leg_t *leg)
{
    return leg->read_size ? leg->read_size : KA_POOL_READ_SIZE;
}

static void test_full_reads_grow_to_the_ceiling(void **state)
{
    (void)state;
    ka_leg_t leg;
    memset(&leg, 0, sizeof(leg));
    assert_int_equal(size_of(&leg), KA_POOL_READ_SIZE);
    for (int i = 0; i < 10; i++)
        ka_leg_note_read(&leg, size_of(&leg), size_of(&leg));
    assert_int_equal(size_of(&leg), KA_POOL_READ_MAX);
    assert_true(KA_POOL_READ_MAX > KA_POOL_READ_SIZE);
}

static void test_small_reads_shrink_back(void **state)
{
    (void)state;
    ka_leg_t leg;
    memset(&leg, 0, sizeof(leg));
    leg.read_size = KA_POOL_READ_MAX;
    ka_leg_note_read(&leg, KA_POOL_READ_MAX / 2, KA_POOL_READ_MAX); /* half full: stays */
    assert_int_equal(size_of(&leg), KA_POOL_READ_MAX);
    for (int i = 0; i < 10; i++)
        ka_leg_note_read(&leg, 1024, size_of(&leg));
    assert_int_equal(size_of(&leg), KA_POOL_READ_SIZE);
}

static void test_short_pool_buffer_does_not_grow(void **state)
{
    (void)state;
    ka_leg_t leg;
    memset(&leg, 0, sizeof(leg));
    /* The pool gave 8 KiB of the 64 asked for, and the read filled it. */
    ka_leg_note_read(&leg, 8192, 8192);
    assert_int_equal(size_of(&leg), KA_POOL_READ_SIZE);
}

static void test_tls_leg_keeps_the_default(void **state)
{
    (void)state;
    ka_leg_t leg;
    memset(&leg, 0, sizeof(leg));
    leg.tls = (ka_transport_t *)(void *)&leg; /* only compared with NULL */
    for (int i = 0; i < 4; i++)
        ka_leg_note_read(&leg, KA_POOL_READ_SIZE, KA_POOL_READ_SIZE);
    assert_int_equal(size_of(&leg), KA_POOL_READ_SIZE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_reads_grow_to_the_ceiling),
        cmocka_unit_test(test_small_reads_shrink_back),
        cmocka_unit_test(test_short_pool_buffer_does_not_grow),
        cmocka_unit_test(test_tls_leg_keeps_the_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
