/*
 * ka_admission.c: the one admission path (see ka_admission.h).
 *
 * decode -> judge [-> rejudge | reject_all] -> finish, for every API alike:
 * what differs between APIs is data in ka_admission_apis.c. A request is
 * decoded into an arena from the request's own copy of the frame, turned
 * into the engine's items, judged, and then either forwarded untouched,
 * re-encoded from the same decoded struct cut down to the admitted items
 * (placed items rewritten), or answered with a response built from
 * scratch. The request header is copied verbatim into a re-encoded frame,
 * so the client id and tagged fields survive.
 */
#include "ka_admission_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_policy_rules.h"

int ka_adm_api_of(int16_t api_key)
{
    const ka_adm_api_desc_t *d = ka_adm_desc_find(api_key);

    return d != NULL ? (int)d->api : -1;
}

bool ka_adm_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms)
{
    return ka_engine_view_needs_refresh(policy, view, now_ms);
}

bool ka_adm_version_refused(int16_t api_key, int16_t version, char *why, size_t cap)
{
    if (ka_adm_desc_find(api_key) == NULL ||
        (version <= ka_decoded_max_version(api_key) && version >= ka_decoded_min_version(api_key)))
        return false;
    snprintf(why, cap,
             "%s v%d is not a version kadmit decodes (max %d); the client ignored ApiVersions",
             ka_api_name(api_key), version, ka_decoded_max_version(api_key));
    return true;
}

void ka_adm_pending_free(ka_adm_pending_t *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].topic);
        free(p->items[i].message);
    }
    free(p->items);
    free(p);
}

void ka_adm_outcome_release(ka_adm_outcome_t *out)
{
    free(out->bytes);
    out->bytes = NULL;
    ka_adm_pending_free(out->pending);
    out->pending = NULL;
}

/* --- decode ------------------------------------------------------------- */

static void outcome_start(ka_adm_outcome_t *out)
{
    memset(out, 0, sizeof(*out));
    out->action = KA_ADM_FORWARD;
}

static void decode_failed(ka_adm_outcome_t *out, const ka_adm_req_t *req, const ka_reader_t *r)
{
    char text[512];

    ka_decode_error_format(text, sizeof(text), req->hdr.request_api_key,
                           req->hdr.request_api_version, r);
    out->decode_error = true;
    out->action = KA_ADM_CLOSE;
    snprintf(out->message, sizeof(out->message), "%s (body starts at frame byte %zu)", text,
             req->body_off);
}

/* The answer to an undecodable request of an API with a top-level error. */
static int answer_decode_error(const ka_adm_ctx_t *ctx, ka_adm_req_t *req, ka_adm_outcome_t *out)
{
    const ka_adm_api_desc_t *d = req->desc;
    const struct ka_codec *rc = ka_codec_find(d->api_key, KA_RESPONSE);
    ka_adm_pending_t empty = {.api_key = d->api_key, .api_version = req->hdr.request_api_version};
    ka_adm_top_t top = {KA_ADM_INVALID_REQUEST,
                        {(const uint8_t *)out->message, (int32_t)strlen(out->message)}};
    void *resp;

    ka_arena_reset(&req->arena);
    resp = ka_arena_alloc(&req->arena, rc->struct_size);
    if (resp == NULL || d->answer(d, &empty, &top, resp, &req->arena) < 0)
        return KA_ENOMEM;
    out->action = KA_ADM_ANSWER;
    return ka_adm_encode_response(d->api_key, req->hdr.request_api_version, req->hdr.correlation_id,
                                  (ka_slice_t){NULL, 0}, resp, ctx->max_frame, &out->bytes,
                                  &out->len);
}

/* Decodes the body into req->msg; Metadata may leave trailing bytes. */
static int decode_body(ka_adm_req_t *req, ka_reader_t *r)
{
    int16_t ver = req->hdr.request_api_version;
    size_t body_len = req->len - req->body_off;

    req->msg = ka_arena_alloc(&req->arena, req->codec->struct_size);
    if (req->msg == NULL)
        return KA_ENOMEM;
    ka_reader_init(r, req->frame + req->body_off, body_len);
    if (req->codec->decode(r, ver, &req->arena, req->msg) < 0 && r->err == KA_ETRAILING &&
        req->desc->tolerates_trailing) {
        /* Some clients (librdkafka 2.x at Metadata v12) append bytes the
         * broker ignores. Decide on the message itself; a rewrite drops them. */
        size_t msg_len = r->err_off;

        ka_arena_reset(&req->arena);
        req->msg = ka_arena_alloc(&req->arena, req->codec->struct_size);
        if (req->msg == NULL)
            return KA_ENOMEM;
        req->trailing_bytes = body_len - msg_len;
        ka_reader_init(r, req->frame + req->body_off, msg_len);
        req->codec->decode(r, ver, &req->arena, req->msg);
    }
    return 0; /* a decode error, even the arena's cap, is in r->err */
}

