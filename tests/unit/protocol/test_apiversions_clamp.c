/*
 * test_apiversions_clamp.c: lowering advertised versions to what kadmit
 * decodes, in every response format, including the v0 fallback a broker
 * uses when it rejects the request's version.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_apiversions.h"
#include "ka_endpoint_table.h"
#include "ka_api_table.h"
#include "ka_codec.h"
#include "ka_codecs.h"

struct entry {
    int16_t key, min, max;
};

/* Builds a response (correlation id + body) in the format of `layout`. */
static size_t build(uint8_t *buf, size_t cap, int16_t layout, int16_t error_code,
                    const struct entry *e, int n)
{
    ka_writer_t w;
    ka_writer_init_fixed(&w, buf, cap);
    int flexible = layout >= 3;
    ka_write_i32(&w, 77);
    ka_write_i16(&w, error_code);
    if (flexible)
        ka_write_compact_array_count(&w, n);
    else
        ka_write_array_count(&w, n);
    for (int i = 0; i < n; i++) {
        ka_write_i16(&w, e[i].key);
        ka_write_i16(&w, e[i].min);
        ka_write_i16(&w, e[i].max);
        if (flexible)
            ka_write_uvarint(&w, 0);
    }
    if (layout >= 1)
        ka_write_i32(&w, 0);
    if (flexible) {
        /* A SupportedFeatures-like tagged field that must survive untouched. */
        const uint8_t tags[] = {0x01, 0x00, 0x02, 0x01, 0x00};
        ka_write_raw(&w, tags, sizeof(tags));
    }
    assert_int_equal(w.err, 0);
    return w.len;
}

static int16_t max_at(const uint8_t *buf, int16_t layout, int i)
{
    size_t first = layout >= 3 ? 7 : 10;
    size_t stride = layout >= 3 ? 7 : 6;
    const uint8_t *p = buf + first + (size_t)i * stride + 4;
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}

static const struct entry broker[] = {
    {0, 0, 11}, /* Produce: not decoded, untouched */
    {3, 0, 13}, /* Metadata: newer broker, lowered to 12 */
    {18, 0, 4}, /* ApiVersions: equal, untouched */
    {19, 2, 7}, /* CreateTopics: equal, untouched */
    {37, 0, 2}, /* CreatePartitions: already lower, never raised */
    {45, 0, 1}, /* AlterPartitionReassignments v1 (Kafka 4.1): lowered to 0 */
    {44, 0, 1}, /* IncrementalAlterConfigs: equal */
};
#define NBROKER ((int)(sizeof(broker) / sizeof(broker[0])))

static void test_clamp_lowers_only_decoded_apis_in_every_format(void **state)
{
    (void)state;
    for (int16_t v = 0; v <= 4; v++) {
        uint8_t buf[256], before[256];
        size_t len = build(buf, sizeof(buf), v, 0, broker, NBROKER);
        memcpy(before, buf, len);
        int changed = 99;
        assert_int_equal(ka_apiversions_response_clamp(buf, len, v, &changed), 0);
        assert_int_equal(changed, 2);
        assert_int_equal(max_at(buf, v, 0), 11);
        assert_int_equal(max_at(buf, v, 1), 12);
        assert_int_equal(max_at(buf, v, 2), 4);
        assert_int_equal(max_at(buf, v, 3), 7);
        assert_int_equal(max_at(buf, v, 4), 2);
        assert_int_equal(max_at(buf, v, 5), 0);
        assert_int_equal(max_at(buf, v, 6), 1);
        /* Exactly two int16 fields differ; everything else is byte-identical. */
        int diffs = 0;
        for (size_t i = 0; i < len; i++)
            diffs += buf[i] != before[i];
        assert_int_equal(diffs, 2);
        /* Clamping is idempotent. */
        assert_int_equal(ka_apiversions_response_clamp(buf, len, v, &changed), 0);
        assert_int_equal(changed, 0);
    }
}

/* Gateway mode: an API whose responses carry broker endpoints is lowered to the newest version
 * the rewrite knows, so no client negotiates a version whose endpoints would pass unrewritten. */
static void test_gateway_clamps_the_apis_that_carry_endpoints(void **state)
{
    (void)state;
    const struct ka_ep_message *produce = ka_ep_message_find(0), *fetch = ka_ep_message_find(1);
    assert_non_null(produce);
    assert_non_null(fetch);
    static const struct entry newer[] = {
        {0, 0, 99}, /* Produce from a newer broker */
        {1, 4, 99}, /* Fetch */
        {3, 0, 13}, /* Metadata: decoded, its own clamp is lower still */
        {18, 0, 4}, /* ApiVersions: no endpoints */
    };
    for (int16_t v = 0; v <= 4; v++) {
        uint8_t buf[256];
        size_t len = build(buf, sizeof(buf), v, 0, newer, 4);
        int changed = 0;
        assert_int_equal(ka_apiversions_response_clamp(buf, len, v, &changed), 0);
        assert_int_equal(changed, 1); /* a sidecar lowers only Metadata */
        assert_int_equal(max_at(buf, v, 0), 99);
        len = build(buf, sizeof(buf), v, 0, newer, 4);
        ka_apiversions_clamp_endpoints(1);
        assert_int_equal(ka_apiversions_response_clamp(buf, len, v, &changed), 0);
        ka_apiversions_clamp_endpoints(0);
        assert_int_equal(changed, 3);
        assert_int_equal(max_at(buf, v, 0), produce->max_version);
        assert_int_equal(max_at(buf, v, 1), fetch->max_version);
        assert_int_equal(max_at(buf, v, 2), ka_decoded_max_version(3));
        assert_int_equal(max_at(buf, v, 3), 4);
    }
}

