/*
 * test_codec_roundtrip.c: every generated codec, every version.
 *
 * The sample frames are encoded by the generator in Python, independently
 * of the C encoder, so decoding them and encoding the result back to the
 * same bytes checks the two against each other. Frames captured from real
 * clients, when present under $KADMIT_TEST_DATA/frames, get the same check:
 * each file is a frame after its size prefix (header and body), or a body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <unistd.h>

#include "generated_samples.h"
#include "ka_codecs.h"
#include "ka_decode_error.h"
#include "ka_header.h"

/*
 * Decodes data with codec c at version (after a header of the right version
 * when with_header is set), encodes it again and compares. Returns 0, or -1
 * with a sentence in err.
 */
static int round_trip(const struct ka_codec *c, int16_t version, const uint8_t *data, size_t len,
                      int with_header, char *err, size_t errlen)
{
    int result = -1;
    ka_arena_t arena;
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    void *msg = calloc(1, c->struct_size);
    ka_writer_t w;
    ka_writer_init(&w, len + 64);
    ka_reader_t r;
    ka_reader_init(&r, data, len);
    struct ka_request_header req;
    struct ka_response_header resp;
    int16_t hv = c->direction == KA_REQUEST ? ka_request_header_version(c->api_key, version)
                                            : ka_response_header_version(c->api_key, version);
    if (with_header) {
        int rc = c->direction == KA_REQUEST ? ka_request_header_decode(&r, hv, &req)
                                            : ka_response_header_decode(&r, hv, &resp);
        if (rc == 0 && c->direction == KA_REQUEST &&
            (req.request_api_key != c->api_key || req.request_api_version != version)) {
            snprintf(err, errlen, "header names API %d v%d", req.request_api_key,
                     req.request_api_version);
            goto out;
        }
        if (rc == 0)
            rc = c->direction == KA_REQUEST ? ka_request_header_encode(&w, hv, &req)
                                            : ka_response_header_encode(&w, hv, &resp);
        if (rc < 0) {
            snprintf(err, errlen, "header v%d: %s at byte %zu", hv, ka_strerror(r.err), r.err_off);
            goto out;
        }
    }
    /* The body gets its own reader so error offsets count from the body. */
    size_t header_len = r.off;
    ka_reader_init(&r, data + header_len, len - header_len);
    if (c->decode(&r, version, &arena, msg) != 0) {
        ka_decode_error_format_dir(err, errlen, c->api_key, version, c->direction, &r);
        goto out;
    }
    if (c->encode(&w, version, msg) != 0) {
        snprintf(err, errlen, "re-encoding failed: %s", ka_strerror(w.err));
        goto out;
    }
    if (w.len != len || (len > 0 && memcmp(w.buf, data, len) != 0)) {
        snprintf(err, errlen, "re-encoded %zu bytes differ from the %zu decoded", w.len, len);
        goto out;
    }
    result = 0;
out:
    ka_writer_free(&w);
    free(msg);
    ka_arena_destroy(&arena);
    return result;
}

static void assert_round_trip(const struct ka_codec *c, int16_t version, const uint8_t *data,
                              size_t len, const char *what)
{
    char err[200];
    if (round_trip(c, version, data, len, 0, err, sizeof(err)) != 0)
        fail_msg("%s: %s", what, err);
}

static void test_every_sample_round_trips(void **state)
{
    (void)state;
    for (size_t i = 0; i < ka_samples_count; i++) {
        const struct ka_sample *s = &ka_samples[i];
        const struct ka_codec *c = ka_codec_find(s->api_key, (enum ka_direction)s->direction);
        assert_non_null(c);
        char what[128];
        snprintf(what, sizeof(what), "%s v%d %s", c->name, s->version, s->kind);
        assert_round_trip(c, s->version, s->data, s->len, what);
    }
}

static void test_every_version_of_every_codec_has_samples(void **state)
{
    (void)state;
    assert_int_equal(ka_codecs_count, 30);
    for (size_t i = 0; i < ka_codecs_count; i++) {
        const struct ka_codec *c = &ka_codecs[i];
        for (int16_t v = c->min_version; v <= c->max_version; v++) {
            int found = 0;
            for (size_t j = 0; j < ka_samples_count; j++)
                found += ka_samples[j].api_key == c->api_key &&
                         ka_samples[j].direction == (int)c->direction && ka_samples[j].version == v;
            if (found < 2)
                fail_msg("%s v%d has %d samples", c->name, v, found);
        }
    }
}

