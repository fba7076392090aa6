/*
 * test_patch.c: API overrides as JSON merge patches over the file's policy
 * (the layering used when the policy file is read-only).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_policy.h"
#include "ka_policy_patch.h"

static ka_policy_t *parse(const char *json)
{
    ka_policy_t *p = NULL;
    char err[256];

    assert_int_equal(ka_policy_parse(json, strlen(json), 1, &p, err, sizeof(err)), 0);
    return p;
}

static void test_equal_policies_differ_by_an_empty_patch(void **state)
{
    ka_policy_t *a = parse("{\"max.broker.partitions\": 10}");
    ka_policy_t *b = parse("{\"max.broker.partitions\": 10}");
    char *patch = ka_policy_diff(a, b);

    (void)state;
    assert_string_equal(patch, "{}");
    assert_true(ka_policy_patch_is_empty(patch));
    free(patch);
    ka_policy_unref(a);
    ka_policy_unref(b);
}

static void test_diff_holds_only_what_changed_and_null_for_a_removed_override(void **state)
{
    ka_policy_t *file = parse("{\"max.broker.partitions\": 10, \"brokers\": {\"1\": "
                              "{\"max.broker.partitions\": 5}, \"3\": {\"max.broker.partitions\": "
                              "7}}}");
    ka_policy_t *t1 = NULL, *t2 = NULL;
    char err[256];

    (void)state;
    assert_int_equal(ka_policy_with_broker_limit(file, 2, 4, 2, &t1, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_without_broker_limit(t1, 3, 3, &t2), 0);
    char *patch = ka_policy_diff(file, t2);
    assert_string_equal(patch, "{\"brokers\":{\"2\":{\"max.broker.partitions\":4},\"3\":null}}");
    free(patch);
    ka_policy_unref(file);
    ka_policy_unref(t1);
    ka_policy_unref(t2);
}

static void test_apply_of_a_diff_gives_the_target(void **state)
{
    ka_policy_t *file = parse("{\"max.broker.partitions\": 10, \"brokers\": {\"3\": "
                              "{\"max.broker.partitions\": 7}}, \"enforcement\": \"audit\"}");
    ka_policy_t *target = parse("{\"max.broker.partitions\": 20, \"brokers\": {\"2\": "
                                "{\"max.broker.partitions\": 4}}, \"max.partitions\": 99}");
    ka_policy_t *out = NULL;
    char err[256];
    char *patch = ka_policy_diff(file, target);

    (void)state;
    assert_int_equal(ka_policy_apply_patch(file, patch, strlen(patch), 9, &out, err, sizeof(err)),
                     0);
    assert_true(ka_policy_equal(out, target));
    assert_int_equal(ka_policy_version(out), 9);
    free(patch);
    ka_policy_unref(file);
    ka_policy_unref(target);
    ka_policy_unref(out);
}

/* The layering an operator sees: an API override survives a new file. */
static void test_overrides_layer_over_a_changed_file(void **state)
{
    ka_policy_t *file1 = parse("{\"max.broker.partitions\": 10}");
    ka_policy_t *file2 = parse("{\"max.broker.partitions\": 30, \"max.partitions\": 500}");
    ka_policy_t *api = NULL, *out = NULL;
    char err[256];

    (void)state;
    assert_int_equal(ka_policy_with_broker_limit(file1, 2, 4, 2, &api, err, sizeof(err)), 0);
    char *patch = ka_policy_diff(file1, api);
    assert_int_equal(ka_policy_apply_patch(file2, patch, strlen(patch), 3, &out, err, sizeof(err)),
                     0);
    assert_int_equal(ka_policy_broker_limit(out, 2), 4);  /* the API's override stays */
    assert_int_equal(ka_policy_broker_limit(out, 1), 30); /* the new file's default */
    assert_int_equal(ka_policy_max_partitions(out), 500);
    free(patch);
    ka_policy_unref(file1);
    ka_policy_unref(file2);
    ka_policy_unref(api);
    ka_policy_unref(out);
}

static void test_a_patch_that_breaks_the_policy_names_the_field(void **state)
{
    ka_policy_t *file = parse("{}");
    ka_policy_t *out = NULL;
    char err[256] = "";
    const char *bad = "{\"max.broker.partitions\": -1}";
    const char *not_object = "[1]";

    (void)state;
    assert_int_equal(ka_policy_apply_patch(file, bad, strlen(bad), 2, &out, err, sizeof(err)),
                     KA_EINVALID);
    assert_null(out);
    assert_non_null(strstr(err, "max.broker.partitions"));
    assert_int_equal(
        ka_policy_apply_patch(file, not_object, strlen(not_object), 2, &out, err, sizeof(err)),
        KA_EINVALID);
    assert_non_null(strstr(err, "not a JSON object"));
    ka_policy_unref(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_policies_differ_by_an_empty_patch),
        cmocka_unit_test(test_diff_holds_only_what_changed_and_null_for_a_removed_override),
        cmocka_unit_test(test_apply_of_a_diff_gives_the_target),
        cmocka_unit_test(test_overrides_layer_over_a_changed_file),
        cmocka_unit_test(test_a_patch_that_breaks_the_policy_names_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
