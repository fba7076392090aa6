/*
 * test_limits_admin.c: the admin API with the cluster's limits topic behind
 * it (policy_submit, layers_get), through the HTTP session without sockets:
 * a mutation is answered only once its write is confirmed, later requests on
 * the connection wait for that answer, a failed write is a 503 that changes
 * nothing, a reply whose connection has gone is dropped safely, and
 * GET /v1/policy names each layer and where each limit comes from.
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
#include "ka_admin_router.h"
#include "ka_admin_session.h"
#include "ka_error.h"

typedef struct fixture {
    fake_proxy_t fake;
    ka_admin_ops_t ops;
    ka_admin_context_t ctx;
    ka_admin_session_t session;
    /* What policy_submit saw and kept. */
    ka_admin_reply_t *reply;
    ka_policy_t *submitted;
    bool reset;
    bool refuse;   /* policy_submit fails at once */
    int refuse_rc; /* with this error (0: KA_EINVALID) */
    int wakes;
    const char *layer; /* what layers_get reports */
} fixture_t;

static fixture_t *current;

static int fake_submit(void *ctx, ka_policy_t *next, bool reset, ka_admin_reply_t *reply, char *err,
                       size_t errlen)
{
    fixture_t *f = current;

    (void)ctx;
    if (f->refuse) {
        snprintf(err, errlen, "the limits topic is not readable yet");
        return f->refuse_rc != 0 ? f->refuse_rc : KA_EINVALID;
    }
    f->reply = reply;
    f->submitted = ka_policy_ref(next);
    f->reset = reset;
    return 0;
}

static void fake_layers(void *ctx, ka_admin_layers_t *out)
{
    fixture_t *f = current;

    (void)ctx;
    out->file_path = "/etc/kadmit/policy.json";
    out->file_version = 1;
    out->cluster = true;
    out->topic = "__kadmit_limits";
    out->loading = false;
    out->offset = 4;
    out->written_by = "sidecar 1";
    out->written_at_ms = 1764600000000;
    out->overrides = f->layer;
    out->error = "";
}

static void wake_cb(void *arg)
{
    ((fixture_t *)arg)->wakes++;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    ka_admin_config_t cfg = {.token = TEST_TOKEN};

    current = f;
    fake_init(&f->fake);
    f->ops = fake_ops(&f->fake);
    f->ops.policy_submit = fake_submit;
    f->ops.layers_get = fake_layers;
    assert_int_equal(ka_admin_context_init(&f->ctx, &cfg, &f->ops), 0);
    ka_admin_session_init(&f->session, &f->ctx);
    f->session.wake = wake_cb;
    f->session.wake_arg = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    ka_admin_session_free(&f->session);
    ka_admin_context_free(&f->ctx);
    ka_policy_unref(f->submitted);
    fake_free(&f->fake);
    free(f);
    return 0;
}

