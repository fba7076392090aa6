/*
 * ka_admission.c: decode, decide, re-encode and merge (see ka_admission.h).
 *
 * Every request is decoded into an arena, turned into the engine's item
 * structs (names stay slices into the frame during the call), decided, and
 * then either forwarded untouched, re-encoded from the same decoded struct
 * with rejected items removed and placed items rewritten, or answered with
 * a response built from scratch. The request header is copied verbatim into
 * a re-encoded frame, so the client id and tagged fields survive.
 */
#include "ka_admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_engine.h"
#include "ka_protocol.h"

#define ARENA_CAP ((size_t)64 * 1024 * 1024)

int ka_adm_api_of(int16_t api_key)
{
    switch (api_key) {
    case KA_CREATETOPICS_REQUEST_API_KEY:
        return KA_ADM_CREATE_TOPICS;
    case KA_CREATEPARTITIONS_REQUEST_API_KEY:
        return KA_ADM_CREATE_PARTITIONS;
    case KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY:
        return KA_ADM_REASSIGN;
    case KA_METADATA_REQUEST_API_KEY:
        return KA_ADM_METADATA;
    default:
        return -1;
    }
}

bool ka_adm_view_needs_refresh(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms)
{
    return ka_engine_view_needs_refresh(policy, view, now_ms);
}

