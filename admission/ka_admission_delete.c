/*
 * ka_admission_delete.c: DeleteTopics and DeleteRecords of protected topics
 * (the descriptors' functions; their table entries are in
 * ka_admission_apis.c).
 *
 * A delete takes no capacity, so nothing here asks the engine or reserves:
 * each item is judged against "protected.topics" (ka_policy_rules.h) and
 * the topics kadmit always protects, Kafka's internal topics and its own
 * under their configured names (ka_admission_own.c).
 * A protected item is answered locally with POLICY_VIOLATION and a
 * sentence saying what to change; the rest goes on to the broker and the
 * answers are merged in request order by the shared path.
 *
 * DeleteTopics v6 may name a topic by id alone. The id is resolved through
 * the view, so the protection is judged on the name; an id the view does
 * not know waits for a fresher view like any unknown item, and is then
 * refused with UNKNOWN_TOPIC_ID rather than forwarded unjudged.
 *
 * DeleteRecords has one item per partition (its answers are per
 * partition) and no message field: the refusal is seen in the decision's
 * log line and in kadmit_protected_refused_total.
 */
#include "ka_admission_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_audit.h"
#include "ka_metrics.h"
#include "ka_policy_rules.h"

/* Kafka's internal topics: a delete of one breaks consumer groups,
 * transactions, share groups or the cluster itself. */
static const char *const kafka_internal[] = {"__consumer_offsets", "__transaction_state",
                                             "__share_group_state", "__cluster_metadata"};

static bool slice_is(ka_slice_t s, const char *text)
{
    return s.len >= 0 && (size_t)s.len == strlen(text) && memcmp(s.ptr, text, (size_t)s.len) == 0;
}

/* True for Kafka's internal topics, which no policy and no exemption may unprotect. */
static bool kafka_internal_topic(ka_slice_t name)
{
    for (size_t i = 0; i < sizeof(kafka_internal) / sizeof(kafka_internal[0]); i++)
        if (slice_is(name, kafka_internal[i]))
            return true;
    return false;
}

static bool id_is_zero(const uint8_t id[16])
{
    static const uint8_t zero[16];

    return memcmp(id, zero, sizeof(zero)) == 0;
}

/* A topic id as Kafka prints it (Uuid.toString: URL-safe base64, no padding). */
static void format_topic_id(const uint8_t id[16], char out[23])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;

    for (size_t i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)id[i] << 16;
        size_t chars = i + 1 < 16 ? 4 : 2;

        v |= i + 1 < 16 ? (uint32_t)id[i + 1] << 8 : 0;
        v |= i + 2 < 16 ? (uint32_t)id[i + 2] : 0;
        for (size_t c = 0; c < chars; c++)
            out[o++] = b64[(v >> (18 - 6 * c)) & 63];
    }
    out[o] = '\0';
}

/* --- items ------------------------------------------------------------------ */

/* DeleteTopics v6+: a topic named by id alone takes its name from the view
 * (copied into the arena: the request may outlive the view); NULL name
 * while the view does not know the id. */
static int dt_resolve(ka_adm_req_t *req, const ka_adm_ctx_t *ctx, size_t i,
                      const struct ka_deletetopics_request_delete_topic_state *t)
{
    const ka_cluster_topic_t *known;
    ka_slice_t name;
    uint8_t *copy;

    memcpy(req->topic_ids[i], t->topic_id, sizeof(req->topic_ids[i]));
    req->names[i] = t->name;
    if (t->name.len >= 0 || ctx->view == NULL ||
        (known = ka_cluster_find_topic_id(ctx->view, t->topic_id)) == NULL)
        return 0;
    name = ka_cluster_topic_name(ctx->view, known);
    if ((copy = ka_adm_scratch(req, (size_t)name.len, 1)) == NULL)
        return KA_ENOMEM;
    memcpy(copy, name.ptr, (size_t)name.len);
    req->names[i] = (ka_slice_t){copy, name.len};
    return 0;
}

