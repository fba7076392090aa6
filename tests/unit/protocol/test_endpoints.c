/*
 * test_endpoints.c: the gateway's endpoint rewrite (protocol/ka_endpoints.h)
 * over responses captured from a real Kafka 4.4.0 cluster.
 *
 * tests/data/frames/gateway/ holds, per response, the captured frame and the
 * frame expected after the rewrite (tests/tools/capture_gateway_frames.py
 * builds it with a codec of its own, read from Kafka's JSON specs, and checks
 * that codec re-encodes every capture byte for byte). So every byte but the
 * endpoints' is compared with an independent implementation. The maps here
 * are the script's: map_all sends node N to broker-N.gw.example:29000+N,
 * map_partial the same but declines node 2.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_protocol.h"

#include "ka_endpoint_table.h"
#include "ka_endpoints.h"
#include "ka_metadata_response.h"

#define OUT_CAP (64u << 20)

/* One captured frame: its bytes, what it is, and its body's offset. */
struct frame {
    char name[256];
    int16_t api_key, version;
    uint8_t *buf;
    size_t len, body; /* frame bytes; the body starts at buf + body */
};

static int map_all(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    (void)host;
    (void)port;
    static char hosts[8][64];
    int *calls = ctx;
    if (calls != NULL)
        (*calls)++;
    if (node_id < 0 || node_id >= 8)
        return -1;
    int n = snprintf(hosts[node_id], sizeof(hosts[node_id]), "broker-%d.gw.example", node_id);
    out->host = hosts[node_id];
    out->host_len = (size_t)n;
    out->port = 29000 + node_id;
    return 0;
}

static int map_partial(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                       ka_endpoint_t *out)
{
    return node_id == 2 ? -1 : map_all(ctx, node_id, host, port, out);
}

/* Gives back what the broker sent: nothing to rewrite. */
static int map_same(void *ctx, int32_t node_id, ka_slice_t host, int32_t port, ka_endpoint_t *out)
{
    (void)ctx;
    (void)node_id;
    out->host = (const char *)host.ptr;
    out->host_len = host.len < 0 ? 0 : (size_t)host.len;
    out->port = port;
    return host.len < 0 ? -1 : 0;
}

static int map_decline(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                       ka_endpoint_t *out)
{
    (void)ctx, (void)node_id, (void)host, (void)port, (void)out;
    return -1;
}

static char long_host[KA_MAX_STRING_LEN + 2];

static int map_too_long(void *ctx, int32_t node_id, ka_slice_t host, int32_t port,
                        ka_endpoint_t *out)
{
    (void)ctx, (void)node_id, (void)host;
    memset(long_host, 'h', sizeof(long_host));
    out->host = long_host;
    out->host_len = KA_MAX_STRING_LEN + 1;
    out->port = port;
    return 0;
}

static const char *frames_dir(char *buf, size_t n)
{
    const char *root = getenv("KADMIT_TEST_DATA");
    snprintf(buf, n, "%s/frames/gateway", root ? root : "tests/data");
    return buf;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* "metadata-v12-response-..." -> api key and version, from the generated API table. */
static int parse_name(const char *name, int16_t *api_key, int16_t *version)
{
    const char *dash = strstr(name, "-v");
    if (dash == NULL)
        return -1;
    for (int k = 0; k < 200; k++) {
        const struct ka_api_info *info = ka_api_info_find((int16_t)k);
        if (info == NULL || strlen(info->name) != (size_t)(dash - name))
            continue;
        int same = 1;
        for (size_t i = 0; same && i < strlen(info->name); i++) {
            char c = info->name[i];
            same = (c >= 'A' && c <= 'Z' ? c + 32 : c) == name[i];
        }
        if (same) {
            *api_key = (int16_t)k;
            *version = (int16_t)atoi(dash + 2);
            return 0;
        }
    }
    return -1;
}

static void load(const char *dir, const char *name, struct frame *f)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->buf = read_file(path, &f->len);
    assert_non_null(f->buf);
    assert_int_equal(parse_name(name, &f->api_key, &f->version), 0);
    ka_reader_t r;
    struct ka_response_header h;
    ka_reader_init(&r, f->buf, f->len);
    assert_int_equal(
        ka_response_header_decode(&r, ka_response_header_version(f->api_key, f->version), &h), 0);
    f->body = r.off;
}

