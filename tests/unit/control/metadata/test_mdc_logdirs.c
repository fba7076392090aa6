/*
 * test_mdc_logdirs.c: the cluster view checked against a broker's
 * DescribeLogDirs answer (encoded with the generated codec), and the state
 * that turns checks into "the view may be partial".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ka_describelogdirs_response.h"
#include "ka_error_codes.h"
#include "ka_mdc_logdirs.h"
#include "ka_metrics.h"
#include "ka_writer.h"

typedef struct ka_describelogdirs_response_describe_log_dirs_partition part_t;
typedef struct ka_describelogdirs_response_describe_log_dirs_topic topic_t;
typedef struct ka_describelogdirs_response_describe_log_dirs_result dir_t;

/* A view with topic "seen" (partitions 0 and 1) on broker 1. */
static ka_cluster_t *view_new(void)
{
    ka_cluster_builder_t *b;
    ka_cluster_t *view;
    int32_t one = 1;

    assert_int_equal(ka_cluster_builder_new(0, &b), 0);
    assert_int_equal(ka_cluster_builder_add_broker(b, 1, (ka_slice_t){NULL, -1}, false), 0);
    for (int32_t p = 0; p < 2; p++)
        assert_int_equal(ka_cluster_builder_add_partition(b, KA_SLICE_LIT("seen"), p, &one, 1), 0);
    assert_int_equal(ka_cluster_builder_finish(b, &view), 0);
    return view;
}

/* Encodes an answer of version 4 with the directories given, then compares. */
static void check(const ka_cluster_t *view, int16_t error_code, dir_t *dirs, int32_t dir_count,
                  ka_logdirs_check_t *out)
{
    struct ka_describelogdirs_response resp;
    ka_writer_t w;
    ka_reader_t r;

    ka_describelogdirs_response_init(&resp);
    resp.error_code = error_code;
    resp.results.count = dir_count;
    resp.results.items = dirs;
    ka_writer_init(&w, 1 << 20);
    assert_int_equal(ka_describelogdirs_response_encode(&w, 4, &resp), 0);
    ka_reader_init(&r, w.buf, w.len);
    ka_logdirs_compare(view, r, 4, out);
    ka_writer_free(&w);
}

static void dir_init(dir_t *d, topic_t *topics, int32_t count, int16_t error_code)
{
    ka_describelogdirs_response_describe_log_dirs_result_init(d);
    d->error_code = error_code;
    d->log_dir = KA_SLICE_LIT("/data");
    d->topics.count = count;
    d->topics.items = topics;
}

static void topic_init(topic_t *t, ka_slice_t name, part_t *parts, int32_t count)
{
    ka_describelogdirs_response_describe_log_dirs_topic_init(t);
    t->name = name;
    t->partitions.count = count;
    t->partitions.items = parts;
}

static void part_init(part_t *p, int32_t index, uint8_t future)
{
    ka_describelogdirs_response_describe_log_dirs_partition_init(p);
    p->partition_index = index;
    p->is_future_key = future;
}

static void test_complete_when_every_current_replica_is_in_the_view(void **state)
{
    (void)state;
    ka_cluster_t *view = view_new();
    part_t parts[3];
    topic_t topic;
    dir_t dir;
    ka_logdirs_check_t c;

    part_init(&parts[0], 0, 0);
    part_init(&parts[1], 1, 0);
    part_init(&parts[2], 1, 1); /* being moved between directories: the same partition */
    topic_init(&topic, KA_SLICE_LIT("seen"), parts, 3);
    dir_init(&dir, &topic, 1, 0);
    check(view, 0, &dir, 1, &c);
    assert_int_equal(c.result, KA_LOGDIRS_COMPLETE);
    assert_int_equal(c.replicas, 2);
    assert_int_equal(c.missing, 0);
    ka_cluster_unref(view);
}

