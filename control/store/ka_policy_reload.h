/*
 * ka_policy_reload.h: the binary's glue between the policy file, its
 * watcher, the admission hook and the admin API (with --policy).
 *
 * ka_policy_store.c decides what a reload or an API change means;
 * ka_policy_watch.c says when to reload; this file puts the result in force
 * (ka_admission_set_policy), logs it, and fills the admin API's view of it.
 *
 * With the ledger on, the API's changes are the cluster's: this file runs
 * the limits topic (ka_limits.h), puts every record it reads over the file
 * (ka_policy_store_set_layer), and turns an admin mutation into a record
 * whose read-back answers the caller (ka_policy_reload_submit).
 */
#ifndef KA_POLICY_RELOAD_H
#define KA_POLICY_RELOAD_H

#include "ka_admin.h"
#include "ka_config.h"
#include "ka_limits.h"
#include "ka_policy_store.h"
#include "ka_policy_watch.h"
#include "ka_proxy.h"

typedef struct ka_policy_reload {
    ka_server_t *srv;
    ka_policy_store_t store;
    ka_policy_watch_t watch;
    int open;     /* store holds a file */
    int watching; /* watch's handles exist */
    /* The cluster's limits topic (ledger on), or NULL. */
    ka_limits_t *limits;
    bool cluster;         /* ledger on: the layer is the topic's */
    char topic[250];      /* --limits-topic */
    int64_t layer_offset; /* offset of the record whose layer is in force, or -1 */
    char layer_writer[KA_LIMITS_WRITER_MAX];
    int64_t layer_written_at_ms;
    char cluster_error[768]; /* why the last record or the topic failed, or "" */
} ka_policy_reload_t;

/* Loads --policy (and --state-file); *policy gets the policy to start with. */
int ka_policy_reload_open(ka_policy_reload_t *r, const ka_config_t *cfg, ka_policy_t **policy,
                          char *err, size_t errlen);
/* Once admission runs: starts the watcher and SIGHUP, and logs the setup. */
void ka_policy_reload_start(ka_policy_reload_t *r, ka_server_t *srv, const ka_config_t *cfg);
/* The last reload and where API changes go, for GET /v1/policy and /metrics. */
void ka_policy_reload_status(const ka_policy_reload_t *r, ka_admin_reload_status_t *out);
/*
 * An admin API mutation with the ledger on: writes the layer that turns the
 * policy in force into `next` (reset: no layer) to the limits topic, and
 * finishes `reply` once it was read back (or failed). Returns 0, or a
 * negative ka_err with a sentence in err (the reply is then not kept).
 */
int ka_policy_reload_submit(ka_policy_reload_t *r, ka_policy_t *next, bool reset,
                            ka_admin_reply_t *reply, char *err, size_t errlen);
/* The layers for GET /v1/policy (strings borrowed from r). */
void ka_policy_reload_layers(const ka_policy_reload_t *r, ka_admin_layers_t *out);
/* True while the limits topic has not been read to its end since start. */
bool ka_policy_reload_loading(const ka_policy_reload_t *r);
/* Closes the watcher's handles (run the loop afterwards). */
void ka_policy_reload_close(ka_policy_reload_t *r);
/* Frees the store, after the loop has run. */
void ka_policy_reload_free(ka_policy_reload_t *r);

#endif
