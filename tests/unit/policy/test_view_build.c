/*
 * test_view_build.c: the cluster view built from answers a real Kafka 4.3.1
 * broker gave (tests/data/frames, files named ...-kafka-4.3.1-<scenario>.bin, recorded by
 * tests/data/frames/capture_view_frames.py): one broker; three brokers with
 * a topic of 300 partitions; the same three after broker 3 was fenced. Also
 * the fallbacks: no DescribeCluster, a refused one, no configs answer, and
 * the error sentence for answers that cannot make a view.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ka_protocol.h"
#include "ka_view_build.h"
#include "policy_fixtures.h"

/* One decoded answer and what it points into. */
struct answer {
    uint8_t *bytes;
    ka_arena_t arena;
};

/* Decodes tests/data/frames/<api>-v<version>-response-kafka-4.3.1-<scenario>.bin into out. */
static void load(struct answer *a, const char *api, int16_t api_key, int16_t version,
                 const char *scenario, void *out)
{
    const char *root = getenv("KADMIT_TEST_DATA");
    char path[4096];
    struct ka_response_header h;
    ka_reader_t r;
    long size;
    FILE *f;

    snprintf(path, sizeof(path), "%s/frames/%s-v%d-response-kafka-4.3.1-%s.bin",
             root ? root : "tests/data", api, version, scenario);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    a->bytes = malloc((size_t)size);
    assert_non_null(a->bytes);
    assert_int_equal(fread(a->bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    ka_arena_init(&a->arena, KA_ARENA_DEFAULT_CAP);
    ka_reader_init(&r, a->bytes, (size_t)size);
    OK(ka_response_header_decode(&r, ka_response_header_version(api_key, version), &h));
    OK(ka_codec_find(api_key, KA_RESPONSE)->decode(&r, version, &a->arena, out));
    assert_int_equal(r.off, r.len);
}

static void unload(struct answer *a)
{
    ka_arena_destroy(&a->arena);
    free(a->bytes);
}

/* A scenario's three answers, decoded. */
struct capture {
    struct answer md_frame, cluster_frame, configs_frame;
    struct ka_metadata_response metadata;
    struct ka_describecluster_response cluster;
    struct ka_describeconfigs_response configs;
    const struct ka_describeconfigs_response *configs_list[1];
    ka_view_answers_t answers;
};

static void capture_load(struct capture *c, const char *scenario, int16_t cluster_version)
{
    load(&c->md_frame, "metadata", KA_METADATA_RESPONSE_API_KEY, 12, scenario, &c->metadata);
    load(&c->cluster_frame, "describecluster", KA_DESCRIBECLUSTER_RESPONSE_API_KEY, cluster_version,
         scenario, &c->cluster);
    load(&c->configs_frame, "describeconfigs", KA_DESCRIBECONFIGS_RESPONSE_API_KEY, 4, scenario,
         &c->configs);
    c->configs_list[0] = &c->configs;
    c->answers = (ka_view_answers_t){.taken_at_ms = 5000,
                                     .metadata = &c->metadata,
                                     .cluster = &c->cluster,
                                     .configs = c->configs_list,
                                     .config_count = 1};
}

static void capture_free(struct capture *c)
{
    unload(&c->md_frame);
    unload(&c->cluster_frame);
    unload(&c->configs_frame);
}

static ka_cluster_t *build(const ka_view_answers_t *answers)
{
    ka_cluster_t *view = NULL;
    char err[300] = "";
    int rc = ka_view_build(answers, &view, err, sizeof(err));

    if (rc != 0)
        fail_msg("ka_view_build: %s", err);
    return view;
}

/* Replica slots in the Metadata answer, the sum every broker count must reach. */
static int64_t metadata_replicas(const struct ka_metadata_response *md, int64_t *partitions)
{
    int64_t replicas = 0;

    *partitions = 0;
    for (int32_t t = 0; t < md->topics.count; t++) {
        *partitions += md->topics.items[t].partitions.count;
        for (int32_t p = 0; p < md->topics.items[t].partitions.count; p++)
            replicas += md->topics.items[t].partitions.items[p].replica_nodes.count;
    }
    return replicas;
}

static int64_t view_replicas(const ka_cluster_t *view)
{
    int64_t sum = 0;

    for (size_t i = 0; i < ka_cluster_broker_count(view); i++)
        sum += ka_cluster_broker_at(view, i)->replicas;
    return sum;
}

static void test_one_broker_view_has_its_topics_counts_and_defaults(void **state)
{
    struct capture c;
    int64_t partitions;

    (void)state;
    capture_load(&c, "one", 2);
    ka_cluster_t *view = build(&c.answers);
    assert_int_equal(ka_cluster_taken_at_ms(view), 5000);
    assert_int_equal(ka_cluster_broker_count(view), 1);
    assert_int_equal(ka_cluster_broker_at(view, 0)->id, 1);
    assert_true(ka_cluster_broker_at(view, 0)->listed);
    assert_false(ka_cluster_broker_at(view, 0)->fenced);
    int64_t replicas = metadata_replicas(&c.metadata, &partitions);
    assert_int_equal(ka_cluster_total_partitions(view), partitions);
    assert_int_equal(ka_cluster_broker(view, 1)->replicas, replicas);
    assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(view, S("orders"))), 3);
    assert_int_equal(ka_cluster_topic_partition_count(ka_cluster_find_topic(view, S("audit"))), 1);
    /* The broker's settings (tests/integration/kafka_cluster.py): num.partitions=1, and
     * default.replication.factor=1 on one broker. */
    const ka_broker_defaults_t *d = ka_cluster_broker_defaults(view);
    assert_int_equal(d->num_partitions, 1);
    assert_int_equal(d->default_replication_factor, 1);
    assert_true(d->auto_create_topics_enable);
    ka_cluster_unref(view);
    capture_free(&c);
}

