/*
 * test_frame.c: the frame splitter finds every frame boundary and peeks
 * every header whatever the chunking, and refuses what it must.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "frame_fixtures.h"
#include "ka_error.h"
#include "ka_frame.h"

#define MAX_FRAME (100u * 1024 * 1024)

static fx_buf_t stream;
static fx_seen_t seen;

static void splitter(ka_splitter_t *s, enum ka_frame_mode mode)
{
    ka_frame_init(s, mode, MAX_FRAME, &fx_alloc);
}

/* A mixed stream: ordinary requests, header v2, Produce in three layouts. */
static void build_mixed_stream(void)
{
    static const uint8_t body[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    stream.len = 0;
    fx_request(&stream, 18, 3, 1, "client-a", 1, body, 4);      /* ApiVersions v3, header v2 */
    fx_request(&stream, 3, 12, 2, "client-a", 1, body, 12);     /* Metadata v12 */
    fx_produce(&stream, 0, 3, 0, NULL);                         /* acks=0, v0 layout */
    fx_produce(&stream, 3, 4, 0, "txn-1");                      /* acks=0, v3 layout */
    fx_produce(&stream, 9, 5, 0, "txn-flexible");               /* acks=0, v9 layout */
    fx_produce(&stream, 9, 6, -1, NULL);                        /* acks=-1, null txn */
    fx_request(&stream, 1, 11, 7, NULL, 0, body, sizeof(body)); /* null client_id */
    fx_request(&stream, 10, 2, 8, "", 0, NULL, 0);              /* empty client_id, no body */
}

static void check_mixed(const fx_seen_t *sn)
{
    static const int16_t keys[] = {18, 3, 0, 0, 0, 0, 1, 10};
    static const int16_t acks[] = {KA_ACKS_NONE, KA_ACKS_NONE, 0,           0, 0,
                                   -1,           KA_ACKS_NONE, KA_ACKS_NONE};
    assert_int_equal(sn->err, 0);
    assert_int_equal(sn->headers, 8);
    assert_int_equal(sn->ends, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(sn->corr[i], i + 1);
        assert_int_equal(sn->key[i], keys[i]);
        assert_int_equal(sn->acks[i], acks[i]);
    }
    assert_int_equal(sn->end_at[7], stream.len);
    assert_int_equal(sn->out_len, stream.len);
    assert_memory_equal(sn->out, stream.data, stream.len);
}

static void test_whole_stream_in_one_chunk(void **state)
{
    (void)state;
    ka_splitter_t s;
    build_mixed_stream();
    splitter(&s, KA_FRAME_REQUEST);
    fx_replay(&s, stream.data, stream.len, NULL, 0, &seen);
    check_mixed(&seen);
    assert_int_equal(s.frames, 8);
    assert_int_equal(fx_live_allocs, 0);
}

static void test_every_two_chunk_split(void **state)
{
    (void)state;
    build_mixed_stream();
    for (size_t k = 1; k < stream.len; k++) {
        ka_splitter_t s;
        size_t chunks[2] = {k, 0};
        splitter(&s, KA_FRAME_REQUEST);
        fx_replay(&s, stream.data, stream.len, chunks, 2, &seen);
        check_mixed(&seen);
        ka_frame_free(&s);
        assert_int_equal(fx_live_allocs, 0);
    }
}

static void test_byte_by_byte(void **state)
{
    (void)state;
    ka_splitter_t s;
    size_t one = 1;
    build_mixed_stream();
    splitter(&s, KA_FRAME_REQUEST);
    fx_replay(&s, stream.data, stream.len, &one, 1, &seen);
    check_mixed(&seen);
    assert_int_equal(fx_live_allocs, 0);
}

static void test_every_fixed_chunk_size(void **state)
{
    (void)state;
    build_mixed_stream();
    for (size_t k = 2; k < 64; k++) {
        ka_splitter_t s;
        splitter(&s, KA_FRAME_REQUEST);
        fx_replay(&s, stream.data, stream.len, &k, 1, &seen);
        check_mixed(&seen);
        ka_frame_free(&s);
    }
    assert_int_equal(fx_live_allocs, 0);
}

static void test_header_v2_with_tagged_fields_before_acks(void **state)
{
    (void)state;
    ka_splitter_t s;
    ka_frame_event_t ev;
    fx_buf_t *b = &stream;
    b->len = 0;
    /* Produce v9 whose header v2 carries two tagged fields. */
    fx_i32(b, 0);
    fx_i16(b, 0);
    fx_i16(b, 9);
    fx_i32(b, 77);
    fx_i16(b, 3);
    fx_bytes(b, "cid", 3);
    fx_uvarint(b, 2);
    fx_uvarint(b, 0);
    fx_uvarint(b, 3);
    fx_bytes(b, "abc", 3);
    fx_uvarint(b, 5);
    fx_uvarint(b, 200);
    for (int i = 0; i < 200; i++)
        fx_bytes(b, "z", 1);
    fx_uvarint(b, 4); /* transactional_id "txn" */
    fx_bytes(b, "txn", 3);
    fx_i16(b, 0); /* acks */
    fx_i32(b, 1000);
    uint32_t size = (uint32_t)(b->len - 4);
    b->data[0] = (uint8_t)(size >> 24);
    b->data[1] = (uint8_t)(size >> 16);
    b->data[2] = (uint8_t)(size >> 8);
    b->data[3] = (uint8_t)size;

    splitter(&s, KA_FRAME_REQUEST);
    long n = ka_frame_feed(&s, b->data, b->len, &ev);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.correlation_id, 77);
    assert_int_equal(ev.hdr.acks, 0);
    assert_int_equal(ev.hdr.client_id.len, 3);
    assert_memory_equal(ev.hdr.client_id.ptr, "cid", 3);
    assert_int_equal(n, (long)b->len - 4); /* the peek stops right after acks */
    n = ka_frame_feed(&s, b->data + n, b->len - (size_t)n, &ev);
    assert_int_equal(ev.type, KA_FRAME_END);

    /* The same frame byte by byte: only the straddling header is carried. */
    size_t one = 1;
    splitter(&s, KA_FRAME_REQUEST);
    fx_replay(&s, b->data, b->len, &one, 1, &seen);
    assert_int_equal(seen.err, 0);
    assert_int_equal(seen.acks[0], 0);
    assert_memory_equal(seen.out, b->data, b->len);
}

