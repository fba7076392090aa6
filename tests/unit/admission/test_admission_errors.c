/*
 * test_admission_errors.c: which broker answers end a reservation
 * (ARCHITECTURE invariant 12): only those that mean nothing was created.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "ka_admission.h"

enum { METADATA = 3, CREATE_TOPICS = 19, CREATE_PARTITIONS = 37, REASSIGN = 45 };

static void test_refusals_before_any_write_end_the_reservation(void **state)
{
    (void)state;
    assert_true(ka_adm_error_created_nothing(CREATE_TOPICS, 36)); /* TOPIC_ALREADY_EXISTS */
    assert_true(ka_adm_error_created_nothing(CREATE_TOPICS, 38)); /* INVALID_REPLICATION_FACTOR */
    assert_true(ka_adm_error_created_nothing(CREATE_TOPICS, 44)); /* POLICY_VIOLATION */
    assert_true(ka_adm_error_created_nothing(CREATE_TOPICS, 29)); /* TOPIC_AUTHORIZATION_FAILED */
    assert_true(ka_adm_error_created_nothing(CREATE_PARTITIONS, 37)); /* INVALID_PARTITIONS */
    assert_true(
        ka_adm_error_created_nothing(CREATE_PARTITIONS, 3)); /* UNKNOWN_TOPIC_OR_PARTITION */
    assert_true(ka_adm_error_created_nothing(REASSIGN, 39)); /* INVALID_REPLICA_ASSIGNMENT */
    assert_true(ka_adm_error_created_nothing(METADATA, 29)); /* may not create it */
    assert_true(ka_adm_error_created_nothing(METADATA, 17)); /* INVALID_TOPIC_EXCEPTION */
}

static void test_timeouts_and_unknown_answers_keep_the_reservation(void **state)
{
    static const int16_t apis[] = {METADATA, CREATE_TOPICS, CREATE_PARTITIONS, REASSIGN};

    (void)state;
    for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
        assert_false(ka_adm_error_created_nothing(apis[i], 0));
        assert_false(ka_adm_error_created_nothing(apis[i], 7));    /* REQUEST_TIMED_OUT */
        assert_false(ka_adm_error_created_nothing(apis[i], 41));   /* NOT_CONTROLLER */
        assert_false(ka_adm_error_created_nothing(apis[i], -1));   /* unknown, or no answer */
        assert_false(ka_adm_error_created_nothing(apis[i], 1234)); /* a code kadmit does not know */
    }
    /* An auto-created topic being created, or whose creation may still be on its way. */
    assert_false(ka_adm_error_created_nothing(METADATA, 5)); /* LEADER_NOT_AVAILABLE */
    assert_false(ka_adm_error_created_nothing(METADATA, 3)); /* UNKNOWN_TOPIC_OR_PARTITION */
    /* A topic that is not there is no reason for a create to have done nothing. */
    assert_false(ka_adm_error_created_nothing(CREATE_TOPICS, 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals_before_any_write_end_the_reservation),
        cmocka_unit_test(test_timeouts_and_unknown_answers_keep_the_reservation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
