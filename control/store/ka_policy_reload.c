/*
 * ka_policy_reload.c: see ka_policy_reload.h.
 */
#include "ka_policy_reload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission_hook.h"
#include "ka_log.h"
#include "ka_rdk_side.h"

static void reload_cb(void *arg, const char *trigger)
{
    ka_policy_reload_t *r = arg;
    ka_admission_t *a = ka_server_admission(r->srv);
    ka_policy_t *current = ka_admission_policy(a), *next = NULL;
    char err[768] = "", hash[17];
    enum ka_reload_result result =
        ka_policy_store_reload(&r->store, current, &next, err, sizeof(err));

    snprintf(hash, sizeof(hash), "%016" PRIx64, r->store.file_hash);
    switch (result) {
    case KA_RELOAD_OK:
        ka_admission_set_policy(a, next);
        ka_log(KA_LOG_INFO, "policy reloaded", KA_KS("trigger", trigger),
               KA_KS("file", r->store.path), KA_KI("version", ka_policy_version(next)),
               KA_KS("hash", hash),
               KA_KI("max.broker.partitions", ka_policy_default_broker_limit(next)),
               KA_KI("broker_overrides", ka_policy_override_count(next)),
               KA_KS("api_overrides", r->store.overrides ? "layered" : "none"));
        break;
    case KA_RELOAD_UNCHANGED:
        ka_log(KA_LOG_DEBUG, "policy file unchanged", KA_KS("trigger", trigger),
               KA_KS("file", r->store.path), KA_KI("version", ka_policy_version(current)));
        break;
    default:
        ka_log(KA_LOG_WARN, "policy reload failed; the previous policy stays in force",
               KA_KS("trigger", trigger), KA_KS("result", ka_reload_result_name(result)),
               KA_KS("error", err), KA_KI("version", ka_policy_version(current)));
        break;
    }
}

int ka_policy_reload_open(ka_policy_reload_t *r, const ka_config_t *cfg, ka_policy_t **policy,
                          char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    *policy = NULL;
    r->layer_offset = -1;
    if (cfg->policy_path[0] == '\0')
        return 0;
    /* With the ledger on the cluster's topic holds the API's changes, never
     * a file of this sidecar's. */
    r->cluster = cfg->ledger > 0;
    int rc = ka_policy_store_open(&r->store, cfg->policy_path, r->cluster ? NULL : cfg->state_file,
                                  policy, err, errlen);
    r->open = rc == 0;
    if (r->open && r->cluster) {
        snprintf(r->topic, sizeof(r->topic), "%s", cfg->limits_topic);
        ka_policy_store_use_cluster(&r->store, r->topic);
    }
    return rc;
}

/* A record of the limits topic: its layer goes over the file, for every sidecar alike. */
static void limits_record_cb(void *arg, const ka_limits_record_t *rec, int64_t offset)
{
    ka_policy_reload_t *r = arg;
    ka_admission_t *a = ka_server_admission(r->srv);
    ka_policy_t *next = NULL;
    char err[512] = "";

    if (ka_policy_store_set_layer(&r->store, rec->overrides, ka_admission_policy(a), &next, err,
                                  sizeof(err)) < 0) {
        snprintf(r->cluster_error, sizeof(r->cluster_error),
                 "the record at offset %" PRId64
                 " does not apply over %.200s: %.400s; the layer before "
                 "it stays in force",
                 offset, r->store.path, err);
        ka_log(KA_LOG_WARN, "cluster limits record refused", KA_KS("topic", r->topic),
               KA_KI("offset", offset), KA_KS("error", err));
        return;
    }
    r->cluster_error[0] = '\0';
    r->layer_offset = offset;
    snprintf(r->layer_writer, sizeof(r->layer_writer), "%s", rec->written_by);
    r->layer_written_at_ms = rec->written_at_ms;
    if (next == NULL)
        return;
    ka_admission_set_policy(a, next);
    ka_log(KA_LOG_INFO, "cluster limits applied", KA_KS("topic", r->topic), KA_KI("offset", offset),
           KA_KS("written_by", rec->written_by), KA_KI("version", ka_policy_version(next)),
           KA_KI("max.broker.partitions", ka_policy_default_broker_limit(next)),
           KA_KI("broker_overrides", ka_policy_override_count(next)),
           KA_KS("layer", rec->overrides ? rec->overrides : "{}"));
}

static void limits_problem_cb(void *arg, const char *why)
{
    ka_policy_reload_t *r = arg;

    snprintf(r->cluster_error, sizeof(r->cluster_error), "%s", why);
    ka_log(KA_LOG_WARN, "cluster limits topic", KA_KS("topic", r->topic), KA_KS("problem", why));
}

