/*
 * test_admission_backdoors.c: the requests that used to create partitions
 * unjudged. Metadata v0-3 auto-create with no flag to clear: a denied one
 * goes on as v4 with the flag cleared and its answer comes back at the
 * client's version. StreamsGroupHeartbeat (KIP-1071) makes the coordinator
 * create a topology's repartition and changelog topics: they are judged,
 * and a rejection refuses the heartbeat.
 *
 * The synthetic cluster is adm_fixture.h's: broker 1 hosts 8 replicas of
 * "full", brokers 2 and 3 one of "three"; the broker defaults are 2
 * partitions of replication 3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adm_fixture.h"

/* Broker 1 may hold 9: one more replica. */
#define TIGHT                                                                                      \
    "{\"max.broker.partitions\": 10, \"brokers\": {\"1\": {\"max.broker.partitions\": 9}}}"

/* --- Metadata v0-3 ----------------------------------------------------------- */

static uint8_t *md_request(int16_t ver, int32_t cid, const char *a, const char *b, size_t *len)
{
    struct ka_metadata_request_metadata_request_topic t[2];
    struct ka_metadata_request req;

    for (int i = 0; i < 2; i++)
        ka_metadata_request_metadata_request_topic_init(&t[i]);
    t[0].name = S(a);
    t[1].name = b != NULL ? S(b) : KA_SLICE_NULL;
    ka_metadata_request_init(&req);
    req.topics.count = b != NULL ? 2 : 1;
    req.topics.items = t;
    return fx_request_frame(KA_METADATA_REQUEST_API_KEY, ver, cid, &req, len);
}

/* The broker's v4 answer: one broker, the two topics, a cluster id. */
static uint8_t *md_v4_response(int32_t cid, size_t *len)
{
    struct ka_metadata_response_metadata_response_broker br;
    struct ka_metadata_response_metadata_response_topic t[2];
    struct ka_metadata_response resp;

    ka_metadata_response_metadata_response_broker_init(&br);
    br.node_id = 1;
    br.host = S("broker-1");
    br.port = 9092;
    for (int i = 0; i < 2; i++)
        ka_metadata_response_metadata_response_topic_init(&t[i]);
    t[0].name = S("three");
    t[1].name = S("new-topic");
    t[1].error_code = KA_KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    ka_metadata_response_init(&resp);
    resp.throttle_time_ms = 7;
    resp.brokers.count = 1;
    resp.brokers.items = &br;
    resp.cluster_id = S("cluster-x");
    resp.controller_id = 1;
    resp.topics.count = 2;
    resp.topics.items = t;
    return fx_response_frame(KA_METADATA_REQUEST_API_KEY, 4, cid, &resp, len);
}