/* Reads the header, and refuses what kadmit does not decode. Returns the
 * descriptor, or NULL with *early filled. */
static const ka_adm_api_desc_t *read_header(const uint8_t *frame, size_t len,
                                            struct ka_request_header *hdr, size_t *body_off,
                                            ka_adm_outcome_t *early)
{
    const ka_adm_api_desc_t *d;
    ka_reader_t r;

    if (len < 8) {
        early->action = KA_ADM_CLOSE;
        snprintf(early->message, sizeof(early->message), "frame too short");
        return NULL;
    }
    ka_reader_init(&r, frame + 4, len - 4);
    if (ka_request_header_read(&r, hdr, NULL) < 0) {
        early->action = KA_ADM_CLOSE;
        early->decode_error = true;
        snprintf(early->message, sizeof(early->message),
                 "request header does not decode at byte %zu", r.err_off + 4);
        return NULL;
    }
    d = ka_adm_desc_find(hdr->request_api_key);
    if (d == NULL)
        return NULL;
    early->api = d->api;
    early->api_version = hdr->request_api_version;
    if (ka_adm_version_refused(hdr->request_api_key, hdr->request_api_version, early->message,
                               sizeof(early->message))) {
        early->action = KA_ADM_CLOSE;
        early->version_refused = true;
        return NULL;
    }
    *body_off = 4 + r.off;
    return d;
}

static int rewrite_unjudged(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out);

int ka_adm_decode(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len, ka_adm_req_t **out,
                  ka_adm_outcome_t *early)
{
    struct ka_request_header hdr;
    size_t body_off = 0;
    const ka_adm_api_desc_t *d;
    ka_adm_req_t *req;
    ka_reader_t r;
    int rc;

    *out = NULL;
    outcome_start(early);
    d = read_header(frame, len, &hdr, &body_off, early);
    if (d == NULL || hdr.request_api_version < d->min_judged_version)
        return 0;
    if (ka_arena_budget_charge(ctx->budget, len) < 0)
        return KA_ENOMEM;
    req = calloc(1, sizeof(*req));
    if (req == NULL || (req->frame = malloc(len)) == NULL) {
        ka_arena_budget_uncharge(ctx->budget, len);
        free(req);
        return KA_ENOMEM;
    }
    memcpy(req->frame, frame, len);
    req->desc = d;
    req->codec = ka_codec_find(d->api_key, KA_REQUEST);
    req->len = len;
    req->body_off = body_off;
    ka_arena_init(&req->arena, KA_ADM_ARENA_CAP);
    ka_arena_set_budget(&req->arena, ctx->budget);
    /* The header again, now with slices into our copy. */
    ka_reader_init(&r, req->frame + 4, len - 4);
    ka_request_header_read(&r, &req->hdr, NULL);
    rc = decode_body(req, &r);
    early->trailing_bytes = req->trailing_bytes;
    if (rc == 0 && r.err == KA_ENOMEM)
        rc = KA_ENOMEM; /* the budget refused: not the client's fault */
    if (rc == 0 && r.err != 0) {
        decode_failed(early, req, &r);
        if (d->answers_decode_errors)
            rc = answer_decode_error(ctx, req, early);
        ka_adm_req_free(req);
        return rc == KA_ENOMEM ? rc : 0;
    }
    if (rc == 0)
        rc = d->items(req, ctx);
    if (rc == 0 && req->count == 0 && req->rewrite_unjudged)
        rc = rewrite_unjudged(req, ctx, early);
    if (rc < 0 || req->count == 0) {
        ka_adm_req_free(req);
        return rc < 0 ? KA_ENOMEM : 0;
    }
    *out = req;
    return 0;
}

