/*
 * test_model.c: the policy model: defaults, parsing, every validation
 * message, canonical serialization, derivations and reference counting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_policy.h"

#define EXAMPLE                                                                                    \
    "{\"max.broker.partitions\": 4000, \"brokers\": {\"1\": {\"max.broker.partitions\": 1000}},"   \
    " \"max.partitions\": 200000, \"enforcement\": \"enforce\", \"reject.error.code\": 88,"        \
    " \"auto.assignment\": \"place\"}"

static int parse(const char *json, ka_policy_t **p, char *err, size_t errlen)
{
    return ka_policy_parse(json, strlen(json), 7, p, err, errlen);
}

static void test_absent_keys_take_their_defaults(void **state)
{
    ka_policy_t *p = NULL;
    char err[256];

    (void)state;
    assert_int_equal(parse("{}", &p, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_version(p), 7);
    assert_int_equal(ka_policy_default_broker_limit(p), KA_POLICY_UNLIMITED);
    assert_int_equal(ka_policy_broker_limit(p, 42), 2147483647);
    assert_int_equal(ka_policy_max_partitions(p), 2147483647);
    assert_int_equal(ka_policy_enforcement(p), KA_ENFORCEMENT_ENFORCE);
    assert_int_equal(ka_policy_reject_error_code(p), 88);
    assert_int_equal(ka_policy_auto_assignment(p), KA_AUTO_ASSIGNMENT_PLACE);
    assert_int_equal(ka_policy_metadata_refresh_interval_ms(p), 30000);
    assert_int_equal(ka_policy_metadata_max_staleness_ms(p), 120000);
    assert_int_equal(ka_policy_metadata_refresh_before_decision_ms(p), 5000);
    assert_int_equal(ka_policy_reservation_expiry_ms(p), 300000);
    assert_int_equal(ka_policy_override_count(p), 0);
    ka_policy_unref(p);
}

static void test_architecture_example_parses_as_written(void **state)
{
    ka_policy_t *p = NULL;
    char err[256];
    int32_t id, limit;

    (void)state;
    assert_int_equal(parse(EXAMPLE, &p, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_broker_limit(p, 1), 1000);
    assert_int_equal(ka_policy_broker_limit(p, 2), 4000);
    assert_int_equal(ka_policy_max_partitions(p), 200000);
    assert_int_equal(ka_policy_override_count(p), 1);
    ka_policy_override_at(p, 0, &id, &limit);
    assert_int_equal(id, 1);
    assert_int_equal(limit, 1000);
    ka_policy_unref(p);
}

static void test_every_key_is_read(void **state)
{
    const char *doc = "{\"enforcement\": \"audit\", \"auto.assignment\": \"bound\","
                      " \"reject.error.code\": 44, \"metadata.refresh.interval.ms\": 1000,"
                      " \"metadata.max.staleness.ms\": 2000,"
                      " \"metadata.refresh.before.decision.ms\": 0,"
                      " \"reservation.expiry.ms\": 60000, \"max.broker.partitions\": 0}";
    ka_policy_t *p = NULL;
    char err[256];

    (void)state;
    assert_int_equal(parse(doc, &p, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_enforcement(p), KA_ENFORCEMENT_AUDIT);
    assert_int_equal(ka_policy_auto_assignment(p), KA_AUTO_ASSIGNMENT_BOUND);
    assert_int_equal(ka_policy_reject_error_code(p), 44);
    assert_int_equal(ka_policy_metadata_refresh_interval_ms(p), 1000);
    assert_int_equal(ka_policy_metadata_max_staleness_ms(p), 2000);
    assert_int_equal(ka_policy_metadata_refresh_before_decision_ms(p), 0);
    assert_int_equal(ka_policy_reservation_expiry_ms(p), 60000);
    assert_int_equal(ka_policy_default_broker_limit(p), 0);
    ka_policy_unref(p);
}

struct bad_case {
    const char *doc;
    const char *message; /* exact, or a prefix when prefix is set */
    int prefix;
};

