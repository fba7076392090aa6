/*
 * ka_configs_hook.c: see ka_configs_hook.h.
 */
#include "ka_configs_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_admission_configs.h"
#include "ka_admission_hook.h"
#include "ka_configs_layer.h"
#include "ka_audit.h"
#include "ka_log.h"
#include "ka_protocol.h"

struct ka_configs {
    ka_server_t *srv;
    ka_policy_reload_t *reload;
    /* The last layer written to the limits topic and not read back yet, so
     * that two changes in quick succession build on each other. */
    char *unread_layer;
    size_t unread_writes;
    char problem[600]; /* why the limits cannot be written now, read at once */
    char reason[KA_ADM_MESSAGE_MAX];
    /* The response whose handler just said DEFER, until the relay's defer(). */
    struct configs_state *deferring;
};

typedef struct configs_write configs_write_t;

/* What a forwarded request keeps until its response. An alter whose changes
 * the broker accepted answers the client only once they are stored: the
 * response waits (DEFER) for the write's read-back. */
typedef struct configs_state {
    int16_t api_key;
    ka_cfg_pending_t *pending;
    configs_write_t *write; /* the write under way, or NULL */
    void (*wake)(void *arg);
    void *wake_arg;
    bool stored;   /* the write came back */
    char why[400]; /* when it failed: the sentence for the client */
} configs_state_t;

struct configs_write {
    ka_configs_t *c;
    char *layer;
    configs_state_t *st; /* the response waiting for this write, or NULL */
};

/* The broker ids the view knows, or NULL without a view (malloc'd). */
static int32_t *known_brokers(ka_configs_t *c, size_t *n)
{
    ka_admission_t *a = ka_server_admission(c->srv);
    ka_cluster_t *view = a != NULL ? ka_admission_view(a) : NULL;
    int32_t *ids;

    *n = 0;
    if (view == NULL || (ids = calloc(ka_cluster_broker_count(view) + 1, sizeof(*ids))) == NULL)
        return NULL;
    for (size_t i = 0; i < ka_cluster_broker_count(view); i++)
        ids[(*n)++] = ka_cluster_broker_at(view, i)->id;
    return ids;
}

/* Why kadmit's limits cannot be written now, or NULL. */
static const char *store_problem(ka_configs_t *c)
{
    ka_policy_reload_t *r = c->reload;

    if (!r->cluster)
        return NULL;
    if (r->limits == NULL)
        snprintf(c->problem, sizeof(c->problem), "the limits topic %.200s is not running: %.300s",
                 r->topic, r->cluster_error[0] ? r->cluster_error : "it did not start");
    else if (ka_limits_loading(r->limits))
        snprintf(c->problem, sizeof(c->problem),
                 "the limits topic %.200s is still being read; retry shortly", r->topic);
    else
        return NULL;
    return c->problem;
}

static void free_state_cb(void *user, void *state)
{
    configs_state_t *st = state;

    (void)user;
    if (st->write != NULL)
        st->write->st = NULL; /* the write goes on; nobody waits for it */
    ka_cfg_pending_free(st->pending);
    free(st);
}

static int defer_cb(void *user, void (*wake)(void *arg), void *arg)
{
    ka_configs_t *c = user;
    configs_state_t *st = c->deferring;

    c->deferring = NULL;
    if (st == NULL)
        return -1;
    st->wake = wake;
    st->wake_arg = arg;
    return 0;
}

/* The connection closed while its response waited: the relay frees the
 * request's state in the same close, and free_state_cb detaches the write,
 * so wake is never called; nothing else to undo. */
static void cancel_cb(void *user, void *arg)
{
    (void)user;
    (void)arg;
}

/* Topic configs judged against a topic rule's config bounds: which rule, and its verdict. */
static void log_topics(const ka_frame_header_t *hdr, const ka_cfg_outcome_t *o)
{
    const char *verdict = o->topics_refused > 0   ? "refused"
                          : o->topics_audited > 0 ? "audit: would refuse, forwarded"
                                                  : "admitted";

    ka_log(o->topics_refused + o->topics_audited > 0 ? KA_LOG_WARN : KA_LOG_INFO,
           "topic config change judged against a topic rule",
           KA_KS("api", ka_api_name(hdr->api_key)), KA_KI("correlation_id", hdr->correlation_id),
           KA_KS("rule", o->rule), KA_KS("verdict", verdict), KA_KI("topics", o->topics_judged),
           KA_KI("refused", o->topics_refused), KA_KI("audited", o->topics_audited),
           KA_KS("validate_only", o->validate_only ? "yes" : "no"),
           KA_KS("message", o->topic_message[0] ? o->topic_message : NULL));
}