void ka_adm_req_free(ka_adm_req_t *req)
{
    if (req == NULL)
        return;
    if (req->verdicts != NULL)
        for (size_t i = 0; i < req->count; i++)
            ka_verdict_release(&req->verdicts[i]);
    free(req->verdicts);
    ka_arena_budget_uncharge(req->arena.budget, req->len);
    ka_arena_destroy(&req->arena);
    free(req->frame);
    free(req);
}

/* --- judge --------------------------------------------------------------- */

static ka_decision_context_t decision_context(const ka_adm_ctx_t *ctx)
{
    return (ka_decision_context_t){.policy = ctx->policy,
                                   .view = ctx->view,
                                   .ledger = ctx->ledger,
                                   .now_ms = ctx->now_ms,
                                   .seed = ctx->seed,
                                   .principal = ctx->principal,
                                   .view_follows_request = ctx->view_follows_request};
}

static bool waits_for_view(const ka_verdict_t *v)
{
    return v->reason == KA_REASON_UNKNOWN_TOPIC || v->reason == KA_REASON_UNKNOWN_BROKER ||
           v->wants_later_view;
}

/* Gives back what judge reserved and forgets the verdicts: the request will
 * be judged again on a fresher view. */
static void unjudge(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    for (size_t i = 0; i < req->count; i++) {
        if (req->verdicts[i].reservation_id != 0)
            ka_reservations_release(ctx->ledger, req->verdicts[i].reservation_id);
        ka_verdict_release(&req->verdicts[i]);
    }
    memset(req->verdicts, 0, req->count * sizeof(*req->verdicts));
    req->judged = false;
    req->wants_view = true;
}

bool ka_adm_req_any_rejected(const ka_adm_req_t *req)
{
    for (size_t i = 0; req->judged && i < req->count; i++)
        if (req->verdicts[i].kind == KA_VERDICT_REJECT || req->verdicts[i].audit)
            return true;
    return false;
}

bool ka_adm_req_only_own_topics(const ka_adm_req_t *req)
{
    for (size_t i = 0; req->judged && i < req->count; i++)
        if (req->verdicts[i].reservation_id != 0 &&
            ka_adm_own_topic(req->names[i]) == KA_ADM_OWN_NONE)
            return false;
    return req->judged;
}

int64_t ka_adm_req_wait_ms(const ka_adm_req_t *req, int64_t floor_ms, int64_t cap_ms)
{
    int64_t own = -1; /* Metadata and the rest carry no timeout */
    switch (req->desc->api) {
    case KA_ADM_CREATE_TOPICS:
        own = ((const struct ka_createtopics_request *)req->msg)->timeout_ms;
        break;
    case KA_ADM_CREATE_PARTITIONS:
        own = ((const struct ka_createpartitions_request *)req->msg)->timeout_ms;
        break;
    case KA_ADM_REASSIGN:
        own = ((const struct ka_alterpartitionreassignments_request *)req->msg)->timeout_ms;
        break;
    default:
        break;
    }
    int64_t wait = own > floor_ms ? own : floor_ms;
    return cap_ms > 0 && wait > cap_ms ? cap_ms : wait;
}

void ka_adm_req_wait(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    if (req->verdicts != NULL)
        unjudge(req, ctx);
    req->wants_view = true;
}

int ka_adm_judge(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    ka_decision_context_t dctx = decision_context(ctx);
    int rc;

    if (ctx->want_fresh_view) {
        req->wants_view = true;
        return 0;
    }
    if (req->verdicts == NULL) {
        req->verdicts = calloc(req->count, sizeof(*req->verdicts));
        if (req->verdicts == NULL)
            return KA_ENOMEM;
    }
    if ((rc = req->desc->judge(&dctx, req)) < 0)
        return rc; /* the engine undid its reservations */
    req->judged = true;
    req->wants_view = false;
    for (size_t i = 0; ctx->may_wait_for_view && i < req->count; i++) {
        if (waits_for_view(&req->verdicts[i])) {
            unjudge(req, ctx);
            return 0;
        }
    }
    if (req->desc->judged != NULL)
        req->desc->judged(req, ctx);
    return 0;
}

bool ka_adm_req_wants_view(const ka_adm_req_t *req)
{
    return req->wants_view;
}

size_t ka_adm_req_reservations(const ka_adm_req_t *req, uint64_t *ids, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; req->judged && i < req->count; i++) {
        if (req->verdicts[i].reservation_id == 0)
            continue;
        if (n < cap)
            ids[n] = req->verdicts[i].reservation_id;
        n++;
    }
    return n;
}

