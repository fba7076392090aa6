/*
 * test_tables.c: the generated enum of API keys and table of Kafka error
 * codes agree with the API table, the codecs and the wire values clients use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_api_keys.h"
#include "ka_api_table.h"
#include "ka_codecs.h"
#include "ka_error.h"

static void test_api_keys_are_the_wire_values(void **state)
{
    (void)state;
    assert_int_equal(KA_API_PRODUCE, 0);
    assert_int_equal(KA_API_METADATA, 3);
    assert_int_equal(KA_API_SASL_HANDSHAKE, 17);
    assert_int_equal(KA_API_API_VERSIONS, 18);
    assert_int_equal(KA_API_CREATE_TOPICS, 19);
    assert_int_equal(KA_API_CREATE_PARTITIONS, 37);
    assert_int_equal(KA_API_ALTER_PARTITION_REASSIGNMENTS, 45);
    assert_int_equal(KA_API_DESCRIBE_CLUSTER, 60);
    assert_int_equal(KA_API_STREAMS_GROUP_HEARTBEAT, 88);
    assert_string_equal(ka_api_name(KA_API_STREAMS_GROUP_HEARTBEAT), "StreamsGroupHeartbeat");
}

static void test_api_enum_covers_the_api_table(void **state)
{
    (void)state;
    int known = 0;
    for (int key = -1; key < 1000; key++)
        known += ka_api_info_find((int16_t)key) != NULL;
    assert_int_equal(known, KA_API_KEY_COUNT);
    /* Every codec's API is in the table, under the key its header defines. */
    for (size_t i = 0; i < ka_codecs_count; i++)
        assert_non_null(ka_api_info_find(ka_codecs[i].api_key));
    assert_int_equal(KA_CREATETOPICS_REQUEST_API_KEY, KA_API_CREATE_TOPICS);
    assert_int_equal(KA_STREAMSGROUPHEARTBEAT_RESPONSE_API_KEY, KA_API_STREAMS_GROUP_HEARTBEAT);
}

static void test_error_codes_are_sorted_unique_and_named(void **state)
{
    (void)state;
    assert_true(ka_kafka_errors_count > 100);
    for (size_t i = 0; i < ka_kafka_errors_count; i++) {
        const struct ka_kafka_error_info *e = &ka_kafka_errors[i];
        assert_true(e->name != NULL && e->name[0] != '\0');
        if (i > 0)
            assert_true(ka_kafka_errors[i - 1].code < e->code);
        assert_ptr_equal(ka_kafka_error_name(e->code), e->name);
    }
    assert_null(ka_kafka_error_name(-2));
    assert_null(ka_kafka_error_name(32000));
}

/* The codes kadmit answers with, as every stock client reads them. */
static void test_rejection_codes_have_their_kafka_names(void **state)
{
    (void)state;
    assert_int_equal(KA_KAFKA_ERR_NONE, 0);
    assert_int_equal(KA_KAFKA_ERR_UNKNOWN_SERVER_ERROR, -1);
    assert_int_equal(KA_KAFKA_ERR_INVALID_REQUEST, 42);
    assert_int_equal(KA_KAFKA_ERR_POLICY_VIOLATION, 44);
    assert_string_equal(ka_kafka_error_name(44), "POLICY_VIOLATION");
    /* KIP-578's 88 was never added to Kafka: clients know it by this name. */
    assert_string_equal(ka_kafka_error_name(88), "UNSTABLE_OFFSET_COMMIT");
    assert_string_equal(ka_kafka_error_name(KA_KAFKA_ERR_TOPIC_ALREADY_EXISTS),
                        "TOPIC_ALREADY_EXISTS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_keys_are_the_wire_values),
        cmocka_unit_test(test_api_enum_covers_the_api_table),
        cmocka_unit_test(test_error_codes_are_sorted_unique_and_named),
        cmocka_unit_test(test_rejection_codes_have_their_kafka_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
