/*
 * ka_header.h: Kafka request and response headers, and which version of
 * each a given API version uses.
 *
 * Request header v0 is api key, api version and correlation id; v1 adds the
 * client id; v2 adds a tagged-field section. Response header v0 is the
 * correlation id; v1 adds a tagged-field section. The header version is not
 * on the wire: it follows from the API and version (see
 * ka_request_header_version), so a proxy must look it up before it can find
 * where the body starts.
 */
#ifndef KA_HEADER_H
#define KA_HEADER_H

#include <stdint.h>

#include "ka_api_table.h"
#include "ka_codec.h"

struct ka_request_header {
    int16_t request_api_key;
    int16_t request_api_version;
    int32_t correlation_id;
    /* v1+: nullable, and still int16-length prefixed in v2 (the spec exempts
     * it from compact encoding so that any broker can read who is asking). */
    ka_slice_t client_id;
    /* v2: the tagged-field section, verbatim; empty means none. */
    ka_slice_t tagged_fields;
};

struct ka_response_header {
    int32_t correlation_id;
    /* v1: the tagged-field section, verbatim; empty means none. */
    ka_slice_t tagged_fields;
};

/*
 * The request header version for an API version: 2 when the version is
 * flexible, 0 for ControlledShutdown v0, 1 otherwise. Versions beyond the
 * specs follow the same rule (flexibility never goes away once introduced).
 * Returns -1 for an API key the specs do not know or a negative version.
 */
int16_t ka_request_header_version(int16_t api_key, int16_t api_version);

/*
 * The response header version: 1 when the version is flexible, else 0;
 * ApiVersions responses are always 0, whatever the version, because a
 * client must be able to read them before it knows what the broker speaks.
 * Returns -1 as ka_request_header_version does.
 */
int16_t ka_response_header_version(int16_t api_key, int16_t api_version);

int ka_request_header_decode(ka_reader_t *r, int16_t header_version, struct ka_request_header *out);
int ka_request_header_encode(ka_writer_t *w, int16_t header_version,
                             const struct ka_request_header *in);
int ka_response_header_decode(ka_reader_t *r, int16_t header_version,
                              struct ka_response_header *out);
int ka_response_header_encode(ka_writer_t *w, int16_t header_version,
                              const struct ka_response_header *in);

/*
 * Reads a request header whose version is not known yet: peeks at the api
 * key and version, looks up the header version (stored in *header_version
 * when that is not NULL) and decodes. An API key the specs do not know
 * fails with KA_EUNSUPPORTED and leaves the reader where it was, so the
 * caller can still forward the frame untouched.
 */
int ka_request_header_read(ka_reader_t *r, struct ka_request_header *out, int16_t *header_version);

#endif
