/*
 * test_endpoints.c: every admin endpoint over a real socket, with a fake
 * proxy: happy paths, authorisation (401, 403), validation errors (400),
 * unknown routes (404) and methods (405).
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "admin_fixtures.h"
#include "ka_admin_whatif.h"

static int setup(void **state)
{
    admin_harness_t *h = calloc(1, sizeof(*h));

    harness_start(h, NULL);
    *state = h;
    return 0;
}

static int teardown(void **state)
{
    admin_harness_t *h = *state;

    harness_stop(h);
    free(h);
    return 0;
}

/* Parses a reply body as JSON, failing the test when it is not. */
static json_t *body_json(const reply_t *r)
{
    json_error_t jerr;
    json_t *doc = json_loads(r->body, 0, &jerr);

    if (doc == NULL)
        fail_msg("body is not JSON (%s): %s", jerr.text, r->body);
    return doc;
}

/* Asserts an error reply: the status, JSON content type, and a message containing `needle`. */
static void assert_error(const reply_t *r, int status, const char *needle)
{
    char ct[128];
    json_t *doc = body_json(r);
    const char *message = json_string_value(json_object_get(doc, "error"));

    assert_int_equal(r->status, status);
    assert_non_null(reply_header(r, "Content-Type", ct, sizeof(ct)));
    assert_string_equal(ct, "application/json");
    assert_non_null(message);
    if (strstr(message, needle) == NULL)
        fail_msg("error \"%s\" does not mention \"%s\"", message, needle);
    json_decref(doc);
}

static void test_healthz_answers_ok_while_the_loop_runs(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc;

    assert_int_equal(http_call(h->port, "GET", "/healthz", NULL, NULL, &r), 200);
    doc = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "ok");
    json_decref(doc);
    reply_free(&r);
}

static json_t *get_json(const admin_harness_t *h, const char *path);

static void test_readyz_reports_the_proxys_reason_with_503(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    assert_int_equal(http_call(h->port, "GET", "/readyz", NULL, NULL, &r), 200);
    reply_free(&r);
    h->fake.ready = false;
    http_call(h->port, "GET", "/readyz", NULL, NULL, &r);
    assert_error(&r, 503, "does not accept connections");
    reply_free(&r);
}

static void test_admission_health_is_apart_from_readiness(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    h->fake.admission = KA_ADMIN_ADMISSION_UNHEALTHY;
    assert_int_equal(http_call(h->port, "GET", "/readyz", NULL, NULL, &r), 200);
    reply_free(&r);
    http_call(h->port, "GET", "/v1/admission", NULL, NULL, &r);
    assert_error(&r, 503, "admission unhealthy: no cluster view from the broker");
    reply_free(&r);
    h->fake.admission = KA_ADMIN_ADMISSION_HEALTHY;
    json_t *doc = get_json(h, "/v1/admission");
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "healthy");
    json_decref(doc);
    h->fake.admission = KA_ADMIN_ADMISSION_OFF;
    doc = get_json(h, "/v1/admission");
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "off");
    json_decref(doc);
}

/* GET path, expecting 200 and a JSON body. */
static json_t *get_json(const admin_harness_t *h, const char *path)
{
    reply_t r;
    assert_int_equal(http_call(h->port, "GET", path, NULL, NULL, &r), 200);
    json_t *doc = body_json(&r);
    reply_free(&r);
    return doc;
}

static void test_get_pool_reports_the_kip81_figures(void **state)
{
    json_t *doc = get_json(*state, "/v1/pool");
    assert_int_equal(json_integer_value(json_object_get(doc, "capacity_bytes")), 1024);
    assert_int_equal(json_integer_value(json_object_get(doc, "memory_pool_free_bytes")), 768);
    assert_int_equal(json_integer_value(json_object_get(doc, "memory_pool_used_bytes")), 256);
    assert_true(json_real_value(json_object_get(doc, "memory_pool_avg_depleted_percent")) == 12.5);
    assert_true(json_real_value(json_object_get(doc, "memory_pool_depleted_time_total_seconds")) ==
                1.5);
    assert_int_equal(json_integer_value(json_object_get(doc, "waiting_streams")), 2);
    json_decref(doc);
}