static void test_metadata_v0_to_v3_denied_goes_on_as_v4_without_auto_creation(void **state)
{
    (void)state;
    for (int16_t ver = 0; ver <= 3; ver++) {
        fx_t *f = fx_new(TIGHT);
        size_t len, rlen, mlen;
        uint8_t *frame = md_request(ver, 11 + ver, "three", "new-topic", &len);
        uint8_t *resp = md_v4_response(11 + ver, &rlen), *merged = NULL;
        ka_adm_outcome_t o;
        ka_arena_t arena;
        struct ka_metadata_request fwd;
        struct ka_metadata_response back;
        int16_t rv;

        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_true(o.auto_create_denied);
        assert_int_equal(o.api_version, ver);
        /* Nothing will be created, so nothing stays reserved. */
        assert_false(ka_reservations_has_topic(f->ledger, S("new-topic")));
        ka_arena_init(&arena, 1 << 20);
        fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
        assert_int_equal(rv, 4);
        assert_int_equal(fwd.allow_auto_topic_creation, 0);
        assert_int_equal(fwd.topics.count, 2);
        assert_true(slice_is(fwd.topics.items[1].name, "new-topic"));
        /* The answer, re-encoded at the client's version. */
        assert_non_null(o.pending);
        assert_int_equal(o.pending->api_version, 4);
        assert_int_equal(o.pending->client_version, ver);
        assert_int_equal(ka_adm_response(o.pending, resp, rlen, 1 << 20, &merged, &mlen), 0);
        assert_non_null(merged);
        fx_decode_response(merged, mlen, KA_METADATA_REQUEST_API_KEY, ver, 11 + ver, &arena, &back);
        assert_int_equal(back.topics.count, 2);
        assert_true(slice_is(back.topics.items[0].name, "three"));
        assert_int_equal(back.topics.items[1].error_code, KA_KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
        assert_int_equal(back.brokers.count, 1);
        assert_int_equal(back.brokers.items[0].port, 9092);
        free(merged);
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        free(resp);
        free(frame);
        fx_free(f);
    }
}

static void test_metadata_v0_to_v3_that_fits_or_names_known_topics_passes(void **state)
{
    (void)state;
    for (int16_t ver = 0; ver <= 3; ver++) {
        fx_t *f = fx_new(POLICY); /* 2 x 3 replicas fit: broker 1 has room for 2 */
        size_t len;
        uint8_t *frame = md_request(ver, 5, "three", "new-topic", &len);
        ka_adm_outcome_t o;

        /* "three" is listed, but may have been deleted a moment ago, and both would not fit:
         * the request waits for a view taken after it. */
        f->ctx.may_wait_for_view = true;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_WAIT);
        ka_adm_outcome_release(&o);
        /* On such a view that still lists it, "three" exists: only the new topic counts. */
        f->ctx.view_follows_request = true;
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_FORWARD);
        assert_true(o.decided);
        assert_int_equal(o.admitted, 2);
        /* The broker's per-topic answer settles the new topic's reservation. */
        assert_non_null(o.pending);
        ka_adm_outcome_release(&o);
        free(frame);
        /* Only a topic the view lists: it may have been deleted a moment ago, so the request
         * goes on as v4 without auto-creation (nothing judged, nothing denied). */
        frame = md_request(ver, 6, "three", NULL, &len);
        assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
        assert_int_equal(o.action, KA_ADM_REWRITE);
        assert_false(o.decided);
        assert_false(o.auto_create_denied);
        ka_arena_t arena;
        struct ka_metadata_request fwd;
        int16_t rv;
        ka_arena_init(&arena, 1 << 20);
        fx_decode_request(o.bytes, o.len, &arena, &rv, &fwd);
        assert_int_equal(rv, 4);
        assert_int_equal(fwd.allow_auto_topic_creation, 0);
        assert_int_equal(fwd.topics.count, 1);
        assert_non_null(o.pending); /* the answer is re-encoded at the client's version */
        ka_arena_destroy(&arena);
        ka_adm_outcome_release(&o);
        free(frame);
        fx_free(f);
    }
}

/* Of two new topics the first fits and the second does not: the request loses
 * auto-creation, so the first gives its reservation back (else it would hold
 * headroom for a topic that is never created). */
