/*
 * test_limits_record.c: the limits topic's record (encode, decode, the
 * tombstone and malformed values) and the override layer: composing an API
 * change onto the layer, and the policy store putting a layer read from the
 * topic over its policy file (and over later reloads of the file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_limits_record.h"
#include "ka_policy_patch.h"
#include "ka_policy_store.h"

static char dir[256];
static char policy_path[300];

static void write_policy(const char *text)
{
    FILE *f = fopen(policy_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A store in cluster mode over a policy file holding `text`. */
static void open_cluster(ka_policy_store_t *store, const char *text, ka_policy_t **initial)
{
    char err[512] = "";

    write_policy(text);
    assert_int_equal(ka_policy_store_open(store, policy_path, NULL, initial, err, sizeof(err)), 0);
    ka_policy_store_use_cluster(store, "__kadmit_limits");
    assert_int_equal(store->mode, KA_PERSIST_CLUSTER);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ka-limits-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(policy_path, sizeof(policy_path), "%s/policy.json", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(policy_path);
    return rmdir(dir);
}

static void test_record_round_trips_layer_writer_and_time(void **state)
{
    ka_limits_record_t rec;
    char *value, err[256] = "";
    size_t len;

    (void)state;
    assert_int_equal(ka_limits_record_encode("{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}",
                                             41, "sidecar 1", 1764600000123, &value, &len),
                     0);
    assert_int_equal(len, strlen(value));
    assert_int_equal(ka_limits_record_decode(value, len, &rec, err, sizeof(err)), 0);
    assert_false(rec.tombstone);
    assert_string_equal(rec.overrides, "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}");
    assert_string_equal(rec.written_by, "sidecar 1");
    assert_int_equal(rec.written_at_ms, 1764600000123);
    assert_int_equal(rec.at, 41);
    ka_limits_record_clear(&rec);
    free(value);
}

static void test_empty_layer_and_tombstone_both_clear(void **state)
{
    ka_limits_record_t rec;
    char *value, err[256] = "";
    size_t len;

    (void)state;
    assert_int_equal(ka_limits_record_encode(NULL, 0, "sidecar 2", 5, &value, &len), 0);
    assert_int_equal(ka_limits_record_decode(value, len, &rec, err, sizeof(err)), 0);
    assert_null(rec.overrides);
    assert_false(rec.tombstone);
    assert_string_equal(rec.written_by, "sidecar 2");
    ka_limits_record_clear(&rec);
    free(value);

    assert_int_equal(ka_limits_record_decode(NULL, 0, &rec, err, sizeof(err)), 0);
    assert_true(rec.tombstone);
    assert_null(rec.overrides);
    ka_limits_record_clear(&rec);
}

static void test_encode_refuses_a_layer_that_is_not_an_object(void **state)
{
    char *value = NULL;
    size_t len;

    (void)state;
    assert_int_equal(ka_limits_record_encode("[1]", 0, "x", 0, &value, &len), KA_EINVALID);
    assert_null(value);
    assert_int_equal(ka_limits_record_encode("{", 0, "x", 0, &value, &len), KA_EINVALID);
}

/* The compare-and-set rule: a record changes the layer only at the offset it
 * was written for, so a change that lost a race, or a copy of an old record
 * produced again, changes nothing; a record of an older writer (no "at")
 * applies only without a cluster secret. */
static void test_record_applies_only_at_the_offset_it_was_written_for(void **state)
{
    ka_limits_record_t rec;
    char *value, err[256] = "";
    size_t len;

    (void)state;
    assert_int_equal(
        ka_limits_record_encode("{\"max.broker.partitions\":30}", 7, "s1", 1, &value, &len), 0);
    assert_int_equal(ka_limits_record_decode(value, len, &rec, err, sizeof(err)), 0);
    assert_int_equal(ka_limits_record_place(&rec, 7, true), KA_LIMITS_IN_PLACE);
    assert_int_equal(ka_limits_record_place(&rec, 7, false), KA_LIMITS_IN_PLACE);
    /* Another writer's record took offset 7: this one landed at 8. */
    assert_int_equal(ka_limits_record_place(&rec, 8, true), KA_LIMITS_MOVED);
    assert_int_equal(ka_limits_record_place(&rec, 8, false), KA_LIMITS_MOVED);
    /* The same bytes produced again much later (a replay). */
    assert_int_equal(ka_limits_record_place(&rec, 1000, true), KA_LIMITS_MOVED);
    assert_int_equal(ka_limits_record_place(&rec, 6, true), KA_LIMITS_MOVED);
    ka_limits_record_clear(&rec);
    free(value);

    const char *legacy = "{\"kadmit.limits\":1,\"overrides\":{\"max.broker.partitions\":9}}";
    assert_int_equal(ka_limits_record_decode(legacy, strlen(legacy), &rec, err, sizeof(err)), 0);
    assert_int_equal(rec.at, -1);
    assert_int_equal(ka_limits_record_place(&rec, 3, false), KA_LIMITS_IN_PLACE);
    assert_int_equal(ka_limits_record_place(&rec, 3, true), KA_LIMITS_UNPLACED);
    ka_limits_record_clear(&rec);

    assert_int_equal(ka_limits_record_decode(NULL, 0, &rec, err, sizeof(err)), 0);
    assert_int_equal(ka_limits_record_place(&rec, 3, false), KA_LIMITS_IN_PLACE);
    assert_int_equal(ka_limits_record_place(&rec, 3, true), KA_LIMITS_UNPLACED);
    ka_limits_record_clear(&rec);
}

static void expect_refused(const char *value, int expected, const char *words)
{
    ka_limits_record_t rec;
    char err[256] = "";

    assert_int_equal(ka_limits_record_decode(value, strlen(value), &rec, err, sizeof(err)),
                     expected);
    assert_null(rec.overrides);
    assert_non_null(strstr(err, words));
}

static void test_malformed_records_are_refused_with_a_reason(void **state)
{
    (void)state;
    expect_refused("not json", KA_EINVALID, "not valid JSON");
    expect_refused("{\"overrides\":{}}", KA_EINVALID, "kadmit.limits");
    expect_refused("{\"kadmit.limits\":2,\"overrides\":{}}", KA_EINVALID, "kadmit.limits");
    expect_refused("{\"kadmit.limits\":1,\"overrides\":{},\"at\":-1}", KA_EINVALID, "\"at\"");
    expect_refused("{\"kadmit.limits\":1,\"overrides\":{},\"at\":\"5\"}", KA_EINVALID, "\"at\"");
    expect_refused("{\"kadmit.limits\":1,\"overrides\":[]}", KA_EINVALID, "must be a JSON object");
    expect_refused("{\"kadmit.limits\":1,\"overrides\":{},\"written_by\":3}", KA_EINVALID,
                   "written_by");
    expect_refused("{\"kadmit.limits\":1,\"kadmit.limits\":1,\"overrides\":{}}", KA_EINVALID,
                   "not valid JSON");
}

static void test_oversized_record_is_refused_before_parsing(void **state)
{
    ka_limits_record_t rec;
    char err[256] = "";
    size_t len = KA_LIMITS_RECORD_MAX_BYTES + 1;
    char *big = malloc(len);

    (void)state;
    assert_non_null(big);
    memset(big, ' ', len);
    assert_int_equal(ka_limits_record_decode(big, len, &rec, err, sizeof(err)), KA_ELIMIT);
    assert_non_null(strstr(err, "more than"));
    free(big);
}

static void test_unknown_keys_in_a_record_are_ignored(void **state)
{
    const char *v = "{\"kadmit.limits\":1,\"overrides\":{\"max.partitions\":9},\"later\":true}";
    ka_limits_record_t rec;
    char err[256] = "";

    (void)state;
    assert_int_equal(ka_limits_record_decode(v, strlen(v), &rec, err, sizeof(err)), 0);
    assert_string_equal(rec.overrides, "{\"max.partitions\":9}");
    assert_int_equal(rec.written_at_ms, 0);
    ka_limits_record_clear(&rec);
}

static void test_compose_puts_the_change_over_the_layer_and_keeps_nulls(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(ka_limits_layer_compose(
                         "{\"brokers\":{\"1\":{\"max.broker.partitions\":5}},\"max.partitions\":9}",
                         "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}", &out),
                     0);
    assert_string_equal(out, "{\"brokers\":{\"1\":{\"max.broker.partitions\":5},\"2\":{\"max."
                             "broker.partitions\":7}},\"max.partitions\":9}");
    free(out);
    /* Removing broker 1's limit keeps the null: it also removes a file's own. */
    assert_int_equal(ka_limits_layer_compose("{\"brokers\":{\"1\":{\"max.broker.partitions\":5}}}",
                                             "{\"brokers\":{\"1\":null}}", &out),
                     0);
    assert_string_equal(out, "{\"brokers\":{\"1\":null}}");
    free(out);
    assert_int_equal(ka_limits_layer_compose(NULL, "{}", &out), 0);
    assert_string_equal(out, "{}");
    assert_true(ka_limits_layer_is_empty(out));
    free(out);
    assert_int_equal(ka_limits_layer_compose("[]", "{}", &out), KA_EINVALID);
}

static void test_layer_sets_names_top_level_keys_and_broker_entries(void **state)
{
    const char *layer = "{\"brokers\":{\"2\":{\"max.broker.partitions\":7},\"3\":null},"
                        "\"max.partitions\":9}";

    (void)state;
    assert_true(ka_limits_layer_sets(layer, "max.partitions", -1));
    assert_false(ka_limits_layer_sets(layer, "max.broker.partitions", -1));
    assert_true(ka_limits_layer_sets(layer, "max.broker.partitions", 2));
    assert_true(ka_limits_layer_sets(layer, "max.broker.partitions", 3));
    assert_false(ka_limits_layer_sets(layer, "max.broker.partitions", 1));
    assert_false(ka_limits_layer_sets(NULL, "max.partitions", -1));
    assert_true(ka_limits_layer_sets("{\"brokers\":null}", "max.broker.partitions", 1));
}

/* Composing diff(current, next) onto the layer gives a layer that yields next. */
static void test_layer_after_an_api_change_yields_the_asked_policy(void **state)
{
    ka_policy_store_t store;
    ka_policy_t *initial, *next = NULL, *asked = NULL, *back = NULL;
    char err[512] = "", *layer = NULL;

    (void)state;
    open_cluster(&store,
                 "{\"max.broker.partitions\": 100, \"brokers\": {\"1\": "
                 "{\"max.broker.partitions\": 50}}}\n",
                 &initial);
    assert_string_equal(ka_persist_mode_name(store.mode), "kafka-topic");

    /* An API change: broker 2 gets 7, broker 1 follows the default again. */
    assert_int_equal(ka_policy_with_broker_limit(initial, 2, 7, 99, &next, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_without_broker_limit(next, 1, 100, &asked), 0);
    ka_policy_unref(next);
    assert_int_equal(ka_policy_store_layer_after(&store, initial, asked, &layer), 0);
    assert_true(ka_limits_layer_sets(layer, "max.broker.partitions", 1));
    assert_true(ka_limits_layer_sets(layer, "max.broker.partitions", 2));

    /* Read back from the topic: the store puts exactly that policy in force. */
    assert_int_equal(ka_policy_store_set_layer(&store, layer, initial, &back, err, sizeof(err)), 0);
    assert_non_null(back);
    assert_true(ka_policy_equal(back, asked));
    assert_true(ka_policy_version(back) > ka_policy_version(initial));
    assert_int_equal(ka_policy_broker_limit(back, 1), 100);
    assert_int_equal(ka_policy_broker_limit(back, 2), 7);
    assert_non_null(store.overrides);
    free(layer);
    ka_policy_unref(asked);
    ka_policy_unref(initial);
    ka_policy_unref(back);
    ka_policy_store_close(&store);
}

static void test_same_layer_again_changes_nothing_and_empty_returns_to_the_file(void **state)
{
    ka_policy_store_t store;
    ka_policy_t *initial, *first = NULL, *again = NULL, *cleared = NULL;
    const char *layer = "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}";
    char err[512] = "";

    (void)state;
    open_cluster(&store, "{\"max.broker.partitions\": 100}\n", &initial);
    assert_int_equal(ka_policy_store_set_layer(&store, layer, initial, &first, err, sizeof(err)),
                     0);
    assert_non_null(first);
    assert_int_equal(ka_policy_store_set_layer(&store, layer, first, &again, err, sizeof(err)), 0);
    assert_null(again);
    assert_int_equal(ka_policy_store_set_layer(&store, "{}", first, &cleared, err, sizeof(err)), 0);
    assert_non_null(cleared);
    assert_null(store.overrides);
    assert_true(ka_policy_equal(cleared, initial));
    assert_true(ka_policy_version(cleared) > ka_policy_version(first));
    ka_policy_unref(initial);
    ka_policy_unref(first);
    ka_policy_unref(cleared);
    ka_policy_store_close(&store);
}

static void test_invalid_layer_leaves_the_policy_and_layer_as_they_were(void **state)
{
    ka_policy_store_t store;
    ka_policy_t *initial, *first = NULL, *bad = NULL;
    char err[512] = "";

    (void)state;
    open_cluster(&store, "{\"max.broker.partitions\": 100}\n", &initial);
    assert_int_equal(ka_policy_store_set_layer(&store, "{\"max.partitions\":9}", initial, &first,
                                               err, sizeof(err)),
                     0);
    assert_int_equal(ka_policy_store_set_layer(&store, "{\"enforcement\":\"strict\"}", first, &bad,
                                               err, sizeof(err)),
                     KA_EINVALID);
    assert_null(bad);
    assert_non_null(strstr(err, "enforcement"));
    assert_string_equal(store.overrides, "{\"max.partitions\":9}");
    ka_policy_unref(initial);
    ka_policy_unref(first);
    ka_policy_store_close(&store);
}

static void test_cluster_layer_stays_over_a_reloaded_file(void **state)
{
    ka_policy_store_t store;
    ka_policy_t *initial, *layered = NULL, *reloaded = NULL;
    char err[512] = "";
    bool persisted = true;
    char where[512] = "";

    (void)state;
    open_cluster(&store, "{\"max.broker.partitions\": 100}\n", &initial);
    assert_int_equal(
        ka_policy_store_set_layer(&store, "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}",
                                  initial, &layered, err, sizeof(err)),
        0);
    write_policy("{\"max.broker.partitions\": 300}\n");
    assert_int_equal(ka_policy_store_reload(&store, layered, &reloaded, err, sizeof(err)),
                     KA_RELOAD_OK);
    assert_int_equal(ka_policy_default_broker_limit(reloaded), 300);
    assert_int_equal(ka_policy_broker_limit(reloaded, 2), 7);
    /* In cluster mode the store never writes a file for an API change. */
    assert_int_equal(ka_policy_store_persist(&store, reloaded, &persisted, where, sizeof(where)),
                     0);
    assert_false(persisted);
    assert_non_null(strstr(where, "kafka topic __kadmit_limits"));
    assert_string_equal(store.overrides, "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}");
    ka_policy_unref(initial);
    ka_policy_unref(layered);
    ka_policy_unref(reloaded);
    ka_policy_store_close(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trips_layer_writer_and_time),
        cmocka_unit_test(test_empty_layer_and_tombstone_both_clear),
        cmocka_unit_test(test_encode_refuses_a_layer_that_is_not_an_object),
        cmocka_unit_test(test_record_applies_only_at_the_offset_it_was_written_for),
        cmocka_unit_test(test_malformed_records_are_refused_with_a_reason),
        cmocka_unit_test(test_oversized_record_is_refused_before_parsing),
        cmocka_unit_test(test_unknown_keys_in_a_record_are_ignored),
        cmocka_unit_test(test_compose_puts_the_change_over_the_layer_and_keeps_nulls),
        cmocka_unit_test(test_layer_sets_names_top_level_keys_and_broker_entries),
        cmocka_unit_test(test_layer_after_an_api_change_yields_the_asked_policy),
        cmocka_unit_test(test_same_layer_again_changes_nothing_and_empty_returns_to_the_file),
        cmocka_unit_test(test_invalid_layer_leaves_the_policy_and_layer_as_they_were),
        cmocka_unit_test(test_cluster_layer_stays_over_a_reloaded_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
