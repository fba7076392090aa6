/*
 * ka_policy_store.c: see ka_policy_store.h.
 *
 * The state file is a small JSON document:
 *   {"kadmit.state": 1, "policy_file": "<--policy>", "overrides": {<merge patch>}}
 * Only "overrides" is read back; the rest is for the operator who opens it.
 */
#include "ka_policy_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ka_atomic_file.h"
#include "ka_error.h"
#include "ka_limits_record.h"
#include "ka_policy_file.h"
#include "ka_policy_patch.h"

#define STATE_FORMAT 1

const char *ka_reload_result_name(enum ka_reload_result r)
{
    static const char *names[] = {"ok", "unchanged", "invalid", "missing"};
    return (unsigned)r < KA_RELOAD_RESULT_COUNT ? names[r] : "?";
}

const char *ka_persist_mode_name(enum ka_persist_mode m)
{
    static const char *names[] = {"none", "policy-file", "state-file", "kafka-topic"};
    return (unsigned)m <= KA_PERSIST_CLUSTER ? names[m] : "?";
}

uint64_t ka_policy_store_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t ka_policy_store_next_version(ka_policy_store_t *store)
{
    return ++store->last_version;
}

/* Reads the state file's overrides into store->overrides; a missing file is no overrides. */
static int load_state(ka_policy_store_t *store, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc, *ov;

    doc = json_load_file(store->state_path, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL) {
        FILE *f = fopen(store->state_path, "rb");
        if (f == NULL && errno == ENOENT)
            return 0;
        if (f != NULL)
            fclose(f);
        snprintf(err, errlen, "--state-file %s: not valid JSON (line %d): %s", store->state_path,
                 jerr.line, jerr.text);
        return KA_EINVALID;
    }
    ov = json_object_get(doc, "overrides");
    if (!json_is_object(json_object_get(doc, "overrides")) ||
        json_integer_value(json_object_get(doc, "kadmit.state")) != STATE_FORMAT) {
        json_decref(doc);
        snprintf(err, errlen,
                 "--state-file %s: expected {\"kadmit.state\": 1, \"overrides\": {...}}",
                 store->state_path);
        return KA_EINVALID;
    }
    store->overrides =
        json_object_size(ov) > 0 ? json_dumps(ov, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    return 0;
}

/* The policy to put in force: the file's, with the overrides layered on. */
static int layered(ka_policy_store_t *store, const ka_policy_t *file_policy, ka_policy_t **out,
                   char *err, size_t errlen)
{
    char why[512] = "";
    int rc;

    if (store->overrides == NULL) {
        *out = ka_policy_ref((ka_policy_t *)file_policy);
        return 0;
    }
    rc = ka_policy_apply_patch(file_policy, store->overrides, strlen(store->overrides),
                               ka_policy_version(file_policy), out, why, sizeof(why));
    if (rc < 0)
        snprintf(err, errlen, "%s with the admin API's overrides%s%s layered on: %s", store->path,
                 store->mode == KA_PERSIST_STATE ? " from " : "", store->state_path, why);
    return rc;
}

int ka_policy_store_open(ka_policy_store_t *store, const char *path, const char *state_path,
                         ka_policy_t **initial, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len;
    int rc;

    memset(store, 0, sizeof(*store));
    *initial = NULL;
    snprintf(store->path, sizeof(store->path), "%s", path);
    snprintf(store->state_path, sizeof(store->state_path), "%s", state_path ? state_path : "");
    rc = ka_policy_file_read(path, &buf, &len, err, errlen);
    if (rc < 0)
        return rc;
    store->file_hash = ka_policy_store_hash(buf, len);
    rc = ka_policy_file_parse(path, buf, len, ka_policy_store_next_version(store),
                              &store->file_policy, err, errlen);
    free(buf);
    if (rc < 0)
        return rc;
    if (store->state_path[0] != '\0') {
        store->mode = KA_PERSIST_STATE;
        rc = load_state(store, err, errlen);
        if (rc == 0)
            rc = layered(store, store->file_policy, initial, err, errlen);
        if (rc < 0)
            ka_policy_store_close(store);
        return rc;
    }
    if (ka_atomic_writable(path)) {
        store->mode = KA_PERSIST_FILE;
    } else {
        store->mode = KA_PERSIST_NONE;
        snprintf(store->not_persisted_why, sizeof(store->not_persisted_why),
                 "the policy file %s is read-only and no --state-file is set", path);
    }
    *initial = ka_policy_ref(store->file_policy);
    return 0;
}

static void record(ka_policy_store_t *store, enum ka_reload_result r, const char *error)
{
    store->reloads[r]++;
    if (r == KA_RELOAD_UNCHANGED && store->attempted && store->last_ok)
        return; /* keep the time of the last reload that changed something */
    store->attempted = true;
    store->last_ok = r == KA_RELOAD_OK || r == KA_RELOAD_UNCHANGED;
    store->last_at_unix_ms = wall_ms();
    snprintf(store->last_error, sizeof(store->last_error), "%s", store->last_ok ? "" : error);
}

enum ka_reload_result ka_policy_store_reload(ka_policy_store_t *store, const ka_policy_t *current,
                                             ka_policy_t **next, char *err, size_t errlen)
{
    ka_policy_t *file_policy = NULL, *out = NULL;
    char *buf = NULL;
    size_t len;
    uint64_t hash;
    int rc;

    *next = NULL;
    err[0] = '\0';
    rc = ka_policy_file_read(store->path, &buf, &len, err, errlen);
    if (rc < 0) {
        record(store, KA_RELOAD_MISSING, err);
        return KA_RELOAD_MISSING;
    }
    hash = ka_policy_store_hash(buf, len);
    if (hash == store->file_hash && store->last_ok) {
        free(buf);
        record(store, KA_RELOAD_UNCHANGED, "");
        return KA_RELOAD_UNCHANGED;
    }
    rc = ka_policy_file_parse(store->path, buf, len, store->last_version + 1, &file_policy, err,
                              errlen);
    free(buf);
    if (rc == 0)
        rc = layered(store, file_policy, &out, err, errlen);
    if (rc < 0) {
        ka_policy_unref(file_policy);
        record(store, KA_RELOAD_INVALID, err);
        return KA_RELOAD_INVALID;
    }
    store->file_hash = hash;
    ka_policy_unref(store->file_policy);
    store->file_policy = file_policy;
    if (current != NULL && ka_policy_equal(out, current)) {
        ka_policy_unref(out);
        record(store, KA_RELOAD_UNCHANGED, "");
        return KA_RELOAD_UNCHANGED;
    }
    store->last_version++; /* the version parse was given */
    record(store, KA_RELOAD_OK, "");
    *next = out;
    return KA_RELOAD_OK;
}

static int write_state(ka_policy_store_t *store, char *where, size_t len)
{
    json_t *ov = store->overrides ? json_loads(store->overrides, 0, NULL) : json_object();
    json_t *doc = json_pack("{s:i,s:s,s:o}", "kadmit.state", STATE_FORMAT, "policy_file",
                            store->path, "overrides", ov);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    int rc;

    json_decref(doc);
    if (text == NULL) {
        snprintf(where, len, "out of memory");
        return KA_ENOMEM;
    }
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves room only for the NUL: write n+1 bytes with it */
    rc = ka_atomic_write(store->state_path, text, n + 1, where, len);
    free(text);
    if (rc == 0)
        snprintf(where, len, "%s", store->state_path);
    return rc;
}

/* Remembers next's difference from the file as the overrides; 0 or KA_ENOMEM. */
static int set_overrides(ka_policy_store_t *store, const ka_policy_t *next)
{
    char *patch = ka_policy_diff(store->file_policy, next);

    if (patch == NULL)
        return KA_ENOMEM;
    free(store->overrides);
    store->overrides = patch;
    if (ka_policy_patch_is_empty(patch)) {
        free(patch);
        store->overrides = NULL;
    }
    return 0;
}

/* File mode: the policy file becomes `next`, byte for byte its canonical form. */
static int write_policy_file(ka_policy_store_t *store, const ka_policy_t *next, char *where,
                             size_t len)
{
    char *text = ka_policy_serialize(next);
    size_t n = text ? strlen(text) : 0;
    char *withnl = text ? realloc(text, n + 2) : NULL;
    int rc;

    if (withnl == NULL) {
        free(text);
        snprintf(where, len, "out of memory");
        return KA_ENOMEM;
    }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    rc = ka_atomic_write(store->path, withnl, n + 1, where, len);
    if (rc == 0) {
        /* Remember the bytes, so the watcher's event for this write is "unchanged". */
        store->file_hash = ka_policy_store_hash(withnl, n + 1);
        ka_policy_unref(store->file_policy);
        store->file_policy = ka_policy_ref((ka_policy_t *)next);
        free(store->overrides);
        store->overrides = NULL;
        snprintf(where, len, "%s", store->path);
    }
    free(withnl);
    return rc;
}

int ka_policy_store_persist(ka_policy_store_t *store, const ka_policy_t *next, bool *persisted,
                            char *where, size_t len)
{
    *persisted = false;
    if (store->mode == KA_PERSIST_CLUSTER) {
        /* The layer is the topic's alone: it changes when a record is read. */
        snprintf(where, len, "%s is written through the limits topic only", store->cluster_where);
        return 0;
    }
    /* Whatever the mode, the change is layered over later reloads of the
     * file until it is written into the file or cleared. */
    if (set_overrides(store, next) < 0) {
        snprintf(where, len, "out of memory");
        return 0;
    }
    switch (store->mode) {
    case KA_PERSIST_FILE:
        *persisted = write_policy_file(store, next, where, len) == 0;
        break;
    case KA_PERSIST_STATE:
        *persisted = write_state(store, where, len) == 0;
        break;
    default:
        snprintf(where, len, "%s", store->not_persisted_why);
        break;
    }
    return 0;
}

void ka_policy_store_use_cluster(ka_policy_store_t *store, const char *topic)
{
    store->mode = KA_PERSIST_CLUSTER;
    snprintf(store->cluster_where, sizeof(store->cluster_where), "kafka topic %s", topic);
    free(store->overrides);
    store->overrides = NULL;
}

int ka_policy_store_set_layer(ka_policy_store_t *store, const char *layer,
                              const ka_policy_t *current, ka_policy_t **next, char *err,
                              size_t errlen)
{
    ka_policy_t *out = NULL;
    char *copy = NULL;
    int rc;

    *next = NULL;
    if (ka_limits_layer_is_empty(layer)) {
        out = ka_policy_ref(store->file_policy);
    } else {
        copy = strdup(layer);
        if (copy == NULL)
            return KA_ENOMEM;
        rc = ka_policy_apply_patch(store->file_policy, layer, strlen(layer),
                                   store->last_version + 1, &out, err, errlen);
        if (rc < 0) {
            free(copy);
            return rc;
        }
    }
    free(store->overrides);
    store->overrides = copy;
    if (current != NULL && ka_policy_equal(out, current)) {
        ka_policy_unref(out);
        return 0;
    }
    if (out == store->file_policy) {
        /* The file's own policy again: a copy under a new version. */
        ka_policy_unref(out);
        rc = ka_policy_with_default_limit(store->file_policy,
                                          ka_policy_default_broker_limit(store->file_policy),
                                          store->last_version + 1, &out, err, errlen);
        if (rc < 0)
            return rc;
    }
    store->last_version++;
    *next = out;
    return 0;
}

int ka_policy_store_layer_after(const ka_policy_store_t *store, const ka_policy_t *current,
                                const ka_policy_t *next, char **layer)
{
    char *change = ka_policy_diff(current, next);
    int rc;

    *layer = NULL;
    if (change == NULL)
        return KA_ENOMEM;
    rc = ka_limits_layer_compose(store->overrides, change, layer);
    free(change);
    return rc;
}

const ka_policy_t *ka_policy_store_file_policy(const ka_policy_store_t *store)
{
    return store->file_policy;
}

void ka_policy_store_close(ka_policy_store_t *store)
{
    ka_policy_unref(store->file_policy);
    store->file_policy = NULL;
    free(store->overrides);
    store->overrides = NULL;
}
