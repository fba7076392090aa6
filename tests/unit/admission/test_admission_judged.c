/*
 * test_admission_judged.c: a final decision reports every judged item, in
 * request order, to ka_adm_ctx_t.on_judged (what the audit events are made
 * of); a decision that waits for a view reports nothing.
 *
 * The synthetic cluster is adm_fixture.h's: broker 1 has room for 2 more
 * replicas, brokers 2 and 3 for 9 each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adm_fixture.h"

#define MAX_SEEN 8

typedef struct seen {
    size_t n;
    char topic[MAX_SEEN][32];
    char verdict[MAX_SEEN][16];
    char client_id[MAX_SEEN][16];
    enum ka_reason reason[MAX_SEEN];
    int has_message[MAX_SEEN];
    enum ka_adm_api api[MAX_SEEN];
} seen_t;

static void on_judged(void *arg, const ka_adm_judged_t *it)
{
    seen_t *s = arg;
    if (s->n == MAX_SEEN)
        return;
    snprintf(s->topic[s->n], sizeof(s->topic[0]), "%.*s", (int)it->topic.len,
             (const char *)it->topic.ptr);
    snprintf(s->verdict[s->n], sizeof(s->verdict[0]), "%s", it->verdict);
    snprintf(s->client_id[s->n], sizeof(s->client_id[0]), "%.*s", (int)it->client_id.len,
             (const char *)it->client_id.ptr);
    s->reason[s->n] = it->reason;
    s->has_message[s->n] = it->message != NULL;
    s->api[s->n] = it->api;
    s->n++;
}

static void judge_two(const char *policy, bool want_fresh_view, seen_t *s,
                      enum ka_adm_action *action)
{
    fx_t *f = fx_new(policy);
    struct ka_createtopics_request_creatable_topic t[2] = {fx_ct_topic("fits", 2, 1),
                                                           fx_ct_topic("too-big", 30, 3)};
    size_t len;
    uint8_t *frame = fx_ct_request(5, t, 2, false, &len);
    ka_adm_outcome_t o;
    memset(s, 0, sizeof(*s));
    f->ctx.on_judged = on_judged;
    f->ctx.on_judged_arg = s;
    f->ctx.want_fresh_view = want_fresh_view;
    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    *action = o.action;
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

static void test_every_item_of_a_decision_is_reported_in_request_order(void **state)
{
    seen_t s;
    enum ka_adm_action action;
    (void)state;
    judge_two(POLICY, false, &s, &action);
    assert_int_equal(action, KA_ADM_REWRITE);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.topic[0], "fits");
    assert_string_equal(s.verdict[0], "admit");
    assert_int_equal(s.reason[0], KA_REASON_NONE);
    assert_false(s.has_message[0]);
    assert_string_equal(s.topic[1], "too-big");
    assert_string_equal(s.verdict[1], "reject");
    assert_int_equal(s.reason[1], KA_REASON_BROKER_LIMIT);
    assert_true(s.has_message[1]);
    for (size_t i = 0; i < s.n; i++) {
        assert_string_equal(s.client_id[i], "unit");
        assert_int_equal(s.api[i], KA_ADM_CREATE_TOPICS);
    }
}

static void test_audit_mode_reports_the_flagged_item_as_audit(void **state)
{
    seen_t s;
    enum ka_adm_action action;
    (void)state;
    judge_two("{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}", false, &s, &action);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.verdict[0], "admit");
    assert_string_equal(s.verdict[1], "audit");
    assert_int_equal(s.reason[1], KA_REASON_BROKER_LIMIT);
}

static void test_a_decision_that_waits_for_a_view_reports_nothing(void **state)
{
    seen_t s;
    enum ka_adm_action action;
    (void)state;
    judge_two(POLICY, true, &s, &action);
    assert_int_equal(action, KA_ADM_WAIT);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_of_a_decision_is_reported_in_request_order),
        cmocka_unit_test(test_audit_mode_reports_the_flagged_item_as_audit),
        cmocka_unit_test(test_a_decision_that_waits_for_a_view_reports_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
