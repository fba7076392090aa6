/*
 * fuzz_admission.c: the admission path on untrusted request and response
 * frames.
 *
 * Input: one flags byte (bit 0 audit mode, bit 1 may wait for a view, bit 2
 * no view at all), a big-endian u16 n, n bytes of request frame (header and
 * body, without the size prefix), and the rest as the broker's response
 * frame. The request goes through ka_adm_request; when it leaves pending
 * state, the response goes through ka_adm_response. Every frame kadmit
 * writes must carry a right size prefix and decode with its codec, at the
 * version it claims: a rewrite at its header's (only Metadata v0-3 may go on
 * as v4), a merged response at the client's.
 *
 * The same request also runs as the ledger's steps, rejudged against an
 * empty ledger: with nothing competing, phase 2 must keep every verdict,
 * so the action and bytes must equal the one-call form's.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_frames.h"
#include "ka_admission.h"
#include "ka_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ka_slice_t lit(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

/* Three brokers with room for a few replicas, and two topics. */
static ka_cluster_t *make_view(void)
{
    static const int32_t replicas[][2] = {{1, 2}, {2, 3}, {3, 1}};
    ka_broker_defaults_t defaults = {3, 2, true};
    ka_cluster_builder_t *b;
    ka_cluster_t *view = NULL;

    if (ka_cluster_builder_new(1000, &b) < 0)
        abort();
    for (int32_t id = 1; id <= 3; id++)
        ka_cluster_builder_add_broker(b, id, id == 3 ? lit("east") : KA_SLICE_NULL, false);
    ka_cluster_builder_set_defaults(b, &defaults);
    for (int32_t p = 0; p < 3; p++)
        ka_cluster_builder_add_partition(b, lit("events"), p, replicas[p], 2);
    ka_cluster_builder_add_partition(b, lit("solo"), 0, replicas[0], 1);
    if (ka_cluster_builder_finish(b, &view) < 0)
        abort();
    return view;
}

/* The steps with a phase 2 against an empty ledger (out is decode's when it ends early). */
static void run_steps(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len,
                      ka_adm_outcome_t *out)
{
    ka_reservations_t *earlier;
    ka_adm_ctx_t again = *ctx;
    ka_adm_req_t *req;

    if (ka_adm_decode(ctx, frame, len, &req, out) < 0)
        abort();
    if (req == NULL)
        return;
    if (ka_reservations_new(&earlier) < 0 || ka_adm_judge(req, ctx) < 0)
        abort();
    again.ledger = earlier;
    if (ka_adm_rejudge(req, &again, KA_REASON_CONCURRENT) < 0 || ka_adm_finish(req, ctx, out) < 0)
        abort();
    ka_adm_req_free(req);
    ka_reservations_free(earlier);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *policy_json = (size > 0 && data[0] & 1)
                                  ? "{\"max.broker.partitions\": 4, \"enforcement\": \"audit\", "
                                    "\"protected.topics\": [\"keep\\\\..*\"]}"
                                  : "{\"max.broker.partitions\": 4, \"max.partitions\": 40, "
                                    "\"protected.topics\": [\"keep\\\\..*\"]}";
    ka_reservations_t *ledger, *ledger2;
    ka_adm_outcome_t o, steps;
    ka_policy_t *policy;
    ka_cluster_t *view;
    char err[256];

    if (size < 3)
        return 0;
    size_t n = (size_t)data[1] << 8 | data[2];
    if (n > size - 3)
        n = size - 3;
    uint8_t *frame = framed(data + 3, n);
    if (ka_policy_parse(policy_json, strlen(policy_json), 1, &policy, err, sizeof(err)) < 0 ||
        ka_reservations_new(&ledger) < 0 || ka_reservations_new(&ledger2) < 0)
        abort();
    view = make_view();
    ka_adm_ctx_t ctx = {.policy = policy,
                        .view = data[0] & 4 ? NULL : view,
                        .ledger = ledger,
                        .now_ms = 2000,
                        .seed = 7,
                        .may_wait_for_view = (data[0] & 2) != 0,
                        .max_frame = (size_t)1 << 20};
    if (ka_adm_request(&ctx, frame, n + 4, &o) < 0)
        abort();
    ctx.ledger = ledger2;
    run_steps(&ctx, frame, n + 4, &steps);
    if (steps.action != o.action || steps.len != o.len ||
        (o.len > 0 && memcmp(steps.bytes, o.bytes, o.len) != 0))
        abort();
    ka_adm_outcome_release(&steps);
    if (o.action == KA_ADM_REWRITE || o.action == KA_ADM_ANSWER) {
        int16_t key = (int16_t)(frame[4] << 8 | frame[5]);
        /* A rewrite may go on at another version (Metadata v0-3 as v4): its header says. */
        int16_t ver =
            o.action == KA_ADM_REWRITE ? (int16_t)(o.bytes[6] << 8 | o.bytes[7]) : o.api_version;
        if (o.action == KA_ADM_REWRITE && ver != o.api_version &&
            (key != KA_METADATA_REQUEST_API_KEY || o.api_version >= 4 || ver != 4))
            abort();
        check_frame(o.bytes, o.len, key, ver,
                    o.action == KA_ADM_REWRITE ? KA_REQUEST : KA_RESPONSE);
    }
    if (o.pending != NULL) {
        size_t rlen = size - 3 - n;
        uint8_t *resp = framed(data + 3 + n, rlen), *merged = NULL;
        size_t mlen = 0;

        if (ka_adm_response(o.pending, resp, rlen + 4, (size_t)1 << 20, &merged, &mlen) == 0 &&
            merged != NULL)
            check_frame(merged, mlen, o.pending->api_key, o.pending->client_version, KA_RESPONSE);
        free(merged);
        free(resp);
    }
    ka_adm_outcome_release(&o);
    ka_reservations_free(ledger);
    ka_reservations_free(ledger2);
    ka_cluster_unref(view);
    ka_policy_unref(policy);
    free(frame);
    return 0;
}