int ka_adm_rejudge(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, enum ka_reason reason_if_rejected)
{
    ka_decision_context_t dctx = decision_context(ctx);

    if (!req->judged)
        return 0;
    return ka_engine_recheck(&dctx, req->verdicts, req->count, reason_if_rejected);
}

void ka_adm_reject_all(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, enum ka_reason reason,
                       const char *message)
{
    bool audit = ka_policy_enforcement(ctx->policy) == KA_ENFORCEMENT_AUDIT;

    for (size_t i = 0; req->judged && i < req->count; i++) {
        ka_verdict_t *v = &req->verdicts[i];

        if (!v->claimed ||
            (v->kind != KA_VERDICT_ADMIT && v->kind != KA_VERDICT_ADMIT_WITH_ASSIGNMENT))
            continue;
        free(v->message);
        v->message = message != NULL ? strdup(message) : NULL;
        v->reason = reason;
        v->audit = audit;
        if (audit)
            continue; /* audit: the item goes ahead, and keeps its reservation */
        if (v->reservation_id != 0)
            ka_reservations_release(ctx->ledger, v->reservation_id);
        v->reservation_id = 0;
        v->kind = KA_VERDICT_REJECT;
        v->error_code = ka_policy_reject_error_code(ctx->policy);
    }
}

/* --- finish -------------------------------------------------------------- */

/* Tallies verdicts into the outcome; the reason is the first rejected
 * item's, else the first audited item's. */
static void tally(ka_adm_outcome_t *out, const ka_verdict_t *v, size_t n)
{
    enum ka_reason audited_reason = KA_REASON_NONE;
    bool rejected_seen = false;

    out->items = n;
    out->decided = true;
    for (size_t i = 0; i < n; i++) {
        bool flagged = v[i].kind == KA_VERDICT_REJECT || v[i].audit;

        out->rejected += v[i].kind == KA_VERDICT_REJECT;
        out->placed += v[i].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT;
        out->deferred_to_broker += v[i].kind == KA_VERDICT_DEFER_TO_BROKER;
        out->admitted += v[i].kind != KA_VERDICT_REJECT;
        out->audited += v[i].audit;
        out->protected_refused +=
            v[i].kind == KA_VERDICT_REJECT && v[i].reason == KA_REASON_PROTECTED_TOPIC;
        if (flagged && out->message[0] == '\0' && v[i].message)
            snprintf(out->message, sizeof(out->message), "%s", v[i].message);
        if (v[i].kind == KA_VERDICT_REJECT && !rejected_seen) {
            rejected_seen = true;
            out->reason = v[i].reason;
        }
        if (v[i].audit && audited_reason == KA_REASON_NONE)
            audited_reason = v[i].reason;
    }
    if (!rejected_seen)
        out->reason = audited_reason;
    if (out->rejected == n && n > 0)
        out->decision = KA_ADM_D_REJECT;
    else if (out->rejected > 0)
        out->decision = KA_ADM_D_PARTIAL;
    else if (out->audited > 0)
        out->decision = KA_ADM_D_AUDIT;
    else if (out->placed > 0)
        out->decision = KA_ADM_D_REWRITE;
    else
        out->decision = KA_ADM_D_ADMIT;
}

static int pending_build(const ka_adm_req_t *req, ka_adm_pending_t **out)
{
    ka_adm_pending_t *p = calloc(1, sizeof(*p));

    *out = p;
    if (p == NULL)
        return KA_ENOMEM;
    p->api_key = req->desc->api_key;
    p->api_version = p->client_version = req->hdr.request_api_version;
    p->items = calloc(req->count, sizeof(*p->items));
    if (p->items == NULL)
        return KA_ENOMEM;
    p->count = req->count;
    for (size_t i = 0; i < req->count; i++) {
        const ka_verdict_t *v = &req->verdicts[i];
        ka_adm_item_t *it = &p->items[i];

        if ((it->topic = ka_adm_dup_slice(req->names[i])) == NULL)
            return KA_ENOMEM;
        it->topic_len = req->names[i].len > 0 ? req->names[i].len : 0;
        it->partition = req->partitions[i];
        if (req->topic_ids != NULL)
            memcpy(it->topic_id, req->topic_ids[i], sizeof(it->topic_id));
        it->reservation_id = v->reservation_id;
        if (v->kind == KA_VERDICT_REJECT) {
            it->local = true;
            it->error_code = v->error_code;
            if (v->message != NULL && (it->message = strdup(v->message)) == NULL)
                return KA_ENOMEM;
            p->local_count++;
        }
    }
    return 0;
}

