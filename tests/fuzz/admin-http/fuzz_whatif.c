/*
 * fuzz_whatif.c: the body of POST /v1/what-if on untrusted bytes.
 *
 * The input is parsed as a what-if body; whenever it parses, its items are
 * judged by the engine against a small fixed view and an empty ledger, as
 * the handler does, so the parser's output is exercised where it is used.
 * A parse must either succeed or say which field is wrong.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admin_whatif.h"
#include "ka_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ka_cluster_t *fixed_view(void)
{
    ka_cluster_builder_t *b;
    ka_cluster_t *view = NULL;
    int32_t replicas[2] = {1, 2};

    if (ka_cluster_builder_new(0, &b) < 0)
        abort();
    for (int32_t id = 1; id <= 3; id++)
        if (ka_cluster_builder_add_broker(b, id, KA_SLICE_NULL, false) < 0)
            abort();
    if (ka_cluster_builder_add_partition(b, (ka_slice_t){(const uint8_t *)"t", 1}, 0, replicas, 2) <
            0 ||
        ka_cluster_builder_finish(b, &view) < 0)
        abort();
    return view;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char policy_json[] = "{\"max.broker.partitions\": 50}";
    ka_whatif_t *w = NULL;
    ka_policy_t *policy = NULL;
    ka_cluster_t *view;
    ka_reservations_t *ledger = NULL;
    ka_verdict_t *v;
    char err[512] = "";
    size_t n;
    int rc;

    if (size > KA_WHATIF_MAX_BODY)
        return 0;
    rc = ka_whatif_parse((const char *)data, size, &w, err, sizeof(err));
    if (rc < 0) {
        if (err[0] == '\0')
            abort(); /* a refusal always says why */
        return 0;
    }
    if (ka_policy_parse(policy_json, strlen(policy_json), 1, &policy, err, sizeof(err)) < 0 ||
        ka_reservations_new(&ledger) < 0)
        abort();
    view = fixed_view();
    n = ka_whatif_count(w);
    v = calloc(n, sizeof(*v));
    if (v == NULL)
        abort();
    ka_decision_context_t dctx = {
        .policy = policy, .view = view, .ledger = ledger, .now_ms = 0, .seed = 1};
    rc = ka_whatif_kind(w) == KA_WHATIF_CREATE_TOPICS
             ? ka_engine_create_topics(&dctx, ka_whatif_topics(w), n, v)
             : ka_engine_create_partitions(&dctx, ka_whatif_partitions(w), n, v);
    /* validate_only: nothing may stay reserved. */
    if (rc == 0 && ka_reservations_count(ledger) != 0)
        abort();
    for (size_t i = 0; rc == 0 && i < n; i++)
        ka_verdict_release(&v[i]);
    free(v);
    ka_reservations_free(ledger);
    ka_cluster_unref(view);
    ka_policy_unref(policy);
    ka_whatif_free(w);
    return 0;
}
