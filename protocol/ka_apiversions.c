/*
 * ka_apiversions.c: in-place clamping of ApiVersions responses (see
 * ka_apiversions.h).
 *
 * The response is walked twice with a bounded reader: once to validate the
 * whole body, once to patch. Only int16 max_version fields change, so the
 * offsets found on the first walk stay valid and no re-encoding is needed.
 */
#include "ka_apiversions.h"

#include "ka_api_table.h"
#include "ka_endpoint_table.h"
#include "ka_reader.h"

/* The newest body layout this file knows; newer requests are parsed as it. */
#define KA_APIVERSIONS_NEWEST_LAYOUT 4
/* Gateway mode: the APIs whose responses carry broker endpoints are clamped too, to the
 * newest version the rewrite knows (ka_apiversions_clamp_endpoints). */
static int clamp_endpoints;

void ka_apiversions_clamp_endpoints(int on)
{
    clamp_endpoints = on;
}

/* Fewest bytes of one ApiKeys entry: key, min and max (plus tags when flexible). */
#define KA_APIVERSIONS_ENTRY_SIZE 6

struct clamp_result {
    int lowered;    /* entries whose max was (or would be) lowered */
    int no_overlap; /* entries kadmit cannot decode at any offered version */
};

static void write_i16(uint8_t *p, int16_t v)
{
    p[0] = (uint8_t)((uint16_t)v >> 8);
    p[1] = (uint8_t)v;
}

/*
 * Walks the body in the given layout. With patch == 0 it only validates
 * (and counts what would change); with patch != 0 it also rewrites. The
 * reader fails on anything out of bounds, so patching only ever touches
 * bytes a successful validation walk has already read.
 */
static int walk(uint8_t *body, size_t len, int16_t layout, int patch, struct clamp_result *res)
{
    ka_reader_t r;
    ka_reader_init(&r, body, len);
    int flexible = layout >= 3;
    int32_t correlation_id, throttle_time_ms, count;
    int16_t error_code;
    ka_slice_t tagged_fields;
    res->lowered = 0;
    res->no_overlap = 0;
    KA_TRY(ka_read_i32(&r, &correlation_id));
    KA_TRY(ka_read_i16(&r, &error_code));
    if (flexible)
        KA_TRY(ka_read_compact_array_count(&r, KA_APIVERSIONS_ENTRY_SIZE + 1, KA_MAX_ARRAY_COUNT,
                                           &count));
    else
        KA_TRY(ka_read_array_count(&r, KA_APIVERSIONS_ENTRY_SIZE, KA_MAX_ARRAY_COUNT, &count));
    for (int32_t i = 0; i < count; i++) {
        int16_t api_key, min_version, max_version;
        KA_TRY(ka_read_i16(&r, &api_key));
        KA_TRY(ka_read_i16(&r, &min_version));
        size_t max_off = r.off;
        KA_TRY(ka_read_i16(&r, &max_version));
        if (flexible)
            KA_TRY(ka_read_tagged_fields(&r, &tagged_fields));
        int16_t decodable = ka_decoded_max_version(api_key);
        const struct ka_ep_message *ep = clamp_endpoints ? ka_ep_message_find(api_key) : NULL;
        if (ep != NULL && (decodable < 0 || ep->max_version < decodable))
            decodable = ep->max_version; /* a newer version's endpoints would pass unseen */
        if (decodable < 0 || max_version <= decodable)
            continue;
        if (decodable < min_version) {
            res->no_overlap++;
            continue;
        }
        res->lowered++;
        if (patch)
            write_i16(body + max_off, decodable);
    }
    if (layout >= 1)
        KA_TRY(ka_read_i32(&r, &throttle_time_ms));
    if (flexible)
        KA_TRY(ka_read_tagged_fields(&r, &tagged_fields));
    if (ka_reader_remaining(&r) != 0)
        return KA_ETRAILING;
    return 0;
err_parse:
    return r.err != 0 ? r.err : KA_EINVALID;
}

int ka_apiversions_response_clamp(uint8_t *body, size_t len, int16_t request_version, int *changed)
{
    struct clamp_result res;
    *changed = 0;
    if (request_version < 0)
        return KA_EINVALID;
    if (len < 6)
        return KA_EUNDERFLOW;
    /* The error code sits right after the correlation id in every layout. */
    int16_t error_code = (int16_t)((uint16_t)body[4] << 8 | body[5]);
    int16_t layout = request_version > KA_APIVERSIONS_NEWEST_LAYOUT ? KA_APIVERSIONS_NEWEST_LAYOUT
                                                                    : request_version;
    if (error_code == KA_UNSUPPORTED_VERSION)
        layout = 0;
    int rc = walk(body, len, layout, 0, &res);
    if (rc < 0 && layout != 0) {
        /* A broker that rejects the version answers in the v0 format. */
        int rc_v0 = walk(body, len, 0, 0, &res);
        if (rc_v0 < 0)
            return rc;
        layout = 0;
        rc = 0;
    }
    if (rc < 0)
        return rc;
    if (res.lowered > 0)
        walk(body, len, layout, 1, &res);
    *changed = res.no_overlap > 0 ? -1 : res.lowered;
    return 0;
}
