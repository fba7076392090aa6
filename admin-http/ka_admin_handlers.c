/*
 * ka_admin_handlers.c: the policy, limits and brokers endpoints.
 *
 * Every mutation is read-modify-write on an immutable snapshot: take the
 * policy in force, derive a new one with a fresh version, hand it to the
 * proxy, answer with what is now in force and whether it reached disk.
 * Handlers run on the loop thread one at a time, so two admin calls cannot
 * interleave between the read and the apply. With the cluster's limits
 * topic (policy_submit), the change is first written there and the answer
 * waits for the write (a ka_admin_reply_t); sidecars apply it as they read
 * it back, so two sidecars' changes land in the topic's one order.
 */
#include "ka_admin_router.h"
#include "ka_admin_session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIMIT_KEY "max.broker.partitions"

/* The policy as the JSON object of the policy file (canonical form). */
static json_t *policy_json(const ka_policy_t *policy)
{
    char *text = ka_policy_serialize(policy);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return doc;
}

/* "2026-11-29T11:45:31.250Z" for a wall-clock time in ms. */
static void format_time(int64_t unix_ms, char *buf, size_t len)
{
    time_t secs = (time_t)(unix_ms / 1000);
    struct tm tm;

    if (gmtime_r(&secs, &tm) == NULL) {
        snprintf(buf, len, "unknown");
        return;
    }
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ms % 1000));
}

/* The last reload of the policy file, or null when there was none. */
static json_t *reload_json(const ka_admin_reload_status_t *st, const ka_policy_t *policy)
{
    char at[64], message[768];

    if (!st->attempted)
        return json_null();
    format_time(st->at_unix_ms, at, sizeof(at));
    if (st->ok)
        return json_pack("{s:b,s:s,s:I}", "ok", 1, "at", at, "failures_total",
                         (json_int_t)st->failures);
    snprintf(message, sizeof(message),
             "the last reload of the policy file failed: %s; the previous policy (version %" PRIu64
             ") is still in force",
             st->error, ka_policy_version(policy));
    return json_pack("{s:b,s:s,s:I,s:s}", "ok", 0, "at", at, "failures_total",
                     (json_int_t)st->failures, "error", message);
}

/* Where the policy comes from and where API changes go, with reload counts. */
static json_t *source_json(const ka_admin_reload_status_t *st)
{
    return json_pack("{s:s,s:s,s:s,s:b,s:{s:I,s:I,s:I,s:I}}", "file_hash", st->file_hash,
                     "persistence", st->persistence ? st->persistence : "none", "persist_path",
                     st->persist_path, "overrides", st->overrides, "reloads", "ok",
                     (json_int_t)st->reloads_ok, "unchanged", (json_int_t)st->reloads_unchanged,
                     "invalid", (json_int_t)st->reloads_invalid, "missing",
                     (json_int_t)st->reloads_missing);
}

/* The layer over the file as an object (empty when none). */
static json_t *layer_object(const char *overrides)
{
    json_t *doc = overrides ? json_loads(overrides, 0, NULL) : NULL;

    if (json_is_object(doc))
        return doc;
    json_decref(doc);
    return json_object();
}

/* Where a value in force comes from: the layer, the file, or the built-in default. */
static const char *source_of(json_t *layer_value, json_t *file_value, json_t *default_value,
                             const char *layer_name)
{
    if (layer_value != NULL)
        return layer_name;
    return json_equal(file_value, default_value) ? "default" : "file";
}

/*
 * Each setting in force with its source: {"max.partitions": {"value": 9,
 * "from": "cluster"}, ..., "brokers": {"2": {"max.broker.partitions": 7,
 * "from": "cluster"}}}. A broker whose override the layer removed is listed
 * with the default limit it follows now.
 */
