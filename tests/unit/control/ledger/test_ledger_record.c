/*
 * test_ledger_record.c: ledger records survive an encode/decode round trip,
 * and hostile records (written by any sidecar, or anyone with write access
 * to the topic) are refused with a sentence, never trusted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_ledger_record.h"

#define S(lit) ((ka_slice_t){(const uint8_t *)(lit), (int32_t)(sizeof(lit) - 1)})

static void test_intent_round_trip_keeps_every_field(void **state)
{
    (void)state;
    const ka_broker_delta_t d1[] = {{1, 3}, {2, 3}, {3, 3}};
    const ka_broker_delta_t d2[] = {{4, 1}};
    const int32_t targets[] = {1, 4};
    const ka_reservation_spec_t specs[] = {
        {.kind = KA_RESERVATION_PARTITIONS,
         .topic = S("orders"),
         .partition_count = 3,
         .partition = -1,
         .new_partitions = 3,
         .creates_topic = true,
         .deltas = d1,
         .delta_count = 3},
        {.kind = KA_RESERVATION_REPLICAS,
         .topic = S("pay.ments"),
         .partition = 7,
         .replicas = targets,
         .replica_count = 2,
         .deltas = d2,
         .delta_count = 1},
    };
    char *json = NULL;
    size_t len = 0;
    char err[256] = "";
    ka_ledger_record_t r;
    assert_int_equal(
        ka_ledger_encode_intent("host:9092", 1234567, 1700000000123, specs, 2, &json, &len), 0);
    assert_int_equal(ka_ledger_decode(json, len, &r, err, sizeof(err)), 0);
    assert_int_equal(r.type, KA_LEDGER_INTENT);
    assert_string_equal(r.sidecar, "host:9092");
    assert_int_equal(r.seq, 1234567);
    assert_int_equal(r.ts_ms, 1700000000123);
    assert_int_equal(r.count, 2);
    for (size_t i = 0; i < 2; i++) {
        ka_reservation_spec_t got = r.items[i].spec;
        assert_int_equal(got.kind, specs[i].kind);
        assert_int_equal(got.topic.len, specs[i].topic.len);
        assert_memory_equal(got.topic.ptr, specs[i].topic.ptr, (size_t)got.topic.len);
        assert_int_equal(got.partition_count, specs[i].partition_count);
        assert_int_equal(got.partition, specs[i].partition);
        assert_int_equal(got.new_partitions, specs[i].new_partitions);
        assert_int_equal(got.creates_topic, specs[i].creates_topic);
        assert_int_equal(got.replica_count, specs[i].replica_count);
        if (got.replica_count > 0)
            assert_memory_equal(got.replicas, specs[i].replicas,
                                (size_t)got.replica_count * sizeof(int32_t));
        assert_int_equal(got.delta_count, specs[i].delta_count);
        assert_memory_equal(got.deltas, specs[i].deltas, got.delta_count * sizeof(*got.deltas));
    }
    ka_ledger_record_free(&r);
    free(json);
}

static void test_outcome_round_trip_keeps_each_items_fate(void **state)
{
    (void)state;
    const uint8_t fate[] = {1, 0, 1};
    char *json = NULL;
    size_t len = 0;
    char err[256] = "";
    ka_ledger_record_t r;
    assert_int_equal(ka_ledger_encode_outcome("sc", 9, fate, 3, &json, &len), 0);
    assert_int_equal(ka_ledger_decode(json, len, &r, err, sizeof(err)), 0);
    assert_int_equal(r.type, KA_LEDGER_OUTCOME);
    assert_string_equal(r.sidecar, "sc");
    assert_int_equal(r.seq, 9);
    assert_int_equal(r.count, 3);
    assert_memory_equal(r.admitted, fate, 3);
    ka_ledger_record_free(&r);
    free(json);
}

/* A record that must be refused, and a word its error must contain. */
typedef struct hostile {
    const char *json;
    const char *blames;
} hostile_t;

#define ITEM_OK                                                                                    \
    "{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":1,\"partition\":-1,"             \
    "\"new_partitions\":1,\"replicas\":[],\"deltas\":[[1,1]]}"
#define INTENT(items)                                                                              \
    "{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":1,\"ts\":5,\"items\":" items "}"