int ka_adm_dt_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_deletetopics_request *m = req->msg;
    bool by_state = req->hdr.request_api_version >= 6;
    int32_t count = by_state ? m->topics.count : m->topic_names.count;
    size_t n = count > 0 ? (size_t)count : 0;
    int rc;

    if (n == 0)
        return 0;
    if (ka_adm_items_begin(req, n, sizeof(ka_slice_t)) < 0)
        return KA_ENOMEM;
    if (!by_state) {
        memcpy(req->names, m->topic_names.items, n * sizeof(*req->names));
        return 0;
    }
    if ((req->topic_ids = ka_adm_scratch(req, n, sizeof(*req->topic_ids))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if ((rc = dt_resolve(req, ctx, i, &m->topics.items[i])) < 0)
            return rc;
    return 0;
}

/* One item per partition, topics flattened in request order. */
int ka_adm_dr_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_deleterecords_request *m = req->msg;
    size_t n = 0, k = 0;

    (void)ctx;
    for (int32_t i = 0; i < m->topics.count; i++)
        n += m->topics.items[i].partitions.count > 0 ? (size_t)m->topics.items[i].partitions.count
                                                     : 0;
    if (n == 0)
        return 0;
    if (ka_adm_items_begin(req, n, sizeof(ka_slice_t)) < 0)
        return KA_ENOMEM;
    for (int32_t i = 0; i < m->topics.count; i++) {
        const struct ka_deleterecords_request_delete_records_topic *t = &m->topics.items[i];

        for (int32_t j = 0; j < t->partitions.count; j++, k++) {
            req->names[k] = t->name;
            req->partitions[k] = t->partitions.items[j].partition_index;
        }
    }
    return 0;
}

/* --- judge ------------------------------------------------------------------ */

static int verdict_set(ka_verdict_t *v, enum ka_verdict_kind kind, enum ka_reason reason,
                       int16_t error_code, const char *rule, const char *message)
{
    *v = (ka_verdict_t){.kind = kind, .reason = reason, .error_code = error_code};
    if (rule != NULL && (v->rule = strdup(rule)) == NULL)
        return KA_ENOMEM;
    if (message != NULL && (v->message = strdup(message)) == NULL)
        return KA_ENOMEM;
    return 0;
}

static bool principal_exempt(const ka_decision_context_t *dctx)
{
    const char *who =
        dctx->principal != NULL ? dctx->principal : ka_policy_unknown_principal(dctx->policy);
    const ka_principal_rule_t *pr = ka_policy_principal(dctx->policy, who);

    return pr != NULL && (pr->exempt & KA_EXEMPT_PROTECTED_TOPICS) != 0;
}

/* One item named by topic name: refused when protected, unless the policy
 * audits or the principal is exempt (never for the topics always protected:
 * kadmit's own, whatever their configured names, and Kafka's internal ones). */