static void test_produce_acks_per_layout(void **state)
{
    (void)state;
    static const int16_t versions[] = {0, 1, 2, 3, 7, 8, 9, 10, 11};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        for (int16_t acks = -1; acks <= 1; acks++) {
            ka_splitter_t s;
            ka_frame_event_t ev;
            stream.len = 0;
            fx_produce(&stream, versions[i], 42, acks, versions[i] >= 3 ? "t" : NULL);
            splitter(&s, KA_FRAME_REQUEST);
            ka_frame_feed(&s, stream.data, stream.len, &ev);
            assert_int_equal(ev.type, KA_FRAME_HEADER);
            assert_int_equal(ev.hdr.api_version, versions[i]);
            assert_int_equal(ev.hdr.acks, acks);
        }
    }
}

static void expect_refusal(enum ka_frame_mode mode, const uint8_t *bytes, size_t len,
                           enum ka_frame_error want)
{
    ka_splitter_t s;
    ka_frame_event_t ev;
    ka_frame_init(&s, mode, 4096, &fx_alloc);
    /* Whole, and then byte by byte: same verdict. */
    long n = ka_frame_feed(&s, bytes, len, &ev);
    assert_true(n < 0);
    assert_int_equal(s.error, want);
    ka_frame_init(&s, mode, 4096, &fx_alloc);
    n = 0;
    for (size_t i = 0; i < len && n >= 0; i++)
        n = ka_frame_feed(&s, bytes + i, 1, &ev);
    assert_true(n < 0);
    assert_int_equal(s.error, want);
    ka_frame_free(&s);
    assert_int_equal(fx_live_allocs, 0);
}

static void test_oversize_frame_refused_with_its_size(void **state)
{
    (void)state;
    uint8_t big[] = {0, 0, 0x10, 0x01, 0, 3, 0, 1};
    expect_refusal(KA_FRAME_REQUEST, big, sizeof(big), KA_FRAME_EOVERSIZE);
    ka_splitter_t s;
    ka_frame_event_t ev;
    ka_frame_init(&s, KA_FRAME_REQUEST, 4096, &fx_alloc);
    assert_int_equal(ka_frame_feed(&s, big, sizeof(big), &ev), KA_ELIMIT);
    assert_int_equal(s.last_size, 4097);
    uint8_t negative[] = {0xff, 0xff, 0xff, 0xfe, 0, 0};
    expect_refusal(KA_FRAME_REQUEST, negative, sizeof(negative), KA_FRAME_EOVERSIZE);
    expect_refusal(KA_FRAME_RESPONSE, negative, sizeof(negative), KA_FRAME_EOVERSIZE);
}

static void test_undersize_frame_refused(void **state)
{
    (void)state;
    uint8_t small[] = {0, 0, 0, 9, 0, 3, 0, 1, 0, 0, 0, 1, 0};
    expect_refusal(KA_FRAME_REQUEST, small, sizeof(small), KA_FRAME_EUNDERSIZE);
    uint8_t small_response[] = {0, 0, 0, 3, 0, 0, 1};
    expect_refusal(KA_FRAME_RESPONSE, small_response, sizeof(small_response), KA_FRAME_EUNDERSIZE);
}