static void test_get_policy_returns_policy_version_and_reload_status(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc, *reload;

    assert_int_equal(http_call(h->port, "GET", "/v1/policy", NULL, NULL, &r), 200);
    doc = body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    assert_true(json_is_object(json_object_get(doc, "policy")));
    assert_non_null(json_object_get(json_object_get(doc, "policy"), "max.broker.partitions"));
    assert_true(json_is_null(json_object_get(doc, "last_reload")));
    json_decref(doc);
    reply_free(&r);

    /* A bad file on reload: the API says so, and that the old policy holds. */
    h->fake.reload.attempted = true;
    h->fake.reload.ok = false;
    h->fake.reload.failures = 1;
    h->fake.reload.at_unix_ms = 1700000000123;
    snprintf(h->fake.reload.error, sizeof(h->fake.reload.error),
             "policy.json: brokers.7.max.broker.partitions: must be an integer");
    assert_int_equal(http_call(h->port, "GET", "/v1/policy", NULL, NULL, &r), 200);
    doc = body_json(&r);
    reload = json_object_get(doc, "last_reload");
    assert_true(json_is_false(json_object_get(reload, "ok")));
    assert_string_equal(json_string_value(json_object_get(reload, "at")),
                        "2023-11-14T22:13:20.123Z");
    assert_non_null(strstr(json_string_value(json_object_get(reload, "error")),
                           "brokers.7.max.broker.partitions"));
    assert_non_null(strstr(json_string_value(json_object_get(reload, "error")),
                           "previous policy (version 1) is still in force"));
    json_decref(doc);
    reply_free(&r);
}

static void test_put_policy_replaces_the_whole_policy(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc;

    assert_int_equal(http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN,
                               "{\"max.broker.partitions\": 4000, \"brokers\": {\"1\": "
                               "{\"max.broker.partitions\": 1000}}, \"max.partitions\": 200000, "
                               "\"enforcement\": \"audit\"}",
                               &r),
                     200);
    doc = body_json(&r);
    assert_true(json_is_true(json_object_get(doc, "persisted")));
    assert_string_equal(json_string_value(json_object_get(doc, "persisted_to")),
                        "/etc/kadmit/state.json");
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 2);
    assert_null(json_object_get(doc, "warning"));
    json_decref(doc);
    reply_free(&r);
    assert_int_equal(ka_policy_default_broker_limit(h->fake.policy), 4000);
    assert_int_equal(ka_policy_broker_limit(h->fake.policy, 1), 1000);
    assert_int_equal(ka_policy_max_partitions(h->fake.policy), 200000);
    assert_int_equal(ka_policy_enforcement(h->fake.policy), KA_ENFORCEMENT_AUDIT);
    assert_int_equal(ka_policy_version(h->fake.policy), 2);
}

static void test_put_policy_says_when_the_change_was_not_persisted(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc;

    h->fake.persist_ok = false;
    assert_int_equal(
        http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "{\"max.broker.partitions\": 10}", &r),
        200);
    doc = body_json(&r);
    assert_true(json_is_false(json_object_get(doc, "persisted")));
    assert_non_null(strstr(json_string_value(json_object_get(doc, "warning")), "read-only"));
    json_decref(doc);
    reply_free(&r);
}

static void test_delete_overrides_returns_to_the_file_policy(void **state)
{
    admin_harness_t *h = *state;
    const char *file = "{\"max.broker.partitions\": 77}";
    reply_t r;

    assert_int_equal(http_call(h->port, "DELETE", "/v1/policy/overrides", TEST_TOKEN, NULL, &r),
                     409);
    assert_error(&r, 409, "no policy file");
    reply_free(&r);
    assert_int_equal(ka_policy_parse(file, strlen(file), 1, &h->fake.file_policy, NULL, 0), 0);
    assert_int_equal(http_call(h->port, "DELETE", "/v1/policy/overrides", NULL, NULL, &r), 401);
    reply_free(&r);
    assert_int_equal(http_call(h->port, "DELETE", "/v1/policy/overrides", TEST_TOKEN, NULL, &r),
                     200);
    reply_free(&r);
    assert_int_equal(ka_policy_default_broker_limit(h->fake.policy), 77);
    assert_int_equal(ka_policy_version(h->fake.policy), 2);
}

