/* test_decode_error.c: decode failures become sentences an operator can act on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_protocol.h"

static void test_truncated_createtopics_names_api_version_and_offset(void **state)
{
    (void)state;
    /* v5: one topic whose name claims 20 bytes where 10 remain. */
    const uint8_t body[] = {0x02, 0x15, 'o', 'r', 0, 0, 0, 0, 0, 0, 0, 0};
    ka_arena_t arena;
    ka_arena_init(&arena, 4096);
    struct ka_createtopics_request req;
    ka_reader_t r;
    ka_reader_init(&r, body, sizeof(body));
    assert_true(ka_createtopics_request_decode(&r, 5, &arena, &req) < 0);
    char buf[128];
    assert_int_equal(ka_decode_error_format(buf, sizeof(buf), 19, 5, &r), 0);
    assert_string_equal(buf, "CreateTopics v5 request: frame ended before the field did at byte 1");
    ka_arena_destroy(&arena);
}

static void test_response_direction_and_unknown_api_are_named(void **state)
{
    (void)state;
    const uint8_t body[] = {0, 0};
    ka_reader_t r;
    ka_reader_init(&r, body, sizeof(body));
    int32_t v;
    assert_int_equal(ka_read_i32(&r, &v), KA_EUNDERFLOW);
    char buf[128];
    assert_int_equal(ka_decode_error_format_dir(buf, sizeof(buf), 3, 12, KA_RESPONSE, &r), 0);
    assert_string_equal(buf, "Metadata v12 response: frame ended before the field did at byte 0");
    assert_int_equal(ka_decode_error_format(buf, sizeof(buf), 4242, 1, &r), 0);
    assert_string_equal(buf, "API 4242 v1 request: frame ended before the field did at byte 0");
}

static void test_short_buffer_is_cut_and_reported(void **state)
{
    (void)state;
    ka_reader_t r;
    ka_reader_init(&r, NULL, 0);
    ka_reader_fail(&r, KA_ETRAILING);
    char buf[16];
    assert_int_equal(ka_decode_error_format(buf, sizeof(buf), 19, 7, &r), KA_EOVERFLOW);
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_createtopics_names_api_version_and_offset),
        cmocka_unit_test(test_response_direction_and_unknown_api_are_named),
        cmocka_unit_test(test_short_buffer_is_cut_and_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
