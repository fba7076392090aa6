/*
 * adm_fixture.c: the admission tests' synthetic cluster and frame helpers
 * (see adm_fixture.h).
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

fx_t *fx_new(const char *policy_json)
{
    fx_t *f = calloc(1, sizeof(*f));
    char err[256];
    assert_int_equal(
        ka_policy_parse(policy_json, strlen(policy_json), 1, &f->policy, err, sizeof(err)), 0);
    ka_cluster_builder_t *b;
    assert_int_equal(ka_cluster_builder_new(1000, &b), 0);
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(ka_cluster_builder_add_broker(b, id, KA_SLICE_NULL, false), 0);
    ka_broker_defaults_t d = {
        .num_partitions = 2, .default_replication_factor = 3, .auto_create_topics_enable = true};
    ka_cluster_builder_set_defaults(b, &d);
    int32_t one = 1;
    for (int32_t p = 0; p < 8; p++)
        assert_int_equal(ka_cluster_builder_add_partition(b, S("full"), p, &one, 1), 0);
    int32_t rf2[2] = {2, 3};
    assert_int_equal(ka_cluster_builder_add_partition(b, S("three"), 0, rf2, 2), 0);
    assert_int_equal(ka_cluster_builder_finish(b, &f->view), 0);
    assert_int_equal(ka_reservations_new(&f->ledger), 0);
    f->ctx = (ka_adm_ctx_t){.policy = f->policy,
                            .view = f->view,
                            .ledger = f->ledger,
                            .now_ms = 1500,
                            .seed = 42,
                            .max_frame = 1 << 20};
    return f;
}

void fx_free(fx_t *f)
{
    ka_reservations_free(f->ledger);
    ka_cluster_unref(f->view);
    ka_policy_unref(f->policy);
    free(f);
}

uint8_t *fx_request_frame(int16_t api_key, int16_t version, int32_t cid, const void *body,
                          size_t *len)
{
    ka_writer_t w;
    struct ka_request_header h = {.request_api_key = api_key,
                                  .request_api_version = version,
                                  .correlation_id = cid,
                                  .client_id = S("unit")};
    ka_writer_init(&w, 1 << 20);
    ka_write_i32(&w, 0);
    assert_int_equal(ka_request_header_encode(&w, ka_request_header_version(api_key, version), &h),
                     0);
    assert_int_equal(ka_codec_find(api_key, KA_REQUEST)->encode(&w, version, body), 0);
    ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    *len = w.len;
    return w.buf;
}

uint8_t *fx_response_frame(int16_t api_key, int16_t version, int32_t cid, const void *body,
                           size_t *len)
{
    ka_writer_t w;
    struct ka_response_header h = {.correlation_id = cid};
    ka_writer_init(&w, 1 << 20);
    ka_write_i32(&w, 0);
    assert_int_equal(
        ka_response_header_encode(&w, ka_response_header_version(api_key, version), &h), 0);
    assert_int_equal(ka_codec_find(api_key, KA_RESPONSE)->encode(&w, version, body), 0);
    ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    *len = w.len;
    return w.buf;
}

void fx_decode_request(const uint8_t *frame, size_t len, ka_arena_t *arena, int16_t *version,
                       void *out)
{
    ka_reader_t r;
    struct ka_request_header h;
    assert_int_equal((int32_t)(len - 4), (int32_t)((uint32_t)frame[0] << 24 | frame[1] << 16 |
                                                   frame[2] << 8 | frame[3]));
    ka_reader_init(&r, frame + 4, len - 4);
    assert_int_equal(ka_request_header_read(&r, &h, NULL), 0);
    *version = h.request_api_version;
    assert_int_equal(
        ka_codec_find(h.request_api_key, KA_REQUEST)->decode(&r, h.request_api_version, arena, out),
        0);
}

void fx_decode_response(const uint8_t *frame, size_t len, int16_t api_key, int16_t version,
                        int32_t cid, ka_arena_t *arena, void *out)
{
    ka_reader_t r;
    struct ka_response_header h;
    assert_int_equal((int32_t)(len - 4), (int32_t)((uint32_t)frame[0] << 24 | frame[1] << 16 |
                                                   frame[2] << 8 | frame[3]));
    ka_reader_init(&r, frame + 4, len - 4);
    assert_int_equal(
        ka_response_header_decode(&r, ka_response_header_version(api_key, version), &h), 0);
    assert_int_equal(h.correlation_id, cid);
    assert_int_equal(ka_codec_find(api_key, KA_RESPONSE)->decode(&r, version, arena, out), 0);
}

uint8_t *fx_captured(const char *path, size_t *len)
{
    const char *root = getenv("KADMIT_TEST_DATA");
    char full[4096];
    static uint8_t buf[1 << 20];
    FILE *f;
    size_t n;
    uint8_t *frame;

    snprintf(full, sizeof(full), "%s/frames/%s", root ? root : "tests/data", path);
    f = fopen(full, "rb");
    if (f == NULL)
        fail_msg("captured frame %s is missing", full);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    frame = malloc(n + 4);
    assert_non_null(frame);
    frame[0] = (uint8_t)(n >> 24), frame[1] = (uint8_t)(n >> 16), frame[2] = (uint8_t)(n >> 8);
    frame[3] = (uint8_t)n;
    memcpy(frame + 4, buf, n);
    *len = n + 4;
    return frame;
}

struct ka_createtopics_request_creatable_topic fx_ct_topic(const char *name, int32_t np, int16_t rf)
{
    struct ka_createtopics_request_creatable_topic t;
    ka_createtopics_request_creatable_topic_init(&t);
    t.name = S(name);
    t.num_partitions = np;
    t.replication_factor = rf;
    return t;
}

uint8_t *fx_ct_request(int16_t version, struct ka_createtopics_request_creatable_topic *topics,
                       int32_t n, bool validate_only, size_t *len)
{
    struct ka_createtopics_request req;
    ka_createtopics_request_init(&req);
    req.topics.count = n;
    req.topics.items = topics;
    req.validate_only = validate_only;
    return fx_request_frame(19, version, 77, &req, len);
}

uint8_t *fx_cp_request(int16_t ver, const char *name, int32_t count, size_t *len)
{
    struct ka_createpartitions_request req;
    struct ka_createpartitions_request_create_partitions_topic t;
    ka_createpartitions_request_init(&req);
    ka_createpartitions_request_create_partitions_topic_init(&t);
    t.name = S(name);
    t.count = count;
    t.assignments.count = -1;
    req.topics.count = 1;
    req.topics.items = &t;
    return fx_request_frame(37, ver, 9, &req, len);
}