static void test_get_policy_shows_the_source_and_reloads_by_result(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc, *source;

    h->fake.reload.persistence = "state-file";
    snprintf(h->fake.reload.file_hash, sizeof(h->fake.reload.file_hash), "0123456789abcdef");
    snprintf(h->fake.reload.persist_path, sizeof(h->fake.reload.persist_path), "/s.json");
    h->fake.reload.overrides = true;
    h->fake.reload.reloads_ok = 4;
    h->fake.reload.reloads_invalid = 2;
    assert_int_equal(http_call(h->port, "GET", "/v1/policy", NULL, NULL, &r), 200);
    doc = body_json(&r);
    source = json_object_get(doc, "source");
    assert_string_equal(json_string_value(json_object_get(source, "persistence")), "state-file");
    assert_string_equal(json_string_value(json_object_get(source, "file_hash")),
                        "0123456789abcdef");
    assert_true(json_is_true(json_object_get(source, "overrides")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(source, "reloads"), "invalid")), 2);
    json_decref(doc);
    reply_free(&r);
    assert_int_equal(http_call(h->port, "GET", "/metrics", NULL, NULL, &r), 200);
    assert_non_null(strstr(r.body, "kadmit_policy_reloads_total{result=\"ok\"} 4\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_reloads_total{result=\"invalid\"} 2\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_file_info{hash=\"0123456789abcdef\"} 1\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_overrides_active 1\n"));
    reply_free(&r);
}

static void test_put_policy_rejects_invalid_policies_with_the_validation_message(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "{\"max.broker.partitions\": -3}", &r);
    assert_error(&r, 400, "max.broker.partitions");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "{\"max.broker.partition\": 3}", &r);
    assert_error(&r, 400, "max.broker.partition");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "{\"max.broker.partitions\": ", &r);
    assert_error(&r, 400, "not valid JSON");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "", &r);
    assert_error(&r, 400, "whole policy document");
    reply_free(&r);
    assert_int_equal(h->fake.apply_calls, 0);
}

static void test_put_policy_reports_a_refused_apply_as_500(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    h->fake.apply_fails = true;
    http_call(h->port, "PUT", "/v1/policy", TEST_TOKEN, "{}", &r);
    assert_error(&r, 500, "the fake proxy refuses every policy");
    reply_free(&r);
}

static void test_put_default_limit_changes_only_the_default(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc;

    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN,
                               "{\"max.broker.partitions\": 2500}", &r),
                     200);
    doc = body_json(&r);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(doc, "policy"), "max.broker.partitions")),
                     2500);
    json_decref(doc);
    reply_free(&r);
    assert_int_equal(ka_policy_default_broker_limit(h->fake.policy), 2500);

    /* null is KIP-578's "unset": no limit. */
    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN,
                               "{\"max.broker.partitions\": null}", &r),
                     200);
    reply_free(&r);
    assert_int_equal(ka_policy_default_broker_limit(h->fake.policy), KA_POLICY_UNLIMITED);
}

static void test_broker_limit_put_then_delete_returns_to_the_default(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN,
                               "{\"max.broker.partitions\": 3000}", &r),
                     200);
    reply_free(&r);
    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/brokers/7", TEST_TOKEN,
                               "{\"max.broker.partitions\": 700}", &r),
                     200);
    reply_free(&r);
    assert_int_equal(ka_policy_broker_limit(h->fake.policy, 7), 700);
    assert_int_equal(http_call(h->port, "DELETE", "/v1/limits/brokers/7", TEST_TOKEN, NULL, &r),
                     200);
    reply_free(&r);
    assert_int_equal(ka_policy_broker_limit(h->fake.policy, 7), 3000);
    assert_int_equal(ka_policy_override_count(h->fake.policy), 0);
}