static json_t *sources_json(json_t *effective, json_t *file, json_t *layer, const char *layer_name)
{
    ka_policy_t *builtin = NULL;
    json_t *defaults, *out = json_object(), *brokers = json_object(), *layer_brokers;
    const char *key;
    json_t *value;

    ka_policy_new_default(0, &builtin);
    defaults = builtin ? policy_json(builtin) : json_object();
    ka_policy_unref(builtin);
    json_object_foreach(effective, key, value)
    {
        if (strcmp(key, "brokers") == 0)
            continue;
        json_object_set_new(
            out, key,
            json_pack("{s:O,s:s}", "value", value, "from",
                      source_of(json_object_get(layer, key), json_object_get(file, key),
                                json_object_get(defaults, key), layer_name)));
    }
    json_object_foreach(json_object_get(effective, "brokers"), key, value)
    {
        json_t *ov = json_object_get(json_object_get(layer, "brokers"), key);
        json_object_set_new(brokers, key,
                            json_pack("{s:O,s:s}", LIMIT_KEY, json_object_get(value, LIMIT_KEY),
                                      "from", ov != NULL ? layer_name : "file"));
    }
    layer_brokers = json_object_get(layer, "brokers");
    json_object_foreach(layer_brokers, key, value)
    {
        if (json_is_null(value) && json_object_get(brokers, key) == NULL)
            json_object_set_new(brokers, key,
                                json_pack("{s:O,s:s}", LIMIT_KEY,
                                          json_object_get(effective, LIMIT_KEY), "from",
                                          layer_name));
    }
    json_object_set_new(out, "brokers", brokers);
    json_decref(defaults);
    return out;
}

/* The file, the cluster's layer (or this sidecar's API layer) and what is in force. */
static json_t *layers_json(const ka_admin_layers_t *ly, const ka_admin_reload_status_t *st,
                           const ka_policy_t *policy, json_t *layer)
{
    json_t *out = json_object(), *cluster = json_null();
    char at[64];

    json_object_set_new(out, "file",
                        json_pack("{s:s,s:I,s:s}", "path", ly->file_path ? ly->file_path : "",
                                  "version", (json_int_t)ly->file_version, "hash", st->file_hash));
    if (ly->cluster) {
        format_time(ly->written_at_ms, at, sizeof(at));
        cluster = json_pack("{s:s,s:s,s:I,s:O}", "topic", ly->topic ? ly->topic : "", "state",
                            ly->loading ? "loading" : "loaded", "offset", (json_int_t)ly->offset,
                            "overrides", layer);
        if (cluster != NULL && ly->offset >= 0) {
            json_object_set_new(cluster, "written_by", json_string(ly->written_by));
            json_object_set_new(cluster, "written_at", json_string(at));
        }
        if (cluster != NULL && ly->error != NULL && ly->error[0] != '\0')
            json_object_set_new(cluster, "error", json_string(ly->error));
    } else {
        json_object_set_new(out, "api", json_pack("{s:O}", "overrides", layer));
    }
    json_object_set_new(out, "cluster", cluster);
    json_object_set_new(out, "effective",
                        json_pack("{s:I}", "version", (json_int_t)ka_policy_version(policy)));
    return out;
}

/* Adds "layers" and "limits" to GET /v1/policy's answer. */
static void add_layers(ka_admin_context_t *ctx, const ka_admin_reload_status_t *st,
                       const ka_policy_t *policy, json_t *body)
{
    ka_admin_layers_t ly;
    ka_policy_t *file;
    json_t *layer, *effective, *file_doc;

    memset(&ly, 0, sizeof(ly));
    ctx->ops->layers_get(ctx->ops->ctx, &ly);
    file = ctx->ops->file_policy_get ? ctx->ops->file_policy_get(ctx->ops->ctx) : NULL;
    layer = layer_object(ly.overrides);
    effective = policy_json(policy);
    file_doc = file ? policy_json(file) : json_object();
    json_object_set_new(body, "layers", layers_json(&ly, st, policy, layer));
    json_object_set_new(body, "limits",
                        sources_json(effective, file_doc, layer, ly.cluster ? "cluster" : "api"));
    json_decref(layer);
    json_decref(effective);
    json_decref(file_doc);
    ka_policy_unref(file);
}