/* Topic configs judged for protection: kadmit's own topics, destructive keys of protected ones. */
static void log_protected(ka_configs_t *c, const ka_frame_header_t *hdr, const ka_cfg_outcome_t *o)
{
    ka_metrics_t *m = ka_server_metrics(c->srv);

    if (hdr->api_key == KA_ALTERCONFIGS_REQUEST_API_KEY)
        m->protected_refused_alter_configs += o->protected_refused;
    else
        m->protected_refused_incremental_alter_configs += o->protected_refused;
    ka_log(KA_LOG_WARN,
           o->protected_refused > 0 ? "config change of a protected topic refused"
                                    : "audit: config change of a protected topic would be refused, "
                                      "forwarded",
           KA_KS("api", ka_api_name(hdr->api_key)), KA_KI("correlation_id", hdr->correlation_id),
           KA_KS("principal", hdr->origin ? hdr->origin->principal : NULL),
           KA_KI("refused", o->protected_refused), KA_KI("audited", o->protected_audited),
           KA_KS("validate_only", o->validate_only ? "yes" : "no"),
           KA_KS("message", o->protect_message));
}

/* One audit event per topic a rule's config bounds or protection judged
 * (ka_cfg_ctx_t.on_topic_judged). */
static void audit_topic_cb(void *arg, const ka_cfg_judged_t *t)
{
    const ka_frame_header_t *hdr = arg;
    const ka_frame_origin_t *origin = hdr->origin;
    ka_audit_event_t e = {.principal = origin ? origin->principal : NULL,
                          .client_addr = origin ? origin->peer : NULL,
                          .client_id = origin ? origin->client_id : NULL,
                          .client_id_len = origin ? origin->client_id_len : 0,
                          .api = ka_api_name(hdr->api_key),
                          .resource = t->topic,
                          .resource_len = t->topic_len,
                          .rule = t->rule,
                          .verdict = t->verdict,
                          .reason = t->reason,
                          .message = t->message};
    ka_audit_emit(&e);
}

static int on_request(void *user, const ka_frame_header_t *hdr, uint8_t *frame, size_t *len,
                      ka_hook_verdict_t *v)
{
    ka_configs_t *c = user;
    ka_cfg_outcome_t o;
    int32_t *ids = NULL;
    int rc;

    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (hdr->api_key == KA_DESCRIBECONFIGS_REQUEST_API_KEY) {
        rc = ka_cfg_describe_request(frame, *len, &o);
    } else {
        ka_admission_t *a = ka_server_admission(c->srv);
        ka_cfg_ctx_t ctx = {.store_problem = store_problem(c),
                            .max_frame = ka_server_config(c->srv)->max_frame_bytes,
                            .policy = a != NULL ? ka_admission_policy(a) : NULL,
                            .view = a != NULL ? ka_admission_view(a) : NULL,
                            .principal = hdr->origin ? hdr->origin->principal : NULL,
                            .on_topic_judged = audit_topic_cb,
                            .on_topic_judged_arg = (void *)hdr};

        ids = known_brokers(c, &ctx.broker_count);
        ctx.broker_ids = ids;
        rc = ka_cfg_alter_request(&ctx, frame, *len, &o);
    }
    free(ids);
    if (rc < 0 || o.action == KA_ADM_CLOSE) {
        snprintf(c->reason, sizeof(c->reason), "%s", rc < 0 ? "out of memory" : o.message);
        ka_log(KA_LOG_WARN, "config request refused, closing the connection",
               KA_KS("api", ka_api_name(hdr->api_key)), KA_KI("version", hdr->api_version),
               KA_KS("detail", c->reason));
        ka_cfg_outcome_release(&o);
        v->kind = KA_HOOK_CLOSE;
        v->reason = c->reason;
        return 0;
    }
    if (o.resources > 0 && hdr->api_key != KA_DESCRIBECONFIGS_REQUEST_API_KEY)
        ka_log(KA_LOG_INFO, "config change of kadmit's limits",
               KA_KS("api", ka_api_name(hdr->api_key)),
               KA_KI("correlation_id", hdr->correlation_id), KA_KI("resources", o.resources),
               KA_KI("refused", o.refused), KA_KS("validate_only", o.validate_only ? "yes" : "no"),
               KA_KS("message", o.message[0] ? o.message : NULL));
    if (o.protected_refused + o.protected_audited > 0)
        log_protected(c, hdr, &o);
    if (o.topics_judged > 0)
        log_topics(hdr, &o);
    if (o.action == KA_ADM_ANSWER || o.action == KA_ADM_REWRITE) {
        v->kind = o.action == KA_ADM_ANSWER ? KA_HOOK_ANSWER : KA_HOOK_FORWARD;
        v->bytes = o.bytes;
        v->len = o.len;
        v->free_bytes = free;
        o.bytes = NULL;
    }
    if (o.pending != NULL) {
        configs_state_t *st = calloc(1, sizeof(*st));

        if (st == NULL) {
            if (v->free_bytes)
                v->free_bytes(v->bytes);
            ka_cfg_outcome_release(&o);
            memset(v, 0, sizeof(*v));
            v->kind = KA_HOOK_CLOSE;
            v->reason = "out of memory";
            return 0;
        }
        st->api_key = hdr->api_key;
        st->pending = o.pending;
        o.pending = NULL;
        v->state = st;
        v->buffer_response = 1;
    }
    ka_cfg_outcome_release(&o);
    return 0;
}