static bool any_reservation(const ka_adm_req_t *req)
{
    for (size_t i = 0; i < req->count; i++)
        if (req->verdicts[i].reservation_id != 0)
            return true;
    return false;
}

/* Every item rejected: a response built from scratch. */
static int answer_all(const ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    const ka_adm_api_desc_t *d = req->desc;
    const struct ka_codec *codec = ka_codec_find(d->api_key, KA_RESPONSE);
    ka_adm_top_t top = {0, KA_SLICE_NULL};
    ka_arena_t arena;
    void *resp;
    int rc = KA_ENOMEM;

    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    resp = ka_arena_alloc(&arena, codec->struct_size);
    if (resp != NULL && (rc = d->answer(d, out->pending, &top, resp, &arena)) == 0)
        rc = ka_adm_encode_response(d->api_key, req->hdr.request_api_version,
                                    req->hdr.correlation_id, (ka_slice_t){NULL, 0}, resp,
                                    ctx->max_frame, &out->bytes, &out->len);
    ka_arena_destroy(&arena);
    out->action = KA_ADM_ANSWER;
    ka_adm_pending_free(out->pending);
    out->pending = NULL;
    return rc;
}

static int rewrite(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    int rc = req->desc->subset(req);

    out->action = KA_ADM_REWRITE;
    return rc < 0 ? rc : ka_adm_encode_request(req, ctx->max_frame, &out->bytes, &out->len);
}

/* A Metadata request forwarded at another version than the client's: the
 * response comes back through ka_adm_response to be re-encoded. */
static int version_pending(const ka_adm_req_t *req, const ka_adm_outcome_t *out,
                           ka_adm_pending_t **pending)
{
    ka_adm_pending_t *p;

    if (req->hdr.request_api_version == out->api_version)
        return 0;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return KA_ENOMEM;
    p->api_key = req->desc->api_key;
    p->api_version = req->hdr.request_api_version;
    p->client_version = out->api_version;
    *pending = p;
    return 0;
}

/* A request with nothing to judge that goes on rewritten (ka_adm_req.rewrite_unjudged). */
static int rewrite_unjudged(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    int rc = rewrite(req, ctx, out);

    return rc < 0 ? rc : version_pending(req, out, &out->pending);
}

/* A rejected item of a whole-request API changes the whole request (no
 * auto-creation; no heartbeat), so nothing it admitted will be created: the
 * admitted items give their replicas back. */
static void release_admitted(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    for (size_t i = 0; i < req->count; i++) {
        if (req->verdicts[i].reservation_id != 0)
            ka_reservations_release(ctx->ledger, req->verdicts[i].reservation_id);
        req->verdicts[i].reservation_id = 0;
    }
}

/* A whole-request API without a subset (StreamsGroupHeartbeat): answered. */
static int refuse_whole(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    int rc;

    if ((rc = pending_build(req, &out->pending)) < 0)
        return rc;
    return answer_all(req, ctx, out);
}

static int finish(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    const ka_adm_api_desc_t *d = req->desc;
    int rc;

    tally(out, req->verdicts, req->count);
    if (d->whole_request) {
        if (out->rejected == 0) /* the broker's answer still settles what was reserved */
            return any_reservation(req) ? pending_build(req, &out->pending) : 0;
        out->decision = KA_ADM_D_REJECT;
        release_admitted(req, ctx);
        if (d->subset == NULL)
            return refuse_whole(req, ctx, out);
        out->auto_create_denied = true;
        if ((rc = rewrite(req, ctx, out)) < 0)
            return rc;
        return version_pending(req, out, &out->pending);
    }
    if (out->rejected > 0 || any_reservation(req))
        if ((rc = pending_build(req, &out->pending)) < 0)
            return rc;
    if (out->rejected == req->count)
        return answer_all(req, ctx, out);
    if (out->rejected == 0 && out->placed == 0)
        return 0; /* forward untouched */
    return rewrite(req, ctx, out);
}

