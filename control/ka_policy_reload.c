/*
 * ka_policy_reload.c: see ka_policy_reload.h.
 */
#include "ka_policy_reload.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ka_admission_hook.h"
#include "ka_log.h"

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
    if (cfg->policy_path[0] == '\0')
        return 0;
    int rc =
        ka_policy_store_open(&r->store, cfg->policy_path, cfg->state_file, policy, err, errlen);
    r->open = rc == 0;
    return rc;
}

void ka_policy_reload_start(ka_policy_reload_t *r, ka_server_t *srv, const ka_config_t *cfg)
{
    char err[512] = "";

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
    const char *to = store->mode == KA_PERSIST_FILE    ? store->path
                     : store->mode == KA_PERSIST_STATE ? store->state_path
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
}

void ka_policy_reload_free(ka_policy_reload_t *r)
{
    if (r->open)
        ka_policy_store_close(&r->store);
    r->open = 0;
}