/* The expected frame beside a capture (suffix ".rewritten" or ".partial"), or NULL. */
static uint8_t *expected_for(const char *dir, const char *name, const char *suffix, size_t *len)
{
    char path[4096 + 512];
    size_t stem = strlen(name) - 4;
    snprintf(path, sizeof(path), "%s/%.*s%s.bin", dir, (int)stem, name, suffix);
    return read_file(path, len);
}

static int is_capture(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".bin") == 0 && strstr(name, ".rewritten.") == NULL &&
           strstr(name, ".partial.") == NULL;
}

/* Rewrites f's body with map into a fresh writer; returns rc, the body in *w. */
static int rewrite(const struct frame *f, const uint8_t *body, size_t len, ka_endpoint_map_fn map,
                   void *ctx, ka_writer_t *w, int *changed)
{
    ka_writer_init(w, OUT_CAP);
    return ka_endpoints_rewrite(f->api_key, f->version, body, len, map, ctx, w, changed);
}

static void check_against(const struct frame *f, ka_endpoint_map_fn map, const uint8_t *exp,
                          size_t exp_len)
{
    ka_writer_t w;
    int changed = -1;
    int rc = rewrite(f, f->buf + f->body, f->len - f->body, map, NULL, &w, &changed);
    if (rc != 0)
        fail_msg("%s: rewrite failed: %s", f->name, ka_strerror(rc));
    if (exp == NULL) {
        if (changed != 0 || w.len != 0)
            fail_msg("%s: changed, though nothing is to rewrite", f->name);
    } else {
        if (changed != 1)
            fail_msg("%s: not changed", f->name);
        assert_int_equal(w.len, exp_len - f->body);
        if (memcmp(w.buf, exp + f->body, w.len) != 0)
            fail_msg("%s: the rewritten body differs from the expected one", f->name);
        /* The header is the caller's and identical in the expected frame. */
        assert_memory_equal(exp, f->buf, f->body);
    }
    ka_writer_free(&w);
}

/* Every capture: the rewrite equals the independently built expected frame. */
static void test_captured_frames_rewrite_as_expected(void **state)
{
    (void)state;
    char dir[4096];
    DIR *d = opendir(frames_dir(dir, sizeof(dir)));
    if (d == NULL)
        fail_msg("no %s", dir);
    struct dirent *e;
    int seen = 0, rewritten = 0, partial = 0, apis[128] = {0};
    while ((e = readdir(d)) != NULL) {
        if (!is_capture(e->d_name))
            continue;
        struct frame f;
        load(dir, e->d_name, &f);
        if (!ka_endpoints_carried(f.api_key, f.version))
            fail_msg("%s: not in the generated table", f.name);
        size_t exp_len = 0, part_len = 0;
        uint8_t *exp = expected_for(dir, e->d_name, ".rewritten", &exp_len);
        uint8_t *part = expected_for(dir, e->d_name, ".partial", &part_len);
        check_against(&f, map_all, exp, exp_len);
        if (part != NULL)
            check_against(&f, map_partial, part, part_len);
        /* Giving back the broker's own endpoint, or declining, changes nothing. */
        check_against(&f, map_same, NULL, 0);
        check_against(&f, map_decline, NULL, 0);
        seen++;
        rewritten += exp != NULL;
        partial += part != NULL;
        if (exp != NULL && f.api_key < 128)
            apis[f.api_key]++;
        free(exp);
        free(part);
        free(f.buf);
    }
    closedir(d);
    print_message("%d captures, %d rewritten, %d partially\n", seen, rewritten, partial);
    assert_true(seen >= 40);
    /* Every API the generated table names is covered by a capture that changes. */
    for (unsigned i = 0; i < ka_ep_messages_count; i++)
        if (apis[ka_ep_messages[i].api_key] == 0)
            fail_msg("no rewritten capture of %s", ka_ep_messages[i].name);
}

/*
 * Every prefix of every capture: refused, or (when the cut falls in the part
 * copied unread, after the last endpoint) rewritten to the same prefix of the
 * full rewrite. Produce and Fetch are walked to their end (NodeEndpoints is
 * their last, tagged, field), so no prefix of theirs is accepted; nor is one
 * with an extra byte.
 */