bool ka_adm_view_is_stale(const ka_policy_t *policy, const ka_cluster_t *view, int64_t now_ms)
{
    return ka_engine_view_is_stale(policy, view, now_ms);
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

static ka_slice_t item_topic(const ka_adm_item_t *it)
{
    return (ka_slice_t){(const uint8_t *)it->topic, it->topic_len};
}

static ka_slice_t item_message(const ka_adm_item_t *it)
{
    if (it->message == NULL)
        return KA_SLICE_NULL;
    return (ka_slice_t){(const uint8_t *)it->message, (int32_t)strlen(it->message)};
}

static bool slice_eq(ka_slice_t a, ka_slice_t b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

static char *dup_slice(ka_slice_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *c = malloc(n + 1);
    if (c == NULL)
        return NULL;
    if (n)
        memcpy(c, s.ptr, n);
    c[n] = '\0';
    return c;
}

static ka_adm_pending_t *pending_new(int16_t api_key, int16_t version, size_t count)
{
    ka_adm_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->api_key = api_key;
    p->api_version = version;
    p->count = count;
    p->items = count ? calloc(count, sizeof(*p->items)) : NULL;
    if (count && p->items == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

/* Fills item i of p from a verdict. */
static int pending_set(ka_adm_pending_t *p, size_t i, ka_slice_t topic, int32_t partition,
                       const ka_verdict_t *v)
{
    ka_adm_item_t *it = &p->items[i];
    it->topic = dup_slice(topic);
    if (it->topic == NULL)
        return KA_ENOMEM;
    it->topic_len = topic.len > 0 ? topic.len : 0;
    it->partition = partition;
    it->reservation_id = v->reservation_id;
    if (v->kind == KA_VERDICT_REJECT) {
        it->local = true;
        it->error_code = v->error_code;
        it->message = v->message ? strdup(v->message) : NULL;
        if (v->message && it->message == NULL)
            return KA_ENOMEM;
        p->local_count++;
    }
    return 0;
}

/* Tallies verdicts into the outcome. */
static void tally(ka_adm_outcome_t *out, const ka_verdict_t *v, size_t n)
{
    out->items = n;
    out->decided = true;
    for (size_t i = 0; i < n; i++) {
        switch (v[i].kind) {
        case KA_VERDICT_REJECT:
            out->rejected++;
            if (out->message[0] == '\0' && v[i].message)
                snprintf(out->message, sizeof(out->message), "%s", v[i].message);
            break;
        case KA_VERDICT_ADMIT_WITH_ASSIGNMENT:
            out->placed++;
            out->admitted++;
            break;
        case KA_VERDICT_DEFER_TO_BROKER:
            out->deferred_to_broker++;
            out->admitted++;
            break;
        default:
            out->admitted++;
            break;
        }
        if (v[i].audit) {
            out->audited++;
            if (out->message[0] == '\0' && v[i].message)
                snprintf(out->message, sizeof(out->message), "%s", v[i].message);
        }
    }
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
    if (out->rejected > 0 || out->audited > 0)
        out->reason = strstr(out->message, "view is stale") || strstr(out->message, "cluster view")
                          ? KA_ADM_R_STALE
                          : KA_ADM_R_LIMIT;
}

static bool any_reservation(const ka_verdict_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].reservation_id != 0)
            return true;
    return false;
}

static void release_verdicts(ka_verdict_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ka_verdict_release(&v[i]);
}

/* --- frames ------------------------------------------------------------ */

typedef int (*encode_fn)(ka_writer_t *w, int16_t version, const void *msg);

/* size prefix + the request's header bytes verbatim + a new body. */
static int encode_request(const uint8_t *frame, size_t body_off, int16_t version, encode_fn enc,
                          const void *msg, size_t max, uint8_t **out, size_t *out_len)
{
    ka_writer_t w;
    ka_writer_init(&w, max);
    ka_write_i32(&w, 0);
    ka_write_raw(&w, frame + 4, body_off - 4);
    enc(&w, version, msg);
    if (w.err == 0)
        ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    if (w.err != 0) {
        int rc = w.err;
        ka_writer_free(&w);
        return rc;
    }
    *out = w.buf;
    *out_len = w.len;
    return 0;
}

static int encode_response(int16_t api_key, int16_t version, int32_t correlation_id,
                           ka_slice_t header_tags, encode_fn enc, const void *msg, size_t max,
                           uint8_t **out, size_t *out_len)
{
    ka_writer_t w;
    struct ka_response_header h = {.correlation_id = correlation_id, .tagged_fields = header_tags};
    ka_writer_init(&w, max);
    ka_write_i32(&w, 0);
    ka_response_header_encode(&w, ka_response_header_version(api_key, version), &h);
    enc(&w, version, msg);
    if (w.err == 0)
        ka_writer_patch_i32(&w, 0, (int32_t)(w.len - 4));
    if (w.err != 0) {
        int rc = w.err;
        ka_writer_free(&w);
        return rc;
    }
    *out = w.buf;
    *out_len = w.len;
    return 0;
}

static void decode_failed(ka_adm_outcome_t *out, int16_t api_key, int16_t version,
                          const ka_reader_t *r, size_t body_off)
{
    char text[512];
    ka_decode_error_format(text, sizeof(text), api_key, version, r);
    out->decode_error = true;
    out->action = KA_ADM_CLOSE;
    snprintf(out->message, sizeof(out->message), "%s (body starts at frame byte %zu)", text,
             body_off);
}

/* --- CreateTopics -------------------------------------------------------- */

static int ct_answer_all(const ka_adm_pending_t *p, int32_t cid, size_t max, uint8_t **bytes,
                         size_t *len)
{
    struct ka_createtopics_response resp;
    ka_createtopics_response_init(&resp);
    resp.topics.count = (int32_t)p->count;
    resp.topics.items = calloc(p->count ? p->count : 1, sizeof(*resp.topics.items));
    if (resp.topics.items == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < p->count; i++) {
        struct ka_createtopics_response_creatable_topic_result *t = &resp.topics.items[i];
        ka_createtopics_response_creatable_topic_result_init(t);
        t->name = item_topic(&p->items[i]);
        t->error_code = p->items[i].error_code;
        t->error_message = item_message(&p->items[i]);
        t->configs.count = -1;
    }
    int rc = encode_response(p->api_key, p->api_version, cid, (ka_slice_t){NULL, 0},
                             (encode_fn)ka_createtopics_response_encode, &resp, max, bytes, len);
    free(resp.topics.items);
    return rc;
}

static int create_topics(const ka_adm_ctx_t *ctx, const ka_decision_context_t *dctx,
                         const uint8_t *frame, size_t len, size_t body_off,
                         const struct ka_request_header *hdr, ka_adm_outcome_t *out)
{
    int16_t ver = hdr->request_api_version;
    struct ka_createtopics_request req;
    ka_arena_t arena;
    ka_reader_t r;
    int rc = 0;
    ka_create_topic_t *in = NULL;
    ka_replica_assignment_t *ra = NULL;
    ka_verdict_t *v = NULL;
    struct ka_createtopics_request_creatable_topic *kept = NULL;
    struct ka_createtopics_request_creatable_replica_assignment *rows = NULL;

    ka_arena_init(&arena, ARENA_CAP);
    ka_reader_init(&r, frame + body_off, len - body_off);
    if (ka_createtopics_request_decode(&r, ver, &arena, &req) < 0) {
        decode_failed(out, hdr->request_api_key, ver, &r, body_off);
        goto done;
    }
    size_t n = req.topics.count > 0 ? (size_t)req.topics.count : 0;
    if (n == 0)
        goto done;
    if (ctx->want_fresh_view) {
        out->action = KA_ADM_WAIT;
        goto done;
    }
    size_t nra = 0;
    for (size_t i = 0; i < n; i++)
        nra += req.topics.items[i].assignments.count > 0
                   ? (size_t)req.topics.items[i].assignments.count
                   : 0;
    in = calloc(n, sizeof(*in));
    v = calloc(n, sizeof(*v));
    ra = calloc(nra ? nra : 1, sizeof(*ra));
    if (in == NULL || v == NULL || ra == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ka_createtopics_request_creatable_topic *t = &req.topics.items[i];
        in[i].name = t->name;
        in[i].num_partitions = t->num_partitions;
        in[i].replication_factor = t->replication_factor;
        in[i].validate_only = req.validate_only != 0;
        if (t->assignments.count > 0) {
            in[i].assignments = &ra[k];
            in[i].assignment_count = t->assignments.count;
            for (int32_t j = 0; j < t->assignments.count; j++, k++) {
                ra[k].partition_index = t->assignments.items[j].partition_index;
                ra[k].broker_ids = t->assignments.items[j].broker_ids.items;
                ra[k].broker_count = t->assignments.items[j].broker_ids.count > 0
                                         ? t->assignments.items[j].broker_ids.count
                                         : 0;
            }
        }
    }
    if ((rc = ka_engine_create_topics(dctx, in, n, v)) < 0) {
        free(v);
        v = NULL;
        goto done;
    }
    tally(out, v, n);
    if (out->rejected > 0 || any_reservation(v, n)) {
        out->pending = pending_new(hdr->request_api_key, ver, n);
        if (out->pending == NULL) {
            rc = KA_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            if ((rc = pending_set(out->pending, i, req.topics.items[i].name, -1, &v[i])) < 0)
                goto done;
    }
    if (out->rejected == n) {
        out->action = KA_ADM_ANSWER;
        rc = ct_answer_all(out->pending, hdr->correlation_id, ctx->max_frame, &out->bytes,
                           &out->len);
        ka_adm_pending_free(out->pending);
        out->pending = NULL;
        goto done;
    }
    if (out->rejected == 0 && out->placed == 0)
        goto done; /* forward untouched */
    /* Re-encode: keep admitted topics, write placed assignments. */
    size_t nrows = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT)
            nrows += (size_t)v[i].assignment_partitions;
    kept = calloc(n, sizeof(*kept));
    rows = calloc(nrows ? nrows : 1, sizeof(*rows));
    if (kept == NULL || rows == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t m = 0, row = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind == KA_VERDICT_REJECT)
            continue;
        kept[m] = req.topics.items[i];
        if (v[i].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT) {
            struct ka_createtopics_request_creatable_topic *t = &kept[m];
            t->num_partitions = -1;
            t->replication_factor = -1;
            t->assignments.count = v[i].assignment_partitions;
            t->assignments.items = &rows[row];
            for (int32_t p = 0; p < v[i].assignment_partitions; p++, row++) {
                ka_createtopics_request_creatable_replica_assignment_init(&rows[row]);
                rows[row].partition_index = p;
                rows[row].broker_ids.count = v[i].assignment_replication;
                rows[row].broker_ids.items =
                    &v[i].assignment[(size_t)p * (size_t)v[i].assignment_replication];
            }
        }
        m++;
    }
    req.topics.items = kept;
    req.topics.count = (int32_t)m;
    out->action = KA_ADM_REWRITE;
    rc = encode_request(frame, body_off, ver, (encode_fn)ka_createtopics_request_encode, &req,
                        ctx->max_frame, &out->bytes, &out->len);
done:
    if (v != NULL)
        release_verdicts(v, out->items); /* out->items is 0 until the engine filled them */
    free(kept);
    free(rows);
    free(in);
    free(ra);
    free(v);
    ka_arena_destroy(&arena);
    return rc;
}

/* --- CreatePartitions ---------------------------------------------------- */

static int cp_answer_all(const ka_adm_pending_t *p, int32_t cid, size_t max, uint8_t **bytes,
                         size_t *len)
{
    struct ka_createpartitions_response resp;
    ka_createpartitions_response_init(&resp);
    resp.results.count = (int32_t)p->count;
    resp.results.items = calloc(p->count ? p->count : 1, sizeof(*resp.results.items));
    if (resp.results.items == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < p->count; i++) {
        struct ka_createpartitions_response_create_partitions_topic_result *t =
            &resp.results.items[i];
        ka_createpartitions_response_create_partitions_topic_result_init(t);
        t->name = item_topic(&p->items[i]);
        t->error_code = p->items[i].error_code;
        t->error_message = item_message(&p->items[i]);
    }
    int rc =
        encode_response(p->api_key, p->api_version, cid, (ka_slice_t){NULL, 0},
                        (encode_fn)ka_createpartitions_response_encode, &resp, max, bytes, len);
    free(resp.results.items);
    return rc;
}

static int create_partitions(const ka_adm_ctx_t *ctx, const ka_decision_context_t *dctx,
                             const uint8_t *frame, size_t len, size_t body_off,
                             const struct ka_request_header *hdr, ka_adm_outcome_t *out)
{
    int16_t ver = hdr->request_api_version;
    struct ka_createpartitions_request req;
    ka_arena_t arena;
    ka_reader_t r;
    int rc = 0;
    ka_create_partitions_t *in = NULL;
    ka_replica_assignment_t *ra = NULL;
    ka_verdict_t *v = NULL;
    struct ka_createpartitions_request_create_partitions_topic *kept = NULL;
    struct ka_createpartitions_request_create_partitions_assignment *rows = NULL;

    ka_arena_init(&arena, ARENA_CAP);
    ka_reader_init(&r, frame + body_off, len - body_off);
    if (ka_createpartitions_request_decode(&r, ver, &arena, &req) < 0) {
        decode_failed(out, hdr->request_api_key, ver, &r, body_off);
        goto done;
    }
    size_t n = req.topics.count > 0 ? (size_t)req.topics.count : 0;
    if (n == 0)
        goto done;
    if (ctx->want_fresh_view) {
        out->action = KA_ADM_WAIT;
        goto done;
    }
    size_t nra = 0;
    for (size_t i = 0; i < n; i++)
        if (req.topics.items[i].assignments.count > 0)
            nra += (size_t)req.topics.items[i].assignments.count;
    in = calloc(n, sizeof(*in));
    v = calloc(n, sizeof(*v));
    ra = calloc(nra ? nra : 1, sizeof(*ra));
    if (in == NULL || v == NULL || ra == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ka_createpartitions_request_create_partitions_topic *t = &req.topics.items[i];
        in[i].name = t->name;
        in[i].count = t->count;
        in[i].validate_only = req.validate_only != 0;
        if (t->assignments.count >= 0) {
            in[i].assignments = &ra[k];
            in[i].assignment_count = t->assignments.count;
            for (int32_t j = 0; j < t->assignments.count; j++, k++) {
                ra[k].partition_index = j;
                ra[k].broker_ids = t->assignments.items[j].broker_ids.items;
                ra[k].broker_count = t->assignments.items[j].broker_ids.count > 0
                                         ? t->assignments.items[j].broker_ids.count
                                         : 0;
            }
        }
    }
    if ((rc = ka_engine_create_partitions(dctx, in, n, v)) < 0) {
        free(v);
        v = NULL;
        goto done;
    }
    tally(out, v, n);
    if (out->rejected > 0 || any_reservation(v, n)) {
        out->pending = pending_new(hdr->request_api_key, ver, n);
        if (out->pending == NULL) {
            rc = KA_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            if ((rc = pending_set(out->pending, i, req.topics.items[i].name, -1, &v[i])) < 0)
                goto done;
    }
    if (out->rejected == n) {
        out->action = KA_ADM_ANSWER;
        rc = cp_answer_all(out->pending, hdr->correlation_id, ctx->max_frame, &out->bytes,
                           &out->len);
        ka_adm_pending_free(out->pending);
        out->pending = NULL;
        goto done;
    }
    if (out->rejected == 0 && out->placed == 0)
        goto done;
    size_t nrows = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT)
            nrows += (size_t)v[i].assignment_partitions;
    kept = calloc(n, sizeof(*kept));
    rows = calloc(nrows ? nrows : 1, sizeof(*rows));
    if (kept == NULL || rows == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t m = 0, row = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind == KA_VERDICT_REJECT)
            continue;
        kept[m] = req.topics.items[i];
        if (v[i].kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT) {
            kept[m].assignments.count = v[i].assignment_partitions;
            kept[m].assignments.items = &rows[row];
            for (int32_t p = 0; p < v[i].assignment_partitions; p++, row++) {
                ka_createpartitions_request_create_partitions_assignment_init(&rows[row]);
                rows[row].broker_ids.count = v[i].assignment_replication;
                rows[row].broker_ids.items =
                    &v[i].assignment[(size_t)p * (size_t)v[i].assignment_replication];
            }
        }
        m++;
    }
    req.topics.items = kept;
    req.topics.count = (int32_t)m;
    out->action = KA_ADM_REWRITE;
    rc = encode_request(frame, body_off, ver, (encode_fn)ka_createpartitions_request_encode, &req,
                        ctx->max_frame, &out->bytes, &out->len);
done:
    if (v != NULL)
        release_verdicts(v, out->items);
    free(kept);
    free(rows);
    free(in);
    free(ra);
    free(v);
    ka_arena_destroy(&arena);
    return rc;
}