static void test_metadata_denied_request_keeps_no_reservation(void **state)
{
    (void)state;
    fx_t *f = fx_new("{\"max.broker.partitions\": 10, \"brokers\": {\"1\": "
                     "{\"max.broker.partitions\": 11}}}"); /* room for one 2 x 3 topic */
    size_t len;
    uint8_t *frame = md_request(12, 8, "first-new", "second-new", &len);
    ka_adm_outcome_t o;

    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_int_equal(o.admitted, 1);
    assert_int_equal(o.rejected, 1);
    assert_false(ka_reservations_has_topic(f->ledger, S("first-new")));
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* v4 and later keep their version: only the flag changes, no response rework. */
static void test_metadata_v4_denied_keeps_its_version_and_response(void **state)
{
    (void)state;
    fx_t *f = fx_new(TIGHT);
    size_t len;
    uint8_t *frame = md_request(4, 8, "new-topic", NULL, &len);
    ka_adm_outcome_t o;

    assert_int_equal(ka_adm_request(&f->ctx, frame, len, &o), 0);
    assert_int_equal(o.action, KA_ADM_REWRITE);
    assert_null(o.pending);
    assert_int_equal((o.bytes[6] << 8) | o.bytes[7], 4);
    ka_adm_outcome_release(&o);
    free(frame);
    fx_free(f);
}

/* --- StreamsGroupHeartbeat ----------------------------------------------------- */

typedef struct topo {
    struct ka_streamsgroupheartbeat_request_subtopology sub[2];
    struct ka_streamsgroupheartbeat_request_topic_info changelog[2], repart;
    ka_slice_t source[2], sink;
    struct ka_streamsgroupheartbeat_request_topology topology;
    struct ka_streamsgroupheartbeat_request req;
} topo_t;

static void topic_info(struct ka_streamsgroupheartbeat_request_topic_info *t, const char *name,
                       int32_t partitions, int16_t rf)
{
    ka_streamsgroupheartbeat_request_topic_info_init(t);
    t->name = S(name);
    t->partitions = partitions;
    t->replication_factor = rf;
}

/*
 * Two subtopologies: the first reads `source` and writes "app-repart"; the
 * second reads "app-repart" (count left to the coordinator, replication 1)
 * and keeps a store with changelog "app-store-changelog" (replication: the
 * broker's default). With `with_topology` false, a plain heartbeat.
 */
static uint8_t *sh_request(topo_t *tp, const char *source, bool with_topology, size_t *len)
{
    memset(tp, 0, sizeof(*tp));
    ka_streamsgroupheartbeat_request_init(&tp->req);
    tp->req.group_id = S("app");
    tp->req.member_id = S("m-1");
    tp->req.process_id = S("p-1");
    if (with_topology) {
        for (int i = 0; i < 2; i++)
            ka_streamsgroupheartbeat_request_subtopology_init(&tp->sub[i]);
        tp->source[0] = S(source);
        tp->sink = S("app-repart");
        tp->sub[0].subtopology_id = S("0");
        tp->sub[0].source_topics = (ka_slice_array_t){1, tp->source};
        tp->sub[0].repartition_sink_topics = (ka_slice_array_t){1, &tp->sink};
        topic_info(&tp->repart, "app-repart", 0, 1);
        topic_info(&tp->changelog[0], "app-store-changelog", 0, 0);
        tp->sub[1].subtopology_id = S("1");
        tp->sub[1].repartition_source_topics.count = 1;
        tp->sub[1].repartition_source_topics.items = &tp->repart;
        tp->sub[1].state_changelog_topics.count = 1;
        tp->sub[1].state_changelog_topics.items = tp->changelog;
        ka_streamsgroupheartbeat_request_topology_init(&tp->topology);
        tp->topology.subtopologies.count = 2;
        tp->topology.subtopologies.items = tp->sub;
        tp->req.topology = &tp->topology;
    }
    return fx_request_frame(KA_STREAMSGROUPHEARTBEAT_REQUEST_API_KEY, 0, 31, &tp->req, len);
}

/* Judges one heartbeat on a fresh fixture of `policy`; the caller ends the case. */
static fx_t *sh_judge(const char *policy, const char *source, bool with_topology,
                      ka_adm_outcome_t *o)
{
    fx_t *f = fx_new(policy);
    topo_t tp;
    size_t len;
    uint8_t *frame = sh_request(&tp, source, with_topology, &len);

    assert_int_equal(ka_adm_request(&f->ctx, frame, len, o), 0);
    free(frame);
    return f;
}

/* Source "three" has 1 partition: the repartition topic takes 1 x 1 and the
 * changelog 1 x 3 replicas, which fit; both are reserved. */
static void test_streams_internal_topics_that_fit_are_reserved(void **state)
{
    (void)state;
    ka_adm_outcome_t o;
    fx_t *f = sh_judge(POLICY, "three", true, &o);

    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_true(o.decided);
    assert_int_equal(o.items, 2);
    assert_int_equal(o.admitted, 2);
    assert_true(ka_reservations_has_topic(f->ledger, S("app-repart")));
    assert_true(ka_reservations_has_topic(f->ledger, S("app-store-changelog")));
    ka_adm_outcome_release(&o);
    fx_free(f);
}

/* Source "full" has 8 partitions, which flow through the repartition topic
 * (8 x 1) to the changelog (8 x 3): neither fits on broker 1. The heartbeat
 * is answered with the rejection and nothing stays reserved. */
static void test_streams_internal_topics_over_the_limit_refuse_the_heartbeat(void **state)
{
    (void)state;
    ka_adm_outcome_t o;
    fx_t *f = sh_judge(POLICY, "full", true, &o);
    ka_arena_t arena;
    struct ka_streamsgroupheartbeat_response resp;

    assert_int_equal(o.action, KA_ADM_ANSWER);
    assert_int_equal(o.api, KA_ADM_STREAMS_HEARTBEAT);
    assert_int_equal(o.decision, KA_ADM_D_REJECT);
    assert_int_equal(o.rejected, 2); /* 8 x 1 does not fit either */
    assert_null(o.pending);
    ka_arena_init(&arena, 1 << 20);
    fx_decode_response(o.bytes, o.len, KA_STREAMSGROUPHEARTBEAT_REQUEST_API_KEY, 0, 31, &arena,
                       &resp);
    assert_int_equal(resp.error_code, 88);
    assert_non_null(resp.error_message.ptr);
    assert_true(resp.error_message.len > 0);
    assert_non_null(strstr((const char *)o.message, "max.broker.partitions"));
    assert_false(ka_reservations_has_topic(f->ledger, S("app-repart")));
    assert_false(ka_reservations_has_topic(f->ledger, S("app-store-changelog")));
    ka_arena_destroy(&arena);
    ka_adm_outcome_release(&o);
    fx_free(f);
}

static void test_streams_audit_mode_forwards_the_refused_heartbeat(void **state)
{
    (void)state;
    ka_adm_outcome_t o;
    fx_t *f =
        sh_judge("{\"max.broker.partitions\": 10, \"enforcement\": \"audit\"}", "full", true, &o);

    assert_int_equal(o.action, KA_ADM_FORWARD);
    assert_int_equal(o.decision, KA_ADM_D_AUDIT);
    assert_int_equal(o.audited, 2);
    ka_adm_outcome_release(&o);
    fx_free(f);
}

/* Nothing for the coordinator to create: no topology, or a source topic it
 * does not have yet (it answers MISSING_SOURCE_TOPICS and creates nothing). */
static void test_streams_heartbeat_without_creations_is_not_judged(void **state)
{
    (void)state;
    static const struct {
        const char *source;
        bool topology;
    } cases[] = {{"full", false}, {"not-yet", true}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ka_adm_outcome_t o;
        fx_t *f = sh_judge(POLICY, cases[i].source, cases[i].topology, &o);

        assert_int_equal(o.action, KA_ADM_FORWARD);
        assert_false(o.decided);
        fx_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_v0_to_v3_denied_goes_on_as_v4_without_auto_creation),
        cmocka_unit_test(test_metadata_v0_to_v3_that_fits_or_names_known_topics_passes),
        cmocka_unit_test(test_metadata_v4_denied_keeps_its_version_and_response),
        cmocka_unit_test(test_metadata_denied_request_keeps_no_reservation),
        cmocka_unit_test(test_streams_internal_topics_that_fit_are_reserved),
        cmocka_unit_test(test_streams_internal_topics_over_the_limit_refuse_the_heartbeat),
        cmocka_unit_test(test_streams_audit_mode_forwards_the_refused_heartbeat),
        cmocka_unit_test(test_streams_heartbeat_without_creations_is_not_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