static void test_truncated_and_oversized_input_is_refused(void **state)
{
    (void)state;
    char dir[4096];
    DIR *d = opendir(frames_dir(dir, sizeof(dir)));
    assert_non_null(d);
    struct dirent *e;
    long refused = 0, tail = 0;
    while ((e = readdir(d)) != NULL) {
        if (!is_capture(e->d_name))
            continue;
        struct frame f;
        load(dir, e->d_name, &f);
        size_t blen = f.len - f.body;
        ka_writer_t full;
        int changed;
        assert_int_equal(rewrite(&f, f.buf + f.body, blen, map_all, NULL, &full, &changed), 0);
        /* Their endpoints are in the last (tagged) section: read to the end. */
        int walked_to_end = f.api_key == 0 || f.api_key == 1;
        for (size_t cut = 0; cut < blen; cut++) {
            /* A copy of exactly cut bytes, so ASan sees any read past it. */
            uint8_t *p = malloc(cut ? cut : 1);
            memcpy(p, f.buf + f.body, cut);
            ka_writer_t w;
            int ch;
            int rc = rewrite(&f, p, cut, map_all, NULL, &w, &ch);
            if (rc < 0) {
                refused++;
            } else {
                if (walked_to_end)
                    fail_msg("%s: a prefix of %zu bytes was accepted", f.name, cut);
                if (changed && (!ch || w.len > full.len || memcmp(w.buf, full.buf, w.len) != 0))
                    fail_msg("%s: the %zu-byte prefix rewrote differently", f.name, cut);
                tail++;
            }
            ka_writer_free(&w);
            free(p);
        }
        if (walked_to_end) {
            uint8_t *p = malloc(blen + 1);
            memcpy(p, f.buf + f.body, blen);
            p[blen] = 0;
            ka_writer_t w;
            int ch;
            assert_int_equal(rewrite(&f, p, blen + 1, map_all, NULL, &w, &ch), KA_ETRAILING);
            ka_writer_free(&w);
            free(p);
        }
        ka_writer_free(&full);
        free(f.buf);
    }
    closedir(d);
    print_message("%ld prefixes refused, %ld accepted (cut after the last endpoint)\n", refused,
                  tail);
    assert_true(refused > 1000);
}

static void load_named(const char *name, struct frame *f)
{
    char dir[4096];
    load(frames_dir(dir, sizeof(dir)), name, f);
}

/* A count or length that claims more than the frame holds is refused before use. */
static void test_lying_counts_are_refused(void **state)
{
    (void)state;
    struct frame f;
    ka_writer_t w;
    int changed;
    /* Metadata v0 body: brokers count (int32) first. */
    load_named("metadata-v0-response-kafka-4.4.0-three.bin", &f);
    uint8_t *b = f.buf + f.body;
    size_t blen = f.len - f.body;
    memcpy(b, "\x7f\xff\xff\xff", 4);
    assert_int_equal(rewrite(&f, b, blen, map_all, NULL, &w, &changed), KA_ELIMIT);
    ka_writer_free(&w);
    memcpy(b, "\x00\x10\x00\x00", 4); /* 1M brokers in a few hundred bytes */
    assert_int_equal(rewrite(&f, b, blen, map_all, NULL, &w, &changed), KA_EUNDERFLOW);
    ka_writer_free(&w);
    memcpy(b, "\xff\xff\xff\xfe", 4);
    assert_int_equal(rewrite(&f, b, blen, map_all, NULL, &w, &changed), KA_EINVALID);
    ka_writer_free(&w);
    memcpy(b, "\x00\x00\x00\x03", 4);
    /* The first broker's host length (after node id) claims 30000 bytes. */
    memcpy(b + 8, "\x75\x30", 2);
    assert_int_equal(rewrite(&f, b, blen, map_all, NULL, &w, &changed), KA_EUNDERFLOW);
    ka_writer_free(&w);
    free(f.buf);

    /* Fetch v18 (flexible): the NodeEndpoints tag's size claims past the frame. */
    load_named("fetch-v18-response-kafka-4.4.0-follower.bin", &f);
    b = f.buf + f.body;
    blen = f.len - f.body;
    /* The body ends: ... tag count 1, tag 0, size, data..., so find the tag by walking back:
     * the section is the last bytes; its size byte sits two after the count. */
    size_t sec = 0;
    for (size_t i = 0; i + 3 < blen; i++)
        if (b[i] == 1 && b[i + 1] == 0 && (size_t)b[i + 2] == blen - i - 3)
            sec = i;
    assert_true(sec > 0);
    b[sec + 2] = (uint8_t)(b[sec + 2] + 1);
    assert_true(rewrite(&f, b, blen, map_all, NULL, &w, &changed) < 0);
    ka_writer_free(&w);
    b[sec + 2] = (uint8_t)(b[sec + 2] - 2); /* one short: the endpoints end early */
    assert_true(rewrite(&f, b, blen, map_all, NULL, &w, &changed) < 0);
    ka_writer_free(&w);
    free(f.buf);
}

