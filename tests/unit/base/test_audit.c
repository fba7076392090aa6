/*
 * test_audit.c: an audit event is one JSON line with every field, an
 * unknown principal is written as the policy's principal.unknown, and
 * kadmit_rule_decisions_total counts by rule and verdict with bounded labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ka_audit.h"
#include "ka_log.h"
#include "ka_metrics.h"

/* Runs emit with stdout captured; returns the last line parsed as JSON. */
static json_t *emit_captured(const ka_audit_event_t *e)
{
    char path[] = "/tmp/ka_audit_XXXXXX", buf[8192];
    int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
    assert_true(fd >= 0);
    fflush(stdout);
    dup2(fd, STDOUT_FILENO);
    ka_audit_emit(e);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    assert_non_null(j);
    return j;
}

static const char *str(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    assert_non_null(v);
    return json_string_value(v);
}

static void test_event_is_one_json_line_with_every_field(void **state)
{
    (void)state;
    ka_metrics_t *m = calloc(1, sizeof(*m));
    ka_log_setup(KA_LOG_INFO, KA_LOG_JSON);
    ka_audit_setup(m, "User:nobody");
    const char topic[] = "team-a.orders-and-more";
    ka_audit_event_t e = {.principal = "User:alice",
                          .client_addr = "127.0.0.1:53422",
                          .client_id = "console-producer-extra",
                          .client_id_len = 16,
                          .api = "CreateTopics",
                          .resource = topic,
                          .resource_len = 13,
                          .rule = "team-a\\..*",
                          .verdict = "reject",
                          .reason = "rule",
                          .message = "replication factor 1 is below the minimum 2 of rule \"x\""};
    json_t *j = emit_captured(&e);
    assert_string_equal(str(j, "msg"), "audit");
    assert_string_equal(str(j, "event"), "audit");
    assert_string_equal(str(j, "principal"), "User:alice");
    assert_int_equal(json_integer_value(json_object_get(j, "principal_known")), 1);
    assert_string_equal(str(j, "client_address"), "127.0.0.1:53422");
    assert_string_equal(str(j, "client_id"), "console-producer"); /* the slice, not past it */
    assert_string_equal(str(j, "api"), "CreateTopics");
    assert_string_equal(str(j, "resource"), "team-a.orders");
    assert_string_equal(str(j, "rule"), "team-a\\..*");
    assert_string_equal(str(j, "verdict"), "reject");
    assert_string_equal(str(j, "reason"), "rule");
    assert_string_equal(str(j, "message"), e.message);
    json_decref(j);
    ka_audit_setup(NULL, NULL);
    free(m);
}

static void test_unknown_principal_is_written_as_the_policys_name(void **state)
{
    (void)state;
    ka_log_setup(KA_LOG_INFO, KA_LOG_JSON);
    ka_audit_setup(NULL, "User:nobody");
    ka_audit_event_t e = {
        .api = "CreateTopics", .resource = "t", .resource_len = 1, .verdict = "admit"};
    json_t *j = emit_captured(&e);
    assert_string_equal(str(j, "principal"), "User:nobody");
    assert_int_equal(json_integer_value(json_object_get(j, "principal_known")), 0);
    assert_string_equal(str(j, "rule"), "");
    json_decref(j);
    ka_audit_setup(NULL, NULL); /* back to the default */
    j = emit_captured(&e);
    assert_string_equal(str(j, "principal"), "User:ANONYMOUS");
    json_decref(j);
}

static void test_rule_counter_counts_by_rule_and_verdict_with_escaped_labels(void **state)
{
    (void)state;
    ka_metrics_t *m = calloc(1, sizeof(*m));
    char *out = malloc(1 << 20);
    ka_log_setup(KA_LOG_ERROR, KA_LOG_JSON); /* counting does not depend on logging */
    ka_audit_setup(m, NULL);
    ka_audit_event_t e = {.api = "CreateTopics", .rule = "team-a\\..*", .verdict = "reject"};
    ka_audit_emit(&e);
    ka_audit_emit(&e);
    e.verdict = "audit";
    ka_audit_emit(&e);
    e.rule = NULL;
    e.verdict = "admit";
    ka_audit_emit(&e);
    assert_true(ka_metrics_render(m, NULL, out, 1 << 20) > 0);
    assert_non_null(
        strstr(out, "kadmit_rule_decisions_total{rule=\"team-a\\\\..*\",verdict=\"reject\"} 2\n"));
    assert_non_null(
        strstr(out, "kadmit_rule_decisions_total{rule=\"team-a\\\\..*\",verdict=\"audit\"} 1\n"));
    assert_non_null(strstr(out, "kadmit_rule_decisions_total{rule=\"\",verdict=\"admit\"} 1\n"));
    assert_null(strstr(out, "verdict=\"defer\""));
    ka_audit_setup(NULL, NULL);
    free(out);
    free(m);
}

static void test_rule_labels_are_capped_and_the_rest_count_as_other(void **state)
{
    (void)state;
    ka_metrics_t *m = calloc(1, sizeof(*m));
    char *out = malloc(1 << 20), name[32];
    for (int i = 0; i < KA_METRICS_RULES + 6; i++) {
        snprintf(name, sizeof(name), "rule-%d", i);
        ka_metrics_count_rule(m, name, KA_RULE_VERDICT_ADMIT);
    }
    ka_metrics_count_rule(m, "rule-0", KA_RULE_VERDICT_ADMIT); /* a named slot still counts */
    assert_true(ka_metrics_render(m, NULL, out, 1 << 20) > 0);
    assert_non_null(strstr(out, "{rule=\"rule-0\",verdict=\"admit\"} 2\n"));
    snprintf(name, sizeof(name), "rule-%d\"", KA_METRICS_RULES - 1);
    assert_non_null(strstr(out, name));
    snprintf(name, sizeof(name), "rule-%d\"", KA_METRICS_RULES);
    assert_null(strstr(out, name));
    assert_non_null(strstr(out, "{rule=\"other\",verdict=\"admit\"} 6\n"));
    free(out);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_is_one_json_line_with_every_field),
        cmocka_unit_test(test_unknown_principal_is_written_as_the_policys_name),
        cmocka_unit_test(test_rule_counter_counts_by_rule_and_verdict_with_escaped_labels),
        cmocka_unit_test(test_rule_labels_are_capped_and_the_rest_count_as_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