static const char *verdict_name(const ka_verdict_t *v)
{
    if (v->kind == KA_VERDICT_REJECT)
        return "reject";
    if (v->audit)
        return "audit";
    return v->kind == KA_VERDICT_DEFER_TO_BROKER ? "defer" : "admit";
}

/* The rule an event names: the one that decided, else for an admitted item the topic rule that
 * applied to it (its checks all held), else none. */
static const char *judged_rule(const ka_adm_ctx_t *ctx, const ka_verdict_t *v, ka_slice_t topic)
{
    const ka_topic_rule_t *rule;

    if (v->rule != NULL || v->kind == KA_VERDICT_REJECT || ctx->policy == NULL)
        return v->rule;
    rule = ka_policy_rule_for(ctx->policy, topic);
    return rule != NULL ? rule->name : NULL;
}

/* Tells ctx->on_judged about every item of a decided request. */
static void report_judged(const ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    for (size_t i = 0; ctx->on_judged != NULL && i < req->count; i++) {
        const ka_verdict_t *v = &req->verdicts[i];
        ka_adm_judged_t item = {.api = req->desc->api,
                                .topic = req->names[i],
                                .partition = req->partitions[i],
                                .client_id = req->hdr.client_id,
                                .rule = judged_rule(ctx, v, req->names[i]),
                                .verdict = verdict_name(v),
                                .reason = v->reason,
                                .message = v->message};
        ctx->on_judged(ctx->on_judged_arg, &item);
    }
}

int ka_adm_finish(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, ka_adm_outcome_t *out)
{
    int rc = 0;

    outcome_start(out);
    out->api = req->desc->api;
    out->api_version = req->hdr.request_api_version;
    out->trailing_bytes = req->trailing_bytes;
    if (req->wants_view)
        out->action = KA_ADM_WAIT;
    else if (req->judged && (rc = finish(req, ctx, out)) == 0)
        report_judged(req, ctx);
    if (rc < 0) {
        ka_adm_outcome_release(out);
        out->action = KA_ADM_CLOSE;
        snprintf(out->message, sizeof(out->message), "admission failed: %s", ka_strerror(rc));
    }
    return rc;
}

int ka_adm_request(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len, ka_adm_outcome_t *out)
{
    ka_adm_req_t *req;
    int rc = ka_adm_decode(ctx, frame, len, &req, out);

    if (rc < 0 || req == NULL)
        return rc;
    rc = ka_adm_judge(req, ctx);
    if (rc == 0) {
        rc = ka_adm_finish(req, ctx, out);
    } else {
        outcome_start(out);
        out->api = req->desc->api;
        out->api_version = req->hdr.request_api_version;
        out->action = KA_ADM_CLOSE;
        snprintf(out->message, sizeof(out->message), "admission failed: %s", ka_strerror(rc));
    }
    ka_adm_req_free(req);
    return rc == KA_ENOMEM ? rc : 0;
}

/* --- responses ------------------------------------------------------------ */

int ka_adm_response(ka_adm_pending_t *p, const uint8_t *frame, size_t len, size_t max_frame,
                    uint8_t **out, size_t *out_len)
{
    const ka_adm_api_desc_t *d = ka_adm_desc_find(p->api_key);
    const struct ka_codec *codec = ka_codec_find(p->api_key, KA_RESPONSE);
    struct ka_response_header rh;
    bool merged = false;
    ka_arena_t arena;
    ka_reader_t r;
    void *resp;
    int rc;

    *out = NULL;
    *out_len = 0;
    if (len < 8)
        return KA_EUNDERFLOW;
    if (d == NULL || d->merge == NULL || codec == NULL)
        return 0;
    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    ka_reader_init(&r, frame + 4, len - 4);
    rc = ka_response_header_decode(&r, ka_response_header_version(p->api_key, p->api_version), &rh);
    if (rc < 0)
        goto done;
    resp = ka_arena_alloc(&arena, codec->struct_size);
    if (resp == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    if ((rc = codec->decode(&r, p->api_version, &arena, resp)) < 0)
        goto done;
    rc = d->merge(d, p, resp, &arena, &merged);
    if (rc == 0 && merged)
        rc = ka_adm_encode_response(p->api_key, p->client_version, rh.correlation_id,
                                    rh.tagged_fields, resp, max_frame, out, out_len);
done:
    ka_arena_destroy(&arena);
    return rc;
}
