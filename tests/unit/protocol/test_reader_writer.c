/*
 * test_reader_writer.c: the bounded reader and writer, primitive by
 * primitive, including every cap and the malformed inputs an attacker
 * would send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_codec.h"

static ka_reader_t reader_of(const uint8_t *buf, size_t len)
{
    ka_reader_t r;
    ka_reader_init(&r, buf, len);
    return r;
}

static void test_fixed_width_values_round_trip(void **state)
{
    (void)state;
    uint8_t buf[64];
    ka_writer_t w;
    ka_writer_init_fixed(&w, buf, sizeof(buf));
    uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    assert_int_equal(ka_write_i8(&w, -5), 0);
    assert_int_equal(ka_write_bool(&w, 1), 0);
    assert_int_equal(ka_write_i16(&w, -300), 0);
    assert_int_equal(ka_write_u16(&w, 65000), 0);
    assert_int_equal(ka_write_i32(&w, -70000), 0);
    assert_int_equal(ka_write_u32(&w, 4000000000u), 0);
    assert_int_equal(ka_write_i64(&w, INT64_MIN), 0);
    assert_int_equal(ka_write_f64(&w, 2.5), 0);
    assert_int_equal(ka_write_uuid(&w, uuid), 0);
    ka_reader_t r = reader_of(buf, w.len);
    int8_t i8;
    uint8_t b;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    double f64;
    uint8_t got[16];
    assert_int_equal(ka_read_i8(&r, &i8), 0);
    assert_int_equal(ka_read_bool(&r, &b), 0);
    assert_int_equal(ka_read_i16(&r, &i16), 0);
    assert_int_equal(ka_read_u16(&r, &u16), 0);
    assert_int_equal(ka_read_i32(&r, &i32), 0);
    assert_int_equal(ka_read_u32(&r, &u32), 0);
    assert_int_equal(ka_read_i64(&r, &i64), 0);
    assert_int_equal(ka_read_f64(&r, &f64), 0);
    assert_int_equal(ka_read_uuid(&r, got), 0);
    assert_int_equal(i8, -5);
    assert_int_equal(b, 1);
    assert_int_equal(i16, -300);
    assert_int_equal(u16, 65000);
    assert_int_equal(i32, -70000);
    assert_int_equal(u32, 4000000000u);
    assert_true(i64 == INT64_MIN);
    assert_true(f64 == 2.5);
    assert_memory_equal(got, uuid, 16);
    assert_int_equal(ka_reader_remaining(&r), 0);
}

static void test_varints_use_minimal_encoding_and_round_trip(void **state)
{
    (void)state;
    const int64_t values[] = {0,   1,         -1,        63,        -64,      64,
                              300, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        ka_writer_t w;
        ka_writer_init(&w, 64);
        assert_int_equal(ka_write_varlong(&w, values[i]), 0);
        if (values[i] >= INT32_MIN && values[i] <= INT32_MAX)
            assert_int_equal(ka_write_varint(&w, (int32_t)values[i]), 0);
        ka_reader_t r = reader_of(w.buf, w.len);
        int64_t l;
        assert_int_equal(ka_read_varlong(&r, &l), 0);
        assert_true(l == values[i]);
        if (values[i] >= INT32_MIN && values[i] <= INT32_MAX) {
            int32_t v;
            assert_int_equal(ka_read_varint(&r, &v), 0);
            assert_int_equal(v, values[i]);
        }
        assert_int_equal(ka_reader_remaining(&r), 0);
        assert_int_equal(r.noncanonical, 0);
        ka_writer_free(&w);
    }
    uint8_t buf[8];
    ka_writer_t w;
    ka_writer_init_fixed(&w, buf, sizeof(buf));
    assert_int_equal(ka_write_uvarint(&w, 300), 0);
    assert_int_equal(w.len, 2);
    assert_int_equal(buf[0], 0xac);
    assert_int_equal(buf[1], 0x02);
}

static void test_truncated_and_overlong_varints_are_rejected(void **state)
{
    (void)state;
    const uint8_t truncated[] = {0x80, 0x80};
    ka_reader_t r = reader_of(truncated, sizeof(truncated));
    uint32_t u;
    assert_int_equal(ka_read_uvarint(&r, &u), KA_EUNDERFLOW);
    assert_int_equal(r.off, 0);
    /* Six bytes cannot be a 32-bit varint. */
    const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    r = reader_of(six, sizeof(six));
    assert_int_equal(ka_read_uvarint(&r, &u), KA_EINVALID);
    /* Five bytes whose value needs more than 32 bits. */
    const uint8_t wide[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    r = reader_of(wide, sizeof(wide));
    assert_int_equal(ka_read_uvarint(&r, &u), KA_EINVALID);
    /* A tenth varlong byte may only carry bit 63. */
    const uint8_t long10[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    r = reader_of(long10, sizeof(long10));
    int64_t l;
    assert_int_equal(ka_read_varlong(&r, &l), KA_EINVALID);
}

static void test_overlong_varint_is_read_but_marked_noncanonical(void **state)
{
    (void)state;
    const uint8_t padded[] = {0x81, 0x00};
    ka_reader_t r = reader_of(padded, sizeof(padded));
    uint32_t u;
    assert_int_equal(ka_read_uvarint(&r, &u), 0);
    assert_int_equal(u, 1);
    assert_int_equal(r.noncanonical, 1);
}

static void test_strings_and_bytes_round_trip_in_every_form(void **state)
{
    (void)state;
    ka_writer_t w;
    ka_writer_init(&w, 1024);
    ka_slice_t abc = KA_SLICE_LIT("abc");
    ka_slice_t empty = {NULL, 0};
    assert_int_equal(ka_write_string(&w, abc), 0);
    assert_int_equal(ka_write_nullable_string(&w, KA_SLICE_NULL), 0);
    assert_int_equal(ka_write_compact_string(&w, empty), 0);
    assert_int_equal(ka_write_compact_nullable_string(&w, KA_SLICE_NULL), 0);
    assert_int_equal(ka_write_bytes(&w, abc), 0);
    assert_int_equal(ka_write_nullable_bytes(&w, KA_SLICE_NULL), 0);
    assert_int_equal(ka_write_compact_bytes(&w, abc), 0);
    assert_int_equal(ka_write_compact_nullable_bytes(&w, abc), 0);
    ka_reader_t r = reader_of(w.buf, w.len);
    ka_slice_t s;
    assert_int_equal(ka_read_string(&r, &s), 0);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "abc", 3);
    assert_int_equal(ka_read_nullable_string(&r, &s), 0);
    assert_int_equal(s.len, -1);
    assert_int_equal(ka_read_compact_string(&r, &s), 0);
    assert_int_equal(s.len, 0);
    assert_int_equal(ka_read_compact_nullable_string(&r, &s), 0);
    assert_int_equal(s.len, -1);
    assert_int_equal(ka_read_bytes(&r, &s), 0);
    assert_int_equal(s.len, 3);
    assert_int_equal(ka_read_nullable_bytes(&r, &s), 0);
    assert_int_equal(s.len, -1);
    assert_int_equal(ka_read_compact_bytes(&r, &s), 0);
    assert_int_equal(s.len, 3);
    assert_int_equal(ka_read_compact_nullable_bytes(&r, &s), 0);
    assert_int_equal(s.len, 3);
    assert_int_equal(ka_reader_remaining(&r), 0);
    ka_writer_free(&w);
}