void ka_admin_handle_policy_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *policy = ctx->ops->policy_get(ctx->ops->ctx);
    ka_admin_reload_status_t st;
    json_t *body;

    (void)req, (void)arg;
    memset(&st, 0, sizeof(st));
    if (ctx->ops->reload_status != NULL)
        ctx->ops->reload_status(ctx->ops->ctx, &st);
    st.error[sizeof(st.error) - 1] = '\0';
    st.file_hash[sizeof(st.file_hash) - 1] = '\0';
    st.persist_path[sizeof(st.persist_path) - 1] = '\0';
    body = json_pack("{s:I,s:o,s:o}", "version", (json_int_t)ka_policy_version(policy), "policy",
                     policy_json(policy), "last_reload", reload_json(&st, policy));
    if (body != NULL && ctx->ops->reload_status != NULL && st.persistence != NULL)
        json_object_set_new(body, "source", source_json(&st));
    if (body != NULL && ctx->ops->layers_get != NULL)
        add_layers(ctx, &st, policy, body);
    ka_admin_response_json(res, 200, body);
    ka_policy_unref(policy);
}

/* The answer to a mutation: what is in force now, and where it was saved. */
static json_t *mutation_json(const ka_policy_t *policy, bool persisted, const char *where,
                             const char *warning)
{
    json_t *body = json_pack("{s:I,s:b,s:o}", "version", (json_int_t)ka_policy_version(policy),
                             "persisted", persisted, "policy", policy_json(policy));

    if (body != NULL && persisted && where[0] != '\0')
        json_object_set_new(body, "persisted_to", json_string(where));
    if (body != NULL && warning != NULL && warning[0] != '\0')
        json_object_set_new(body, "warning", json_string(warning));
    return body;
}

struct ka_admin_reply {
    ka_admin_context_t *ctx;
    ka_admin_session_t *session; /* NULL once the connection has gone */
};

void ka_admin_reply_bind(ka_admin_reply_t *reply, struct ka_admin_session *session)
{
    reply->session = session;
}

void ka_admin_reply_finish(ka_admin_reply_t *reply, int rc, const ka_policy_t *policy,
                           const char *persisted_to, const char *warning, const char *detail)
{
    ka_admin_response_t res;

    if (reply->session != NULL) {
        ka_admin_response_init(&res);
        if (rc == KA_ECONFLICT) {
            /* Another change reached the limits topic first: this one was
             * composed on a layer no longer in force, so it is not applied. */
            ka_admin_response_error(&res, 409,
                                    "the change was not made, because another change of the "
                                    "cluster's limits came first: %s",
                                    detail && detail[0] ? detail : ka_strerror(rc));
        } else if (rc < 0) {
            ka_admin_response_error(&res, 503,
                                    "the change was not made, because the cluster's limits "
                                    "could not be written: %s",
                                    detail && detail[0] ? detail : ka_strerror(rc));
        } else {
            reply->ctx->stats.policy_changes++;
            ka_admin_response_json(
                &res, 200, mutation_json(policy, true, persisted_to ? persisted_to : "", warning));
        }
        ka_admin_session_answer(reply->session, &res);
        ka_admin_response_free(&res);
    }
    free(reply);
}

/* Hands `next` to the cluster's limits and answers later; consumes `next`. */
static void submit_and_defer(ka_admin_context_t *ctx, ka_policy_t *next, bool reset,
                             ka_admin_response_t *res)
{
    ka_admin_reply_t *reply = calloc(1, sizeof(*reply));
    char err[512] = "";
    int rc;

    if (reply == NULL) {
        ka_admin_response_error(res, 500, "out of memory");
        ka_policy_unref(next);
        return;
    }
    reply->ctx = ctx;
    rc = ctx->ops->policy_submit(ctx->ops->ctx, next, reset, reply, err, sizeof(err));
    ka_policy_unref(next);
    if (rc < 0) {
        free(reply);
        if (rc == KA_ECONFLICT)
            ka_admin_response_error(res, 409,
                                    "the change was not made, because another change of the "
                                    "cluster's limits came first: %s",
                                    err[0] ? err : ka_strerror(rc));
        else
            ka_admin_response_error(res, 503,
                                    "the change was not made, because the cluster's limits could "
                                    "not be written: %s",
                                    err[0] ? err : ka_strerror(rc));
        return;
    }
    res->deferred = reply;
}