static void test_tls_client_hello_recognised(void **state)
{
    (void)state;
    uint8_t hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};
    expect_refusal(KA_FRAME_REQUEST, hello, sizeof(hello), KA_FRAME_ETLS);
}

static void test_client_id_past_frame_end_is_malformed(void **state)
{
    (void)state;
    /* size 12: key, version, corr, client_id length 100 but 2 bytes follow. */
    uint8_t bad[] = {0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 1, 0, 100, 'a', 'b'};
    expect_refusal(KA_FRAME_REQUEST, bad, sizeof(bad), KA_FRAME_EMALFORMED);
    uint8_t negative_len[] = {0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xf0, 'a', 'b'};
    expect_refusal(KA_FRAME_REQUEST, negative_len, sizeof(negative_len), KA_FRAME_EMALFORMED);
}

static void test_header_longer_than_peek_limit(void **state)
{
    (void)state;
    ka_splitter_t s;
    ka_frame_event_t ev;
    char cid[2001];
    memset(cid, 'c', 2000);
    cid[2000] = '\0';
    stream.len = 0;
    fx_request(&stream, 3, 1, 1, cid, 0, NULL, 0);
    ka_frame_init(&s, KA_FRAME_REQUEST, MAX_FRAME, &fx_alloc);
    s.peek_limit = 1024;
    /* Refused whether the header arrives in one chunk or straddles two. */
    assert_int_equal(ka_frame_feed(&s, stream.data, stream.len, &ev), KA_ELIMIT);
    assert_int_equal(s.error, KA_FRAME_EPEEK);
    ka_frame_init(&s, KA_FRAME_REQUEST, MAX_FRAME, &fx_alloc);
    s.peek_limit = 1024;
    assert_int_equal(ka_frame_feed(&s, stream.data, 100, &ev), KA_ELIMIT);
    assert_int_equal(s.error, KA_FRAME_EPEEK);
    /* Just under the limit passes. */
    stream.len = 0;
    cid[1024 - 14] = '\0';
    fx_request(&stream, 3, 1, 1, cid, 0, NULL, 0);
    size_t one = 1;
    ka_frame_init(&s, KA_FRAME_REQUEST, MAX_FRAME, &fx_alloc);
    s.peek_limit = 1024;
    fx_replay(&s, stream.data, stream.len, &one, 1, &seen);
    assert_int_equal(seen.err, 0);
    assert_int_equal(seen.ends, 1);
    ka_frame_free(&s);
    assert_int_equal(fx_live_allocs, 0);
}

static void test_responses_and_raw_tokens(void **state)
{
    (void)state;
    ka_splitter_t s;
    ka_frame_event_t ev;
    stream.len = 0;
    fx_response(&stream, 5, (const uint8_t *)"\0\0body", 6);
    fx_i32(&stream, 0); /* an empty raw SASL token (PLAIN's answer) */
    fx_i32(&stream, 3);
    fx_bytes(&stream, "abc", 3);

    ka_frame_init(&s, KA_FRAME_RESPONSE, MAX_FRAME, &fx_alloc);
    ka_frame_set_mode(&s, KA_FRAME_RESPONSE, KA_FRAME_PEEK_ERROR_CODE);
    long n = ka_frame_feed(&s, stream.data, stream.len, &ev);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.correlation_id, 5);
    assert_true(ev.hdr.has_error_code);
    assert_int_equal(ev.hdr.error_code, 0);
    size_t off = (size_t)n;
    off += (size_t)ka_frame_feed(&s, stream.data + off, stream.len - off, &ev);
    assert_int_equal(ev.type, KA_FRAME_END);
    ka_frame_set_mode(&s, KA_FRAME_RAW, 0);
    off += (size_t)ka_frame_feed(&s, stream.data + off, stream.len - off, &ev);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.size, 0);
    /* A zero-size frame ends without more bytes. */
    assert_int_equal(ka_frame_feed(&s, stream.data + off, 0, &ev), 0);
    assert_int_equal(ev.type, KA_FRAME_END);
    off += (size_t)ka_frame_feed(&s, stream.data + off, stream.len - off, &ev);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.size, 3);
    off += (size_t)ka_frame_feed(&s, stream.data + off, stream.len - off, &ev);
    assert_int_equal(ev.type, KA_FRAME_END);
    assert_int_equal(off, stream.len);
    assert_int_equal(s.frames, 3);
}

static void test_sasl_handshake_mechanism_peeked(void **state)
{
    (void)state;
    ka_splitter_t s;
    ka_frame_event_t ev;
    fx_buf_t body = {.len = 0};
    fx_i16(&body, 13);
    fx_bytes(&body, "SCRAM-SHA-256", 13);
    stream.len = 0;
    fx_request(&stream, 17, 0, 9, "c", 0, body.data, body.len);
    splitter(&s, KA_FRAME_REQUEST);
    ka_frame_feed(&s, stream.data, stream.len, &ev);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.sasl_mechanism.len, 13);
    assert_memory_equal(ev.hdr.sasl_mechanism.ptr, "SCRAM-SHA-256", 13);
}

