/*
 * test_log.c: log lines are always whole and safe (base/ka_log.c): values
 * never carry raw CR, LF, escape or invalid UTF-8 bytes in either format,
 * and a line too long for the buffer is cut between units and, in JSON,
 * still parses as one object that says it was cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "ka_log.h"

#define TS "2026-01-01T00:00:00.000Z"

static void format(enum ka_log_format f, const ka_kv_t *kvs, size_t n, char *out, size_t cap)
{
    ka_log_format_line(out, cap, f, KA_LOG_WARN, TS, "something happened", kvs, n);
}

/* No byte below 0x20 but the final newline, and no DEL. */
static void assert_no_raw_controls(const char *line)
{
    size_t len = strlen(line);
    assert_true(len > 0 && line[len - 1] == '\n');
    for (size_t i = 0; i + 1 < len; i++)
        assert_false((unsigned char)line[i] < 0x20 || (unsigned char)line[i] == 0x7f);
}

static void test_text_and_json_escape_cr_escape_and_invalid_bytes(void **state)
{
    (void)state;
    const char *hostile = "evil\r2026-01-01T00:00:00Z ERROR forged\x1b[2J\x7f\xff\xc3";
    ka_kv_t kvs[] = {KA_KS("client_id", hostile), KA_KI("n", 3)};
    char line[4096];

    format(KA_LOG_TEXT, kvs, 2, line, sizeof(line));
    assert_no_raw_controls(line);
    assert_non_null(strstr(line, "client_id=\"evil\\u000d2026"));
    assert_non_null(strstr(line, "\\u001b[2J\\u007f\\u00ff\\u00c3\" n=3"));

    format(KA_LOG_JSON, kvs, 2, line, sizeof(line));
    assert_no_raw_controls(line);
    json_error_t err;
    json_t *o = json_loads(line, 0, &err);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "n")), 3);
    assert_non_null(strstr(json_string_value(json_object_get(o, "client_id")), "\r2026"));
    json_decref(o);
}

/* Valid UTF-8 passes through unchanged; plain values stay bare in text. */
static void test_valid_utf8_and_plain_values_pass_unchanged(void **state)
{
    (void)state;
    ka_kv_t kvs[] = {KA_KS("topic", "orders"), KA_KS("who", "Zoë ✓")};
    char line[4096];

    format(KA_LOG_TEXT, kvs, 2, line, sizeof(line));
    assert_non_null(strstr(line, " topic=orders who=\"Zoë ✓\"\n"));
    format(KA_LOG_JSON, kvs, 2, line, sizeof(line));
    assert_non_null(strstr(line, "\"who\":\"Zoë ✓\"}"));
}

/* Values around the line's size, of every escape width: each JSON line
 * parses, keeps its first fields, and is either whole or says it was cut. */
static void test_long_lines_are_cut_but_stay_valid(void **state)
{
    (void)state;
    static char big[5000];
    const char fills[] = {'a', '"', '\r', '\\'};
    int cut = 0;
    for (size_t f = 0; f < sizeof(fills); f++) {
        for (size_t len = 1900; len < 2100; len += 7) {
            memset(big, fills[f], len);
            big[len] = '\0';
            ka_kv_t kvs[] = {KA_KI("session", 12), KA_KS("detail", big), KA_KI("after", 1)};
            char line[4096];

            format(KA_LOG_JSON, kvs, 3, line, sizeof(line));
            assert_true(strlen(line) <= 2048);
            assert_no_raw_controls(line);
            json_error_t err;
            json_t *o = json_loads(line, 0, &err);
            if (o == NULL)
                fail_msg("invalid JSON (%s) for fill %d length %zu: %s", err.text, fills[f], len,
                         line);
            assert_int_equal(json_integer_value(json_object_get(o, "session")), 12);
            /* Cut, or whole with every field. */
            if (json_is_true(json_object_get(o, "truncated"))) {
                assert_null(json_object_get(o, "after"));
                cut++;
            } else {
                assert_int_equal(json_integer_value(json_object_get(o, "after")), 1);
            }
            json_decref(o);

            format(KA_LOG_TEXT, kvs, 3, line, sizeof(line));
            assert_true(strlen(line) <= 2048);
            assert_no_raw_controls(line);
            assert_true(strstr(line, " (truncated)\n") != NULL ||
                        strstr(line, " after=1\n") != NULL);
        }
    }
    assert_true(cut > 100); /* most of them do not fit */
}

/* A line that fits is never marked. */
static void test_short_lines_are_not_marked_cut(void **state)
{
    (void)state;
    ka_kv_t kvs[] = {KA_KI("session", 1)};
    char line[4096];

    format(KA_LOG_JSON, kvs, 1, line, sizeof(line));
    assert_null(strstr(line, "truncated"));
    format(KA_LOG_TEXT, kvs, 1, line, sizeof(line));
    assert_string_equal(line, TS " WARN  something happened session=1\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_and_json_escape_cr_escape_and_invalid_bytes),
        cmocka_unit_test(test_valid_utf8_and_plain_values_pass_unchanged),
        cmocka_unit_test(test_long_lines_are_cut_but_stay_valid),
        cmocka_unit_test(test_short_lines_are_not_marked_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