static void test_missing_counts_replicas_of_partitions_the_view_lacks(void **state)
{
    (void)state;
    ka_cluster_t *view = view_new();
    part_t seen[1], hidden[2], offline[1];
    topic_t topics[2], gone;
    dir_t dirs[2];
    ka_logdirs_check_t c;

    part_init(&seen[0], 2, 0); /* a partition of "seen" the view lacks */
    part_init(&hidden[0], 0, 0);
    part_init(&hidden[1], 1, 0);
    part_init(&offline[0], 0, 0);
    topic_init(&topics[0], KA_SLICE_LIT("hidden"), hidden, 2);
    topic_init(&topics[1], KA_SLICE_LIT("seen"), seen, 1);
    topic_init(&gone, KA_SLICE_LIT("on-an-offline-dir"), offline, 1);
    dir_init(&dirs[0], topics, 2, 0);
    dir_init(&dirs[1], &gone, 1, KA_KAFKA_ERR_KAFKA_STORAGE_ERROR);
    check(view, 0, dirs, 2, &c);
    assert_int_equal(c.result, KA_LOGDIRS_MISSING);
    assert_int_equal(c.replicas, 3);
    assert_int_equal(c.missing, 3);
    assert_string_equal(c.first_missing, "hidden");
    char why[KA_CLUSTER_PARTIAL_MAX];
    ka_logdirs_partial_reason(&c, "kadmit", why, sizeof(why));
    assert_non_null(strstr(why, "3 replicas"));
    assert_non_null(strstr(why, "topic hidden"));
    assert_non_null(strstr(why, "--allow-principal User:kadmit --operation Describe --topic '*'"));
    ka_cluster_unref(view);
}

static void test_unauthorized_from_the_error_code_or_no_directory(void **state)
{
    (void)state;
    ka_cluster_t *view = view_new();
    ka_logdirs_check_t c;
    char why[KA_CLUSTER_PARTIAL_MAX];

    check(view, KA_KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED, NULL, 0, &c);
    assert_int_equal(c.result, KA_LOGDIRS_UNAUTHORIZED);
    check(view, 0, NULL, 0, &c); /* versions 1-2 say it with no directory */
    assert_int_equal(c.result, KA_LOGDIRS_UNAUTHORIZED);
    ka_logdirs_partial_reason(&c, "", why, sizeof(why));
    assert_non_null(strstr(why, "refused DescribeLogDirs"));
    assert_non_null(strstr(why, "--operation Describe --cluster"));
    ka_cluster_unref(view);
}

/* A reason longer than its buffer is cut visibly: it ends in "...", never in
 * a principal or topic name that merely looks whole. */
static void test_a_reason_too_long_for_its_buffer_ends_in_an_ellipsis(void **state)
{
    (void)state;
    ka_logdirs_check_t c;
    char principal[280], why[KA_CLUSTER_PARTIAL_MAX];

    memset(&c, 0, sizeof(c));
    c.result = KA_LOGDIRS_MISSING;
    c.missing = 1;
    memset(c.first_missing, 't', sizeof(c.first_missing) - 1);
    c.first_missing[sizeof(c.first_missing) - 1] = '\0';
    memset(principal, 'p', sizeof(principal) - 1);
    principal[sizeof(principal) - 1] = '\0';
    ka_logdirs_partial_reason(&c, principal, why, sizeof(why));
    assert_int_equal(strlen(why), sizeof(why) - 1);
    assert_string_equal(why + sizeof(why) - 4, "...");
    c.result = KA_LOGDIRS_UNAUTHORIZED;
    ka_logdirs_partial_reason(&c, principal, why, sizeof(why));
    assert_string_equal(why + sizeof(why) - 4, "...");
    /* One that fits is left whole. */
    ka_logdirs_partial_reason(&c, "kadmit", why, sizeof(why));
    assert_string_equal(why + strlen(why) - 3, "*')");
}

static void test_a_truncated_answer_fails_without_a_verdict(void **state)
{
    (void)state;
    ka_cluster_t *view = view_new();
    static const uint8_t truncated[] = {0, 0, 0, 0, 0};
    ka_logdirs_check_t c;
    ka_reader_t r;

    ka_reader_init(&r, truncated, sizeof(truncated));
    ka_logdirs_compare(view, r, 4, &c);
    assert_int_equal(c.result, KA_LOGDIRS_FAILED);
    assert_true(c.err[0] != '\0');
    ka_cluster_unref(view);
}

/* A check of one directory holding partition 0 of each named topic, none in the view. */
static void check_missing(const char *const *names, int32_t n, ka_logdirs_check_t *out)
{
    ka_cluster_t *view = view_new();
    part_t parts[8];
    topic_t topics[8];
    dir_t dir;

    for (int32_t i = 0; i < n; i++) {
        part_init(&parts[i], 0, 0);
        topic_init(&topics[i], (ka_slice_t){(const uint8_t *)names[i], (int32_t)strlen(names[i])},
                   &parts[i], 1);
    }
    dir_init(&dir, topics, n, 0);
    check(view, 0, &dir, 1, out);
    assert_int_equal(out->result, KA_LOGDIRS_MISSING);
    ka_cluster_unref(view);
}

/* Measured before the fix: 200 creates rotating over 3 sidecars, no limit in reach, 26 to 81
 * refused as "the view may be partial", naming a topic created a moment before. Each check found
 * another topic created between its Metadata and its DescribeLogDirs; none was hidden. */
