/*
 * fuzz_control_records.c: the records kadmit reads back from its own Kafka
 * topics, on untrusted bytes. Any sidecar, or anyone who can produce to the
 * topics, writes them, so decoding must be bounded and never crash.
 *
 * The input is decoded as a ledger record and as a limits record. An intent
 * that decodes is encoded again from its decoded items, and that text must
 * decode to the same items: the property that keeps every sidecar's mirror
 * of the ledger identical.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_ledger_record.h"
#include "ka_limits_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_intent_round_trip(const ka_ledger_record_t *r)
{
    ka_reservation_spec_t *specs = calloc(r->count + 1, sizeof(*specs));
    ka_ledger_record_t again;
    char err[256], *text = NULL;
    size_t len = 0;

    if (specs == NULL)
        return;
    for (size_t i = 0; i < r->count; i++)
        specs[i] = r->items[i].spec;
    if (ka_ledger_encode_intent(r->sidecar, r->seq, r->ts_ms, specs, r->count, &text, &len) == 0) {
        if (ka_ledger_decode(text, len, &again, err, sizeof(err)) != 0)
            abort();
        if (again.count != r->count || again.seq != r->seq || strcmp(again.sidecar, r->sidecar))
            abort();
        for (size_t i = 0; i < r->count; i++)
            if (again.items[i].spec.delta_count != r->items[i].spec.delta_count ||
                again.items[i].spec.new_partitions != r->items[i].spec.new_partitions)
                abort();
        ka_ledger_record_free(&again);
    }
    free(text);
    free(specs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ka_ledger_record_t rec;
    ka_limits_record_t limits;
    char err[256];

    if (ka_ledger_decode(data, size, &rec, err, sizeof(err)) == 0) {
        if (rec.type == KA_LEDGER_INTENT)
            check_intent_round_trip(&rec);
        ka_ledger_record_free(&rec);
    }
    memset(&limits, 0, sizeof(limits));
    if (ka_limits_record_decode(data, size, &limits, err, sizeof(err)) == 0)
        ka_limits_record_clear(&limits);
    return 0;
}