/* --- AlterPartitionReassignments ------------------------------------------ */

static int apr_answer(const ka_adm_pending_t *p, int32_t cid, int16_t top_error,
                      const char *top_message, size_t max, uint8_t **bytes, size_t *len)
{
    struct ka_alterpartitionreassignments_response resp;
    struct ka_alterpartitionreassignments_response_reassignable_topic_response *topics;
    struct ka_alterpartitionreassignments_response_reassignable_partition_response *parts;
    ka_alterpartitionreassignments_response_init(&resp);
    resp.error_code = top_error;
    resp.error_message =
        top_message ? (ka_slice_t){(const uint8_t *)top_message, (int32_t)strlen(top_message)}
                    : KA_SLICE_NULL;
    topics = calloc(p->count ? p->count : 1, sizeof(*topics));
    parts = calloc(p->count ? p->count : 1, sizeof(*parts));
    if (topics == NULL || parts == NULL) {
        free(topics);
        free(parts);
        return KA_ENOMEM;
    }
    int32_t nt = 0;
    for (size_t i = 0; i < p->count; i++) {
        const ka_adm_item_t *it = &p->items[i];
        if (i == 0 || !slice_eq(item_topic(it), item_topic(&p->items[i - 1]))) {
            ka_alterpartitionreassignments_response_reassignable_topic_response_init(&topics[nt]);
            topics[nt].name = item_topic(it);
            topics[nt].partitions.items = &parts[i];
            nt++;
        }
        ka_alterpartitionreassignments_response_reassignable_partition_response_init(&parts[i]);
        parts[i].partition_index = it->partition;
        parts[i].error_code = it->error_code;
        parts[i].error_message = item_message(it);
        topics[nt - 1].partitions.count++;
    }
    resp.responses.count = nt;
    resp.responses.items = topics;
    int rc = encode_response(p->api_key, p->api_version, cid, (ka_slice_t){NULL, 0},
                             (encode_fn)ka_alterpartitionreassignments_response_encode, &resp, max,
                             bytes, len);
    free(topics);
    free(parts);
    return rc;
}