static void test_three_brokers_count_every_replica_of_a_300_partition_topic(void **state)
{
    struct capture c;
    int64_t partitions;
    const int32_t *replicas;
    int32_t count;

    (void)state;
    capture_load(&c, "three", 2);
    ka_cluster_t *view = build(&c.answers);
    assert_int_equal(ka_cluster_broker_count(view), 3);
    for (int32_t id = 1; id <= 3; id++) {
        assert_true(ka_cluster_broker(view, id)->listed);
        assert_false(ka_cluster_broker(view, id)->fenced);
        assert_true(ka_cluster_broker(view, id)->replicas > 200);
    }
    const ka_cluster_topic_t *many = ka_cluster_find_topic(view, S("many"));
    assert_int_equal(ka_cluster_topic_partition_count(many), 300);
    replicas = ka_cluster_topic_replicas(many, 299, &count);
    assert_int_equal(count, 2);
    assert_true(replicas[0] >= 1 && replicas[0] <= 3);
    assert_int_equal(view_replicas(view), metadata_replicas(&c.metadata, &partitions));
    assert_int_equal(ka_cluster_total_partitions(view), partitions);
    assert_true(partitions >= 307); /* many, orders (6) and single (1), plus internal topics */
    /* Broker 1 answered for itself only (the others are refused per resource). */
    assert_int_equal(ka_cluster_broker_defaults(view)->default_replication_factor, 3);
    ka_cluster_unref(view);
    capture_free(&c);
}

static void test_fenced_broker_is_listed_fenced_and_keeps_its_replicas(void **state)
{
    struct capture c;

    (void)state;
    capture_load(&c, "fenced", 2);
    /* Metadata no longer lists broker 3; DescribeCluster v2 still does. */
    assert_int_equal(c.metadata.brokers.count, 2);
    ka_cluster_t *view = build(&c.answers);
    const ka_cluster_broker_t *b3 = ka_cluster_broker(view, 3);
    assert_non_null(b3);
    assert_true(b3->listed && b3->fenced);
    assert_true(b3->replicas > 100);
    assert_false(ka_cluster_broker(view, 1)->fenced || ka_cluster_broker(view, 2)->fenced);
    ka_cluster_unref(view);
    capture_free(&c);
}

/*
 * How the fenced broker 3 looks when DescribeCluster did not list it:
 * absent (a broker without the API), v1 (which lists unfenced brokers
 * only) or refused. Each time the view is what Metadata alone gives:
 * broker 3 unlisted but its replicas counted, brokers 1 and 2 live.
 */
enum cluster_answer { CLUSTER_ABSENT, CLUSTER_V1, CLUSTER_REFUSED };

static void check_metadata_brokers_stand(enum cluster_answer how)
{
    struct capture c;

    capture_load(&c, "fenced", how == CLUSTER_V1 ? 1 : 2);
    if (how == CLUSTER_ABSENT)
        c.answers.cluster = NULL;
    if (how == CLUSTER_REFUSED)
        c.cluster.error_code = 31; /* CLUSTER_AUTHORIZATION_FAILED */
    ka_cluster_t *view = build(&c.answers);
    assert_int_equal(ka_cluster_broker_count(view), 3);
    for (int32_t id = 1; id <= 2; id++)
        assert_true(ka_cluster_broker(view, id)->listed && !ka_cluster_broker(view, id)->fenced);
    assert_false(ka_cluster_broker(view, 3)->listed || ka_cluster_broker(view, 3)->fenced);
    assert_true(ka_cluster_broker(view, 3)->replicas > 100);
    ka_cluster_unref(view);
    capture_free(&c);
}