static int judge_name(const ka_decision_context_t *dctx, const char *api, ka_slice_t name,
                      ka_verdict_t *v)
{
    enum ka_adm_own own = ka_adm_own_topic(name);
    const char *pattern;
    char msg[KA_MESSAGE_MAX];
    int n = name.len > 0 ? (int)name.len : 0;

    if (own != KA_ADM_OWN_NONE)
        return ka_adm_own_verdict(own, name, api, v);
    if (kafka_internal_topic(name)) {
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is one of Kafka's internal topics, which kadmit always protects; "
                 "no policy setting or exemption lets it be deleted through kadmit",
                 n, (const char *)name.ptr);
        return verdict_set(v, KA_VERDICT_REJECT, KA_REASON_PROTECTED_TOPIC,
                           KA_KAFKA_ERR_POLICY_VIOLATION, "protected.topics", msg);
    }
    if (name.len < 0 || !ka_policy_topic_is_protected(dctx->policy, name))
        return verdict_set(v, KA_VERDICT_ADMIT, KA_REASON_NONE, 0, NULL, NULL);
    if (principal_exempt(dctx))
        return verdict_set(v, KA_VERDICT_ADMIT, KA_REASON_NONE, 0, "principals", NULL);
    if ((pattern = ka_policy_protected_pattern(dctx->policy, name)) != NULL)
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is protected by protected.topics pattern '%s'; remove it from "
                 "protected.topics to delete it",
                 n, (const char *)name.ptr, pattern);
    else
        snprintf(msg, sizeof(msg),
                 "topic '%.*s' is protected by protected.topics; remove its pattern from "
                 "protected.topics to delete it",
                 n, (const char *)name.ptr);
    if (ka_policy_enforcement(dctx->policy) == KA_ENFORCEMENT_AUDIT) {
        int rc =
            verdict_set(v, KA_VERDICT_ADMIT, KA_REASON_PROTECTED_TOPIC, 0, "protected.topics", msg);

        v->audit = true;
        return rc;
    }
    return verdict_set(v, KA_VERDICT_REJECT, KA_REASON_PROTECTED_TOPIC,
                       KA_KAFKA_ERR_POLICY_VIOLATION, "protected.topics", msg);
}

/* An id the view does not know: the path waits for a fresher view while it
 * may (reason unknown topic), and the refusal stands after that. */
static int judge_unknown_id(const uint8_t id[16], ka_verdict_t *v)
{
    char msg[KA_MESSAGE_MAX], text[23];

    format_topic_id(id, text);
    snprintf(msg, sizeof(msg),
             "topic id %s is not in kadmit's view of the cluster, even after a metadata refresh, "
             "and kadmit forwards no delete it has not judged; check the id (kafka-topics "
             "--describe shows it) or delete the topic by name",
             text);
    return verdict_set(v, KA_VERDICT_REJECT, KA_REASON_UNKNOWN_TOPIC, KA_KAFKA_ERR_UNKNOWN_TOPIC_ID,
                       "protected.topics", msg);
}

int ka_adm_protect_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    for (size_t i = 0; i < req->count; i++) {
        ka_verdict_t *v = &req->verdicts[i];
        bool by_id = req->topic_ids != NULL && !id_is_zero(req->topic_ids[i]);
        int rc = by_id && req->names[i].len < 0
                     ? judge_unknown_id(req->topic_ids[i], v)
                     : judge_name(dctx, ka_adm_api_name(req->desc->api), req->names[i], v);

        if (rc < 0)
            return rc;
    }
    return 0;
}

/* --- audit events ----------------------------------------------------------- */

static const char *verdict_word(const ka_verdict_t *v)
{
    if (v->kind == KA_VERDICT_REJECT)
        return "reject";
    return v->audit ? "audit" : "admit";
}

void ka_adm_protect_audit(const ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    for (size_t i = 0; i < req->count; i++) {
        const ka_verdict_t *v = &req->verdicts[i];
        char resource[300], id[23];
        ka_slice_t name = req->names[i];

        if (name.len >= 0 && req->partitions[i] >= 0)
            snprintf(resource, sizeof(resource), "%.*s-%d", (int)name.len, (const char *)name.ptr,
                     req->partitions[i]);
        else if (name.len >= 0)
            snprintf(resource, sizeof(resource), "%.*s", (int)name.len, (const char *)name.ptr);
        else {
            format_topic_id(req->topic_ids[i], id);
            snprintf(resource, sizeof(resource), "topic id %s", id);
        }
        ka_audit_emit(&(ka_audit_event_t){
            .principal = ctx->principal,
            .client_id = req->hdr.client_id.len > 0 ? (const char *)req->hdr.client_id.ptr : NULL,
            .client_id_len = req->hdr.client_id.len > 0 ? (size_t)req->hdr.client_id.len : 0,
            .api = ka_adm_api_name(req->desc->api),
            .resource = resource,
            .resource_len = strlen(resource),
            .rule = v->rule,
            .verdict = verdict_word(v),
            .reason = v->reason != KA_REASON_NONE ? ka_adm_reason_name(v->reason) : NULL,
            .message = v->message});
    }
}

