/*
 * test_configs_layer.c: kafka-configs' SET and DELETE on the limits layer,
 * and the two layers DescribeConfigs reports (control/limits/ka_configs_layer.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_configs_layer.h"
#include "ka_error.h"

static char *apply(const char *layer, const ka_cfg_change_t *c, size_t n)
{
    char err[200] = "", *out = NULL;

    assert_int_equal(ka_configs_layer_apply(layer, c, n, &out, err, sizeof(err)), 0);
    assert_non_null(out);
    return out;
}

static void test_set_on_a_broker_and_the_default_writes_the_admin_api_vocabulary(void **state)
{
    ka_cfg_change_t c[] = {{2, KA_CFG_KEY_MAX_BROKER_PARTITIONS, false, 7},
                           {KA_CFG_DEFAULT_ENTITY, KA_CFG_KEY_MAX_BROKER_PARTITIONS, false, 50},
                           {KA_CFG_DEFAULT_ENTITY, KA_CFG_KEY_MAX_PARTITIONS, false, 900}};
    char *out = apply("{\"brokers\":{\"1\":{\"max.broker.partitions\":3}}}", c, 3);

    (void)state;
    assert_string_equal(out,
                        "{\"brokers\":{\"1\":{\"max.broker.partitions\":3},\"2\":{\"max.broker."
                        "partitions\":7}},\"max.broker.partitions\":50,\"max.partitions\":900}");
    free(out);
}

static void test_delete_takes_the_key_out_of_the_layer_so_the_file_applies_again(void **state)
{
    ka_cfg_change_t c[] = {{2, KA_CFG_KEY_MAX_BROKER_PARTITIONS, true, 0},
                           {KA_CFG_DEFAULT_ENTITY, KA_CFG_KEY_MAX_BROKER_PARTITIONS, true, 0}};
    char *out = apply("{\"brokers\":{\"2\":null},\"max.broker.partitions\":50,"
                      "\"max.partitions\":9}",
                      c, 2);

    (void)state;
    assert_string_equal(out, "{\"max.partitions\":9}");
    free(out);
    out = apply(NULL, c, 2); /* deleting what is not set is no change */
    assert_string_equal(out, "{}");
    free(out);
}

static void test_a_layer_that_is_not_an_object_is_refused(void **state)
{
    ka_cfg_change_t c = {1, KA_CFG_KEY_MAX_BROKER_PARTITIONS, false, 1};
    char err[200] = "", *out = NULL;

    (void)state;
    assert_int_equal(ka_configs_layer_apply("[1]", &c, 1, &out, err, sizeof(err)), KA_EINVALID);
    assert_null(out);
    assert_non_null(strstr(err, "not a JSON object"));
}

static void test_limits_read_both_layers_with_removals_and_unlimited(void **state)
{
    ka_policy_t *file = NULL;
    ka_configs_limits_t l;
    const char *doc = "{\"max.broker.partitions\": 1000, \"brokers\": {\"3\": "
                      "{\"max.broker.partitions\": 30}, \"4\": {\"max.broker.partitions\": 40}}}";
    char err[200];

    (void)state;
    assert_int_equal(ka_policy_parse(doc, strlen(doc), 1, &file, err, sizeof(err)), 0);
    assert_int_equal(
        ka_configs_limits_read("{\"brokers\":{\"3\":null,\"5\":{\"max.broker.partitions\":55}},"
                               "\"max.partitions\":null}",
                               file, &l),
        0);
    assert_int_equal(l.limits.dynamic_default, -1);
    assert_int_equal(l.limits.dynamic_max_partitions, KA_POLICY_UNLIMITED);
    assert_int_equal(l.limits.dynamic_broker_count, 2);
    for (size_t i = 0; i < 2; i++) {
        const ka_cfg_override_t *o = &l.limits.dynamic_brokers[i];

        assert_true((o->broker_id == 3 && o->value == -1) || (o->broker_id == 5 && o->value == 55));
    }
    assert_int_equal(l.limits.file_default, 1000);
    assert_int_equal(l.limits.file_max_partitions, -1);
    assert_int_equal(l.limits.file_broker_count, 2);
    ka_configs_limits_free(&l);
    /* A layer that does not parse counts as none. */
    assert_int_equal(ka_configs_limits_read("not json", NULL, &l), 0);
    assert_int_equal(l.limits.dynamic_default, -1);
    assert_int_equal(l.limits.file_default, -1);
    ka_configs_limits_free(&l);
    ka_policy_unref(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_on_a_broker_and_the_default_writes_the_admin_api_vocabulary),
        cmocka_unit_test(test_delete_takes_the_key_out_of_the_layer_so_the_file_applies_again),
        cmocka_unit_test(test_a_layer_that_is_not_an_object_is_refused),
        cmocka_unit_test(test_limits_read_both_layers_with_removals_and_unlimited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
