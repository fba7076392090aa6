/*
 * fuzz_apiversions_clamp.c: in-place ApiVersions clamping on arbitrary
 * bytes. The first two bytes are the request version (0-7, so versions the
 * clamp does not know are exercised too); the rest is the response after
 * its size prefix.
 *
 * Checked: a failure changes nothing; a success never raises a version,
 * only lowers decoded APIs to what kadmit decodes, and is idempotent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_api_table.h"
#include "ka_apiversions.h"
#include "ka_apiversions_response.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

/* Decodes the ApiVersions body after the correlation id, when it parses. */
static int decode(const uint8_t *buf, size_t len, int16_t version, ka_arena_t *arena,
                  struct ka_apiversions_response *out)
{
    if (len < 4 || version > KA_APIVERSIONS_RESPONSE_MAX_VERSION)
        return -1;
    ka_reader_t r;
    ka_reader_init(&r, buf + 4, len - 4);
    return ka_apiversions_response_decode(&r, version, arena, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int16_t version = (int16_t)(((data[0] << 8) | data[1]) % 8);
    size_t len = size - 2;
    uint8_t *body = malloc(len ? len : 1);
    uint8_t *before = malloc(len ? len : 1);
    if (body == NULL || before == NULL)
        goto done;
    memcpy(body, data + 2, len);
    memcpy(before, body, len);
    int changed = 0;
    int rc = ka_apiversions_response_clamp(body, len, version, &changed);
    if (rc < 0) {
        check(memcmp(body, before, len) == 0 && changed == 0);
        goto done;
    }
    check(changed >= -1);
    if (changed == 0)
        check(memcmp(body, before, len) == 0);
    int again = 0;
    check(ka_apiversions_response_clamp(body, len, version, &again) == 0);
    check(again == 0 || again == -1);

    /* Where the generated decoder reads the same format, compare entry by entry. */
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 24);
    struct ka_apiversions_response old_m, new_m;
    if (decode(before, len, version, &arena, &old_m) == 0 &&
        decode(body, len, version, &arena, &new_m) == 0 && old_m.error_code != 35) {
        check(old_m.api_keys.count == new_m.api_keys.count);
        for (int32_t i = 0; i < old_m.api_keys.count; i++) {
            const struct ka_apiversions_response_api_version *o = &old_m.api_keys.items[i];
            const struct ka_apiversions_response_api_version *n = &new_m.api_keys.items[i];
            int16_t kmax = ka_decoded_max_version(o->api_key);
            check(n->api_key == o->api_key && n->min_version == o->min_version);
            check(n->max_version <= o->max_version);
            if (kmax < 0 || o->max_version <= kmax || kmax < o->min_version)
                check(n->max_version == o->max_version);
            else
                check(n->max_version == kmax);
        }
    }
    ka_arena_destroy(&arena);
done:
    free(body);
    free(before);
    return 0;
}