/* Puts `next` in force through the proxy and answers; consumes `next`. */
static void apply_and_answer(ka_admin_context_t *ctx, ka_policy_t *next, ka_admin_response_t *res)
{
    bool persisted = false;
    char err[512] = "", warning[700] = "";
    int rc;

    if (ctx->ops->policy_submit != NULL) {
        submit_and_defer(ctx, next, false, res);
        return;
    }
    rc = ctx->ops->policy_apply(ctx->ops->ctx, next, &persisted, err, sizeof(err));
    if (rc < 0) {
        ka_admin_response_error(res, 500, "the new policy was not put in force: %s",
                                err[0] ? err : "the proxy gave no reason");
        ka_policy_unref(next);
        return;
    }
    ctx->stats.policy_changes++;
    if (!persisted)
        snprintf(warning, sizeof(warning),
                 "the policy is in force but was not saved, so a restart will lose it%s%s",
                 err[0] ? ": " : "", err);
    ka_admin_response_json(res, 200, mutation_json(next, persisted, err, warning));
    ka_policy_unref(next);
}

/* Answers a mutation whose new policy was built with result rc (and err). */
static void answer_built(ka_admin_context_t *ctx, int rc, ka_policy_t *next, const char *err,
                         ka_admin_response_t *res)
{
    if (rc < 0) {
        ka_admin_response_error(res, rc == KA_ENOMEM ? 500 : 400, "%s",
                                err[0] ? err : ka_strerror(rc));
        return;
    }
    apply_and_answer(ctx, next, res);
}

void ka_admin_handle_policy_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *next = NULL;
    char err[512] = "";
    int rc;

    (void)arg;
    if (req->body_len == 0) {
        ka_admin_response_error(res, 400,
                                "the body must be a whole policy document, a JSON object such as "
                                "{\"max.broker.partitions\": 4000}");
        return;
    }
    rc = ka_policy_parse(req->body, req->body_len, ctx->ops->policy_next_version(ctx->ops->ctx),
                         &next, err, sizeof(err));
    if (rc == KA_ENOMEM) {
        ka_admin_response_error(res, 500, "out of memory while parsing the policy");
        return;
    }
    if (rc < 0) {
        ka_admin_response_error(res, 400, "the policy was not accepted: %s", err);
        return;
    }
    apply_and_answer(ctx, next, res);
}

/*
 * Reads {"max.broker.partitions": N} (null meaning no limit). Returns 0, or
 * -1 after filling res with a 400 that names the problem.
 */
static int parse_limit_body(const ka_admin_request_t *req, int64_t *limit, ka_admin_response_t *res)
{
    json_error_t jerr;
    json_t *doc, *value;
    const char *key;
    int rc = -1;

    if (req->body_len == 0) {
        ka_admin_response_error(res, 400,
                                "the body must be a JSON object such as {\"" LIMIT_KEY "\": 1000}");
        return -1;
    }
    doc = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL) {
        ka_admin_response_error(res, 400, "the body is not valid JSON (line %d, column %d): %s",
                                jerr.line, jerr.column, jerr.text);
        return -1;
    }
    if (!json_is_object(doc)) {
        ka_admin_response_error(res, 400,
                                "the body must be a JSON object such as {\"" LIMIT_KEY "\": 1000}");
        goto out;
    }
    json_object_foreach(doc, key, value)
    {
        if (strcmp(key, LIMIT_KEY) != 0) {
            ka_admin_response_error(res, 400,
                                    "unknown key \"%.100s\" in the body; the only key is "
                                    "\"" LIMIT_KEY "\"",
                                    key);
            goto out;
        }
    }
    value = json_object_get(doc, LIMIT_KEY);
    if (value == NULL) {
        ka_admin_response_error(
            res, 400, "the body must set \"" LIMIT_KEY "\", e.g. {\"" LIMIT_KEY "\": 1000}");
        goto out;
    }
    if (json_is_null(value)) {
        *limit = KA_POLICY_UNLIMITED; /* KIP-578's unset */
    } else if (json_is_integer(value)) {
        *limit = json_integer_value(value);
    } else {
        ka_admin_response_error(res, 400,
                                LIMIT_KEY " must be an integer between 0 and 2147483647, or null "
                                          "for no limit");
        goto out;
    }
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

