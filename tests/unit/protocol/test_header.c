/*
 * test_header.c: request and response headers, and the rule that picks
 * their version for each API version.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_header.h"

static void test_request_header_follows_flexibility(void **state)
{
    (void)state;
    assert_int_equal(ka_request_header_version(19, 4), 1);
    assert_int_equal(ka_request_header_version(19, 5), 2);
    assert_int_equal(ka_request_header_version(3, 8), 1);
    assert_int_equal(ka_request_header_version(3, 9), 2);
    assert_int_equal(ka_request_header_version(18, 2), 1);
    assert_int_equal(ka_request_header_version(18, 3), 2);
    assert_int_equal(ka_request_header_version(45, 0), 2);
    /* Produce v0 is not flexible and is not the v0 exception. */
    assert_int_equal(ka_request_header_version(0, 0), 1);
}

/*
 * ControlledShutdown (the one API whose v0 used request header v0) and the
 * other ZooKeeper-era inter-broker APIs are retired in the pinned specs: no
 * header version is known for them, like any API key the specs lack.
 */
static void test_retired_apis_have_no_header_version(void **state)
{
    (void)state;
    for (int16_t key = 4; key <= 7; key++) {
        assert_null(ka_api_info_find(key));
        assert_int_equal(ka_request_header_version(key, 0), -1);
        assert_int_equal(ka_response_header_version(key, 0), -1);
    }
    assert_non_null(ka_api_info_find(3));
    assert_non_null(ka_api_info_find(8));
}

static void test_versions_beyond_the_specs_stay_flexible(void **state)
{
    (void)state;
    assert_int_equal(ka_request_header_version(3, 14), 2);
    assert_int_equal(ka_response_header_version(3, 14), 1);
}

static void test_unknown_apis_have_no_header_version(void **state)
{
    (void)state;
    assert_int_equal(ka_request_header_version(9999, 0), -1);
    assert_int_equal(ka_response_header_version(-1, 0), -1);
    assert_int_equal(ka_request_header_version(19, -1), -1);
}

static void test_apiversions_responses_always_use_header_v0(void **state)
{
    (void)state;
    for (int16_t v = 0; v <= 10; v++)
        assert_int_equal(ka_response_header_version(18, v), 0);
    assert_int_equal(ka_response_header_version(19, 4), 0);
    assert_int_equal(ka_response_header_version(19, 5), 1);
}

static void test_request_header_v2_keeps_the_classic_client_id(void **state)
{
    (void)state;
    const uint8_t frame[] = {0x00, 0x13, 0x00, 0x07, 0x00, 0x00, 0x00, 0x2a,
                             0x00, 0x04, 'k',  'c',  'a',  't',  0x00, 0xff};
    ka_reader_t r;
    ka_reader_init(&r, frame, sizeof(frame));
    struct ka_request_header h;
    int16_t hv = -1;
    assert_int_equal(ka_request_header_read(&r, &h, &hv), 0);
    assert_int_equal(hv, 2);
    assert_int_equal(h.request_api_key, 19);
    assert_int_equal(h.request_api_version, 7);
    assert_int_equal(h.correlation_id, 42);
    assert_int_equal(h.client_id.len, 4);
    assert_memory_equal(h.client_id.ptr, "kcat", 4);
    assert_int_equal(r.off, 15);
    uint8_t out[32];
    ka_writer_t w;
    ka_writer_init_fixed(&w, out, sizeof(out));
    assert_int_equal(ka_request_header_encode(&w, 2, &h), 0);
    assert_int_equal(w.len, 15);
    assert_memory_equal(out, frame, 15);
}

static void test_request_headers_round_trip_in_every_version(void **state)
{
    (void)state;
    for (int16_t hv = 0; hv <= 2; hv++) {
        struct ka_request_header h = {3, 12, -7, KA_SLICE_NULL, {NULL, 0}};
        ka_writer_t w;
        ka_writer_init(&w, 64);
        assert_int_equal(ka_request_header_encode(&w, hv, &h), 0);
        assert_int_equal(w.len, (size_t)(hv == 0 ? 8 : hv == 1 ? 10 : 11));
        ka_reader_t r;
        ka_reader_init(&r, w.buf, w.len);
        struct ka_request_header got;
        assert_int_equal(ka_request_header_decode(&r, hv, &got), 0);
        assert_int_equal(got.correlation_id, -7);
        assert_int_equal(got.client_id.len, -1);
        assert_int_equal(ka_reader_remaining(&r), 0);
        ka_writer_free(&w);
    }
}

static void test_response_headers_round_trip_with_tags(void **state)
{
    (void)state;
    const uint8_t v1[] = {0, 0, 0, 9, 0x01, 0x00, 0x01, 0x77};
    ka_reader_t r;
    ka_reader_init(&r, v1, sizeof(v1));
    struct ka_response_header h;
    assert_int_equal(ka_response_header_decode(&r, 1, &h), 0);
    assert_int_equal(h.correlation_id, 9);
    uint8_t out[16];
    ka_writer_t w;
    ka_writer_init_fixed(&w, out, sizeof(out));
    assert_int_equal(ka_response_header_encode(&w, 1, &h), 0);
    assert_int_equal(w.len, sizeof(v1));
    assert_memory_equal(out, v1, sizeof(v1));
    ka_reader_init(&r, v1, sizeof(v1));
    assert_int_equal(ka_response_header_decode(&r, 0, &h), 0);
    assert_int_equal(r.off, 4);
    assert_int_equal(ka_response_header_decode(&r, 2, &h), KA_EUNSUPPORTED);
}

static void test_unknown_api_key_leaves_the_reader_in_place(void **state)
{
    (void)state;
    const uint8_t frame[] = {0x27, 0x0f, 0x00, 0x00, 0, 0, 0, 1};
    ka_reader_t r;
    ka_reader_init(&r, frame, sizeof(frame));
    struct ka_request_header h;
    int16_t hv = 0;
    assert_int_equal(ka_request_header_read(&r, &h, &hv), KA_EUNSUPPORTED);
    assert_int_equal(hv, -1);
    assert_int_equal(r.off, 0);
    assert_int_equal(r.err, 0);
    ka_reader_init(&r, frame, 3);
    assert_int_equal(ka_request_header_read(&r, &h, &hv), KA_EUNDERFLOW);
}

static void test_truncated_client_id_underflows(void **state)
{
    (void)state;
    const uint8_t frame[] = {0x00, 0x13, 0x00, 0x04, 0, 0, 0, 1, 0x00, 0x09, 'a'};
    ka_reader_t r;
    ka_reader_init(&r, frame, sizeof(frame));
    struct ka_request_header h;
    assert_int_equal(ka_request_header_decode(&r, 1, &h), KA_EUNDERFLOW);
    assert_int_equal(r.err_off, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_header_follows_flexibility),
        cmocka_unit_test(test_retired_apis_have_no_header_version),
        cmocka_unit_test(test_versions_beyond_the_specs_stay_flexible),
        cmocka_unit_test(test_unknown_apis_have_no_header_version),
        cmocka_unit_test(test_apiversions_responses_always_use_header_v0),
        cmocka_unit_test(test_request_header_v2_keeps_the_classic_client_id),
        cmocka_unit_test(test_request_headers_round_trip_in_every_version),
        cmocka_unit_test(test_response_headers_round_trip_with_tags),
        cmocka_unit_test(test_unknown_api_key_leaves_the_reader_in_place),
        cmocka_unit_test(test_truncated_client_id_underflows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