static void test_without_describe_cluster_a_fenced_broker_is_only_unlisted(void **state)
{
    (void)state;
    check_metadata_brokers_stand(CLUSTER_ABSENT);
}

static void test_describe_cluster_v1_omits_the_fenced_broker_like_metadata(void **state)
{
    (void)state;
    check_metadata_brokers_stand(CLUSTER_V1);
}

static void test_refused_describe_cluster_falls_back_to_metadata_brokers(void **state)
{
    (void)state;
    check_metadata_brokers_stand(CLUSTER_REFUSED);
}

static void test_defaults_fall_back_when_no_config_result_answered(void **state)
{
    struct capture c;
    const ka_broker_defaults_t last = {7, 2, false};

    (void)state;
    capture_load(&c, "three", 2);
    for (int32_t i = 0; i < c.configs.results.count; i++)
        c.configs.results.items[i].error_code = 29; /* every resource refused */
    c.answers.fallback_defaults = &last;
    ka_cluster_t *view = build(&c.answers);
    assert_int_equal(ka_cluster_broker_defaults(view)->num_partitions, 7);
    assert_false(ka_cluster_broker_defaults(view)->auto_create_topics_enable);
    ka_cluster_unref(view);
    /* Without a last known value: Kafka's own defaults. */
    c.answers.fallback_defaults = NULL;
    c.answers.config_count = 0;
    view = build(&c.answers);
    assert_int_equal(ka_cluster_broker_defaults(view)->num_partitions, 1);
    assert_int_equal(ka_cluster_broker_defaults(view)->default_replication_factor, 1);
    assert_true(ka_cluster_broker_defaults(view)->auto_create_topics_enable);
    ka_cluster_unref(view);
    capture_free(&c);
}

static void test_broker_listed_twice_is_refused_with_a_sentence(void **state)
{
    struct capture c;
    ka_cluster_t *view = NULL;
    char err[300] = "";

    (void)state;
    capture_load(&c, "three", 2);
    c.cluster.brokers.items[1].broker_id = c.cluster.brokers.items[0].broker_id;
    assert_int_equal(ka_view_build(&c.answers, &view, err, sizeof(err)), KA_EINVALID);
    assert_null(view);
    assert_non_null(strstr(err, "from DescribeCluster cannot be added: listed twice"));
    capture_free(&c);
}

static void test_no_metadata_answer_is_refused_with_a_sentence(void **state)
{
    ka_view_answers_t answers = {.taken_at_ms = 1};
    ka_cluster_t *view = NULL;
    char err[300] = "";

    (void)state;
    assert_int_equal(ka_view_build(&answers, &view, err, sizeof(err)), KA_EINVALID);
    assert_null(view);
    assert_string_equal(err, "no Metadata answer to build a view from");
}

/* The engine, given the fenced view, places new replicas on the live brokers only. */
static void test_placement_on_the_fenced_view_avoids_the_fenced_broker(void **state)
{
    struct capture c;
    ka_reservations_t *ledger;
    ka_verdict_t v;

    (void)state;
    capture_load(&c, "fenced", 2);
    ka_cluster_t *view = build(&c.answers);
    ka_policy_t *policy = fx_policy("{\"max.broker.partitions\": 100000}");
    OK(ka_reservations_new(&ledger));
    ka_decision_context_t ctx = {policy, view, ledger, 5000, 42};
    ka_create_topic_t t = fx_create("new-topic", 12, 2);
    OK(ka_engine_create_topics(&ctx, &t, 1, &v));
    assert_int_equal(v.kind, KA_VERDICT_ADMIT_WITH_ASSIGNMENT);
    assert_int_equal(fx_count(&v, 3), 0);
    assert_int_equal(fx_count(&v, 1) + fx_count(&v, 2), 24);
    fx_release(&v, 1);
    ka_reservations_free(ledger);
    ka_policy_unref(policy);
    ka_cluster_unref(view);
    capture_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_broker_view_has_its_topics_counts_and_defaults),
        cmocka_unit_test(test_three_brokers_count_every_replica_of_a_300_partition_topic),
        cmocka_unit_test(test_fenced_broker_is_listed_fenced_and_keeps_its_replicas),
        cmocka_unit_test(test_without_describe_cluster_a_fenced_broker_is_only_unlisted),
        cmocka_unit_test(test_describe_cluster_v1_omits_the_fenced_broker_like_metadata),
        cmocka_unit_test(test_refused_describe_cluster_falls_back_to_metadata_brokers),
        cmocka_unit_test(test_defaults_fall_back_when_no_config_result_answered),
        cmocka_unit_test(test_broker_listed_twice_is_refused_with_a_sentence),
        cmocka_unit_test(test_no_metadata_answer_is_refused_with_a_sentence),
        cmocka_unit_test(test_placement_on_the_fenced_view_avoids_the_fenced_broker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