static void test_every_truncation_fails_cleanly(void **state)
{
    (void)state;
    ka_arena_t arena;
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    for (size_t i = 0; i < ka_samples_count; i++) {
        const struct ka_sample *s = &ka_samples[i];
        const struct ka_codec *c = ka_codec_find(s->api_key, (enum ka_direction)s->direction);
        void *msg = calloc(1, c->struct_size);
        for (size_t cut = 0; cut < s->len; cut++) {
            /* A copy of exactly `cut` bytes, so ASan sees any overread. */
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, s->data, cut);
            ka_reader_t r;
            ka_reader_init(&r, copy, cut);
            int rc = c->decode(&r, s->version, &arena, msg);
            assert_true(rc < 0);
            assert_int_equal(rc, r.err);
            assert_true(r.err_off <= cut);
            free(copy);
            ka_arena_reset(&arena);
        }
        free(msg);
    }
    ka_arena_destroy(&arena);
}

static void test_trailing_bytes_are_refused(void **state)
{
    (void)state;
    ka_arena_t arena;
    ka_arena_init(&arena, KA_ARENA_DEFAULT_CAP);
    for (size_t i = 0; i < ka_samples_count; i++) {
        const struct ka_sample *s = &ka_samples[i];
        const struct ka_codec *c = ka_codec_find(s->api_key, (enum ka_direction)s->direction);
        uint8_t *longer = malloc(s->len + 1);
        memcpy(longer, s->data, s->len);
        longer[s->len] = 0;
        void *msg = calloc(1, c->struct_size);
        ka_reader_t r;
        ka_reader_init(&r, longer, s->len + 1);
        assert_int_equal(c->decode(&r, s->version, &arena, msg), KA_ETRAILING);
        assert_int_equal(r.err_off, s->len);
        free(msg);
        free(longer);
        ka_arena_reset(&arena);
    }
    ka_arena_destroy(&arena);
}

static void test_versions_outside_the_specs_are_unsupported(void **state)
{
    (void)state;
    const uint8_t body[] = {0, 0, 0, 0};
    struct ka_createtopics_request req;
    ka_arena_t arena;
    ka_arena_init(&arena, 1024);
    ka_reader_t r;
    ka_reader_init(&r, body, sizeof(body));
    assert_int_equal(ka_createtopics_request_decode(&r, 8, &arena, &req), KA_EUNSUPPORTED);
    ka_reader_init(&r, body, sizeof(body));
    assert_int_equal(ka_createtopics_request_decode(&r, -1, &arena, &req), KA_EUNSUPPORTED);
    ka_arena_destroy(&arena);
}

/* CreateTopics v7 built in code: the policy engine builds requests this way. */
static void test_createtopics_built_in_code_decodes_to_the_same_fields(void **state)
{
    (void)state;
    int32_t brokers[] = {1, 2, 3};
    struct ka_createtopics_request_creatable_replica_assignment assignment;
    ka_createtopics_request_creatable_replica_assignment_init(&assignment);
    assignment.partition_index = 0;
    assignment.broker_ids.count = 3;
    assignment.broker_ids.items = brokers;
    struct ka_createtopics_request_creatable_topic_config config;
    ka_createtopics_request_creatable_topic_config_init(&config);
    config.name = KA_SLICE_LIT("cleanup.policy");
    config.value = KA_SLICE_NULL;
    struct ka_createtopics_request_creatable_topic topic;
    ka_createtopics_request_creatable_topic_init(&topic);
    topic.name = KA_SLICE_LIT("orders");
    topic.num_partitions = -1;
    topic.replication_factor = -1;
    topic.assignments.count = 1;
    topic.assignments.items = &assignment;
    topic.configs.count = 1;
    topic.configs.items = &config;
    struct ka_createtopics_request req;
    ka_createtopics_request_init(&req);
    assert_int_equal(req.timeout_ms, 60000);
    req.topics.count = 1;
    req.topics.items = &topic;
    req.validate_only = 1;

    for (int16_t v = KA_CREATETOPICS_REQUEST_MIN_VERSION; v <= KA_CREATETOPICS_REQUEST_MAX_VERSION;
         v++) {
        ka_writer_t w;
        ka_writer_init(&w, 4096);
        assert_int_equal(ka_createtopics_request_encode(&w, v, &req), 0);
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 20);
        struct ka_createtopics_request got;
        ka_reader_t r;
        ka_reader_init(&r, w.buf, w.len);
        assert_int_equal(ka_createtopics_request_decode(&r, v, &arena, &got), 0);
        assert_int_equal(got.topics.count, 1);
        const struct ka_createtopics_request_creatable_topic *t = &got.topics.items[0];
        assert_int_equal(t->name.len, 6);
        assert_memory_equal(t->name.ptr, "orders", 6);
        assert_int_equal(t->num_partitions, -1);
        assert_int_equal(t->assignments.items[0].broker_ids.count, 3);
        assert_int_equal(t->assignments.items[0].broker_ids.items[2], 3);
        assert_int_equal(t->configs.items[0].value.len, -1);
        assert_int_equal(got.timeout_ms, 60000);
        /* validate_only exists from v1; v0 decodes it as the spec default. */
        assert_int_equal(got.validate_only, v >= 1 ? 1 : 0);
        ka_arena_destroy(&arena);
        ka_writer_free(&w);
    }
}