static void written_cb(void *arg, int rc, int64_t offset, const char *why)
{
    configs_write_t *w = arg;
    ka_configs_t *c = w->c;
    configs_state_t *st = w->st;

    if (rc == 0)
        ka_log(KA_LOG_INFO, "kadmit's limits changed through the config API",
               KA_KS("topic", c->reload->topic), KA_KI("offset", offset), KA_KS("layer", w->layer));
    else
        ka_log(KA_LOG_ERROR,
               "a config change the broker accepted was not written to kadmit's limits",
               KA_KS("topic", c->reload->topic), KA_KS("layer", w->layer), KA_KS("why", why));
    if (c->unread_writes > 0 && --c->unread_writes == 0) {
        free(c->unread_layer);
        c->unread_layer = NULL;
    }
    free(w->layer);
    free(w);
    if (st != NULL) {
        st->write = NULL;
        st->stored = true;
        if (rc != 0)
            snprintf(st->why, sizeof(st->why),
                     "the broker accepted this resource, but kadmit could not store %s or %s in "
                     "its limits topic (%.200s), so kadmit's limits are unchanged; retry",
                     KA_CFG_MAX_BROKER_PARTITIONS, KA_CFG_MAX_PARTITIONS,
                     why && why[0] ? why : "write failed");
        if (st->wake != NULL)
            st->wake(st->wake_arg);
    }
}

/* Without the limits topic: the layer goes over the file like an admin API change. */
static void apply_locally(ka_configs_t *c, const char *layer)
{
    ka_policy_reload_t *r = c->reload;
    ka_admission_t *a = ka_server_admission(c->srv);
    ka_policy_t *next = NULL;
    char err[512] = "";
    bool persisted = false;

    if (ka_policy_store_set_layer(&r->store, layer, ka_admission_policy(a), &next, err,
                                  sizeof(err)) < 0) {
        ka_log(KA_LOG_ERROR, "a config change the broker accepted does not apply",
               KA_KS("layer", layer), KA_KS("why", err));
        return;
    }
    if (next == NULL)
        return;
    ka_admission_set_policy(a, next);
    ka_policy_store_persist(&r->store, next, &persisted, err, sizeof(err));
    ka_log(KA_LOG_INFO, "kadmit's limits changed through the config API", KA_KS("layer", layer),
           KA_KS("persisted", persisted ? "yes" : "no"), KA_KS(persisted ? "to" : "why", err));
}

/* The broker accepted these changes: they become kadmit's. With the limits
 * topic, the write is queued for st (which then waits for it) and 1 is
 * returned; 0 when the change is made at once or not at all (st->why says
 * why not). */
static int write_changes(ka_configs_t *c, configs_state_t *st, const ka_cfg_change_t *changes,
                         size_t n)
{
    ka_policy_reload_t *r = c->reload;
    const char *base = c->unread_layer != NULL ? c->unread_layer : r->store.overrides;
    configs_write_t *w = NULL;
    char *layer = NULL, err[512] = "";

    if (ka_configs_layer_apply(base, changes, n, &layer, err, sizeof(err)) < 0) {
        ka_log(KA_LOG_ERROR, "a config change the broker accepted could not be made",
               KA_KS("why", err[0] ? err : "out of memory"));
        snprintf(st->why, sizeof(st->why),
                 "the broker accepted this resource, but kadmit could not apply the change to its "
                 "limits (%.200s); kadmit's limits are unchanged",
                 err[0] ? err : "out of memory");
        return 0;
    }
    if (!r->cluster) {
        apply_locally(c, layer);
        free(layer);
        return 0;
    }
    char *copy = strdup(layer);
    if (copy == NULL || (w = malloc(sizeof(*w))) == NULL || r->limits == NULL ||
        ka_limits_write(r->limits, layer, written_cb, w, err, sizeof(err)) < 0) {
        ka_log(KA_LOG_ERROR, "a config change the broker accepted was not written",
               KA_KS("topic", r->topic), KA_KS("layer", layer),
               KA_KS("why", err[0] ? err : "the limits topic is not running"));
        snprintf(st->why, sizeof(st->why),
                 "the broker accepted this resource, but kadmit could not write the change to its "
                 "limits topic (%.200s); kadmit's limits are unchanged",
                 err[0] ? err : "the limits topic is not running");
        free(copy);
        free(w);
        free(layer);
        return 0;
    }
    w->c = c;
    w->layer = layer;
    w->st = st;
    st->write = w;
    free(c->unread_layer);
    c->unread_layer = copy;
    c->unread_writes++;
    return 1;
}