static void test_null_where_not_nullable_is_invalid(void **state)
{
    (void)state;
    const uint8_t classic_null[] = {0xff, 0xff};
    ka_reader_t r = reader_of(classic_null, sizeof(classic_null));
    ka_slice_t s;
    assert_int_equal(ka_read_string(&r, &s), KA_EINVALID);
    assert_int_equal(r.err_off, 0);
    const uint8_t compact_null[] = {0x00};
    r = reader_of(compact_null, sizeof(compact_null));
    assert_int_equal(ka_read_compact_string(&r, &s), KA_EINVALID);
    uint8_t buf[8];
    ka_writer_t w;
    ka_writer_init_fixed(&w, buf, sizeof(buf));
    assert_int_equal(ka_write_string(&w, KA_SLICE_NULL), KA_EINVALID);
    ka_writer_init_fixed(&w, buf, sizeof(buf));
    assert_int_equal(ka_write_array_count(&w, -1), KA_EINVALID);
}

static void test_negative_lengths_other_than_null_are_invalid(void **state)
{
    (void)state;
    const uint8_t minus2[] = {0xff, 0xfe};
    ka_reader_t r = reader_of(minus2, sizeof(minus2));
    ka_slice_t s;
    assert_int_equal(ka_read_nullable_string(&r, &s), KA_EINVALID);
    const uint8_t bytes_minus5[] = {0xff, 0xff, 0xff, 0xfb};
    r = reader_of(bytes_minus5, sizeof(bytes_minus5));
    assert_int_equal(ka_read_nullable_bytes(&r, &s), KA_EINVALID);
    const uint8_t count_minus2[] = {0xff, 0xff, 0xff, 0xfe};
    r = reader_of(count_minus2, sizeof(count_minus2));
    int32_t n;
    assert_int_equal(ka_read_nullable_array_count(&r, 1, KA_MAX_ARRAY_COUNT, &n), KA_EINVALID);
}

