/*
 * test_engine_partial.c: a view marked "may be partial" fails closed like a
 * stale one: enforce mode rejects with the reason and a message saying why,
 * audit mode admits and flags, a reassignment cancel still passes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy_fixtures.h"

#define WHY                                                                                        \
    "the broker hosts 3 replicas of partitions Metadata did not show kadmit, such as topic h"

static void decide(const char *policy_json, ka_verdict_t *create, ka_verdict_t *cancel)
{
    ka_policy_t *policy = fx_policy(policy_json);
    ka_cluster_t *view = fx_view(0, 3, NULL);
    ka_reservations_t *ledger;
    ka_create_topic_t t = fx_create("a", 1, 1);
    const ka_reassignment_t undo = {S("t"), 0, NULL, 0};

    assert_null(ka_cluster_partial_reason(view));
    ka_cluster_mark_partial(view, WHY);
    assert_string_equal(ka_cluster_partial_reason(view), WHY);
    OK(ka_reservations_new(&ledger));
    ka_decision_context_t ctx = {policy, view, ledger, 1000, 42};
    assert_false(ka_engine_view_is_stale(policy, view, 1000)); /* young, yet not trusted */
    OK(ka_engine_create_topics(&ctx, &t, 1, create));
    OK(ka_engine_alter_reassignments(&ctx, &undo, 1, cancel));
    ka_reservations_free(ledger);
    ka_cluster_unref(view);
    ka_policy_unref(policy);
}

static void test_partial_view_rejects_with_why_and_what_to_grant(void **state)
{
    ka_verdict_t v, cancel;

    (void)state;
    decide("{}", &v, &cancel);
    assert_int_equal(v.kind, KA_VERDICT_REJECT);
    assert_int_equal(v.error_code, 88);
    assert_int_equal(v.reason, KA_REASON_PARTIAL_VIEW);
    assert_string_equal(v.message, "Cannot decide on this request: kadmit's cluster view may be "
                                   "partial (" WHY "), so it rejects requests that create or move "
                                   "partitions rather than undercount.");
    assert_int_equal(cancel.kind, KA_VERDICT_ADMIT); /* a cancel cannot exceed anything */
    fx_release(&v, 1);
    fx_release(&cancel, 1);
}

static void test_partial_view_in_audit_mode_admits_and_flags(void **state)
{
    ka_verdict_t v, cancel;

    (void)state;
    decide("{\"enforcement\": \"audit\"}", &v, &cancel);
    assert_int_equal(v.kind, KA_VERDICT_ADMIT);
    assert_true(v.audit);
    assert_int_equal(v.reason, KA_REASON_PARTIAL_VIEW);
    assert_non_null(strstr(v.message, "may be partial"));
    fx_release(&v, 1);
    fx_release(&cancel, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_view_rejects_with_why_and_what_to_grant),
        cmocka_unit_test(test_partial_view_in_audit_mode_admits_and_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