static int describe_response(ka_configs_t *c, const ka_cfg_pending_t *p, const uint8_t *frame,
                             size_t len, uint8_t **out, size_t *out_len)
{
    ka_policy_reload_t *r = c->reload;
    ka_configs_limits_t limits;
    int rc =
        ka_configs_limits_read(r->store.overrides, ka_policy_store_file_policy(&r->store), &limits);

    if (rc < 0)
        return rc;
    rc = ka_cfg_describe_response(p, &limits.limits, frame, len,
                                  ka_server_config(c->srv)->max_frame_bytes, out, out_len);
    ka_configs_limits_free(&limits);
    return rc;
}

static int on_response(void *user, const ka_inflight_entry_t *request, uint8_t *frame, size_t *len,
                       ka_hook_verdict_t *v)
{
    ka_configs_t *c = user;
    configs_state_t *st = request->answer;
    ka_cfg_change_t *changes = NULL;
    size_t nchanges = 0, mlen = 0;
    uint8_t *merged = NULL;
    int rc;

    int resumed = v->resumed;
    size_t max_frame = ka_server_config(c->srv)->max_frame_bytes;

    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (!(request->flags & KA_INFLIGHT_HOOK_STATE) || st == NULL)
        return 0;
    if (st->api_key == KA_DESCRIBECONFIGS_REQUEST_API_KEY) {
        rc = describe_response(c, st->pending, frame, *len, &merged, &mlen);
    } else if (resumed > 0 || st->why[0]) {
        /* Back from the write (or it never started): the client hears the
         * broker's answer only if kadmit's part of it was stored too. */
        if (!st->stored && !st->why[0])
            snprintf(st->why, sizeof(st->why),
                     "the broker accepted this resource, but kadmit's limits topic did not "
                     "confirm the change in time; check GET /v1/policy before retrying");
        rc = st->why[0] ? ka_cfg_alter_response_unstored(st->pending, frame, *len, max_frame,
                                                         st->why, &merged, &mlen)
                        : ka_cfg_alter_response(st->pending, frame, *len, max_frame, &merged, &mlen,
                                                &changes, &nchanges);
        nchanges = 0; /* already made */
    } else {
        rc = ka_cfg_alter_response(st->pending, frame, *len, max_frame, &merged, &mlen, &changes,
                                   &nchanges);
    }
    if (rc < 0) {
        ka_log(KA_LOG_WARN, "config response does not decode, forwarded unchanged",
               KA_KS("api", ka_api_name(st->api_key)), KA_KS("error", ka_strerror(rc)));
        free(changes);
        return 0;
    }
    if (nchanges > 0) {
        int queued = write_changes(c, st, changes, nchanges);
        free(changes);
        if (queued || st->why[0]) {
            free(merged);
            if (queued) {
                c->deferring = st;
                v->kind = KA_HOOK_DEFER;
                return 0;
            }
            /* Not stored: say so instead of the broker's OK. */
            merged = NULL;
            rc = ka_cfg_alter_response_unstored(st->pending, frame, *len, max_frame, st->why,
                                                &merged, &mlen);
            if (rc < 0)
                return rc;
        }
        changes = NULL;
    }
    free(changes);
    if (merged != NULL) {
        v->bytes = merged;
        v->len = mlen;
        v->free_bytes = free;
    }
    return 0;
}

int ka_configs_start(ka_server_t *srv, ka_policy_reload_t *reload, ka_configs_t **out, char *err,
                     size_t errlen)
{
    static const int16_t keys[] = {KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY,
                                   KA_ALTERCONFIGS_REQUEST_API_KEY,
                                   KA_DESCRIBECONFIGS_REQUEST_API_KEY};
    ka_configs_t *c = calloc(1, sizeof(*c));

    *out = c;
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    c->srv = srv;
    c->reload = reload;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        ka_intercept_entry_t *e = &ka_server_intercept(srv)->api[keys[i]];

        e->buffer_request = 1;
        e->on_request = on_request;
        e->on_response = on_response;
        e->user = c;
        e->free_state = free_state_cb;
        e->defer = defer_cb;
        e->cancel = cancel_cb;
    }
    ka_log(KA_LOG_INFO, "kafka-configs sets kadmit's limits",
           KA_KS("keys", KA_CFG_MAX_BROKER_PARTITIONS ", " KA_CFG_MAX_PARTITIONS),
           KA_KS("store", reload->cluster ? reload->topic : "the policy store"));
    return 0;
}

void ka_configs_stop(ka_configs_t *c)
{
    if (c == NULL)
        return;
    free(c->unread_layer);
    free(c);
}
