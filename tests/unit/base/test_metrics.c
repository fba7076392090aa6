/*
 * test_metrics.c: the Prometheus rendering of the proxy's metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_metrics.h"

static uint64_t clock_fn(void)
{
    return 42;
}

static void test_renders_counters_gauges_and_pool_figures(void **state)
{
    (void)state;
    static char buf[16384];
    ka_metrics_t m = {0};
    ka_pool_t pool;
    ka_pool_init(&pool, 1 << 20, 1 << 16, clock_fn);
    m.connections_active = 3;
    m.bytes_client_to_broker = 123456789012ull;
    m.tls_on_plaintext = 2;
    long n = ka_metrics_render(&m, &pool, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(strlen(buf), (size_t)n);
    assert_non_null(strstr(buf, "# TYPE kadmit_connections_active gauge\n"
                                "kadmit_connections_active 3\n"));
    assert_non_null(strstr(buf, "kadmit_bytes_client_to_broker 123456789012\n"));
    assert_non_null(strstr(buf, "kadmit_tls_on_plaintext 2\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_free_bytes 1048576\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_used_bytes 0\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_avg_depleted_percent 0.000\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_depleted_time_seconds_total 0.000000\n"));
    /* Every sample line is "name value". */
    for (char *line = buf; *line; line = strchr(line, '\n') + 1) {
        if (line[0] != '#')
            assert_true(strncmp(line, "kadmit_", 7) == 0);
    }
}

static void test_small_buffer_overflows_cleanly(void **state)
{
    (void)state;
    char buf[64];
    ka_metrics_t m = {0};
    assert_int_equal(ka_metrics_render(&m, NULL, buf, sizeof(buf)), KA_EOVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_counters_gauges_and_pool_figures),
        cmocka_unit_test(test_small_buffer_overflows_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
