/*
 * ka_policy_json.c: the policy's JSON value readers (ka_policy_json.h).
 */
#include "ka_policy_json.h"

#include <inttypes.h>
#include <stdio.h>

/* Describes a JSON value for "got ..." in an error sentence. */
void ka_policy_describe(const json_t *v, char *buf, size_t len)
{
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(buf, len, "%g", json_real_value(v));
        break;
    case JSON_STRING:
        snprintf(buf, len, "\"%.40s\"", json_string_value(v));
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
        break;
    case JSON_NULL:
        snprintf(buf, len, "null");
        break;
    case JSON_OBJECT:
        snprintf(buf, len, "an object");
        break;
    case JSON_ARRAY:
        snprintf(buf, len, "an array");
        break;
    }
}

int ka_policy_get_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
                      char *err, size_t errlen)
{
    char got[64];

    if (json_is_integer(v) && json_integer_value(v) >= min && json_integer_value(v) <= max) {
        *out = json_integer_value(v);
        return 0;
    }
    ka_policy_describe(v, got, sizeof(got));
    ka_error_printf(err, errlen,
                    "%s: must be an integer between %" PRId64 " and %" PRId64 ", got %s", field,
                    min, max, got);
    return KA_EINVALID;
}