static void test_opaque_mode_passes_everything(void **state)
{
    (void)state;
    ka_splitter_t s;
    ka_frame_event_t ev;
    uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x16, 0x03, 1, 2, 3};
    splitter(&s, KA_FRAME_REQUEST);
    ka_frame_set_mode(&s, KA_FRAME_OPAQUE, 0);
    assert_int_equal(ka_frame_feed(&s, junk, sizeof(junk), &ev), (long)sizeof(junk));
    assert_int_equal(ev.type, KA_FRAME_NONE);
    assert_int_equal(s.consumed, sizeof(junk));
}

static void test_carry_allocation_failure_is_retryable(void **state)
{
    (void)state;
    ka_splitter_t s;
    size_t chunks[] = {3, 5, 7};
    build_mixed_stream();
    splitter(&s, KA_FRAME_REQUEST);
    fx_fail_allocs = 1;
    fx_replay(&s, stream.data, stream.len, chunks, 3, &seen);
    /* The replay stopped at the failure; nothing was lost, so feeding the
     * rest from where it stopped completes the stream. */
    uint64_t done = seen.fed;
    fx_seen_t rest;
    fx_replay(&s, stream.data + done, stream.len - done, chunks, 3, &rest);
    assert_int_equal(rest.err, 0);
    assert_int_equal(seen.ends + rest.ends, 8);
    assert_int_equal(seen.out_len + rest.out_len, stream.len);
    ka_frame_free(&s);
    assert_int_equal(fx_live_allocs, 0);
}

/* Bytes spliced socket to socket are counted, unseen, as the body's: the
 * next header is found where it starts, and the frame ends on its last byte. */
static void test_skip_spliced_body(void **state)
{
    (void)state;
    static uint8_t body[40000];
    ka_splitter_t s;
    ka_frame_event_t ev;
    memset(body, 0x5a, sizeof(body));
    stream.len = 0;
    fx_response(&stream, 7, body, sizeof(body));
    fx_response(&stream, 8, body, 10);
    size_t first = 4 + 4 + sizeof(body);
    splitter(&s, KA_FRAME_RESPONSE);
    /* Not before a header, and never past the body. */
    assert_true(ka_frame_skip(&s, 1, &ev) < 0);
    assert_int_equal(ka_frame_feed(&s, stream.data, 100, &ev), 8);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.correlation_id, 7);
    assert_int_equal(ka_frame_feed(&s, stream.data + 8, 92, &ev), 92);
    assert_int_equal(ev.type, KA_FRAME_NONE);
    uint64_t left = first - 100;
    assert_true(ka_frame_skip(&s, left + 1, &ev) < 0);
    assert_int_equal(s.body_left, left);
    assert_int_equal(ka_frame_skip(&s, 30000, &ev), 30000);
    assert_int_equal(ev.type, KA_FRAME_NONE);
    assert_int_equal(ka_frame_skip(&s, left - 30000, &ev), (long)(left - 30000));
    assert_int_equal(ev.type, KA_FRAME_END);
    assert_int_equal(s.frames, 1);
    assert_int_equal(s.consumed, first);
    assert_true(ka_frame_at_boundary(&s));
    /* The next frame's header is where it starts. */
    assert_int_equal(ka_frame_feed(&s, stream.data + first, stream.len - first, &ev), 8);
    assert_int_equal(ev.type, KA_FRAME_HEADER);
    assert_int_equal(ev.hdr.correlation_id, 8);
    assert_int_equal(ev.hdr.size, 14);
    ka_frame_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_stream_in_one_chunk),
        cmocka_unit_test(test_every_two_chunk_split),
        cmocka_unit_test(test_byte_by_byte),
        cmocka_unit_test(test_every_fixed_chunk_size),
        cmocka_unit_test(test_header_v2_with_tagged_fields_before_acks),
        cmocka_unit_test(test_produce_acks_per_layout),
        cmocka_unit_test(test_oversize_frame_refused_with_its_size),
        cmocka_unit_test(test_undersize_frame_refused),
        cmocka_unit_test(test_tls_client_hello_recognised),
        cmocka_unit_test(test_client_id_past_frame_end_is_malformed),
        cmocka_unit_test(test_header_longer_than_peek_limit),
        cmocka_unit_test(test_responses_and_raw_tokens),
        cmocka_unit_test(test_sasl_handshake_mechanism_peeked),
        cmocka_unit_test(test_opaque_mode_passes_everything),
        cmocka_unit_test(test_carry_allocation_failure_is_retryable),
        cmocka_unit_test(test_skip_spliced_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
