/*
 * ka_apiversions.h: lowering the versions a broker advertises to what
 * kadmit can decode.
 *
 * Clients pick, per API, the highest version both they and the broker
 * support, from the broker's ApiVersions response. kadmit must be able to
 * decode every request it admits, so it rewrites that response on its way
 * to the client: the max version of each API kadmit decodes is lowered to
 * ka_decoded_max_version(). Nothing is ever raised, other APIs pass
 * untouched, and the response keeps its size, so this is a pure in-place
 * edit of the frame.
 */
#ifndef KA_APIVERSIONS_H
#define KA_APIVERSIONS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"

/* The error code a broker sends when it cannot answer the requested version. */
#define KA_UNSUPPORTED_VERSION 35

/*
 * Clamps, in place, an ApiVersions response. `body` is the frame after its
 * 4-byte size prefix: response header v0 (the correlation id, as for every
 * ApiVersions response), then the body in the format of request_version.
 *
 * A broker that does not support request_version answers with a v0-format
 * body and error code 35 (UNSUPPORTED_VERSION); that body, and any body
 * that does not parse in request_version's format, is parsed as v0. Versions
 * above 4 are parsed in the v4 format. The whole body is validated before
 * any byte changes, so a frame is either clamped completely or not touched.
 *
 * For each ApiKeys entry of an API kadmit decodes:
 *   - max <= kadmit's max: left alone (never raised);
 *   - min <= kadmit's max < max: max lowered to kadmit's max;
 *   - kadmit's max < min: the broker offers only versions kadmit cannot
 *     decode. The entry is left as the broker sent it (a range with
 *     max < min would be a lie the client cannot act on) and *changed is -1,
 *     so the proxy can log it; such requests are later refused by the
 *     version check rather than forwarded blindly.
 *
 * Returns 0 with *changed set to the number of entries lowered (or -1 as
 * above), or a negative ka_err (KA_EUNDERFLOW, KA_EINVALID, KA_ELIMIT,
 * KA_ETRAILING) when the body does not parse; then nothing was changed.
 */
int ka_apiversions_response_clamp(uint8_t *body, size_t len, int16_t request_version, int *changed);

/*
 * Gateway mode (docs/gateway.md): from now on the clamp also lowers each API whose responses
 * carry broker endpoints (protocol/generated/ka_endpoint_table.h) to the newest version the
 * endpoint rewrite knows, so that no client negotiates a version whose endpoints it would not
 * see. One setting per process, as there is one server.
 */
void ka_apiversions_clamp_endpoints(int on);

#endif
