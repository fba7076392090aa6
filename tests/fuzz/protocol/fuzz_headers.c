/*
 * fuzz_headers.c: request and response header decoding.
 *
 * The first byte selects the header: bit 0 is the direction (1 = response),
 * the next bits the header version. The rest is a frame starting with the
 * header. A decoded header must re-encode to the bytes it was read from,
 * and the header-version rule must answer for whatever API it names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_header.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int response = data[0] & 1;
    int16_t hv = (int16_t)((data[0] >> 1) % (response ? 2 : 3));
    const uint8_t *frame = data + 1;
    size_t len = size - 1;
    uint8_t out[1 << 17];
    ka_writer_t w;
    ka_writer_init_fixed(&w, out, sizeof(out));
    ka_reader_t r;
    ka_reader_init(&r, frame, len);
    if (response) {
        struct ka_response_header h;
        if (ka_response_header_decode(&r, hv, &h) < 0) {
            check(r.err < 0 && r.err_off <= len);
            return 0;
        }
        check(ka_response_header_encode(&w, hv, &h) == 0);
    } else {
        struct ka_request_header h;
        if (ka_request_header_decode(&r, hv, &h) < 0) {
            check(r.err < 0 && r.err_off <= len);
            return 0;
        }
        int16_t rule = ka_request_header_version(h.request_api_key, h.request_api_version);
        check(rule >= -1 && rule <= 2);
        rule = ka_response_header_version(h.request_api_key, h.request_api_version);
        check(rule >= -1 && rule <= 1);
        check(ka_request_header_encode(&w, hv, &h) == 0);
        /* The self-describing reader agrees with the rule it applies. */
        ka_reader_t r2;
        ka_reader_init(&r2, frame, len);
        struct ka_request_header h2;
        int16_t picked;
        if (ka_request_header_read(&r2, &h2, &picked) == 0)
            check(picked == ka_request_header_version(h2.request_api_key, h2.request_api_version));
    }
    check(w.len == r.off && memcmp(out, frame, r.off) == 0);
    return 0;
}