static void test_lengths_beyond_the_frame_underflow_without_moving(void **state)
{
    (void)state;
    const uint8_t short_string[] = {0x00, 0x05, 'a', 'b'};
    ka_reader_t r = reader_of(short_string, sizeof(short_string));
    ka_slice_t s;
    assert_int_equal(ka_read_string(&r, &s), KA_EUNDERFLOW);
    assert_int_equal(r.off, 0);
    /* The first error sticks: later reads fail the same way. */
    int16_t v;
    assert_int_equal(ka_read_i16(&r, &v), KA_EUNDERFLOW);
    const uint8_t huge_compact[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    r = reader_of(huge_compact, sizeof(huge_compact));
    assert_int_equal(ka_read_compact_bytes(&r, &s), KA_ELIMIT);
}

static void test_huge_array_counts_are_refused_before_allocation(void **state)
{
    (void)state;
    const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    ka_reader_t r = reader_of(huge, sizeof(huge));
    int32_t n;
    assert_int_equal(ka_read_array_count(&r, 4, INT32_MAX, &n), KA_ELIMIT);
    /* Under the caps but more elements than the remaining bytes can hold. */
    const uint8_t lie[] = {0x00, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0};
    r = reader_of(lie, sizeof(lie));
    assert_int_equal(ka_read_array_count(&r, 4, KA_MAX_ARRAY_COUNT, &n), KA_EUNDERFLOW);
    r = reader_of(lie, sizeof(lie));
    assert_int_equal(ka_read_array_count(&r, 4, 2, &n), KA_ELIMIT);
    r = reader_of(lie, sizeof(lie));
    assert_int_equal(ka_read_array_count(&r, 2, KA_MAX_ARRAY_COUNT, &n), 0);
    assert_int_equal(n, 3);
}

static void test_tagged_fields_are_validated_and_kept_verbatim(void **state)
{
    (void)state;
    const uint8_t ok[] = {0x02, 0x01, 0x01, 0xaa, 0x05, 0x00, 0x99};
    ka_reader_t r = reader_of(ok, sizeof(ok));
    ka_slice_t sec;
    assert_int_equal(ka_read_tagged_fields(&r, &sec), 0);
    assert_int_equal(sec.len, 6);
    uint8_t out[16];
    ka_writer_t w;
    ka_writer_init_fixed(&w, out, sizeof(out));
    assert_int_equal(ka_write_tagged_fields(&w, sec), 0);
    assert_int_equal(w.len, 6);
    assert_memory_equal(out, ok, 6);
    /* Tags must strictly increase. */
    const uint8_t repeated[] = {0x02, 0x01, 0x00, 0x01, 0x00};
    r = reader_of(repeated, sizeof(repeated));
    assert_int_equal(ka_read_tagged_fields(&r, &sec), KA_EINVALID);
    const uint8_t decreasing[] = {0x02, 0x03, 0x00, 0x01, 0x00};
    r = reader_of(decreasing, sizeof(decreasing));
    assert_int_equal(ka_read_tagged_fields(&r, &sec), KA_EINVALID);
    const uint8_t too_many[] = {65};
    r = reader_of(too_many, sizeof(too_many));
    assert_int_equal(ka_read_tagged_fields(&r, &sec), KA_ELIMIT);
    const uint8_t too_big[] = {0x01, 0x00, 0x81, 0x80, 0x04};
    r = reader_of(too_big, sizeof(too_big));
    assert_int_equal(ka_read_tagged_fields(&r, &sec), KA_ELIMIT);
    const uint8_t cut[] = {0x01, 0x00, 0x03, 0x01};
    r = reader_of(cut, sizeof(cut));
    assert_int_equal(ka_read_tagged_fields(&r, &sec), KA_EUNDERFLOW);
    /* An empty slice writes the empty section. */
    ka_writer_init_fixed(&w, out, sizeof(out));
    assert_int_equal(ka_write_tagged_fields(&w, (ka_slice_t){NULL, 0}), 0);
    assert_int_equal(w.len, 1);
    assert_int_equal(out[0], 0);
}

static void test_writer_refuses_to_pass_its_cap(void **state)
{
    (void)state;
    uint8_t buf[3];
    ka_writer_t w;
    ka_writer_init_fixed(&w, buf, sizeof(buf));
    assert_int_equal(ka_write_i16(&w, 1), 0);
    assert_int_equal(ka_write_i16(&w, 2), KA_EOVERFLOW);
    assert_int_equal(w.len, 2);
    assert_int_equal(ka_write_i8(&w, 3), KA_EOVERFLOW); /* sticky */
    ka_writer_init(&w, 1000);
    for (int i = 0; i < 250; i++)
        assert_int_equal(ka_write_i32(&w, i), 0);
    assert_int_equal(ka_write_i8(&w, 0), KA_EOVERFLOW);
    assert_int_equal(w.len, 1000);
    ka_writer_free(&w);
    ka_writer_init(&w, 1 << 20);
    uint8_t big[40000];
    memset(big, 7, sizeof(big));
    assert_int_equal(ka_write_string(&w, (ka_slice_t){big, 32768}), KA_ELIMIT);
    ka_writer_free(&w);
}

static void test_patch_fills_a_reserved_size_prefix(void **state)
{
    (void)state;
    ka_writer_t w;
    ka_writer_init(&w, 64);
    assert_int_equal(ka_write_i32(&w, 0), 0);
    assert_int_equal(ka_write_i16(&w, 9), 0);
    assert_int_equal(ka_writer_patch_i32(&w, 0, (int32_t)w.len - 4), 0);
    assert_int_equal(w.buf[3], 2);
    assert_int_equal(ka_writer_patch_i32(&w, 3, 1), KA_EINVALID);
    ka_writer_free(&w);
}

static void test_arena_enforces_its_cap(void **state)
{
    (void)state;
    ka_arena_t a;
    ka_arena_init(&a, 1024);
    void *p;
    assert_int_equal(ka_arena_alloc_array(&a, 10, 8, &p), 0);
    assert_non_null(p);
    assert_int_equal(ka_arena_alloc_array(&a, 0, 8, &p), 0);
    assert_null(p);
    assert_int_equal(ka_arena_alloc_array(&a, 1000, 8, &p), KA_ELIMIT);
    assert_int_equal(ka_arena_alloc_array(&a, SIZE_MAX / 2, 4, &p), KA_ELIMIT);
    ka_arena_reset(&a);
    assert_int_equal(a.used, 0);
    assert_int_equal(ka_arena_alloc_array(&a, 100, 8, &p), 0);
    ka_arena_destroy(&a);
    ka_arena_init(&a, 64 << 20);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ka_arena_alloc_array(&a, 1000, 100, &p), 0);
    ka_arena_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_width_values_round_trip),
        cmocka_unit_test(test_varints_use_minimal_encoding_and_round_trip),
        cmocka_unit_test(test_truncated_and_overlong_varints_are_rejected),
        cmocka_unit_test(test_overlong_varint_is_read_but_marked_noncanonical),
        cmocka_unit_test(test_strings_and_bytes_round_trip_in_every_form),
        cmocka_unit_test(test_null_where_not_nullable_is_invalid),
        cmocka_unit_test(test_negative_lengths_other_than_null_are_invalid),
        cmocka_unit_test(test_lengths_beyond_the_frame_underflow_without_moving),
        cmocka_unit_test(test_huge_array_counts_are_refused_before_allocation),
        cmocka_unit_test(test_tagged_fields_are_validated_and_kept_verbatim),
        cmocka_unit_test(test_writer_refuses_to_pass_its_cap),
        cmocka_unit_test(test_patch_fills_a_reserved_size_prefix),
        cmocka_unit_test(test_arena_enforces_its_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