/* Decimal digits only, 0..2147483647; otherwise -1 after a 400. */
static int parse_broker_id(const char *arg, int32_t *id, ka_admin_response_t *res)
{
    int64_t v = 0;
    size_t n = strlen(arg);

    if (n == 0 || n > 10)
        goto bad;
    for (size_t i = 0; i < n; i++) {
        if (arg[i] < '0' || arg[i] > '9')
            goto bad;
        v = v * 10 + (arg[i] - '0');
    }
    if (v > INT32_MAX)
        goto bad;
    *id = (int32_t)v;
    return 0;
bad:
    ka_admin_response_error(res, 400,
                            "the broker id in the path must be an integer between 0 and "
                            "2147483647, got \"%.40s\"",
                            arg);
    return -1;
}

void ka_admin_handle_default_limit_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                       const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *base, *next = NULL;
    char err[512] = "";
    int64_t limit;
    int rc;

    (void)arg;
    if (parse_limit_body(req, &limit, res) < 0)
        return;
    base = ctx->ops->policy_get(ctx->ops->ctx);
    rc = ka_policy_with_default_limit(base, limit, ctx->ops->policy_next_version(ctx->ops->ctx),
                                      &next, err, sizeof(err));
    ka_policy_unref(base);
    answer_built(ctx, rc, next, err, res);
}

void ka_admin_handle_broker_limit_put(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                      const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *base, *next = NULL;
    char err[512] = "";
    int64_t limit;
    int32_t id;
    int rc;

    if (parse_broker_id(arg, &id, res) < 0 || parse_limit_body(req, &limit, res) < 0)
        return;
    base = ctx->ops->policy_get(ctx->ops->ctx);
    rc = ka_policy_with_broker_limit(base, id, limit, ctx->ops->policy_next_version(ctx->ops->ctx),
                                     &next, err, sizeof(err));
    ka_policy_unref(base);
    answer_built(ctx, rc, next, err, res);
}

void ka_admin_handle_broker_limit_delete(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                         const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *base, *next = NULL;
    int32_t id;
    int rc;

    (void)req;
    if (parse_broker_id(arg, &id, res) < 0)
        return;
    base = ctx->ops->policy_get(ctx->ops->ctx);
    rc = ka_policy_without_broker_limit(base, id, ctx->ops->policy_next_version(ctx->ops->ctx),
                                        &next);
    ka_policy_unref(base);
    if (rc < 0) {
        ka_admin_response_error(res, rc == KA_ENOMEM ? 500 : 400,
                                "broker %" PRId32 "'s limit could not be removed: %s", id,
                                ka_strerror(rc));
        return;
    }
    apply_and_answer(ctx, next, res);
}

