/*
 * ka_policy_store.h: where the policy in force comes from and goes to.
 *
 * The store owns the policy file (--policy), the optional state file
 * (--state-file) and the version counter. It reloads the file on request
 * (the watcher and SIGHUP call it) and persists changes made over the admin
 * API. It does file I/O but no libuv, so it is unit-tested on a temp dir.
 *
 * How API changes and the file combine (docs/admin-api.md, "Persistence"):
 * - file mode (no --state-file, the policy file is writable): an API change
 *   is written into the policy file itself, atomically. The file is the one
 *   truth; a later edit of the file governs as it stands.
 * - state mode (--state-file given): the policy file is never written. The
 *   state file holds the API changes as a JSON merge patch over the file's
 *   policy ("overrides"). The overrides are layered over every reload of
 *   the file, so they stay in force until cleared over the API.
 * - none (no --state-file and a read-only policy file, such as a ConfigMap
 *   mount): API changes are layered over reloads as in state mode, but only
 *   until the next restart, and the answer says so ("persisted": false).
 * - cluster (the ledger on, ka_policy_store_use_cluster): neither file is
 *   written. The overrides are the cluster's layer, read from the limits
 *   topic (ka_limits.h) and set with ka_policy_store_set_layer; an API
 *   change becomes a new layer (ka_policy_store_layer_after) that is
 *   written to the topic and applied when it is read back, like everyone's.
 * In every mode an API change that could not be written stays layered over
 * reloads of the file until kadmit restarts. DELETE /v1/policy/overrides
 * returns to the file's own policy.
 *
 * A reload skips files whose bytes hash to what was last loaded or written
 * (kadmit's own writes are therefore never taken for a foreign change), and
 * a file that fails to read, parse or validate leaves the policy in force.
 */
#ifndef KA_POLICY_STORE_H
#define KA_POLICY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_policy.h"

enum ka_reload_result {
    KA_RELOAD_OK = 0,    /* a new policy is in force */
    KA_RELOAD_UNCHANGED, /* same bytes, or the same settings: nothing to do */
    KA_RELOAD_INVALID,   /* the file does not parse or validate: the old policy stays */
    KA_RELOAD_MISSING,   /* the file cannot be read (deleted, permissions): the old policy stays */
    KA_RELOAD_RESULT_COUNT
};

enum ka_persist_mode { KA_PERSIST_NONE = 0, KA_PERSIST_FILE, KA_PERSIST_STATE, KA_PERSIST_CLUSTER };

const char *ka_reload_result_name(enum ka_reload_result r);
const char *ka_persist_mode_name(enum ka_persist_mode m);

typedef struct ka_policy_store {
    char path[4096];       /* --policy as given (may be a symbolic link) */
    char state_path[4096]; /* --state-file, or "" */
    enum ka_persist_mode mode;
    char not_persisted_why[512]; /* mode NONE: why changes are not saved */
    char cluster_where[300];     /* mode CLUSTER: "kafka topic <name>" */
    uint64_t last_version;       /* highest version handed out */
    uint64_t file_hash;          /* FNV-1a of the file bytes last loaded or written */
    ka_policy_t *file_policy;    /* the file's own policy (state mode: the base) */
    char *overrides;             /* API changes not in the file (merge patch), or NULL */
    /* The last reload, for the API and /metrics. */
    bool attempted;
    bool last_ok;
    int64_t last_at_unix_ms;
    char last_error[512];
    uint64_t reloads[KA_RELOAD_RESULT_COUNT];
} ka_policy_store_t;

/*
 * Loads the policy file (and, in state mode, the state file's overrides on
 * top) and decides the persistence mode. *initial gets the policy to put in
 * force, one reference, version 1. Returns 0, or a negative ka_err with a
 * sentence naming the file and the field.
 */
int ka_policy_store_open(ka_policy_store_t *store, const char *path, const char *state_path,
                         ka_policy_t **initial, char *err, size_t errlen);

uint64_t ka_policy_store_next_version(ka_policy_store_t *store);

/*
 * Reads the file again. KA_RELOAD_OK sets *next (one reference, a new
 * version) to the policy to put in force, with the overrides layered on in
 * state mode; every other result leaves *next NULL and the policy in force
 * as it is, with the reason in err (KA_RELOAD_INVALID, KA_RELOAD_MISSING).
 * `current` is the policy in force, to tell an equivalent file apart.
 */
enum ka_reload_result ka_policy_store_reload(ka_policy_store_t *store, const ka_policy_t *current,
                                             ka_policy_t **next, char *err, size_t errlen);

/*
 * Persists `next`, a policy put in force over the API. Sets *persisted, and
 * writes to `where` the file it went to, or why it was not saved. Returns 0
 * (persisting never stops the change from taking effect).
 */
int ka_policy_store_persist(ka_policy_store_t *store, const ka_policy_t *next, bool *persisted,
                            char *where, size_t len);

/*
 * Switches to cluster mode: API changes go to the limits topic `topic`, and
 * the overrides are the layer read from it, empty until the first record.
 */
void ka_policy_store_use_cluster(ka_policy_store_t *store, const char *topic);

/*
 * Puts `layer` (a merge patch; NULL or "{}" for none) over the file's
 * policy. On success the store keeps the layer for later reloads and *next
 * gets the policy to put in force (one reference, a new version), or NULL
 * when it equals `current`. A layer that does not give a valid policy over
 * this file returns KA_EINVALID with the reason in err and changes nothing.
 */
int ka_policy_store_set_layer(ka_policy_store_t *store, const char *layer,
                              const ka_policy_t *current, ka_policy_t **next, char *err,
                              size_t errlen);

/*
 * The layer that an API change from `current` to `next` makes: the store's
 * layer with the change's difference on top. *layer gets JSON to free().
 * Returns 0 or KA_ENOMEM.
 */
int ka_policy_store_layer_after(const ka_policy_store_t *store, const ka_policy_t *current,
                                const ka_policy_t *next, char **layer);

/* The file's own policy, without the API's overrides (borrowed). */
const ka_policy_t *ka_policy_store_file_policy(const ka_policy_store_t *store);

/* FNV-1a 64 of the bytes, shown as 16 hex digits for the file in force. */
uint64_t ka_policy_store_hash(const void *data, size_t len);

void ka_policy_store_close(ka_policy_store_t *store);

#endif