static void test_unsupported_version_answer_is_parsed_as_v0(void **state)
{
    (void)state;
    const struct entry only[] = {{18, 0, 7}};
    uint8_t buf[64];
    size_t len = build(buf, sizeof(buf), 0, KA_UNSUPPORTED_VERSION, only, 1);
    int changed = 0;
    assert_int_equal(ka_apiversions_response_clamp(buf, len, 4, &changed), 0);
    assert_int_equal(changed, 1);
    assert_int_equal(max_at(buf, 0, 0), ka_decoded_max_version(18));
}

static void test_body_that_fails_in_its_format_falls_back_to_v0(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t len = build(buf, sizeof(buf), 0, 0, broker, NBROKER);
    int changed = 0;
    assert_int_equal(ka_apiversions_response_clamp(buf, len, 3, &changed), 0);
    assert_int_equal(changed, 2);
    assert_int_equal(max_at(buf, 0, 1), 12);
}

static void test_newer_request_versions_use_the_newest_known_format(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t len = build(buf, sizeof(buf), 4, 0, broker, NBROKER);
    int changed = 0;
    assert_int_equal(ka_apiversions_response_clamp(buf, len, 5, &changed), 0);
    assert_int_equal(changed, 2);
}

static void test_no_overlap_leaves_the_entry_and_reports_it(void **state)
{
    (void)state;
    const struct entry e[] = {{19, 9, 12}, {3, 0, 13}};
    uint8_t buf[64];
    size_t len = build(buf, sizeof(buf), 1, 0, e, 2);
    int changed = 0;
    assert_int_equal(ka_apiversions_response_clamp(buf, len, 1, &changed), 0);
    assert_int_equal(changed, -1);
    assert_int_equal(max_at(buf, 1, 0), 12);
    assert_int_equal(max_at(buf, 1, 1), 12);
}

static void test_malformed_responses_are_left_untouched(void **state)
{
    (void)state;
    uint8_t buf[256], before[256];
    size_t len = build(buf, sizeof(buf), 2, 0, broker, NBROKER);
    memcpy(before, buf, len);
    int changed = 5;
    /* Cut in the middle of the entries: neither format parses. */
    assert_true(ka_apiversions_response_clamp(buf, len - 9, 2, &changed) < 0);
    assert_int_equal(changed, 0);
    assert_memory_equal(buf, before, len);
    /* A trailing byte is not an ApiVersions response in any format. */
    buf[len] = 0;
    assert_true(ka_apiversions_response_clamp(buf, len + 1, 2, &changed) < 0);
    assert_memory_equal(buf, before, len);
    /* A count larger than the frame. */
    buf[9] = 0x7f;
    assert_true(ka_apiversions_response_clamp(buf, len, 2, &changed) < 0);
    assert_int_equal(ka_apiversions_response_clamp(buf, 3, 2, &changed), KA_EUNDERFLOW);
    assert_int_equal(ka_apiversions_response_clamp(buf, len, -1, &changed), KA_EINVALID);
}

static void test_decoded_version_table_matches_the_codecs(void **state)
{
    (void)state;
    assert_int_equal(ka_decoded_max_version(19), 7);
    assert_int_equal(ka_decoded_max_version(3), 12);
    assert_int_equal(ka_decoded_max_version(18), 4);
    assert_int_equal(ka_decoded_max_version(37), 3);
    assert_int_equal(ka_decoded_max_version(45), 0);
    assert_int_equal(ka_decoded_max_version(32), 4);
    assert_int_equal(ka_decoded_max_version(44), 1);
    /* StreamsGroupHeartbeat: judged for its internal topics. */
    assert_int_equal(ka_decoded_max_version(88), 1);
    /* The minimum follows the codec: the pinned specs start CreateTopics at v2. */
    assert_int_equal(ka_decoded_min_version(19), KA_CREATETOPICS_REQUEST_MIN_VERSION);
    assert_int_equal(ka_decoded_min_version(19), 2);
    /* Pinned below what the codecs could decode: newer versions wait for tests. */
    assert_true(ka_decoded_max_version(3) < KA_METADATA_REQUEST_MAX_VERSION);
    assert_true(ka_decoded_max_version(45) < KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_MAX_VERSION);
    /* A codec alone does not clamp: kadmit reads these but does not judge them. */
    assert_non_null(ka_codec_find(60, KA_REQUEST));
    assert_int_equal(ka_decoded_max_version(60), -1);
    assert_int_equal(ka_decoded_max_version(17), -1);
    assert_int_equal(ka_decoded_max_version(0), -1);
    assert_int_equal(ka_decoded_max_version(9999), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clamp_lowers_only_decoded_apis_in_every_format),
        cmocka_unit_test(test_gateway_clamps_the_apis_that_carry_endpoints),
        cmocka_unit_test(test_unsupported_version_answer_is_parsed_as_v0),
        cmocka_unit_test(test_body_that_fails_in_its_format_falls_back_to_v0),
        cmocka_unit_test(test_newer_request_versions_use_the_newest_known_format),
        cmocka_unit_test(test_no_overlap_leaves_the_entry_and_reports_it),
        cmocka_unit_test(test_malformed_responses_are_left_untouched),
        cmocka_unit_test(test_decoded_version_table_matches_the_codecs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