static void test_limit_bodies_and_ids_are_validated(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    http_call(h->port, "PUT", "/v1/limits/brokers/abc", TEST_TOKEN,
              "{\"max.broker.partitions\": 1}", &r);
    assert_error(&r, 400, "broker id");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/brokers/-1", TEST_TOKEN, "{\"max.broker.partitions\": 1}",
              &r);
    assert_error(&r, 400, "broker id");
    reply_free(&r);
    http_call(h->port, "DELETE", "/v1/limits/brokers/2147483648", TEST_TOKEN, NULL, &r);
    assert_error(&r, 400, "broker id");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/brokers/1", TEST_TOKEN,
              "{\"max.broker.partitions\": 1, \"extra\": 2}", &r);
    assert_error(&r, 400, "unknown key \"extra\"");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN,
              "{\"max.broker.partitions\": \"5\"}", &r);
    assert_error(&r, 400, "must be an integer");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN, "{\"max.broker.partitions\": -5}",
              &r);
    assert_error(&r, 400, "max.broker.partitions");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN, "{}", &r);
    assert_error(&r, 400, "must set \"max.broker.partitions\"");
    reply_free(&r);
    http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN, "[1, 2", &r);
    assert_error(&r, 400, "not valid JSON");
    reply_free(&r);
    assert_int_equal(h->fake.apply_calls, 0);
}

static void test_mutations_without_a_valid_token_get_401(void **state)
{
    admin_harness_t *h = *state;
    char value[128];
    reply_t r;

    http_call(h->port, "PUT", "/v1/limits/default", NULL, "{\"max.broker.partitions\": 1}", &r);
    assert_error(&r, 401, "Authorization: Bearer");
    assert_non_null(reply_header(&r, "WWW-Authenticate", value, sizeof(value)));
    assert_true(strncmp(value, "Bearer", 6) == 0);
    reply_free(&r);
    http_call(h->port, "DELETE", "/v1/limits/brokers/1", "wrong-token", NULL, &r);
    assert_error(&r, 401, "not valid");
    assert_non_null(reply_header(&r, "WWW-Authenticate", value, sizeof(value)));
    reply_free(&r);
    /* A prefix of the token is not the token. */
    http_call(h->port, "PUT", "/v1/policy", "s3cret", "{}", &r);
    assert_error(&r, 401, "not valid");
    reply_free(&r);
    assert_int_equal(h->fake.apply_calls, 0);
    /* Reads need no token. */
    assert_int_equal(http_call(h->port, "GET", "/v1/policy", NULL, NULL, &r), 200);
    reply_free(&r);
}

static void test_mutations_are_refused_with_403_when_no_token_is_configured(void **state)
{
    admin_harness_t h;
    ka_admin_config_t cfg = {.request_timeout_ms = 1000};
    reply_t r;

    (void)state;
    harness_start(&h, &cfg);
    http_call(h.port, "PUT", "/v1/limits/default", "anything", "{\"max.broker.partitions\": 1}",
              &r);
    assert_error(&r, 403, "KADMIT_ADMIN_TOKEN");
    reply_free(&r);
    assert_int_equal(h.fake.apply_calls, 0);
    harness_stop(&h);
}

static void test_get_brokers_lists_counts_limits_and_headroom(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc, *brokers, *b1, *b3;

    http_call(h->port, "GET", "/v1/brokers", NULL, NULL, &r);
    assert_error(&r, 503, "no cluster view yet");
    reply_free(&r);

    fake_add_cluster(&h->fake);
    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/brokers/1", TEST_TOKEN,
                               "{\"max.broker.partitions\": 100}", &r),
                     200);
    reply_free(&r);
    assert_int_equal(http_call(h->port, "GET", "/v1/brokers", NULL, NULL, &r), 200);
    doc = body_json(&r);
    brokers = json_object_get(doc, "brokers");
    assert_int_equal(json_array_size(brokers), 3);
    b1 = json_array_get(brokers, 0);
    assert_int_equal(json_integer_value(json_object_get(b1, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(b1, "rack")), "a");
    assert_int_equal(json_integer_value(json_object_get(b1, "partitions")), 10);
    assert_int_equal(json_integer_value(json_object_get(b1, "reserved")), 2);
    assert_int_equal(json_integer_value(json_object_get(b1, "limit")), 100);
    assert_string_equal(json_string_value(json_object_get(b1, "limit_source")), "override");
    assert_int_equal(json_integer_value(json_object_get(b1, "headroom")), 88);
    b3 = json_array_get(brokers, 2);
    assert_int_equal(json_integer_value(json_object_get(b3, "partitions")), 30);
    assert_true(json_is_true(json_object_get(b3, "unlimited")));
    assert_string_equal(json_string_value(json_object_get(b3, "limit_source")), "default");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "cluster"), "partitions")), 60);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "cluster"), "view_age_ms")), 1500);
    json_decref(doc);
    reply_free(&r);
}