static void test_fields_absent_from_a_version_take_spec_defaults(void **state)
{
    (void)state;
    /* Metadata response v0: brokers, then topics; nothing else is on the wire. */
    ka_writer_t w;
    ka_writer_init(&w, 256);
    ka_write_array_count(&w, 0);
    ka_write_array_count(&w, 1);
    ka_write_i16(&w, 0);
    ka_write_string(&w, KA_SLICE_LIT("t"));
    ka_write_array_count(&w, 1);
    ka_write_i16(&w, 0);
    ka_write_i32(&w, 0);
    ka_write_i32(&w, 2);
    ka_write_array_count(&w, 0);
    ka_write_array_count(&w, 0);
    assert_int_equal(w.err, 0);
    ka_arena_t arena;
    ka_arena_init(&arena, 1 << 16);
    struct ka_metadata_response m;
    ka_reader_t r;
    ka_reader_init(&r, w.buf, w.len);
    assert_int_equal(ka_metadata_response_decode(&r, 0, &arena, &m), 0);
    assert_int_equal(m.controller_id, -1);
    assert_int_equal(m.cluster_id.len, -1);
    assert_int_equal(m.cluster_authorized_operations, INT32_MIN);
    assert_int_equal(m.topics.items[0].is_internal, 0);
    assert_int_equal(m.topics.items[0].topic_authorized_operations, INT32_MIN);
    assert_int_equal(m.topics.items[0].partitions.items[0].leader_epoch, -1);
    assert_int_equal(m.topics.items[0].partitions.items[0].leader_id, 2);
    ka_arena_destroy(&arena);
    ka_writer_free(&w);
}

static void test_null_in_a_non_nullable_version_is_refused_on_encode(void **state)
{
    (void)state;
    /* Metadata request topics may be null only from v1. */
    struct ka_metadata_request req;
    ka_metadata_request_init(&req);
    req.topics.count = -1;
    ka_writer_t w;
    ka_writer_init(&w, 64);
    assert_int_equal(ka_metadata_request_encode(&w, 0, &req), KA_EINVALID);
    ka_writer_reset(&w);
    assert_int_equal(ka_metadata_request_encode(&w, 1, &req), 0);
    ka_writer_free(&w);
}

/*
 * A nullable struct (not in an array) travels behind a presence byte: -1
 * for null, 1 for present. Any other byte would not re-encode to the same
 * bytes, so it is refused.
 */