static void limits_loaded_cb(void *arg)
{
    ka_policy_reload_t *r = arg;

    r->cluster_error[0] = '\0'; /* earlier retries (creating the topic) are over */
    ka_log(KA_LOG_INFO, "cluster limits read", KA_KS("topic", r->topic),
           KA_KI("offset", r->layer_offset),
           KA_KS("layer", r->store.overrides ? r->store.overrides : "{}"));
}

static int limits_broker_count_cb(void *arg)
{
    ka_policy_reload_t *r = arg;
    ka_cluster_t *view = ka_admission_view(ka_server_admission(r->srv));

    return view != NULL ? (int)ka_cluster_broker_count(view) : 0;
}

static bool limits_topic_exists_cb(void *arg, const char *topic)
{
    ka_policy_reload_t *r = arg;
    ka_cluster_t *view = ka_admission_view(ka_server_admission(r->srv));
    ka_slice_t name = {(const uint8_t *)topic, (int32_t)strlen(topic)};

    return view != NULL && ka_cluster_find_topic(view, name) != NULL;
}

/* Starts the limits topic's clients against the ledger's broker (kadmit's own by default). */
static void limits_start(ka_policy_reload_t *r, const ka_config_t *cfg)
{
    char bootstrap[KA_RDK_BOOTSTRAP_MAX], err[512] = "";
    enum ka_rdk_bootstrap_source source;
    ka_limits_handlers_t h = {.arg = r,
                              .record = limits_record_cb,
                              .problem = limits_problem_cb,
                              .loaded = limits_loaded_cb,
                              .broker_count = limits_broker_count_cb,
                              .topic_exists = limits_topic_exists_cb};
    ka_rdk_security_t security;
    ka_limits_settings_t settings = {.bootstrap = bootstrap,
                                     .topic = r->topic,
                                     .writer = cfg->sidecar_id,
                                     .security = &security,
                                     .metrics = ka_server_metrics(r->srv)};

    /* Like the ledger client: the sidecars' client side (ka_rdk_side.h). */
    if (ka_rdk_side_from(&security, bootstrap, sizeof(bootstrap), &source, cfg,
                         ka_server_upstream_security(r->srv), err, sizeof(err)) < 0 ||
        ka_limits_start(ka_server_loop(r->srv), &settings, &h, &r->limits, err, sizeof(err)) < 0) {
        snprintf(r->cluster_error, sizeof(r->cluster_error), "%s", err);
        ka_log(KA_LOG_ERROR, "the cluster limits topic could not start; API changes are refused",
               KA_KS("topic", r->topic), KA_KS("error", err));
    }
}

void ka_policy_reload_start(ka_policy_reload_t *r, ka_server_t *srv, const ka_config_t *cfg)
{
    char err[512] = "";

    /* Decisions wait for the limits topic only when there is one. */
    ka_server_metrics(srv)->limits_loaded = !(r->open && r->cluster);
    if (!r->open)
        return;
    r->srv = srv;
    r->watching = 1;
    if (ka_policy_watch_start(&r->watch, ka_server_loop(srv), cfg->policy_path,
                              !cfg->policy_watch_off, KA_POLICY_WATCH_DEBOUNCE_MS, reload_cb, r,
                              err, sizeof(err)) < 0)
        ka_log(KA_LOG_WARN, "the policy file is reloaded on SIGHUP only", KA_KS("why", err));
    ka_log(KA_LOG_INFO, "policy file", KA_KS("file", cfg->policy_path),
           KA_KS("watch", cfg->policy_watch_off ? "off (SIGHUP only)" : "directory events"),
           KA_KS("api_changes_persist_to", ka_persist_mode_name(r->store.mode)),
           KA_KS("state_file", cfg->state_file),
           KA_KS("api_overrides", r->store.overrides ? "layered" : "none"));
    if (r->store.mode == KA_PERSIST_NONE)
        ka_log(KA_LOG_WARN, "admin API changes will not survive a restart",
               KA_KS("why", r->store.not_persisted_why));
    if (r->cluster && cfg->state_file[0] != '\0')
        ka_log(KA_LOG_WARN,
               "--state-file is not used with --ledger on: the limits topic holds "
               "the admin API's changes",
               KA_KS("state_file", cfg->state_file), KA_KS("topic", r->topic));
    if (r->cluster)
        limits_start(r, cfg);
}