/* What the map returns must fit; what the caller gives room for is respected. */
static void test_limits_of_the_map_and_the_output(void **state)
{
    (void)state;
    struct frame f;
    ka_writer_t w;
    int changed;
    load_named("metadata-v12-response-kafka-4.4.0-three.bin", &f);
    const uint8_t *b = f.buf + f.body;
    size_t blen = f.len - f.body;
    assert_int_equal(rewrite(&f, b, blen, map_too_long, NULL, &w, &changed), KA_ELIMIT);
    ka_writer_free(&w);
    ka_writer_init(&w, blen); /* the hosts grow: no room */
    assert_int_equal(
        ka_endpoints_rewrite(f.api_key, f.version, b, blen, map_all, NULL, &w, &changed),
        KA_EOVERFLOW);
    ka_writer_free(&w);
    /* The map is called once per broker (three brokers). */
    int calls = 0;
    assert_int_equal(rewrite(&f, b, blen, map_all, &calls, &w, &changed), 0);
    assert_int_equal(calls, 3);
    ka_writer_free(&w);
    free(f.buf);
}

/* Outside the generated table nothing is walked; the table knows what it holds. */
static void test_table_and_versions(void **state)
{
    (void)state;
    assert_true(ka_endpoints_carried(3, 0));
    assert_true(ka_endpoints_carried(3, 13));
    assert_false(ka_endpoints_carried(3, 14));
    assert_false(ka_endpoints_carried(3, -1));
    assert_false(ka_endpoints_carried(0, 9)); /* Produce before KIP-951 */
    assert_true(ka_endpoints_carried(0, 10));
    assert_false(ka_endpoints_carried(1, 15));
    assert_true(ka_endpoints_carried(1, 16));
    assert_true(ka_endpoints_carried(10, 0));
    assert_true(ka_endpoints_carried(10, 6));
    assert_true(ka_endpoints_carried(60, 2));
    assert_true(ka_endpoints_carried(78, 1));
    assert_true(ka_endpoints_carried(79, 2));
    assert_false(ka_endpoints_carried(55, 2)); /* DescribeQuorum: controllers, left alone */
    assert_false(ka_endpoints_carried(19, 7)); /* CreateTopics */
    ka_writer_t w;
    ka_writer_init(&w, 1024);
    int changed = -1;
    const uint8_t junk[3] = {1, 2, 3};
    assert_int_equal(ka_endpoints_rewrite(19, 7, junk, 3, map_all, NULL, &w, &changed), 0);
    assert_int_equal(changed, 0);
    assert_int_equal(w.len, 0);
    ka_writer_free(&w);
}

/*
 * A large Metadata answer from the 4.3.1 captures (300 partitions): decoded
 * with the generated codec before and after, everything but the brokers'
 * hosts and ports is the same, and the bytes after the brokers are too.
 */