static void test_nullable_struct_presence_byte(void **state)
{
    (void)state;
    struct ka_streamsgroupheartbeat_request_topology topology;
    ka_streamsgroupheartbeat_request_topology_init(&topology);
    topology.epoch = 41;
    struct ka_streamsgroupheartbeat_request req;
    ka_streamsgroupheartbeat_request_init(&req);
    assert_null(req.topology);
    req.group_id = KA_SLICE_LIT("g");
    req.member_id = KA_SLICE_LIT("m");
    /* group id, member id, two epochs, two null strings, the rebalance timeout. */
    const size_t marker = 2 + 2 + 4 + 4 + 1 + 1 + 4;
    for (int present = 0; present <= 1; present++) {
        req.topology = present ? &topology : NULL;
        ka_writer_t w;
        ka_writer_init(&w, 256);
        assert_int_equal(ka_streamsgroupheartbeat_request_encode(&w, 0, &req), 0);
        assert_int_equal(w.buf[marker], present ? 0x01 : 0xff);
        ka_arena_t arena;
        ka_arena_init(&arena, 1 << 16);
        struct ka_streamsgroupheartbeat_request out;
        ka_reader_t r;
        ka_reader_init(&r, w.buf, w.len);
        assert_int_equal(ka_streamsgroupheartbeat_request_decode(&r, 0, &arena, &out), 0);
        if (present)
            assert_int_equal(out.topology->epoch, 41);
        else
            assert_null(out.topology);
        w.buf[marker] = 0x02;
        ka_reader_init(&r, w.buf, w.len);
        assert_int_equal(ka_streamsgroupheartbeat_request_decode(&r, 0, &arena, &out), KA_EINVALID);
        assert_int_equal(r.err_off, marker + 1);
        ka_arena_destroy(&arena);
        ka_writer_free(&w);
    }
}

static void test_arena_cap_is_reported_as_a_limit(void **state)
{
    (void)state;
    /* 1000 broker ids need 4000 bytes of arena; give it less. */
    ka_writer_t w;
    ka_writer_init(&w, 1 << 16);
    ka_write_array_count(&w, 1);
    ka_write_string(&w, KA_SLICE_LIT("t"));
    ka_write_i32(&w, 1);
    ka_write_i16(&w, 1);
    ka_write_array_count(&w, 1);
    ka_write_i32(&w, 0);
    ka_write_array_count(&w, 1000);
    for (int i = 0; i < 1000; i++)
        ka_write_i32(&w, i);
    ka_write_array_count(&w, 0);
    ka_write_i32(&w, 1000);
    ka_write_bool(&w, 0);
    assert_int_equal(w.err, 0);
    ka_arena_t arena;
    ka_arena_init(&arena, 1024);
    struct ka_createtopics_request req;
    ka_reader_t r;
    ka_reader_init(&r, w.buf, w.len);
    assert_int_equal(ka_createtopics_request_decode(&r, 2, &arena, &req), KA_ELIMIT);
    ka_arena_destroy(&arena);
    ka_writer_free(&w);
}

/* Parses "createtopics-v7-request-kcat.bin" into a codec and version. */
static const struct ka_codec *codec_for_file(const char *name, int16_t *version)
{
    char api[64], dir[16];
    int v;
    if (sscanf(name, "%63[a-z]-v%d-%15[a-z]", api, &v, dir) != 3)
        return NULL;
    enum ka_direction d = strcmp(dir, "response") == 0 ? KA_RESPONSE : KA_REQUEST;
    if (strcmp(dir, "request") != 0 && strcmp(dir, "response") != 0)
        return NULL;
    for (size_t i = 0; i < ka_codecs_count; i++) {
        char lower[64];
        const char *n = ka_codecs[i].name;
        size_t k = 0;
        /* "CreateTopicsRequest" -> "createtopics" */
        size_t stem = strlen(n) - (ka_codecs[i].direction == KA_REQUEST ? 7 : 8);
        for (; k < stem && k < sizeof(lower) - 1; k++)
            lower[k] = (char)(n[k] >= 'A' && n[k] <= 'Z' ? n[k] + 32 : n[k]);
        lower[k] = 0;
        if (strcmp(lower, api) == 0 && ka_codecs[i].direction == d) {
            *version = (int16_t)v;
            return &ka_codecs[i];
        }
    }
    return NULL;
}

