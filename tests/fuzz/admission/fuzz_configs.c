/*
 * fuzz_configs.c: KIP-578's config path (admission/ka_admission_configs.c)
 * on untrusted request and response frames.
 *
 * Input: one flags byte (bit 0: no cluster view, so broker ids are not
 * checked; bit 1: the limits store is down), a big-endian u16 n, n bytes of
 * request frame (header and body, without the size prefix), and the rest as
 * the broker's response frame. An IncrementalAlterConfigs or AlterConfigs
 * request goes through ka_cfg_alter_request, a DescribeConfigs request
 * through ka_cfg_describe_request; when pending state is left, the response
 * goes through the matching response call. Every frame kadmit writes must
 * carry a right size prefix and decode with its codec, and every change
 * must be a valid limit.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_frames.h"
#include "ka_admission_configs.h"
#include "ka_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void responses(const ka_cfg_outcome_t *o, int16_t key, int16_t version, const uint8_t *resp,
                      size_t rlen)
{
    static const ka_cfg_override_t dyn[] = {{1, 5}, {2, -1}};
    static const ka_cfg_override_t file[] = {{2, 20}};
    static const ka_cfg_limits_t limits = {40, -1, dyn, 2, 1000, 9000, file, 1};
    ka_cfg_change_t *changes = NULL;
    uint8_t *merged = NULL;
    size_t mlen = 0, n = 0;
    int rc;

    if (key == KA_DESCRIBECONFIGS_REQUEST_API_KEY)
        rc = ka_cfg_describe_response(o->pending, &limits, resp, rlen, (size_t)1 << 20, &merged,
                                      &mlen);
    else
        rc = ka_cfg_alter_response(o->pending, resp, rlen, (size_t)1 << 20, &merged, &mlen,
                                   &changes, &n);
    if (rc == 0 && merged != NULL)
        check_frame(merged, mlen, key, version, KA_RESPONSE);
    for (size_t i = 0; i < n; i++)
        if (changes[i].value < 0 || (changes[i].key == KA_CFG_KEY_MAX_PARTITIONS &&
                                     changes[i].broker_id != KA_CFG_DEFAULT_ENTITY))
            abort();
    free(changes);
    free(merged);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int32_t brokers[] = {1, 2, 3};
    ka_cfg_ctx_t ctx = {brokers, 3, NULL, (size_t)1 << 20};
    ka_cfg_outcome_t o;
    int16_t key, version;
    size_t n;
    uint8_t *frame;

    if (size < 7)
        return 0;
    if (data[0] & 1)
        ctx.broker_ids = NULL;
    if (data[0] & 2)
        ctx.store_problem = "the limits topic is down";
    n = (size_t)data[1] << 8 | data[2];
    if (n > size - 3)
        n = size - 3;
    frame = framed(data + 3, n);
    key = n >= 2 ? (int16_t)(frame[4] << 8 | frame[5]) : -1;
    version = n >= 4 ? (int16_t)(frame[6] << 8 | frame[7]) : -1;
    if (key == KA_DESCRIBECONFIGS_REQUEST_API_KEY) {
        if (ka_cfg_describe_request(frame, n + 4, &o) < 0)
            abort();
    } else if (ka_cfg_alter_request(&ctx, frame, n + 4, &o) < 0) {
        abort();
    }
    if (o.action == KA_ADM_REWRITE || o.action == KA_ADM_ANSWER)
        check_frame(o.bytes, o.len, key, version,
                    o.action == KA_ADM_REWRITE ? KA_REQUEST : KA_RESPONSE);
    if (o.pending != NULL) {
        size_t rlen = size - 3 - n;
        uint8_t *resp = framed(data + 3 + n, rlen);

        responses(&o, key, version, resp, rlen + 4);
        free(resp);
    }
    ka_cfg_outcome_release(&o);
    free(frame);
    return 0;
}