/* --- DeleteTopics: subset, answer, merge ------------------------------------ */

int ka_adm_dt_subset(ka_adm_req_t *req)
{
    struct ka_deletetopics_request *m = req->msg;
    size_t k = 0;
    void *kept;

    if (req->hdr.request_api_version >= 6) {
        kept = ka_adm_keep_admitted(req, m->topics.items, sizeof(*m->topics.items), &k, NULL);
        m->topics.items = kept;
        m->topics.count = (int32_t)k;
    } else {
        kept = ka_adm_keep_admitted(req, m->topic_names.items, sizeof(*m->topic_names.items), &k,
                                    NULL);
        m->topic_names.items = kept;
        m->topic_names.count = (int32_t)k;
    }
    return kept != NULL ? 0 : KA_ENOMEM;
}

/*
 * The generic answer and merge put item i's result at index i. An AdminClient
 * that deleted by id finds its results by id, so kadmit's own results carry
 * the id they were asked by, and no name when the view did not know it.
 */
static void dt_ids(const ka_adm_pending_t *p, struct ka_deletetopics_response *resp)
{
    for (size_t i = 0; i < p->count && i < (size_t)resp->responses.count; i++) {
        struct ka_deletetopics_response_deletable_topic_result *r = &resp->responses.items[i];

        if (!p->items[i].local || id_is_zero(p->items[i].topic_id))
            continue;
        memcpy(r->topic_id, p->items[i].topic_id, sizeof(r->topic_id));
        if (p->items[i].topic_len == 0)
            r->name = KA_SLICE_NULL;
    }
}

int ka_adm_dt_answer(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p, const ka_adm_top_t *top,
                     void *resp, ka_arena_t *arena)
{
    int rc = ka_adm_answer_topics(d, p, top, resp, arena);

    if (rc == 0)
        dt_ids(p, resp);
    return rc;
}

/* A broker result by id alone takes the name of the forwarded item with that
 * id, so that the merge by name finds it. */
static void dt_names_from_ids(const ka_adm_pending_t *p, struct ka_deletetopics_response *resp)
{
    for (int32_t j = 0; j < resp->responses.count; j++) {
        struct ka_deletetopics_response_deletable_topic_result *r = &resp->responses.items[j];

        for (size_t i = 0; r->name.len < 0 && i < p->count; i++)
            if (!p->items[i].local && !id_is_zero(p->items[i].topic_id) &&
                memcmp(p->items[i].topic_id, r->topic_id, sizeof(r->topic_id)) == 0)
                r->name = ka_adm_item_topic(&p->items[i]);
    }
}

int ka_adm_dt_merge(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp, ka_arena_t *arena,
                    bool *rewrite)
{
    int rc;

    dt_names_from_ids(p, resp);
    rc = ka_adm_merge_topics(d, p, resp, arena, rewrite);
    if (rc == 0 && *rewrite)
        dt_ids(p, resp);
    return rc;
}

/* --- DeleteRecords: subset, answer, merge ----------------------------------- */

/* Every partition of a topic entry shares its verdict: a topic goes on whole or not at all. */
int ka_adm_dr_subset(ka_adm_req_t *req)
{
    struct ka_deleterecords_request *m = req->msg;
    size_t nt = m->topics.count > 0 ? (size_t)m->topics.count : 0, kept = 0, k = 0;
    struct ka_deleterecords_request_delete_records_topic *kt = ka_adm_scratch(req, nt, sizeof(*kt));

    if (kt == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < nt; i++) {
        const struct ka_deleterecords_request_delete_records_topic *t = &m->topics.items[i];
        size_t parts = t->partitions.count > 0 ? (size_t)t->partitions.count : 0;

        if (parts == 0 || req->verdicts[k].kind != KA_VERDICT_REJECT)
            kt[kept++] = *t;
        k += parts;
    }
    m->topics.items = kt;
    m->topics.count = (int32_t)kept;
    return 0;
}