/* Round-trips every frame file in dir; returns how many, or -1 if dir is absent. */
static int round_trip_frames_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        int16_t version;
        const struct ka_codec *c = codec_for_file(e->d_name, &version);
        if (c == NULL)
            fail_msg("%s: name does not say <api>-v<N>-<request|response>-...", e->d_name);
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static uint8_t buf[16 << 20];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        /* A capture is the frame after its size prefix: header, then body.
         * A file holding the body alone is accepted too. */
        char with_header[200], body_only[200];
        if (round_trip(c, version, buf, len, 1, with_header, sizeof(with_header)) != 0 &&
            round_trip(c, version, buf, len, 0, body_only, sizeof(body_only)) != 0)
            fail_msg("%s: as header+body: %s; as body: %s", e->d_name, with_header, body_only);
        seen++;
    }
    closedir(d);
    return seen;
}

static void test_captured_frames_round_trip(void **state)
{
    (void)state;
    const char *root = getenv("KADMIT_TEST_DATA");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/frames", root ? root : "tests/data");
    int seen = round_trip_frames_in(dir);
    /* The captured frames are checked in (tests/data/frames/README.md), so
     * finding none means the test is looking in the wrong place. */
    if (seen <= 0)
        fail_msg("no captured frames found in %s", dir);
    print_message("round-tripped %d captured frames\n", seen);
    /* The deletes (tests/tools/capture_delete_frames.sh), which the admission tests replay. */
    snprintf(dir, sizeof(dir), "%s/frames/protect", root ? root : "tests/data");
    if (round_trip_frames_in(dir) <= 0)
        fail_msg("no captured delete frames found in %s", dir);
}

static void write_file(const char *dir, const char *name, const uint8_t *a, size_t alen,
                       const uint8_t *b, size_t blen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(a, 1, alen, f), alen);
    if (blen > 0)
        assert_int_equal(fwrite(b, 1, blen, f), blen);
    fclose(f);
}

static void test_frame_loader_accepts_frames_with_or_without_header(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/kadmit-frames-XXXXXX", tmp != NULL ? tmp : P_tmpdir);
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < ka_samples_count; i++) {
        const struct ka_sample *s = &ka_samples[i];
        if (s->api_key != 19 || s->version != 7 || strcmp(s->kind, "full") != 0)
            continue;
        if (s->direction == KA_REQUEST) {
            const uint8_t header[] = {0x00, 0x13, 0x00, 0x07, 0, 0, 0, 5, 0x00, 0x01, 'k', 0x00};
            write_file(dir, "createtopics-v7-request-test.bin", header, sizeof(header), s->data,
                       s->len);
        } else {
            write_file(dir, "createtopics-v7-response-test.bin", s->data, s->len, NULL, 0);
        }
    }
    assert_int_equal(round_trip_frames_in(dir), 2);
    char path[4096];
    snprintf(path, sizeof(path), "%s/createtopics-v7-request-test.bin", dir);
    remove(path);
    snprintf(path, sizeof(path), "%s/createtopics-v7-response-test.bin", dir);
    remove(path);
    rmdir(dir);
}

static void test_frame_names_map_to_codecs(void **state)
{
    (void)state;
    int16_t v = -1;
    const struct ka_codec *c = codec_for_file("createtopics-v7-request-kcat.bin", &v);
    assert_non_null(c);
    assert_int_equal(c->api_key, 19);
    assert_int_equal(v, 7);
    c = codec_for_file("metadata-v12-response-java.bin", &v);
    assert_non_null(c);
    assert_int_equal(c->direction, KA_RESPONSE);
    assert_null(codec_for_file("produce-v9-request-x.bin", &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_sample_round_trips),
        cmocka_unit_test(test_every_version_of_every_codec_has_samples),
        cmocka_unit_test(test_every_truncation_fails_cleanly),
        cmocka_unit_test(test_trailing_bytes_are_refused),
        cmocka_unit_test(test_versions_outside_the_specs_are_unsupported),
        cmocka_unit_test(test_createtopics_built_in_code_decodes_to_the_same_fields),
        cmocka_unit_test(test_fields_absent_from_a_version_take_spec_defaults),
        cmocka_unit_test(test_null_in_a_non_nullable_version_is_refused_on_encode),
        cmocka_unit_test(test_nullable_struct_presence_byte),
        cmocka_unit_test(test_arena_cap_is_reported_as_a_limit),
        cmocka_unit_test(test_frame_names_map_to_codecs),
        cmocka_unit_test(test_frame_loader_accepts_frames_with_or_without_header),
        cmocka_unit_test(test_captured_frames_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
