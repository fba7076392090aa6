/*
 * test_metrics.c: the Prometheus rendering of the proxy's metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
    static char buf[32768]; /* every family, with room to grow */
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
    assert_non_null(strstr(buf,
                           "# TYPE kadmit_forwarded_bytes_total counter\n"
                           "kadmit_forwarded_bytes_total{direction=\"client_to_broker\"} "
                           "123456789012\n"
                           "kadmit_forwarded_bytes_total{direction=\"broker_to_client\"} 0\n"));
    assert_non_null(strstr(buf, "kadmit_tls_on_plaintext_total 2\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_free_bytes 1048576\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_used_bytes 0\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_avg_depleted_ratio 0.00000\n"));
    assert_non_null(strstr(buf, "kadmit_memory_pool_depleted_time_seconds_total 0.000000\n"));
    /* Every sample line is "name value". */
    for (char *line = buf; *line; line = strchr(line, '\n') + 1) {
        if (line[0] != '#')
            assert_true(strncmp(line, "kadmit_", 7) == 0);
    }
}

/* One family header per name, and every counter's name ends in _total. */
static void test_families_are_declared_once_and_counters_end_in_total(void **state)
{
    (void)state;
    static char buf[32768];
    ka_metrics_t m = {0};
    ka_metrics_observe_decision(&m, KA_ADM_CREATE_TOPICS, 1000);
    assert_true(ka_metrics_render(&m, NULL, buf, sizeof(buf)) > 0);
    char seen[128][96];
    size_t nseen = 0;
    for (char *line = buf; *line; line = strchr(line, '\n') + 1) {
        char name[96], type[16];
        if (sscanf(line, "# TYPE %95s %15s", name, type) != 2)
            continue;
        for (size_t i = 0; i < nseen; i++)
            assert_string_not_equal(seen[i], name);
        assert_true(nseen < 128);
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
        if (strcmp(type, "counter") == 0)
            assert_string_equal(name + strlen(name) - 6, "_total");
    }
    assert_true(nseen > 20);
}

static void test_decision_latency_histogram_is_cumulative(void **state)
{
    (void)state;
    static char buf[32768];
    ka_metrics_t m = {0};
    ka_metrics_observe_decision(&m, KA_ADM_CREATE_TOPICS, 50 * 1000);       /* 50 us */
    ka_metrics_observe_decision(&m, KA_ADM_CREATE_TOPICS, 3 * 1000 * 1000); /* 3 ms */
    ka_metrics_observe_decision(&m, KA_ADM_CREATE_TOPICS, 9000000000ull);   /* 9 s: +Inf only */
    assert_true(ka_metrics_render(&m, NULL, buf, sizeof(buf)) > 0);
    static const char *want[] = {
        "_bucket{api=\"CreateTopics\",le=\"0.0001\"} 1\n",
        "_bucket{api=\"CreateTopics\",le=\"0.0025\"} 1\n",
        "_bucket{api=\"CreateTopics\",le=\"0.005\"} 2\n",
        "_bucket{api=\"CreateTopics\",le=\"5\"} 2\n",
        "_bucket{api=\"CreateTopics\",le=\"+Inf\"} 3\n",
        "_sum{api=\"CreateTopics\"} 9.003050000\n",
        "_count{api=\"CreateTopics\"} 3\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char line[160];
        snprintf(line, sizeof(line), "kadmit_admission_decision_duration_seconds%s", want[i]);
        if (strstr(buf, line) == NULL)
            fail_msg("missing: %s", line);
    }
    /* An API with no decision has no series. */
    assert_null(strstr(buf, "api=\"CreatePartitions\",le="));
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
        cmocka_unit_test(test_families_are_declared_once_and_counters_end_in_total),
        cmocka_unit_test(test_decision_latency_histogram_is_cumulative),
        cmocka_unit_test(test_small_buffer_overflows_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