static int reassign(const ka_adm_ctx_t *ctx, const ka_decision_context_t *dctx,
                    const uint8_t *frame, size_t len, size_t body_off,
                    const struct ka_request_header *hdr, ka_adm_outcome_t *out)
{
    int16_t ver = hdr->request_api_version;
    struct ka_alterpartitionreassignments_request req;
    ka_arena_t arena;
    ka_reader_t r;
    int rc = 0;
    ka_reassignment_t *in = NULL;
    ka_verdict_t *v = NULL;
    ka_slice_t *names = NULL;
    struct ka_alterpartitionreassignments_request_reassignable_topic *kt = NULL;
    struct ka_alterpartitionreassignments_request_reassignable_partition *kp = NULL;

    ka_arena_init(&arena, ARENA_CAP);
    ka_reader_init(&r, frame + body_off, len - body_off);
    if (ka_alterpartitionreassignments_request_decode(&r, ver, &arena, &req) < 0) {
        /* This API has a top-level error: answer instead of closing. */
        decode_failed(out, hdr->request_api_key, ver, &r, body_off);
        ka_adm_pending_t empty = {.api_key = hdr->request_api_key, .api_version = ver};
        out->action = KA_ADM_ANSWER;
        rc = apr_answer(&empty, hdr->correlation_id, 42 /* INVALID_REQUEST */, out->message,
                        ctx->max_frame, &out->bytes, &out->len);
        goto done;
    }
    size_t n = 0;
    for (int32_t i = 0; i < req.topics.count; i++)
        if (req.topics.items[i].partitions.count > 0)
            n += (size_t)req.topics.items[i].partitions.count;
    if (n == 0)
        goto done;
    if (ctx->want_fresh_view) {
        out->action = KA_ADM_WAIT;
        goto done;
    }
    in = calloc(n, sizeof(*in));
    v = calloc(n, sizeof(*v));
    names = calloc(n, sizeof(*names));
    if (in == NULL || v == NULL || names == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (int32_t i = 0; i < req.topics.count; i++) {
        const struct ka_alterpartitionreassignments_request_reassignable_topic *t =
            &req.topics.items[i];
        for (int32_t j = 0; j < t->partitions.count; j++, k++) {
            const struct ka_alterpartitionreassignments_request_reassignable_partition *p =
                &t->partitions.items[j];
            in[k].topic = t->name;
            names[k] = t->name;
            in[k].partition = p->partition_index;
            in[k].replicas = p->replicas.count >= 0 ? p->replicas.items : NULL;
            in[k].replica_count = p->replicas.count > 0 ? p->replicas.count : 0;
            if (p->replicas.count == 0) {
                static const int32_t empty_target[1];
                in[k].replicas = empty_target; /* empty, not a cancel */
            }
        }
    }
    if ((rc = ka_engine_alter_reassignments(dctx, in, n, v)) < 0) {
        free(v);
        v = NULL;
        goto done;
    }
    tally(out, v, n);
    if (out->rejected > 0 || any_reservation(v, n)) {
        out->pending = pending_new(hdr->request_api_key, ver, n);
        if (out->pending == NULL) {
            rc = KA_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            if ((rc = pending_set(out->pending, i, names[i], in[i].partition, &v[i])) < 0)
                goto done;
    }
    if (out->rejected == n) {
        out->action = KA_ADM_ANSWER;
        rc = apr_answer(out->pending, hdr->correlation_id, 0, NULL, ctx->max_frame, &out->bytes,
                        &out->len);
        ka_adm_pending_free(out->pending);
        out->pending = NULL;
        goto done;
    }
    if (out->rejected == 0)
        goto done;
    kt = calloc((size_t)req.topics.count, sizeof(*kt));
    kp = calloc(n, sizeof(*kp));
    if (kt == NULL || kp == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t mt = 0, mp = 0;
    k = 0;
    for (int32_t i = 0; i < req.topics.count; i++) {
        const struct ka_alterpartitionreassignments_request_reassignable_topic *t =
            &req.topics.items[i];
        size_t first = mp;
        for (int32_t j = 0; j < t->partitions.count; j++, k++)
            if (v[k].kind != KA_VERDICT_REJECT)
                kp[mp++] = t->partitions.items[j];
        if (mp > first || t->partitions.count == 0) {
            kt[mt] = *t;
            kt[mt].partitions.items = &kp[first];
            kt[mt].partitions.count = (int32_t)(mp - first);
            mt++;
        }
    }
    req.topics.items = kt;
    req.topics.count = (int32_t)mt;
    out->action = KA_ADM_REWRITE;
    rc = encode_request(frame, body_off, ver,
                        (encode_fn)ka_alterpartitionreassignments_request_encode, &req,
                        ctx->max_frame, &out->bytes, &out->len);
done:
    if (v != NULL)
        release_verdicts(v, out->items);
    free(kt);
    free(kp);
    free(in);
    free(names);
    free(v);
    ka_arena_destroy(&arena);
    return rc;
}

/* --- Metadata auto-creation ---------------------------------------------- */

static int metadata(const ka_adm_ctx_t *ctx, const ka_decision_context_t *dctx,
                    const uint8_t *frame, size_t len, size_t body_off,
                    const struct ka_request_header *hdr, ka_adm_outcome_t *out)
{
    int16_t ver = hdr->request_api_version;
    struct ka_metadata_request req;
    ka_arena_t arena;
    ka_reader_t r;
    int rc = 0;
    ka_slice_t *names = NULL;
    ka_verdict_t *v = NULL;

    /* Before v4 there is no flag to clear: the broker's setting decides. */
    if (ver < 4)
        return 0;
    ka_arena_init(&arena, ARENA_CAP);
    ka_reader_init(&r, frame + body_off, len - body_off);
    if (ka_metadata_request_decode(&r, ver, &arena, &req) < 0 && r.err == KA_ETRAILING) {
        /* Some clients (librdkafka 2.x at v12) append bytes the broker ignores.
         * Decide on the message itself; a rewrite drops the extra bytes. */
        size_t msg_len = r.err_off;
        ka_arena_reset(&arena);
        ka_reader_init(&r, frame + body_off, msg_len);
        out->trailing_bytes = len - body_off - msg_len;
        ka_metadata_request_decode(&r, ver, &arena, &req);
    }
    if (r.err != 0) {
        decode_failed(out, hdr->request_api_key, ver, &r, body_off);
        goto done;
    }
    if (!req.allow_auto_topic_creation || req.topics.count <= 0)
        goto done;
    /* Fast path: every named topic is already in the view. */
    size_t n = 0;
    bool absent = ctx->view == NULL;
    for (int32_t i = 0; i < req.topics.count; i++) {
        ka_slice_t name = req.topics.items[i].name;
        if (name.len < 0)
            continue;
        n++;
        if (!absent && ka_cluster_find_topic(ctx->view, name) == NULL)
            absent = true;
    }
    if (!absent || n == 0)
        goto done;
    if (ctx->view != NULL && !ka_cluster_broker_defaults(ctx->view)->auto_create_topics_enable)
        goto done;
    if (ctx->want_fresh_view) {
        out->action = KA_ADM_WAIT;
        goto done;
    }
    names = calloc(n, sizeof(*names));
    v = calloc(n, sizeof(*v));
    if (names == NULL || v == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (int32_t i = 0; i < req.topics.count; i++)
        if (req.topics.items[i].name.len >= 0)
            names[k++] = req.topics.items[i].name;
    if ((rc = ka_engine_auto_create(dctx, names, n, true, v)) < 0) {
        free(v);
        v = NULL;
        goto done;
    }
    tally(out, v, n);
    if (out->rejected > 0) {
        out->decision = KA_ADM_D_REJECT;
        out->auto_create_denied = true;
        req.allow_auto_topic_creation = 0;
        out->action = KA_ADM_REWRITE;
        rc = encode_request(frame, body_off, ver, (encode_fn)ka_metadata_request_encode, &req,
                            ctx->max_frame, &out->bytes, &out->len);
    }
done:
    if (v != NULL)
        release_verdicts(v, out->items);
    free(names);
    free(v);
    ka_arena_destroy(&arena);
    return rc;
}

/* --- dispatch ------------------------------------------------------------- */

int ka_adm_request(const ka_adm_ctx_t *ctx, const uint8_t *frame, size_t len, ka_adm_outcome_t *out)
{
    struct ka_request_header hdr;
    ka_reader_t r;
    int16_t hv;
    int rc;

    memset(out, 0, sizeof(*out));
    out->action = KA_ADM_FORWARD;
    if (len < 8) {
        out->action = KA_ADM_CLOSE;
        snprintf(out->message, sizeof(out->message), "frame too short");
        return 0;
    }
    ka_reader_init(&r, frame + 4, len - 4);
    if (ka_request_header_read(&r, &hdr, &hv) < 0) {
        out->action = KA_ADM_CLOSE;
        out->decode_error = true;
        snprintf(out->message, sizeof(out->message), "request header does not decode at byte %zu",
                 r.err_off + 4);
        return 0;
    }
    int api = ka_adm_api_of(hdr.request_api_key);
    if (api < 0)
        return 0;
    out->api = (enum ka_adm_api)api;
    out->api_version = hdr.request_api_version;
    if (hdr.request_api_version > ka_decoded_max_version(hdr.request_api_key) ||
        hdr.request_api_version < ka_decoded_min_version(hdr.request_api_key)) {
        out->action = KA_ADM_CLOSE;
        out->version_refused = true;
        snprintf(out->message, sizeof(out->message),
                 "%s v%d is not a version kadmit decodes (max %d); the client ignored ApiVersions",
                 ka_api_name(hdr.request_api_key), hdr.request_api_version,
                 ka_decoded_max_version(hdr.request_api_key));
        return 0;
    }
    size_t body_off = 4 + r.off;
    ka_decision_context_t dctx = {.policy = ctx->policy,
                                  .view = ctx->view,
                                  .ledger = ctx->ledger,
                                  .now_ms = ctx->now_ms,
                                  .seed = ctx->seed};
    switch (api) {
    case KA_ADM_CREATE_TOPICS:
        rc = create_topics(ctx, &dctx, frame, len, body_off, &hdr, out);
        break;
    case KA_ADM_CREATE_PARTITIONS:
        rc = create_partitions(ctx, &dctx, frame, len, body_off, &hdr, out);
        break;
    case KA_ADM_REASSIGN:
        rc = reassign(ctx, &dctx, frame, len, body_off, &hdr, out);
        break;
    default:
        rc = metadata(ctx, &dctx, frame, len, body_off, &hdr, out);
        break;
    }
    if (rc < 0) {
        ka_adm_outcome_release(out);
        out->action = KA_ADM_CLOSE;
        snprintf(out->message, sizeof(out->message), "admission failed: %s", ka_strerror(rc));
    }
    return rc == KA_ENOMEM ? rc : 0;
}

/* --- responses ------------------------------------------------------------ */

static int ct_response(ka_adm_pending_t *p, const struct ka_response_header *rh,
                       struct ka_createtopics_response *br, size_t max, uint8_t **out,
                       size_t *out_len)
{
    size_t nb = br->topics.count > 0 ? (size_t)br->topics.count : 0;
    bool *used = calloc(nb + 1, sizeof(*used));
    struct ka_createtopics_response_creatable_topic_result *res =
        calloc(p->count + nb + 1, sizeof(*res));
    if (used == NULL || res == NULL) {
        free(used);
        free(res);
        return KA_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        struct ka_createtopics_response_creatable_topic_result *t = &res[m++];
        if (!it->local) {
            size_t j;
            for (j = 0; j < nb; j++)
                if (!used[j] && slice_eq(br->topics.items[j].name, item_topic(it)))
                    break;
            if (j < nb) {
                used[j] = true;
                *t = br->topics.items[j];
                it->broker_error = t->error_code;
                continue;
            }
            it->broker_error = -1; /* the broker did not answer for it */
        }
        ka_createtopics_response_creatable_topic_result_init(t);
        t->name = item_topic(it);
        t->configs.count = -1;
        t->error_code = it->local ? it->error_code : -1;
        t->error_message = it->local
                               ? item_message(it)
                               : KA_SLICE_LIT("kadmit: the broker's response lacked this topic");
    }
    for (size_t j = 0; j < nb; j++)
        if (!used[j])
            res[m++] = br->topics.items[j];
    int rc = 0;
    if (p->local_count > 0) {
        br->topics.items = res;
        br->topics.count = (int32_t)m;
        rc = encode_response(p->api_key, p->api_version, rh->correlation_id, rh->tagged_fields,
                             (encode_fn)ka_createtopics_response_encode, br, max, out, out_len);
    }
    free(used);
    free(res);
    return rc;
}

static int cp_response(ka_adm_pending_t *p, const struct ka_response_header *rh,
                       struct ka_createpartitions_response *br, size_t max, uint8_t **out,
                       size_t *out_len)
{
    size_t nb = br->results.count > 0 ? (size_t)br->results.count : 0;
    bool *used = calloc(nb + 1, sizeof(*used));
    struct ka_createpartitions_response_create_partitions_topic_result *res =
        calloc(p->count + nb + 1, sizeof(*res));
    if (used == NULL || res == NULL) {
        free(used);
        free(res);
        return KA_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        struct ka_createpartitions_response_create_partitions_topic_result *t = &res[m++];
        if (!it->local) {
            size_t j;
            for (j = 0; j < nb; j++)
                if (!used[j] && slice_eq(br->results.items[j].name, item_topic(it)))
                    break;
            if (j < nb) {
                used[j] = true;
                *t = br->results.items[j];
                it->broker_error = t->error_code;
                continue;
            }
            it->broker_error = -1;
        }
        ka_createpartitions_response_create_partitions_topic_result_init(t);
        t->name = item_topic(it);
        t->error_code = it->local ? it->error_code : -1;
        t->error_message = it->local
                               ? item_message(it)
                               : KA_SLICE_LIT("kadmit: the broker's response lacked this topic");
    }
    for (size_t j = 0; j < nb; j++)
        if (!used[j])
            res[m++] = br->results.items[j];
    int rc = 0;
    if (p->local_count > 0) {
        br->results.items = res;
        br->results.count = (int32_t)m;
        rc = encode_response(p->api_key, p->api_version, rh->correlation_id, rh->tagged_fields,
                             (encode_fn)ka_createpartitions_response_encode, br, max, out, out_len);
    }
    free(used);
    free(res);
    return rc;
}

static int apr_response(ka_adm_pending_t *p, const struct ka_response_header *rh,
                        struct ka_alterpartitionreassignments_response *br, size_t max,
                        uint8_t **out, size_t *out_len)
{
    /* Mark failures first: a top-level error fails every forwarded partition. */
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        if (it->local)
            continue;
        it->broker_error = br->error_code != 0 ? br->error_code : -1;
        for (int32_t t = 0; br->error_code == 0 && t < br->responses.count; t++) {
            const struct ka_alterpartitionreassignments_response_reassignable_topic_response *tr =
                &br->responses.items[t];
            if (!slice_eq(tr->name, item_topic(it)))
                continue;
            for (int32_t q = 0; q < tr->partitions.count; q++)
                if (tr->partitions.items[q].partition_index == it->partition) {
                    it->broker_error = tr->partitions.items[q].error_code;
                    it->error_code = tr->partitions.items[q].error_code;
                    free(it->message);
                    it->message = dup_slice(tr->partitions.items[q].error_message);
                    if (tr->partitions.items[q].error_message.len < 0) {
                        free(it->message);
                        it->message = NULL;
                    }
                    break;
                }
        }
    }
    if (p->local_count == 0)
        return 0;
    /* Merged: every partition in request order, broker's results copied in. */
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        if (!it->local && it->broker_error == -1 && br->error_code == 0) {
            it->error_code = -1;
            free(it->message);
            it->message = strdup("kadmit: the broker's response lacked this partition");
        } else if (!it->local && br->error_code != 0) {
            it->error_code = br->error_code;
        }
    }
    char *top = br->error_message.len >= 0 ? dup_slice(br->error_message) : NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = apr_answer(p, rh->correlation_id, br->error_code, top, max, &bytes, &len);
    free(top);
    if (rc == 0) {
        /* Keep the broker's throttle time: patch it into the body. */
        size_t hdr_len = ka_response_header_version(p->api_key, p->api_version) == 1 ? 5 : 4;
        if (len >= 4 + hdr_len + 4) {
            uint32_t t = (uint32_t)br->throttle_time_ms;
            uint8_t *q = bytes + 4 + hdr_len;
            q[0] = (uint8_t)(t >> 24);
            q[1] = (uint8_t)(t >> 16);
            q[2] = (uint8_t)(t >> 8);
            q[3] = (uint8_t)t;
        }
        *out = bytes;
        *out_len = len;
    }
    return rc;
}

int ka_adm_response(ka_adm_pending_t *p, const uint8_t *frame, size_t len, size_t max_frame,
                    uint8_t **out, size_t *out_len)
{
    struct ka_response_header rh;
    ka_arena_t arena;
    ka_reader_t r;
    int rc;

    *out = NULL;
    *out_len = 0;
    if (len < 8)
        return KA_EUNDERFLOW;
    ka_arena_init(&arena, ARENA_CAP);
    ka_reader_init(&r, frame + 4, len - 4);
    rc = ka_response_header_decode(&r, ka_response_header_version(p->api_key, p->api_version), &rh);
    if (rc < 0)
        goto done;
    switch (p->api_key) {
    case KA_CREATETOPICS_REQUEST_API_KEY: {
        struct ka_createtopics_response br;
        if ((rc = ka_createtopics_response_decode(&r, p->api_version, &arena, &br)) == 0)
            rc = ct_response(p, &rh, &br, max_frame, out, out_len);
        break;
    }
    case KA_CREATEPARTITIONS_REQUEST_API_KEY: {
        struct ka_createpartitions_response br;
        if ((rc = ka_createpartitions_response_decode(&r, p->api_version, &arena, &br)) == 0)
            rc = cp_response(p, &rh, &br, max_frame, out, out_len);
        break;
    }
    case KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY: {
        struct ka_alterpartitionreassignments_response br;
        if ((rc = ka_alterpartitionreassignments_response_decode(&r, p->api_version, &arena,
                                                                 &br)) == 0)
            rc = apr_response(p, &rh, &br, max_frame, out, out_len);
        break;
    }
    default:
        rc = 0;
        break;
    }
done:
    ka_arena_destroy(&arena);
    return rc;
}