typedef struct submission {
    ka_policy_reload_t *r;
    ka_admin_reply_t *reply;
} submission_t;

static void written_cb(void *arg, int rc, int64_t offset, const char *why)
{
    submission_t *s = arg;
    ka_policy_reload_t *r = s->r;
    char where[300];

    snprintf(where, sizeof(where), "kafka topic %s", r->topic);
    if (rc == 0) {
        ka_log(KA_LOG_INFO, "policy changed over the admin API", KA_KS("to", where),
               KA_KI("offset", offset), KA_KS("note", why));
        ka_admin_reply_finish(s->reply, 0, ka_admission_policy(ka_server_admission(r->srv)), where,
                              why[0] ? why : NULL, NULL);
    } else {
        ka_log(KA_LOG_WARN, "admin API change not written; nothing changed", KA_KS("to", where),
               KA_KS("why", why));
        ka_admin_reply_finish(s->reply, rc, NULL, NULL, NULL, why);
    }
    free(s);
}

int ka_policy_reload_submit(ka_policy_reload_t *r, ka_policy_t *next, bool reset,
                            ka_admin_reply_t *reply, char *err, size_t errlen)
{
    submission_t *s;
    char *layer = NULL;
    int rc;

    if (r->limits == NULL) {
        snprintf(err, errlen, "the limits topic %s is not running: %s", r->topic,
                 r->cluster_error[0] ? r->cluster_error : "it did not start");
        return KA_EINVALID;
    }
    rc = reset ? 0
               : ka_policy_store_layer_after(
                     &r->store, ka_admission_policy(ka_server_admission(r->srv)), next, &layer);
    s = rc == 0 ? malloc(sizeof(*s)) : NULL;
    if (s == NULL) {
        free(layer);
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    s->r = r;
    s->reply = reply;
    rc = ka_limits_write(r->limits, layer ? layer : "{}", written_cb, s, err, errlen);
    free(layer);
    if (rc < 0)
        free(s);
    return rc;
}

void ka_policy_reload_layers(const ka_policy_reload_t *r, ka_admin_layers_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!r->open)
        return;
    out->file_path = r->store.path;
    out->file_version = ka_policy_version(r->store.file_policy);
    out->cluster = r->cluster;
    out->topic = r->topic;
    out->loading = ka_policy_reload_loading(r);
    out->offset = r->layer_offset;
    out->written_by = r->layer_writer;
    out->written_at_ms = r->layer_written_at_ms;
    out->overrides = r->store.overrides;
    out->error = r->cluster_error;
}

bool ka_policy_reload_loading(const ka_policy_reload_t *r)
{
    return r->cluster && (r->limits == NULL || ka_limits_loading(r->limits));
}

void ka_policy_reload_status(const ka_policy_reload_t *r, ka_admin_reload_status_t *out)
{
    const ka_policy_store_t *store = &r->store;

    memset(out, 0, sizeof(*out));
    if (!r->open)
        return;
    out->attempted = store->attempted;
    out->ok = store->last_ok;
    out->at_unix_ms = store->last_at_unix_ms;
    out->reloads_ok = store->reloads[KA_RELOAD_OK];
    out->reloads_unchanged = store->reloads[KA_RELOAD_UNCHANGED];
    out->reloads_invalid = store->reloads[KA_RELOAD_INVALID];
    out->reloads_missing = store->reloads[KA_RELOAD_MISSING];
    out->failures = out->reloads_invalid + out->reloads_missing;
    snprintf(out->error, sizeof(out->error), "%s", store->last_error);
    snprintf(out->file_hash, sizeof(out->file_hash), "%016" PRIx64, store->file_hash);
    out->persistence = ka_persist_mode_name(store->mode);
    const char *to = store->mode == KA_PERSIST_FILE      ? store->path
                     : store->mode == KA_PERSIST_STATE   ? store->state_path
                     : store->mode == KA_PERSIST_CLUSTER ? store->cluster_where
                                                         : store->not_persisted_why;
    size_t n = strnlen(to, sizeof(out->persist_path) - 1);
    memcpy(out->persist_path, to, n);
    out->persist_path[n] = '\0';
    out->overrides = store->overrides != NULL;
}

void ka_policy_reload_close(ka_policy_reload_t *r)
{
    if (r->watching)
        ka_policy_watch_close(&r->watch);
    r->watching = 0;
    ka_limits_close(r->limits);
    r->limits = NULL;
}

void ka_policy_reload_free(ka_policy_reload_t *r)
{
    if (r->open)
        ka_policy_store_close(&r->store);
    r->open = 0;
}