static void test_metadata_decodes_the_same_but_for_endpoints(void **state)
{
    (void)state;
    const char *root = getenv("KADMIT_TEST_DATA");
    char path[4096];
    snprintf(path, sizeof(path), "%s/frames/metadata-v12-response-kafka-4.3.1-three.bin",
             root ? root : "tests/data");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    assert_non_null(buf);
    struct frame f = {.api_key = 3, .version = 12, .buf = buf, .len = len, .body = 5};
    ka_writer_t w;
    int changed;
    assert_int_equal(rewrite(&f, buf + 5, len - 5, map_all, NULL, &w, &changed), 0);
    assert_int_equal(changed, 1);
    ka_arena_t a1, a2;
    ka_arena_init(&a1, 16 << 20);
    ka_arena_init(&a2, 16 << 20);
    struct ka_metadata_response m1, m2;
    ka_reader_t r1, r2;
    ka_reader_init(&r1, buf + 5, len - 5);
    ka_reader_init(&r2, w.buf, w.len);
    assert_int_equal(ka_metadata_response_decode(&r1, 12, &a1, &m1), 0);
    assert_int_equal(ka_metadata_response_decode(&r2, 12, &a2, &m2), 0);
    assert_int_equal(m1.brokers.count, m2.brokers.count);
    assert_true(m1.topics.count > 0);
    for (int32_t i = 0; i < m1.brokers.count; i++) {
        struct ka_metadata_response_metadata_response_broker *x = &m1.brokers.items[i],
                                                             *y = &m2.brokers.items[i];
        char want[64];
        int n = snprintf(want, sizeof(want), "broker-%d.gw.example", x->node_id);
        assert_int_equal(x->node_id, y->node_id);
        assert_int_equal(y->host.len, n);
        assert_memory_equal(y->host.ptr, want, (size_t)n);
        assert_int_equal(y->port, 29000 + x->node_id);
        assert_int_equal(x->rack.len, y->rack.len);
        assert_int_equal(x->tagged_fields.len, y->tagged_fields.len);
    }
    assert_int_equal(m1.controller_id, m2.controller_id);
    assert_int_equal(m1.cluster_id.len, m2.cluster_id.len);
    assert_memory_equal(m1.cluster_id.ptr, m2.cluster_id.ptr, (size_t)m1.cluster_id.len);
    /* From the cluster id on, the bytes are the same: one copy of the tail. */
    size_t tail1 = (size_t)(m1.cluster_id.ptr - (buf + 5)) - 1;
    size_t tail2 = (size_t)(m2.cluster_id.ptr - w.buf) - 1;
    assert_int_equal(len - 5 - tail1, w.len - tail2);
    assert_memory_equal(buf + 5 + tail1, w.buf + tail2, w.len - tail2);
    ka_arena_destroy(&a1);
    ka_arena_destroy(&a2);
    ka_writer_free(&w);
    free(buf);
}

/*
 * After Metadata's brokers nothing is read: a tail the codec would refuse
 * (every byte 0xff from the cluster id on) is copied as it came, in one
 * piece. Produce, by contrast, is read to its tagged NodeEndpoints.
 */
static void test_metadata_tail_is_copied_unread(void **state)
{
    (void)state;
    struct frame f;
    load_named("metadata-v12-response-kafka-4.4.0-three.bin", &f);
    uint8_t *b = f.buf + f.body;
    size_t blen = f.len - f.body;
    ka_arena_t a;
    ka_arena_init(&a, 1 << 20);
    struct ka_metadata_response m;
    ka_reader_t r;
    ka_reader_init(&r, b, blen);
    assert_int_equal(ka_metadata_response_decode(&r, 12, &a, &m), 0);
    size_t tail = (size_t)(m.cluster_id.ptr - b) - 1; /* the cluster id's length byte */
    ka_arena_destroy(&a);
    memset(b + tail, 0xff, blen - tail);
    ka_writer_t w;
    int changed;
    assert_int_equal(rewrite(&f, b, blen, map_all, NULL, &w, &changed), 0);
    assert_int_equal(changed, 1);
    assert_true(w.len > blen - tail);
    assert_memory_equal(w.buf + w.len - (blen - tail), b + tail, blen - tail);
    ka_writer_free(&w);
    free(f.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_frames_rewrite_as_expected),
        cmocka_unit_test(test_truncated_and_oversized_input_is_refused),
        cmocka_unit_test(test_lying_counts_are_refused),
        cmocka_unit_test(test_limits_of_the_map_and_the_output),
        cmocka_unit_test(test_table_and_versions),
        cmocka_unit_test(test_metadata_decodes_the_same_but_for_endpoints),
        cmocka_unit_test(test_metadata_tail_is_copied_unread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