static void test_topics_created_between_the_answers_never_make_the_view_partial(void **state)
{
    (void)state;
    ka_logdirs_state_t st = {0};
    ka_metrics_t m;
    ka_logdirs_check_t c;
    static const char *const burst[][2] = {
        {"new-1", "new-2"}, {"new-3", "new-4"}, {"new-5", "new-6"}, {"new-7", "new-8"}};

    memset(&m, 0, sizeof(m));
    for (size_t i = 0; i < sizeof(burst) / sizeof(burst[0]); i++) {
        check_missing(burst[i], 2, &c);
        ka_logdirs_track(&st, &c, "kadmit", "b:9092", &m);
        assert_string_equal(st.partial, "");
        assert_int_equal(m.view_partial, 0);
    }
    /* A topic hidden from kadmit is missing every time, beside the new ones: partial. */
    static const char *const with_hidden[][2] = {{"hidden", "new-9"}, {"new-10", "hidden"}};
    check_missing(with_hidden[0], 2, &c);
    ka_logdirs_track(&st, &c, "kadmit", "b:9092", &m);
    assert_string_equal(st.partial, "");
    check_missing(with_hidden[1], 2, &c);
    ka_logdirs_track(&st, &c, "kadmit", "b:9092", &m);
    assert_non_null(strstr(st.partial, "Metadata did not show kadmit"));
    assert_int_equal(m.view_partial, 1);

    /* Partial because DescribeLogDirs was refused, then Describe on the cluster is granted: the
     * first check that sees replicas missing has no earlier one to compare with, so the view
     * stays partial until a second check says whether they are hidden or new. */
    ka_logdirs_check_t refused = {.result = KA_LOGDIRS_UNAUTHORIZED};
    static const char *const fresh[][1] = {{"new-11"}, {"new-12"}};
    ka_logdirs_track(&st, &refused, "kadmit", "b:9092", &m);
    check_missing(fresh[0], 1, &c);
    ka_logdirs_track(&st, &c, "kadmit", "b:9092", &m);
    assert_int_equal(m.view_partial, 1);
    check_missing(fresh[1], 1, &c);
    ka_logdirs_track(&st, &c, "kadmit", "b:9092", &m);
    assert_int_equal(m.view_partial, 0);
}

static void test_partial_after_two_missing_checks_at_once_when_refused(void **state)
{
    (void)state;
    ka_logdirs_state_t st = {0};
    ka_metrics_t m;
    ka_logdirs_check_t missing;
    ka_logdirs_check_t complete = {.result = KA_LOGDIRS_COMPLETE, .replicas = 4};
    ka_logdirs_check_t refused = {.result = KA_LOGDIRS_UNAUTHORIZED};
    ka_logdirs_check_t failed = {.result = KA_LOGDIRS_FAILED};
    static const char *const hidden[] = {"hidden"};

    memset(&m, 0, sizeof(m));
    check_missing(hidden, 1, &missing);
    ka_logdirs_track(&st, &missing, "kadmit", "b:9092", &m);
    assert_string_equal(st.partial, ""); /* once: perhaps a topic created meanwhile */
    ka_logdirs_track(&st, &missing, "kadmit", "b:9092", &m);
    assert_non_null(strstr(st.partial, "topic hidden"));
    assert_int_equal(m.view_partial, 1);
    ka_logdirs_track(&st, &failed, "kadmit", "b:9092", &m);
    assert_non_null(strstr(st.partial, "topic hidden")); /* a failed check changes nothing */
    ka_logdirs_track(&st, &complete, "kadmit", "b:9092", &m);
    assert_string_equal(st.partial, "");
    assert_int_equal(m.view_partial, 0);
    ka_logdirs_track(&st, &refused, "kadmit", "b:9092", &m);
    assert_non_null(strstr(st.partial, "refused DescribeLogDirs"));
    assert_int_equal(m.view_checks_missing, 2);
    assert_int_equal(m.view_checks_complete, 1);
    assert_int_equal(m.view_checks_unauthorized, 1);
    assert_int_equal(m.view_checks_failed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_when_every_current_replica_is_in_the_view),
        cmocka_unit_test(test_topics_created_between_the_answers_never_make_the_view_partial),
        cmocka_unit_test(test_missing_counts_replicas_of_partitions_the_view_lacks),
        cmocka_unit_test(test_unauthorized_from_the_error_code_or_no_directory),
        cmocka_unit_test(test_a_truncated_answer_fails_without_a_verdict),
        cmocka_unit_test(test_a_reason_too_long_for_its_buffer_ends_in_an_ellipsis),
        cmocka_unit_test(test_partial_after_two_missing_checks_at_once_when_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