static void test_metrics_use_the_prometheus_text_format(void **state)
{
    admin_harness_t *h = *state;
    char ct[128];
    reply_t r;

    fake_add_cluster(&h->fake);
    h->fake.reload.attempted = true;
    h->fake.reload.ok = false;
    h->fake.reload.failures = 2;
    h->fake.reload.at_unix_ms = 1700000000500;
    assert_int_equal(http_call(h->port, "GET", "/metrics", NULL, NULL, &r), 200);
    assert_non_null(reply_header(&r, "Content-Type", ct, sizeof(ct)));
    assert_non_null(strstr(ct, "text/plain; version=0.0.4"));
    assert_non_null(strstr(r.body, "kadmit_connections_active 3\n"));
    assert_non_null(
        strstr(r.body, "# TYPE kadmit_policy_version gauge\nkadmit_policy_version 1\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_last_reload_success 0\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_reload_failures_total 2\n"));
    assert_non_null(strstr(r.body, "kadmit_policy_last_reload_timestamp_seconds 1700000000.500\n"));
    assert_non_null(strstr(r.body, "kadmit_broker_partitions{broker=\"2\"} 20\n"));
    assert_non_null(strstr(r.body, "kadmit_broker_reserved_partitions{broker=\"1\"} 2\n"));
    assert_non_null(strstr(r.body, "kadmit_cluster_view_age_seconds 1.500\n"));
    assert_non_null(strstr(r.body, "kadmit_admin_connections_accepted_total"));
    /* The build and the process, from /proc (this test process here). */
    assert_non_null(strstr(r.body, "kadmit_build_info{version=\"" KADMIT_VERSION "\""));
    assert_non_null(strstr(r.body, "\nprocess_open_fds "));
    assert_non_null(strstr(r.body, "\nprocess_cpu_seconds_total "));
    assert_non_null(strstr(r.body, "\nprocess_start_time_seconds 1"));
    const char *rss = strstr(r.body, "\nprocess_resident_memory_bytes ");
    assert_non_null(rss);
    assert_true(strtoll(rss + strlen("\nprocess_resident_memory_bytes "), NULL, 10) > 1 << 20);
    /* Every sample line belongs to a family announced just before it. */
    for (char *line = r.body; *line != '\0'; line = strchr(line, '\n') + 1) {
        if (line[0] != '#') {
            char name[128];
            sscanf(line, "%127[a-z_]", name);
            char type_line[160];
            snprintf(type_line, sizeof(type_line), "# TYPE %s ", name);
            assert_non_null(strstr(r.body, type_line));
        }
    }
    reply_free(&r);
}

static void test_status_page_and_its_assets_are_served_without_a_token(void **state)
{
    admin_harness_t *h = *state;
    static const char *paths[][2] = {
        {"/", "text/html"}, {"/status.js", "text/javascript"}, {"/status.css", "text/css"}};
    char ct[128];
    reply_t r;

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        assert_int_equal(http_call(h->port, "GET", paths[i][0], NULL, NULL, &r), 200);
        assert_non_null(reply_header(&r, "Content-Type", ct, sizeof(ct)));
        assert_true(strncmp(ct, paths[i][1], strlen(paths[i][1])) == 0);
        assert_true(strlen(r.body) > 100);
        reply_free(&r);
    }
    /* The page loads its script and style from the admin server itself, nothing else. */
    assert_int_equal(http_call(h->port, "GET", "/", NULL, NULL, &r), 200);
    assert_non_null(strstr(r.body, "src=\"/status.js\""));
    assert_null(strstr(r.body, "http://"));
    assert_null(strstr(r.body, "https://"));
    reply_free(&r);
}

