/* ka_decode_error.c: decode errors as sentences (see ka_decode_error.h). */
#include "ka_decode_error.h"

#include <stdio.h>

#include "ka_api_table.h"

int ka_decode_error_format_dir(char *buf, size_t len, int16_t api_key, int16_t version,
                               enum ka_direction direction, const ka_reader_t *r)
{
    const char *dir = direction == KA_RESPONSE ? "response" : "request";
    const char *what = r->err != 0 ? ka_strerror(r->err) : "no error recorded";
    int n;
    if (ka_api_info_find(api_key) != NULL)
        n = snprintf(buf, len, "%s v%d %s: %s at byte %zu", ka_api_name(api_key), version, dir,
                     what, r->err_off);
    else
        n = snprintf(buf, len, "API %d v%d %s: %s at byte %zu", api_key, version, dir, what,
                     r->err_off);
    if (n < 0 || (size_t)n >= len)
        return KA_EOVERFLOW;
    return 0;
}

int ka_decode_error_format(char *buf, size_t len, int16_t api_key, int16_t version,
                           const ka_reader_t *r)
{
    return ka_decode_error_format_dir(buf, len, api_key, version, KA_REQUEST, r);
}