static const struct bad_case bad_cases[] = {
    {"{\"max.broker.partitions\": -3}",
     "max.broker.partitions: must be an integer between 0 and 2147483647, got -3"},
    {"{\"brokers\": {\"7\": {\"max.broker.partitions\": -3}}}",
     "brokers.7.max.broker.partitions: must be an integer between 0 and 2147483647, got -3"},
    {"{\"brokers\": {\"07\": {\"max.broker.partitions\": 3}}}",
     "brokers.07: broker id must be a decimal integer between 0 and 2147483647"},
    {"{\"brokers\": {\"x1\": {\"max.broker.partitions\": 3}}}",
     "brokers.x1: broker id must be a decimal integer between 0 and 2147483647"},
    {"{\"brokers\": {\"2147483648\": {\"max.broker.partitions\": 3}}}",
     "brokers.2147483648: broker id must be a decimal integer between 0 and 2147483647"},
    {"{\"brokers\": {\"7\": 5}}",
     "brokers.7: must be an object such as {\"max.broker.partitions\": 1000}, got 5"},
    {"{\"brokers\": {\"7\": {\"max.broker.partition\": 5}}}",
     "brokers.7.max.broker.partition: unknown key (the only key allowed here is "
     "max.broker.partitions)"},
    {"{\"brokers\": {\"7\": {}}}", "brokers.7: missing max.broker.partitions"},
    {"{\"brokers\": []}",
     "brokers: must be an object mapping broker ids to {\"max.broker.partitions\": N}, got an "
     "array"},
    {"{\"max.partitions\": \"many\"}",
     "max.partitions: must be an integer between 0 and 2147483647, got \"many\""},
    {"{\"max.partitions\": 1.5}",
     "max.partitions: must be an integer between 0 and 2147483647, got 1.5"},
    {"{\"max.broker.partitions\": 2147483648}",
     "max.broker.partitions: must be an integer between 0 and 2147483647, got 2147483648"},
    {"{\"enforcement\": \"strict\"}",
     "enforcement: must be \"enforce\" or \"audit\", got \"strict\""},
    {"{\"auto.assignment\": true}", "auto.assignment: must be \"place\" or \"bound\", got true"},
    {"{\"reject.error.code\": 0}",
     "reject.error.code: must be an integer between 1 and 32767, got 0"},
    {"{\"reject.error.code\": 89}",
     "reject.error.code: 89 is retriable, so clients would retry the rejected request; use 88 "
     "or 44 (POLICY_VIOLATION), got 89"},
    {"{\"reject.error.code\": 41}",
     "reject.error.code: 41 is retriable, so clients would retry the rejected request; use 88 "
     "or 44 (POLICY_VIOLATION), got 41"},
    {"{\"metadata.refresh.interval.ms\": 50}",
     "metadata.refresh.interval.ms: must be an integer between 100 and 86400000, got 50"},
    {"{\"metadata.max.staleness.ms\": null}",
     "metadata.max.staleness.ms: must be an integer between 1000 and 86400000, got null"},
    {"{\"metadata.refresh.before.decision.ms\": -1}",
     "metadata.refresh.before.decision.ms: must be an integer between 0 and 86400000, got -1"},
    {"{\"reservation.expiry.ms\": 999}",
     "reservation.expiry.ms: must be an integer between 1000 and 86400000, got 999"},
    {"{\"metadata.refresh.interval.ms\": 200000}",
     "metadata.refresh.interval.ms: must not exceed metadata.max.staleness.ms (120000), or the "
     "view goes stale between refreshes, got 200000"},
    {"{\"metadata.refresh.before.decision.ms\": 130000}",
     "metadata.refresh.before.decision.ms: must not exceed metadata.max.staleness.ms (120000), "
     "got 130000"},
    {"{\"reservation.expiry.ms\": 120000}",
     "reservation.expiry.ms: must be greater than metadata.max.staleness.ms (120000), or a "
     "reservation could expire before any usable view shows it, got 120000"},
    {"{\"max.broker.partitons\": 5}", "max.broker.partitons: unknown key; the known keys are ", 1},
    {"[1]", "policy: must be a JSON object, got an array"},
    /* Two problems: the first in document order is reported. */
    {"{\"enforcement\": \"x\", \"max.partitions\": -1}",
     "enforcement: must be \"enforce\" or \"audit\", got \"x\""},
    {"{\"max.partitions\": 1,}", "policy: not valid JSON at line 1, column ", 1},
    {"{\"max.partitions\": 1, \"max.partitions\": 2}", "policy: not valid JSON at line 1", 1},
};