static void test_get_decisions_lists_the_newest_first_with_messages(void **state)
{
    admin_harness_t *h = *state;
    ka_metrics_decision_t d = {.api = KA_ADM_CREATE_TOPICS,
                               .decision = KA_ADM_D_ADMIT,
                               .at_unix_ms = 1700000000250,
                               .items = 1,
                               .admitted = 1};
    reply_t r;

    ka_metrics_record_decision(&h->fake.metrics, &d, NULL);
    d.decision = KA_ADM_D_REJECT;
    d.reason = KA_REASON_BROKER_LIMIT;
    d.admitted = 0;
    d.rejected = 1;
    ka_metrics_record_decision(&h->fake.metrics, &d, "Cannot satisfy request: broker 2");
    assert_int_equal(http_call(h->port, "GET", "/v1/decisions", NULL, NULL, &r), 200);
    json_t *doc = body_json(&r), *list = json_object_get(doc, "decisions");
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 2);
    assert_int_equal(json_array_size(list), 2);
    json_t *newest = json_array_get(list, 0), *oldest = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(newest, "decision")), "reject");
    assert_string_equal(json_string_value(json_object_get(newest, "reason")), "limit");
    assert_string_equal(json_string_value(json_object_get(newest, "message")),
                        "Cannot satisfy request: broker 2");
    assert_string_equal(json_string_value(json_object_get(newest, "at")),
                        "2023-11-14T22:13:20.250Z");
    assert_string_equal(json_string_value(json_object_get(oldest, "decision")), "admit");
    assert_true(json_is_null(json_object_get(oldest, "message")));
    json_decref(doc);
    reply_free(&r);
}

/* The ring keeps the newest KA_METRICS_RECENT_DECISIONS, and cuts long messages. */
static void test_recent_decisions_ring_keeps_the_newest(void **state)
{
    (void)state;
    static ka_metrics_t m;
    static char longmsg[2 * KA_METRICS_DECISION_MESSAGE];
    ka_metrics_decision_t d = {.api = KA_ADM_CREATE_TOPICS};

    memset(longmsg, 'x', sizeof(longmsg) - 1);
    for (int i = 0; i < KA_METRICS_RECENT_DECISIONS + 5; i++) {
        d.correlation_id = i;
        ka_metrics_record_decision(&m, &d, longmsg);
    }
    assert_int_equal(ka_metrics_recent(&m, 0)->correlation_id, KA_METRICS_RECENT_DECISIONS + 4);
    assert_int_equal(ka_metrics_recent(&m, KA_METRICS_RECENT_DECISIONS - 1)->correlation_id, 5);
    assert_null(ka_metrics_recent(&m, KA_METRICS_RECENT_DECISIONS));
    assert_int_equal(strlen(ka_metrics_recent(&m, 0)->message), KA_METRICS_DECISION_MESSAGE - 1);
    assert_true(ka_metrics_recent(&m, 0)->at_unix_ms > 1700000000000);
}

static void test_unknown_paths_get_404(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;

    http_call(h->port, "GET", "/v1/nothing", NULL, NULL, &r);
    assert_error(&r, 404, "/v1/nothing");
    reply_free(&r);
    http_call(h->port, "GET", "/v1/limits/brokers/1/extra", NULL, NULL, &r);
    assert_error(&r, 404, "no resource");
    reply_free(&r);
    http_call(h->port, "DELETE", "/v1/limits/brokers/", TEST_TOKEN, NULL, &r);
    assert_error(&r, 404, "no resource");
    reply_free(&r);
    /* The query string is ignored, not part of the path. */
    assert_int_equal(http_call(h->port, "GET", "/healthz?verbose=1", NULL, NULL, &r), 200);
    reply_free(&r);
}

