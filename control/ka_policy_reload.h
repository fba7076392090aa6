/*
 * ka_policy_reload.h: the binary's glue between the policy file, its
 * watcher, the admission hook and the admin API (with --policy).
 *
 * ka_policy_store.c decides what a reload or an API change means;
 * ka_policy_watch.c says when to reload; this file puts the result in force
 * (ka_admission_set_policy), logs it, and fills the admin API's view of it.
 */
#ifndef KA_POLICY_RELOAD_H
#define KA_POLICY_RELOAD_H

#include "ka_admin.h"
#include "ka_config.h"
#include "ka_policy_store.h"
#include "ka_policy_watch.h"
#include "ka_proxy.h"

typedef struct ka_policy_reload {
    ka_server_t *srv;
    ka_policy_store_t store;
    ka_policy_watch_t watch;
    int open;     /* store holds a file */
    int watching; /* watch's handles exist */
} ka_policy_reload_t;

/* Loads --policy (and --state-file); *policy gets the policy to start with. */
int ka_policy_reload_open(ka_policy_reload_t *r, const ka_config_t *cfg, ka_policy_t **policy,
                          char *err, size_t errlen);
/* Once admission runs: starts the watcher and SIGHUP, and logs the setup. */
void ka_policy_reload_start(ka_policy_reload_t *r, ka_server_t *srv, const ka_config_t *cfg);
/* The last reload and where API changes go, for GET /v1/policy and /metrics. */
void ka_policy_reload_status(const ka_policy_reload_t *r, ka_admin_reload_status_t *out);
/* Closes the watcher's handles (run the loop afterwards). */
void ka_policy_reload_close(ka_policy_reload_t *r);
/* Frees the store, after the loop has run. */
void ka_policy_reload_free(ka_policy_reload_t *r);

#endif