static void test_each_invalid_document_names_field_and_problem(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        ka_policy_t *p = (ka_policy_t *)1;
        char err[512] = "";

        assert_int_equal(parse(bad_cases[i].doc, &p, err, sizeof(err)), KA_EINVALID);
        assert_null(p);
        if (bad_cases[i].prefix)
            assert_memory_equal(err, bad_cases[i].message, strlen(bad_cases[i].message));
        else
            assert_string_equal(err, bad_cases[i].message);
    }
}

static void test_serialization_round_trips_byte_for_byte(void **state)
{
    const char *doc = "{\"brokers\": {\"12\": {\"max.broker.partitions\": 5},"
                      " \"3\": {\"max.broker.partitions\": 0}}, \"enforcement\": \"audit\","
                      " \"auto.assignment\": \"bound\", \"max.partitions\": 10}";
    ka_policy_t *a = NULL, *b = NULL;
    char err[256], *first, *second;

    (void)state;
    assert_int_equal(parse(doc, &a, err, sizeof(err)), 0);
    first = ka_policy_serialize(a);
    assert_non_null(first);
    assert_int_equal(parse(first, &b, err, sizeof(err)), 0);
    assert_true(ka_policy_equal(a, b));
    second = ka_policy_serialize(b);
    assert_string_equal(first, second);
    /* Overrides come out sorted by numeric id. */
    assert_true(strstr(first, "\"3\"") < strstr(first, "\"12\""));
    free(first);
    free(second);
    ka_policy_unref(a);
    ka_policy_unref(b);
}

static void test_derivations_change_one_thing_and_leave_the_base(void **state)
{
    ka_policy_t *base = NULL, *set = NULL, *removed = NULL, *def = NULL, *bad = NULL;
    char err[256];

    (void)state;
    assert_int_equal(parse(EXAMPLE, &base, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_with_broker_limit(base, 9, 50, 8, &set, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_broker_limit(set, 9), 50);
    assert_int_equal(ka_policy_broker_limit(set, 1), 1000);
    assert_int_equal(ka_policy_version(set), 8);
    assert_int_equal(ka_policy_broker_limit(base, 9), 4000);
    assert_int_equal(ka_policy_without_broker_limit(set, 1, 9, &removed), 0);
    assert_int_equal(ka_policy_broker_limit(removed, 1), 4000);
    assert_int_equal(ka_policy_broker_limit(removed, 9), 50);
    assert_int_equal(ka_policy_override_count(removed), 1);
    assert_int_equal(ka_policy_with_default_limit(removed, 10, 10, &def, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_broker_limit(def, 2), 10);
    assert_int_equal(ka_policy_broker_limit(def, 9), 50);
    assert_int_equal(ka_policy_with_broker_limit(base, 1, -3, 11, &bad, err, sizeof(err)),
                     KA_EINVALID);
    assert_string_equal(
        err, "brokers.1.max.broker.partitions: must be an integer between 0 and 2147483647, "
             "got -3");
    assert_int_equal(ka_policy_with_default_limit(base, 2147483648LL, 11, &bad, err, sizeof(err)),
                     KA_EINVALID);
    assert_string_equal(err, "max.broker.partitions: must be an integer between 0 and "
                             "2147483647, got 2147483648");
    /* Replacing an existing override keeps one entry. */
    ka_policy_unref(set);
    assert_int_equal(ka_policy_with_broker_limit(base, 1, 7, 12, &set, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_override_count(set), 1);
    assert_int_equal(ka_policy_broker_limit(set, 1), 7);
    ka_policy_unref(base);
    ka_policy_unref(set);
    ka_policy_unref(removed);
    ka_policy_unref(def);
}

static void test_snapshot_lives_until_the_last_reference(void **state)
{
    ka_policy_t *p = NULL, *q;

    (void)state;
    assert_int_equal(ka_policy_new_default(3, &p), 0);
    q = ka_policy_ref(p);
    ka_policy_unref(p);
    assert_int_equal(ka_policy_version(q), 3); /* still alive: ASan would catch a free */
    ka_policy_unref(q);
    ka_policy_unref(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_keys_take_their_defaults),
        cmocka_unit_test(test_architecture_example_parses_as_written),
        cmocka_unit_test(test_every_key_is_read),
        cmocka_unit_test(test_each_invalid_document_names_field_and_problem),
        cmocka_unit_test(test_serialization_round_trips_byte_for_byte),
        cmocka_unit_test(test_derivations_change_one_thing_and_leave_the_base),
        cmocka_unit_test(test_snapshot_lives_until_the_last_reference),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