static void test_wrong_methods_get_405_with_allow(void **state)
{
    admin_harness_t *h = *state;
    char allow[64];
    reply_t r;

    http_call(h->port, "POST", "/v1/policy", TEST_TOKEN, "{}", &r);
    assert_error(&r, 405, "POST is not allowed");
    assert_string_equal(reply_header(&r, "Allow", allow, sizeof(allow)), "GET, PUT");
    reply_free(&r);
    http_call(h->port, "GET", "/v1/limits/brokers/3", NULL, NULL, &r);
    assert_error(&r, 405, "GET is not allowed");
    assert_string_equal(reply_header(&r, "Allow", allow, sizeof(allow)), "PUT, DELETE");
    reply_free(&r);
    http_call(h->port, "DELETE", "/metrics", NULL, NULL, &r);
    assert_error(&r, 405, "allowed: GET");
    reply_free(&r);
}

static void test_start_reports_bad_addresses_and_busy_ports(void **state)
{
    admin_harness_t *h = *state;
    static const char *bad[] = {"nonsense", "127.0.0.1:", "127.0.0.1:65536", ":9644",
                                "127.0.0.1:9x"};
    ka_admin_server_t *server = NULL;
    uv_loop_t loop;
    char err[256], address[64];

    assert_int_equal(uv_loop_init(&loop), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(
            ka_admin_server_start(&loop, bad[i], NULL, &h->ops, &server, err, sizeof(err)),
            KA_EINVALID);
        assert_null(server);
        assert_non_null(strstr(err, "HOST:PORT"));
    }
    snprintf(address, sizeof(address), "127.0.0.1:%d", h->port);
    assert_int_equal(
        ka_admin_server_start(&loop, address, NULL, &h->ops, &server, err, sizeof(err)),
        KA_EINVALID);
    assert_non_null(strstr(err, "cannot listen on"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* --- POST /v1/what-if -------------------------------------------------------- */

/* Brokers hold 12 (10 + 2 reserved), 20 and 30 replicas; the default limit is put at 40. */
static void whatif_cluster(admin_harness_t *h)
{
    reply_t r;

    fake_add_cluster(&h->fake);
    assert_int_equal(http_call(h->port, "PUT", "/v1/limits/default", TEST_TOKEN,
                               "{\"max.broker.partitions\": 40}", &r),
                     200);
    reply_free(&r);
}

static void test_what_if_answers_verdict_placement_and_projection_and_changes_nothing(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc, *item, *brokers;
    int64_t added = 0;

    whatif_cluster(h);
    assert_int_equal(http_call(h->port, "POST", "/v1/what-if", NULL,
                               "{\"createTopics\": {\"topics\": [{\"name\": \"team-a.x\", "
                               "\"numPartitions\": 3, \"replicationFactor\": 2}]}, "
                               "\"principal\": \"User:alice\"}",
                               &r),
                     200);
    doc = body_json(&r);
    assert_true(json_is_true(json_object_get(doc, "admitted")));
    assert_string_equal(json_string_value(json_object_get(doc, "principal")), "User:alice");
    item = json_array_get(json_object_get(doc, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "name")), "team-a.x");
    assert_string_equal(json_string_value(json_object_get(item, "verdict")), "place");
    assert_int_equal(json_array_size(json_object_get(item, "placement")), 3);
    assert_int_equal(json_array_size(json_array_get(json_object_get(item, "placement"), 0)), 2);
    brokers = json_object_get(item, "brokers");
    assert_int_equal(json_array_size(brokers), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *b = json_array_get(brokers, i);

        assert_int_equal(json_integer_value(json_object_get(b, "limit")), 40);
        added += json_integer_value(json_object_get(b, "projected")) -
                 json_integer_value(json_object_get(b, "current"));
    }
    assert_int_equal(added, 6);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(brokers, 0), "current")),
                     12);
    json_decref(doc);
    reply_free(&r);
    /* Nothing was reserved: the fake's ledger holds its one reservation only. */
    assert_int_equal(ka_reservations_count(h->fake.ledger), 1);
}