static int count_responses(const char *out)
{
    int n = 0;

    for (const char *p = out; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
        n++;
    return n;
}

static char *take(fixture_t *f)
{
    size_t len;
    char *out = ka_admin_buf_take(&f->session.out, &len);
    return out ? out : strdup("");
}

/* The JSON body of the first response in `out`. */
static json_t *body_of(const char *out)
{
    const char *body = strstr(out, "\r\n\r\n");
    json_error_t jerr;
    json_t *doc;

    assert_non_null(body);
    doc = json_loadb(body + 4, strcspn(body + 4, "\r"), JSON_DISABLE_EOF_CHECK, &jerr);
    assert_non_null(doc);
    return doc;
}

static json_t *at(json_t *doc, const char *path)
{
    char copy[256], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", path);
    for (char *key = strtok_r(copy, "/", &save); key != NULL && doc != NULL;
         key = strtok_r(NULL, "/", &save))
        doc = json_object_get(doc, key);
    return doc;
}

static void feed(fixture_t *f, const char *text)
{
    assert_int_equal(ka_admin_session_feed(&f->session, text, strlen(text)), 0);
}

#define PUT_BROKER_2                                                                               \
    "PUT /v1/limits/brokers/2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TEST_TOKEN            \
    "\r\nContent-Length: 28\r\n\r\n{\"max.broker.partitions\": 7}"

static void test_mutation_is_answered_after_the_write_and_later_requests_wait(void **state)
{
    fixture_t *f = *state;
    ka_policy_t *in_force = NULL;
    char err[256] = "", *out;
    json_t *doc;

    feed(f, PUT_BROKER_2 "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_non_null(f->reply);
    assert_false(f->reset);
    assert_int_equal(ka_policy_broker_limit(f->submitted, 2), 7);
    /* Nothing is in force and nothing is answered until the write is confirmed. */
    assert_int_equal(f->fake.apply_calls, 0);
    out = take(f);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(ka_admin_session_resume(&f->session), 0);
    out = take(f);
    assert_string_equal(out, "");
    free(out);

    assert_int_equal(
        ka_policy_with_broker_limit(f->fake.policy, 2, 7, 42, &in_force, err, sizeof(err)), 0);
    ka_admin_reply_finish(f->reply, 0, in_force, "kafka topic __kadmit_limits", NULL, NULL);
    ka_policy_unref(in_force);
    assert_int_equal(f->wakes, 1);
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 200"));
    doc = body_of(out);
    assert_true(json_is_true(at(doc, "persisted")));
    assert_string_equal(json_string_value(at(doc, "persisted_to")), "kafka topic __kadmit_limits");
    assert_int_equal(json_integer_value(at(doc, "version")), 42);
    json_decref(doc);
    assert_int_equal(count_responses(out), 1); /* the GET is still waiting */
    free(out);
    assert_int_equal(ka_admin_session_resume(&f->session), 0);
    out = take(f);
    assert_int_equal(count_responses(out), 1);
    assert_non_null(strstr(out, "\"ok\""));
    free(out);
}

static void test_failed_write_is_a_503_and_changes_nothing(void **state)
{
    fixture_t *f = *state;
    uint64_t before = ka_policy_version(f->fake.policy);
    char *out;

    feed(f, PUT_BROKER_2);
    assert_non_null(f->reply);
    ka_admin_reply_finish(f->reply, KA_ELIMIT, NULL, NULL, NULL,
                          "no acknowledgement from the topic's replicas within 5000 ms");
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 503"));
    assert_non_null(strstr(out, "within 5000 ms"));
    free(out);
    assert_int_equal(f->fake.apply_calls, 0);
    assert_int_equal(ka_policy_version(f->fake.policy), before);
}

static void test_submit_refused_at_once_is_a_503(void **state)
{
    fixture_t *f = *state;
    char *out;

    f->refuse = true;
    feed(f, PUT_BROKER_2);
    assert_null(f->reply);
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 503"));
    assert_non_null(strstr(out, "not readable yet"));
    free(out);
}

/* A change that another change beat to the limits topic: 409 with a JSON
 * error, whether it is known when the record is read back or at once (this
 * sidecar's previous change is still being written); nothing changes. */
static void test_change_another_came_before_is_a_409(void **state)
{
    fixture_t *f = *state;
    uint64_t before = ka_policy_version(f->fake.policy);
    char *out;
    json_t *doc;

    feed(f, PUT_BROKER_2);
    assert_non_null(f->reply);
    ka_admin_reply_finish(f->reply, KA_ECONFLICT, NULL, NULL, NULL,
                          "written for offset 12 and landed at 13");
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 409"));
    doc = body_of(out);
    assert_non_null(strstr(json_string_value(at(doc, "error")), "another change of the cluster's "
                                                                "limits came first: written for "
                                                                "offset 12 and landed at 13"));
    json_decref(doc);
    free(out);
    assert_int_equal(f->fake.apply_calls, 0);
    assert_int_equal(ka_policy_version(f->fake.policy), before);

    f->reply = NULL;
    f->refuse = true;
    f->refuse_rc = KA_ECONFLICT;
    feed(f, PUT_BROKER_2);
    assert_int_equal(ka_admin_session_resume(&f->session), 0);
    assert_null(f->reply);
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 409"));
    assert_non_null(strstr(out, "came first"));
    free(out);
}

static void test_reply_for_a_closed_connection_is_dropped(void **state)
{
    fixture_t *f = *state;

    feed(f, PUT_BROKER_2);
    assert_non_null(f->reply);
    ka_admin_session_free(&f->session);
    ka_admin_session_init(&f->session, &f->ctx);
    /* Nothing to write to: no crash, no leak (the sanitizer build checks). */
    ka_admin_reply_finish(f->reply, 0, f->fake.policy, "kafka topic t", NULL, NULL);
    assert_int_equal(f->wakes, 0);
}

static void test_delete_overrides_submits_a_reset(void **state)
{
    fixture_t *f = *state;
    ka_policy_t *file = NULL;

    assert_int_equal(ka_policy_new_default(1, &file), 0);
    f->fake.file_policy = file;
    feed(f, "DELETE /v1/policy/overrides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TEST_TOKEN
            "\r\n\r\n");
    assert_non_null(f->reply);
    assert_true(f->reset);
    ka_admin_reply_finish(f->reply, 0, f->submitted, "kafka topic t", NULL, NULL);
}

static void test_policy_get_names_layers_and_each_limits_source(void **state)
{
    fixture_t *f = *state;
    ka_policy_t *file = NULL, *layered = NULL;
    char err[256] = "", *out;
    json_t *doc;

    assert_int_equal(
        ka_policy_parse("{\"max.broker.partitions\": 100}", 30, 1, &file, err, sizeof(err)), 0);
    assert_int_equal(ka_policy_with_broker_limit(file, 2, 7, 5, &layered, err, sizeof(err)), 0);
    f->fake.file_policy = file;
    ka_policy_unref(f->fake.policy);
    f->fake.policy = layered;
    f->layer = "{\"brokers\":{\"2\":{\"max.broker.partitions\":7}}}";
    feed(f, "GET /v1/policy HTTP/1.1\r\nHost: x\r\n\r\n");
    out = take(f);
    assert_non_null(strstr(out, "HTTP/1.1 200"));
    doc = body_of(out);
    assert_string_equal(json_string_value(at(doc, "layers/cluster/topic")), "__kadmit_limits");
    assert_string_equal(json_string_value(at(doc, "layers/cluster/state")), "loaded");
    assert_int_equal(json_integer_value(at(doc, "layers/cluster/offset")), 4);
    assert_string_equal(json_string_value(at(doc, "layers/cluster/written_by")), "sidecar 1");
    assert_string_equal(json_string_value(at(doc, "layers/cluster/written_at")),
                        "2025-12-01T14:40:00.000Z");
    assert_int_equal(json_integer_value(at(doc, "layers/cluster/overrides/brokers/2/"
                                                "max.broker.partitions")),
                     7);
    assert_string_equal(json_string_value(at(doc, "layers/file/path")), "/etc/kadmit/policy.json");
    assert_int_equal(json_integer_value(at(doc, "layers/effective/version")), 5);
    assert_int_equal(json_integer_value(at(doc, "limits/max.broker.partitions/value")), 100);
    assert_string_equal(json_string_value(at(doc, "limits/max.broker.partitions/from")), "file");
    assert_int_equal(json_integer_value(at(doc, "limits/brokers/2/max.broker.partitions")), 7);
    assert_string_equal(json_string_value(at(doc, "limits/brokers/2/from")), "cluster");
    assert_string_equal(json_string_value(at(doc, "limits/enforcement/from")), "default");
    json_decref(doc);
    free(out);
}

/* Every test gets a fresh session and fake. */
#define FRESH(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        FRESH(test_mutation_is_answered_after_the_write_and_later_requests_wait),
        FRESH(test_failed_write_is_a_503_and_changes_nothing),
        FRESH(test_submit_refused_at_once_is_a_503),
        FRESH(test_change_another_came_before_is_a_409),
        FRESH(test_reply_for_a_closed_connection_is_dropped),
        FRESH(test_delete_overrides_submits_a_reset),
        FRESH(test_policy_get_names_layers_and_each_limits_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
