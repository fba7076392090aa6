/*
 * ka_header.c: request and response headers (see ka_header.h).
 *
 * The header rules come from the generated API table, which records per API
 * the first flexible version and the exceptions (ControlledShutdown v0's
 * header v0, ApiVersions' pinned response header v0). Keeping them as data
 * leaves room for per-API header maps such as KIP-1313's header v3.
 */
#include "ka_header.h"

int16_t ka_request_header_version(int16_t api_key, int16_t api_version)
{
    const struct ka_api_info *info = ka_api_info_find(api_key);
    if (info == NULL || api_version < 0)
        return -1;
    if (api_version < info->request_header_v0_below)
        return 0;
    if (info->first_flexible_version >= 0 && api_version >= info->first_flexible_version)
        return 2;
    return 1;
}

int16_t ka_response_header_version(int16_t api_key, int16_t api_version)
{
    const struct ka_api_info *info = ka_api_info_find(api_key);
    if (info == NULL || api_version < 0)
        return -1;
    if (info->response_header_always_v0)
        return 0;
    if (info->first_flexible_version >= 0 && api_version >= info->first_flexible_version)
        return 1;
    return 0;
}

int ka_request_header_decode(ka_reader_t *r, int16_t header_version, struct ka_request_header *out)
{
    if (header_version < 0 || header_version > 2)
        return ka_reader_fail(r, KA_EUNSUPPORTED);
    out->client_id = (ka_slice_t){NULL, -1};
    out->tagged_fields = (ka_slice_t){NULL, 0};
    KA_TRY(ka_read_i16(r, &out->request_api_key));
    KA_TRY(ka_read_i16(r, &out->request_api_version));
    KA_TRY(ka_read_i32(r, &out->correlation_id));
    if (header_version >= 1)
        KA_TRY(ka_read_nullable_string(r, &out->client_id));
    if (header_version >= 2)
        KA_TRY(ka_read_tagged_fields(r, &out->tagged_fields));
    return 0;
err_parse:
    return ka_codec_error(r);
}

int ka_request_header_encode(ka_writer_t *w, int16_t header_version,
                             const struct ka_request_header *in)
{
    if (header_version < 0 || header_version > 2)
        return KA_EUNSUPPORTED;
    KA_WTRY(ka_write_i16(w, in->request_api_key));
    KA_WTRY(ka_write_i16(w, in->request_api_version));
    KA_WTRY(ka_write_i32(w, in->correlation_id));
    if (header_version >= 1)
        KA_WTRY(ka_write_nullable_string(w, in->client_id));
    if (header_version >= 2)
        KA_WTRY(ka_write_tagged_fields(w, in->tagged_fields));
    return 0;
err_write:
    return w->err;
}

int ka_response_header_decode(ka_reader_t *r, int16_t header_version,
                              struct ka_response_header *out)
{
    if (header_version < 0 || header_version > 1)
        return ka_reader_fail(r, KA_EUNSUPPORTED);
    out->tagged_fields = (ka_slice_t){NULL, 0};
    KA_TRY(ka_read_i32(r, &out->correlation_id));
    if (header_version >= 1)
        KA_TRY(ka_read_tagged_fields(r, &out->tagged_fields));
    return 0;
err_parse:
    return ka_codec_error(r);
}

int ka_response_header_encode(ka_writer_t *w, int16_t header_version,
                              const struct ka_response_header *in)
{
    if (header_version < 0 || header_version > 1)
        return KA_EUNSUPPORTED;
    KA_WTRY(ka_write_i32(w, in->correlation_id));
    if (header_version >= 1)
        KA_WTRY(ka_write_tagged_fields(w, in->tagged_fields));
    return 0;
err_write:
    return w->err;
}

int ka_request_header_read(ka_reader_t *r, struct ka_request_header *out, int16_t *header_version)
{
    /* Peek with a copy so that an unknown API leaves the reader untouched. */
    ka_reader_t peek = *r;
    int16_t api_key, api_version;
    if (ka_read_i16(&peek, &api_key) < 0 || ka_read_i16(&peek, &api_version) < 0) {
        r->err = peek.err;
        r->err_off = peek.err_off;
        return peek.err;
    }
    int16_t hv = ka_request_header_version(api_key, api_version);
    if (header_version != NULL)
        *header_version = hv;
    if (hv < 0)
        return KA_EUNSUPPORTED;
    return ka_request_header_decode(r, hv, out);
}