static void test_hostile_records_are_refused_with_a_reason(void **state)
{
    (void)state;
    static const hostile_t cases[] = {
        {"", "empty"},
        {"not json", "JSON"},
        {"[1,2]", "object"},
        {"{\"type\":\"vote\",\"sidecar\":\"s\",\"seq\":1,\"items\":[]}", "type"},
        {"{\"type\":\"intent\",\"seq\":1,\"ts\":1,\"items\":[]}", "sidecar"},
        {"{\"type\":\"intent\",\"sidecar\":\"\",\"seq\":1,\"ts\":1,\"items\":[]}", "sidecar"},
        {"{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":-1,\"ts\":1,\"items\":[]}", "seq"},
        {"{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":\"1\",\"ts\":1,\"items\":[]}", "seq"},
        {"{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":1,\"items\":[]}", "ts"},
        {"{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":1,\"ts\":1,\"items\":{}}", "items"},
        {INTENT("[7]"), "object"},
        {INTENT("[{\"kind\":\"all\"}]"), "kind"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"\"}]"), "topic"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":-4,"
                "\"partition\":0,\"new_partitions\":0,\"replicas\":[],\"deltas\":[]}]"),
         "partition_count"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":1,"
                "\"partition\":0,\"new_partitions\":4294967296,\"replicas\":[],\"deltas\":[]}]"),
         "new_partitions"},
        {INTENT("[{\"kind\":\"replicas\",\"topic\":\"t\",\"partition_count\":0,"
                "\"partition\":0,\"new_partitions\":0,\"replicas\":[1,-2],\"deltas\":[]}]"),
         "replicas"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":1,"
                "\"partition\":0,\"new_partitions\":1,\"replicas\":[],\"deltas\":[[1,0]]}]"),
         "deltas"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":1,"
                "\"partition\":0,\"new_partitions\":1,\"replicas\":[],\"deltas\":[[1]]}]"),
         "deltas"},
        {INTENT("[" ITEM_OK ",{\"kind\":\"partitions\"}]"), "topic"},
        {INTENT("[{\"kind\":\"partitions\",\"topic\":\"t\",\"partition_count\":1,"
                "\"partition\":0,\"new_partitions\":1,\"replicas\":[],\"deltas\":[],"
                "\"creates\":1}]"),
         "creates"},
        {"{\"type\":\"outcome\",\"sidecar\":\"s\",\"seq\":1,\"items\":[\"admitted\",\"maybe\"]}",
         "items"},
        {"{\"type\":\"outcome\",\"sidecar\":\"s\",\"seq\":1,\"seq\":2,\"items\":[]}", "JSON"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ka_ledger_record_t r;
        char err[256] = "";
        int rc = ka_ledger_decode(cases[i].json, strlen(cases[i].json), &r, err, sizeof(err));
        if (rc == 0 || strstr(err, cases[i].blames) == NULL)
            fail_msg("case %zu (%s): rc %d, err \"%s\"", i, cases[i].json, rc, err);
        assert_null(r.items);
        assert_null(r.admitted);
    }
    /* The well-formed item the hostile ones are built from does decode. */
    ka_ledger_record_t r;
    char err[256] = "";
    const char *ok = INTENT("[" ITEM_OK "]");
    assert_int_equal(ka_ledger_decode(ok, strlen(ok), &r, err, sizeof(err)), 0);
    assert_int_equal(r.count, 1);
    ka_ledger_record_free(&r);
}

static void test_counts_above_the_caps_are_refused_before_use(void **state)
{
    (void)state;
    /* KA_LEDGER_REPLICAS_MAX + 1 replicas in one item. */
    size_t cap = 64 + 3 * (KA_LEDGER_REPLICAS_MAX + 1) + 256;
    char *json = malloc(cap);
    assert_non_null(json);
    int n = snprintf(json, cap,
                     "{\"type\":\"intent\",\"sidecar\":\"s\",\"seq\":1,\"ts\":5,\"items\":"
                     "[{\"kind\":\"replicas\",\"topic\":\"t\",\"partition_count\":0,"
                     "\"partition\":0,\"new_partitions\":0,\"deltas\":[],\"replicas\":[");
    for (int i = 0; i <= KA_LEDGER_REPLICAS_MAX; i++)
        n += snprintf(json + n, cap - (size_t)n, "%s1", i ? "," : "");
    n += snprintf(json + n, cap - (size_t)n, "]}]}");
    ka_ledger_record_t r;
    char err[256] = "";
    assert_int_equal(ka_ledger_decode(json, (size_t)n, &r, err, sizeof(err)), KA_ELIMIT);
    assert_non_null(strstr(err, "replicas"));
    free(json);
    /* A record above the size cap is not even parsed. */
    assert_int_equal(ka_ledger_decode("{}", KA_LEDGER_RECORD_MAX + 1, &r, err, sizeof(err)),
                     KA_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intent_round_trip_keeps_every_field),
        cmocka_unit_test(test_outcome_round_trip_keeps_each_items_fate),
        cmocka_unit_test(test_hostile_records_are_refused_with_a_reason),
        cmocka_unit_test(test_counts_above_the_caps_are_refused_before_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