/* The broker's result for a forwarded partition, or NULL. */
static const struct ka_deleterecords_response_delete_records_partition_result *
dr_find(const struct ka_deleterecords_response *br, const ka_adm_item_t *it)
{
    for (int32_t t = 0; br != NULL && t < br->topics.count; t++) {
        const struct ka_deleterecords_response_delete_records_topic_result *tr =
            &br->topics.items[t];

        for (int32_t q = 0;
             ka_adm_slice_eq(tr->name, ka_adm_item_topic(it)) && q < tr->partitions.count; q++)
            if (tr->partitions.items[q].partition_index == it->partition)
                return &tr->partitions.items[q];
    }
    return NULL;
}

/* resp's topics from p's items in request order: the broker's result for a
 * forwarded partition (br), kadmit's error for a refused one. */
static int dr_fill(const ka_adm_pending_t *p, const struct ka_deleterecords_response *br,
                   struct ka_deleterecords_response *resp, ka_arena_t *arena)
{
    struct ka_deleterecords_response_delete_records_topic_result *topics;
    struct ka_deleterecords_response_delete_records_partition_result *parts;
    void *topics_mem = NULL, *parts_mem = NULL;
    size_t n = p->count ? p->count : 1;
    int32_t nt = 0;

    if (ka_arena_alloc_array(arena, n, sizeof(*topics), &topics_mem) < 0 ||
        ka_arena_alloc_array(arena, n, sizeof(*parts), &parts_mem) < 0)
        return KA_ENOMEM;
    topics = topics_mem;
    parts = parts_mem;
    for (size_t i = 0; i < p->count; i++) {
        const ka_adm_item_t *it = &p->items[i];
        const struct ka_deleterecords_response_delete_records_partition_result *found =
            it->local ? NULL : dr_find(br, it);

        if (i == 0 ||
            !ka_adm_slice_eq(ka_adm_item_topic(it), ka_adm_item_topic(&p->items[i - 1]))) {
            ka_deleterecords_response_delete_records_topic_result_init(&topics[nt]);
            topics[nt].name = ka_adm_item_topic(it);
            topics[nt].partitions.items = &parts[i];
            topics[nt].partitions.count = 0;
            nt++;
        }
        if (found != NULL) {
            parts[i] = *found;
        } else {
            ka_deleterecords_response_delete_records_partition_result_init(&parts[i]);
            parts[i].partition_index = it->partition;
            parts[i].low_watermark = -1;
            /* -1: UNKNOWN_SERVER_ERROR, for a partition the broker left out. */
            parts[i].error_code = it->local ? it->error_code : -1;
        }
        topics[nt - 1].partitions.count++;
    }
    resp->topics.items = topics;
    resp->topics.count = nt;
    return 0;
}

int ka_adm_dr_answer(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p, const ka_adm_top_t *top,
                     void *resp, ka_arena_t *arena)
{
    (void)d;
    (void)top; /* DeleteRecords has no top-level error */
    ka_deleterecords_response_init(resp);
    return dr_fill(p, NULL, resp, arena);
}

int ka_adm_dr_merge(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp, ka_arena_t *arena,
                    bool *rewrite)
{
    const struct ka_deleterecords_response *br = resp;

    (void)d;
    for (size_t i = 0; i < p->count; i++) {
        const struct ka_deleterecords_response_delete_records_partition_result *found;

        if (p->items[i].local)
            continue;
        found = dr_find(br, &p->items[i]);
        p->items[i].broker_error = found != NULL ? found->error_code : -1;
    }
    if (p->local_count == 0)
        return 0;
    *rewrite = true;
    return dr_fill(p, br, resp, arena);
}