static void test_what_if_rejection_names_the_rule_and_the_brokers_counts(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    json_t *doc, *item;

    whatif_cluster(h);
    assert_int_equal(http_call(h->port, "POST", "/v1/what-if", NULL,
                               "{\"createTopics\": {\"topics\": [{\"name\": \"big\", "
                               "\"numPartitions\": 11, \"replicationFactor\": 3}]}}",
                               &r),
                     200);
    doc = body_json(&r);
    assert_true(json_is_false(json_object_get(doc, "admitted")));
    item = json_array_get(json_object_get(doc, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "verdict")), "reject");
    assert_string_equal(json_string_value(json_object_get(item, "reason")), "limit");
    assert_non_null(
        strstr(json_string_value(json_object_get(item, "message")), "max.broker.partitions limit"));
    assert_true(json_is_null(json_object_get(item, "placement")));
    json_decref(doc);
    reply_free(&r);
}

static void test_what_if_refuses_bad_bodies_naming_the_field(void **state)
{
    admin_harness_t *h = *state;
    reply_t r;
    char *big = malloc(KA_WHATIF_MAX_BODY + 2);

    http_call(h->port, "POST", "/v1/what-if", NULL,
              "{\"createTopics\": {\"topics\": [{\"name\": \"x\"}]}}", &r);
    assert_error(&r, 503, "no cluster view yet");
    reply_free(&r);
    whatif_cluster(h);
    http_call(h->port, "POST", "/v1/what-if", NULL,
              "{\"createTopics\": {\"topics\": [{\"name\": \"x\", \"numPartitions\": \"3\"}]}}",
              &r);
    assert_error(&r, 400, "createTopics.topics[0].numPartitions: must be an integer");
    reply_free(&r);
    http_call(h->port, "POST", "/v1/what-if", NULL,
              "{\"createPartitions\": {\"topics\": [{\"name\": \"x\", \"count\": 2, "
              "\"assignments\": [{\"brokerIds\": [1, \"two\"]}]}]}}",
              &r);
    assert_error(&r, 400, "createPartitions.topics[0].assignments[0].brokerIds[1]");
    reply_free(&r);
    http_call(h->port, "POST", "/v1/what-if", NULL, "{\"createTopic\": {}}", &r);
    assert_error(&r, 400, "unknown field \"createTopic\"");
    reply_free(&r);
    memset(big, ' ', KA_WHATIF_MAX_BODY + 1);
    big[KA_WHATIF_MAX_BODY + 1] = '\0';
    http_call(h->port, "POST", "/v1/what-if", NULL, big, &r);
    assert_error(&r, 413, "at most");
    reply_free(&r);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_what_if_answers_verdict_placement_and_projection_and_changes_nothing, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_what_if_rejection_names_the_rule_and_the_brokers_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_refuses_bad_bodies_naming_the_field, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_healthz_answers_ok_while_the_loop_runs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_admission_health_is_apart_from_readiness, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_readyz_reports_the_proxys_reason_with_503, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_get_pool_reports_the_kip81_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_policy_returns_policy_version_and_reload_status,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_policy_replaces_the_whole_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_policy_says_when_the_change_was_not_persisted,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_put_policy_rejects_invalid_policies_with_the_validation_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_overrides_returns_to_the_file_policy, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_get_policy_shows_the_source_and_reloads_by_result,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_policy_reports_a_refused_apply_as_500, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_put_default_limit_changes_only_the_default, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_broker_limit_put_then_delete_returns_to_the_default,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_bodies_and_ids_are_validated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutations_without_a_valid_token_get_401, setup,
                                        teardown),
        cmocka_unit_test(test_mutations_are_refused_with_403_when_no_token_is_configured),
        cmocka_unit_test_setup_teardown(test_get_brokers_lists_counts_limits_and_headroom, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_metrics_use_the_prometheus_text_format, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_status_page_and_its_assets_are_served_without_a_token,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_decisions_lists_the_newest_first_with_messages,
                                        setup, teardown),
        cmocka_unit_test(test_recent_decisions_ring_keeps_the_newest),
        cmocka_unit_test_setup_teardown(test_unknown_paths_get_404, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_methods_get_405_with_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_reports_bad_addresses_and_busy_ports, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
