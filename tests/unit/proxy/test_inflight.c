/*
 * test_inflight.c: the in-flight queue keeps request order, and a local
 * answer waits for every earlier response (ARCHITECTURE invariant 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_inflight.h"
#include "ka_protocol.h"

static void push(ka_inflight_t *q, int32_t corr, uint32_t flags, void *answer)
{
    ka_inflight_entry_t e = {.correlation_id = corr,
                             .api_key = 3,
                             .flags = flags,
                             .answer = answer,
                             .answer_len = answer ? 8 : 0};
    assert_int_equal(ka_inflight_push(q, &e), 0);
}

static void test_fifo_order_across_growth_and_wrap(void **state)
{
    (void)state;
    ka_inflight_t q;
    ka_inflight_entry_t e;
    int32_t next_pop = 0, next_push = 0;
    ka_inflight_init(&q);
    assert_null(ka_inflight_head(&q));
    assert_null(q.ring); /* an idle connection holds no ring */
    /* Interleave pushes and pops so the ring wraps while it grows. */
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < round % 13 + 1; i++)
            push(&q, next_push++, 0, NULL);
        for (int i = 0; i < round % 7 && ka_inflight_count(&q) > 0; i++) {
            assert_int_equal(ka_inflight_pop(&q, &e), 0);
            assert_int_equal(e.correlation_id, next_pop++);
        }
    }
    while (ka_inflight_pop(&q, &e) == 0)
        assert_int_equal(e.correlation_id, next_pop++);
    assert_int_equal(next_pop, next_push);
    assert_int_equal(ka_inflight_pop(&q, NULL), KA_EUNDERFLOW);
    ka_inflight_free(&q);
}

static void test_local_answer_waits_for_earlier_responses(void **state)
{
    (void)state;
    ka_inflight_t q;
    ka_inflight_entry_t e;
    char answer_a[8], answer_b[8];
    ka_inflight_init(&q);
    push(&q, 1, 0, NULL);                     /* forwarded */
    push(&q, 2, 0, NULL);                     /* forwarded */
    push(&q, 3, KA_INFLIGHT_LOCAL, answer_a); /* rejected locally */
    push(&q, 4, 0, NULL);                     /* forwarded */
    push(&q, 5, KA_INFLIGHT_LOCAL, answer_b); /* rejected locally */

    /* Nothing is due before the broker answers 1 and 2. */
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 0);
    ka_inflight_pop(&q, &e); /* response to 1 */
    assert_int_equal(e.correlation_id, 1);
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 0);
    ka_inflight_pop(&q, &e); /* response to 2 */
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 1);
    assert_int_equal(e.correlation_id, 3);
    assert_ptr_equal(e.answer, answer_a);
    /* 5 waits for 4 even though it was produced long before. */
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 0);
    ka_inflight_pop(&q, &e);
    assert_int_equal(e.correlation_id, 4);
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 1);
    assert_int_equal(e.correlation_id, 5);
    assert_int_equal(ka_inflight_count(&q), 0);
    ka_inflight_free(&q);
}

static void test_local_answer_on_empty_queue_is_due_at_once(void **state)
{
    (void)state;
    ka_inflight_t q;
    ka_inflight_entry_t e;
    char answer[8];
    ka_inflight_init(&q);
    push(&q, 9, KA_INFLIGHT_LOCAL, answer);
    assert_int_equal(ka_inflight_pop_due_answer(&q, &e), 1);
    assert_int_equal(e.correlation_id, 9);
    ka_inflight_free(&q);
}

static void test_queue_is_capped(void **state)
{
    (void)state;
    ka_inflight_t q;
    ka_inflight_entry_t e = {0};
    ka_inflight_init(&q);
    for (int i = 0; i < KA_INFLIGHT_MAX; i++)
        assert_int_equal(ka_inflight_push(&q, &e), 0);
    assert_int_equal(ka_inflight_push(&q, &e), KA_ELIMIT);
    ka_inflight_free(&q);
}

static void test_sasl_mechanism_token_counts(void **state)
{
    (void)state;
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"PLAIN", 5), 1);
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"SCRAM-SHA-256", 13), 2);
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"SCRAM-SHA-512", 13), 2);
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"OAUTHBEARER", 11), 1);
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"GSSAPI", 6), -1);
    assert_int_equal(ka_sasl_mechanism_tokens((const uint8_t *)"PLAINX", 6), -1);
    assert_int_equal(ka_sasl_mechanism_tokens(NULL, 0), -1);
}

/* The refusal decodes as a SaslHandshake v0 answer listing exactly what kadmit follows. */
static void test_sasl_refusal_answer_lists_followed_mechanisms(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t n = ka_sasl_refusal_answer(0x01020304, NULL, 0);
    assert_int_equal(ka_sasl_refusal_answer(0x01020304, buf, n - 1), n); /* too small: nothing */
    assert_int_equal(ka_sasl_refusal_answer(0x01020304, buf, sizeof(buf)), n);
    assert_int_equal((size_t)(buf[0] << 24 | buf[1] << 16 | buf[2] << 8 | buf[3]), n - 4);
    ka_reader_t r;
    struct ka_response_header rh;
    struct ka_saslhandshake_response resp;
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 16);
    ka_reader_init(&r, buf + 4, n - 4);
    assert_int_equal(ka_response_header_decode(&r, 0, &rh), 0);
    assert_int_equal(rh.correlation_id, 0x01020304);
    assert_int_equal(ka_saslhandshake_response_decode(&r, 0, &arena, &resp), 0);
    assert_int_equal(resp.error_code, KA_KAFKA_ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_int_equal(resp.mechanisms.count, 4);
    for (int32_t i = 0; i < resp.mechanisms.count; i++)
        assert_true(ka_sasl_mechanism_tokens(resp.mechanisms.items[i].ptr,
                                             (size_t)resp.mechanisms.items[i].len) > 0);
    ka_arena_destroy(&arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order_across_growth_and_wrap),
        cmocka_unit_test(test_local_answer_waits_for_earlier_responses),
        cmocka_unit_test(test_local_answer_on_empty_queue_is_due_at_once),
        cmocka_unit_test(test_queue_is_capped),
        cmocka_unit_test(test_sasl_mechanism_token_counts),
        cmocka_unit_test(test_sasl_refusal_answer_lists_followed_mechanisms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
