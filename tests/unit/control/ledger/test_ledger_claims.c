/*
 * test_ledger_claims.c: after phase 2, each reservation phase 1 announced
 * is tied back to its item: kept (and named by the item, for the response
 * path) when the item goes on, released when phase 2 or the broker failed
 * it; and the outcome says which.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_ledger_claims.h"

static const ka_broker_delta_t one[] = {{1, 1}};

static uint64_t reserve(ka_reservations_t *l, const char *topic, enum ka_reservation_kind kind,
                        int32_t partition)
{
    ka_reservation_spec_t spec = {.kind = kind,
                                  .topic = {(const uint8_t *)topic, (int32_t)strlen(topic)},
                                  .partition_count = 1,
                                  .partition = partition,
                                  .new_partitions = kind == KA_RESERVATION_PARTITIONS,
                                  .deltas = one,
                                  .delta_count = 1,
                                  .expires_at_ms = 1000};
    uint64_t id = 0;
    assert_int_equal(ka_reservations_add(l, &spec, &id), 0);
    return id;
}

static ka_adm_item_t item(const char *topic, int32_t partition, bool local, uint64_t scratch_id)
{
    return (ka_adm_item_t){.topic = (char *)topic,
                           .topic_len = (int32_t)strlen(topic),
                           .partition = partition,
                           .local = local,
                           .reservation_id = scratch_id};
}

static void test_phase_two_rejections_release_and_the_rest_name_their_reservation(void **state)
{
    (void)state;
    ka_reservations_t *mirror;
    ka_ledger_claims_t c;
    assert_int_equal(ka_reservations_new(&mirror), 0);
    uint64_t ids[] = {reserve(mirror, "kept", KA_RESERVATION_PARTITIONS, 0),
                      reserve(mirror, "lost", KA_RESERVATION_PARTITIONS, 0)};
    assert_int_equal(ka_ledger_claims_take(&c, mirror, ids, 2), 0);
    /* Items in request order: one phase 1 rejected (no claim), then the two claims;
     * "lost" no longer fitted in phase 2. Ids are phase 2's scratch ones. */
    ka_adm_item_t items[] = {item("early-reject", -1, true, 0), item("kept", -1, false, 901),
                             item("lost", -1, true, 902)};
    ka_adm_pending_t p = {.api_key = 19, .count = 3, .items = items, .local_count = 2};
    ka_ledger_claims_bind(&c, &p, 1, mirror);
    assert_int_equal(items[0].reservation_id, 0);
    assert_int_equal(items[1].reservation_id, ids[0]);
    assert_int_equal(items[2].reservation_id, 0);
    assert_int_equal(c.admitted[0], 1);
    assert_int_equal(c.admitted[1], 0);
    assert_int_equal(ka_reservations_count(mirror), 1);
    assert_true(ka_reservations_has_topic(mirror, (ka_slice_t){(const uint8_t *)"kept", 4}));
    /* A timeout may still create (invariant 12): the outcome says admitted. */
    items[1].broker_error = 7; /* REQUEST_TIMED_OUT */
    ka_ledger_claims_settle(&c, &p);
    assert_int_equal(c.admitted[0], 1);
    items[1].broker_error = 41; /* NOT_CONTROLLER: a successor may commit the record */
    ka_ledger_claims_settle(&c, &p);
    assert_int_equal(c.admitted[0], 1);
    /* The broker refuses "kept" as existing: nothing was created, the outcome says released. */
    items[1].broker_error = 36;
    ka_ledger_claims_settle(&c, &p);
    assert_int_equal(c.admitted[0], 0);
    ka_ledger_claims_free(&c);
    ka_reservations_free(mirror);
}

static void test_reassignment_claims_match_their_partition(void **state)
{
    (void)state;
    ka_reservations_t *mirror;
    ka_ledger_claims_t c;
    assert_int_equal(ka_reservations_new(&mirror), 0);
    uint64_t ids[] = {reserve(mirror, "t", KA_RESERVATION_REPLICAS, 2)};
    assert_int_equal(ka_ledger_claims_take(&c, mirror, ids, 1), 0);
    ka_adm_item_t items[] = {item("t", 0, false, 0), item("t", 2, false, 77)};
    ka_adm_pending_t p = {.count = 2, .items = items};
    ka_ledger_claims_bind(&c, &p, 1, mirror);
    assert_int_equal(items[0].reservation_id, 0);
    assert_int_equal(items[1].reservation_id, ids[0]);
    assert_int_equal(c.item[0], 1);
    assert_int_equal(c.admitted[0], 1);
    ka_ledger_claims_free(&c);
    ka_reservations_free(mirror);
}

static void test_without_pending_items_the_forwarded_flag_decides(void **state)
{
    (void)state;
    ka_reservations_t *mirror;
    ka_ledger_claims_t c;
    assert_int_equal(ka_reservations_new(&mirror), 0);
    uint64_t ids[] = {reserve(mirror, "auto", KA_RESERVATION_PARTITIONS, 0)};
    assert_int_equal(ka_ledger_claims_take(&c, mirror, ids, 1), 0);
    ka_ledger_claims_bind(&c, NULL, 1, mirror);
    assert_int_equal(c.admitted[0], 1);
    assert_int_equal(ka_reservations_count(mirror), 1);
    ka_ledger_claims_free(&c);
    assert_int_equal(ka_ledger_claims_take(&c, mirror, ids, 1), 0);
    ka_ledger_claims_bind(&c, NULL, 0, mirror); /* auto-creation denied */
    assert_int_equal(c.admitted[0], 0);
    assert_int_equal(ka_reservations_count(mirror), 0);
    ka_ledger_claims_free(&c);
    /* A reservation that already ended cannot be claimed. */
    assert_int_equal(ka_ledger_claims_take(&c, mirror, ids, 1), KA_EINVALID);
    ka_reservations_free(mirror);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_two_rejections_release_and_the_rest_name_their_reservation),
        cmocka_unit_test(test_reassignment_claims_match_their_partition),
        cmocka_unit_test(test_without_pending_items_the_forwarded_flag_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