void ka_admin_handle_overrides_delete(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                      const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *file, *next = NULL;
    char err[512] = "";
    int rc;

    (void)req, (void)arg;
    file = ctx->ops->file_policy_get ? ctx->ops->file_policy_get(ctx->ops->ctx) : NULL;
    if (file == NULL) {
        ka_admin_response_error(res, 409,
                                "there is no policy file to return to: start kadmit with --policy "
                                "FILE");
        return;
    }
    /* A copy of the file's policy under a new version. */
    rc = ka_policy_with_default_limit(file, ka_policy_default_broker_limit(file),
                                      ctx->ops->policy_next_version(ctx->ops->ctx), &next, err,
                                      sizeof(err));
    ka_policy_unref(file);
    if (rc < 0) {
        ka_admin_response_error(res, 500, "%s", err[0] ? err : ka_strerror(rc));
        return;
    }
    if (ctx->ops->policy_submit != NULL)
        submit_and_defer(ctx, next, true, res);
    else
        apply_and_answer(ctx, next, res);
}

/* One broker's counts against its limit; reserved replicas count as hosted. */
static json_t *broker_json(const ka_policy_t *policy, const ka_cluster_broker_t *b,
                           const ka_reservations_t *ledger)
{
    int64_t reserved = ledger ? ka_reservations_broker_replicas(ledger, b->id) : 0;
    int32_t limit = ka_policy_broker_limit(policy, b->id);
    bool has_override = limit != ka_policy_default_broker_limit(policy);

    /* An override equal to the default is still an override: look it up. */
    for (size_t i = 0; i < ka_policy_override_count(policy); i++) {
        int32_t id, value;

        ka_policy_override_at(policy, i, &id, &value);
        if (id == b->id)
            has_override = true;
    }
    return json_pack("{s:i,s:s?,s:b,s:b,s:I,s:I,s:i,s:s,s:b,s:I}", "id", (int)b->id, "rack",
                     b->rack, "listed", b->listed, "fenced", b->fenced, "partitions",
                     (json_int_t)b->replicas, "reserved", (json_int_t)reserved, "limit", (int)limit,
                     "limit_source", has_override ? "override" : "default", "unlimited",
                     limit == KA_POLICY_UNLIMITED, "headroom",
                     (json_int_t)((int64_t)limit - b->replicas - reserved));
}

void ka_admin_handle_brokers_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res)
{
    const ka_admin_ops_t *ops = ctx->ops;
    ka_cluster_t *view = ops->cluster_get ? ops->cluster_get(ops->ctx) : NULL;
    const ka_reservations_t *ledger =
        ops->reservations_get ? ops->reservations_get(ops->ctx) : NULL;
    ka_policy_t *policy;
    json_t *brokers, *cluster;

    (void)req, (void)arg;
    if (view == NULL) {
        ka_admin_response_error(res, 503,
                                "no cluster view yet: kadmit has not completed its first metadata "
                                "refresh from the broker");
        return;
    }
    policy = ops->policy_get(ops->ctx);
    brokers = json_array();
    for (size_t i = 0; brokers != NULL && i < ka_cluster_broker_count(view); i++) {
        if (json_array_append_new(brokers,
                                  broker_json(policy, ka_cluster_broker_at(view, i), ledger)) < 0) {
            json_decref(brokers);
            brokers = NULL;
        }
    }
    cluster = json_pack("{s:I,s:I,s:i,s:I}", "partitions",
                        (json_int_t)ka_cluster_total_partitions(view), "reserved_partitions",
                        (json_int_t)(ledger ? ka_reservations_partitions(ledger) : 0),
                        "max.partitions", (int)ka_policy_max_partitions(policy), "topics",
                        (json_int_t)ka_cluster_topic_count(view));
    if (cluster != NULL && ops->clock_ms != NULL)
        json_object_set_new(
            cluster, "view_age_ms",
            json_integer((json_int_t)(ops->clock_ms(ops->ctx) - ka_cluster_taken_at_ms(view))));
    ka_admin_response_json(res, 200,
                           json_pack("{s:I,s:o,s:o,s:o}", "policy_version",
                                     (json_int_t)ka_policy_version(policy), "cluster", cluster,
                                     "brokers", brokers, "budgets",
                                     ka_admin_budgets_json(ops, policy, view)));
    ka_policy_unref(policy);
    ka_cluster_unref(view);
}
