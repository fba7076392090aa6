/*
 * ka_admission_apis.c: one descriptor per admission API (see
 * ka_admission_int.h), and the table the path looks them up in.
 *
 * Each descriptor says how its decoded request becomes the engine's items
 * (names stay slices into the request's frame), which engine call judges
 * them, and how the request is cut down to its admitted items. Answers and
 * merges are shared: CreateTopics and CreatePartitions describe their
 * per-topic results through accessors and use the generic pair in
 * ka_admission_merge.c.
 */
#include "ka_admission_int.h"
#include "ka_rules_configs.h"

#include <string.h>

void *ka_adm_scratch(ka_adm_req_t *req, size_t n, size_t size)
{
    void *p = NULL;

    if (ka_arena_alloc_array(&req->arena, n ? n : 1, size, &p) < 0)
        return NULL;
    return p;
}

int ka_adm_items_begin(ka_adm_req_t *req, size_t count, size_t input_size)
{
    req->inputs = ka_adm_scratch(req, count, input_size);
    req->names = ka_adm_scratch(req, count, sizeof(*req->names));
    req->partitions = ka_adm_scratch(req, count, sizeof(*req->partitions));
    if (req->inputs == NULL || req->names == NULL || req->partitions == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < count; i++)
        req->partitions[i] = -1;
    req->count = count;
    return 0;
}

static size_t count_of(int32_t n)
{
    return n > 0 ? (size_t)n : 0;
}

/*
 * The accessors of a response whose results are one entry per topic: the
 * `field` array of resp_type, of elem_type entries; `extra` finishes an
 * entry kadmit fills itself (t is the entry).
 */
#define TOPIC_RESULTS(id, resp_type, elem_type, field, resp_init, elem_init, extra)                \
    static void id##_fill(void *elem, ka_slice_t topic, int16_t code, ka_slice_t message)          \
    {                                                                                              \
        elem_type *t = elem;                                                                       \
        elem_init(t);                                                                              \
        t->name = topic;                                                                           \
        t->error_code = code;                                                                      \
        t->error_message = message;                                                                \
        extra;                                                                                     \
    }                                                                                              \
    static ka_slice_t id##_name(const void *elem)                                                  \
    {                                                                                              \
        return ((const elem_type *)elem)->name;                                                    \
    }                                                                                              \
    static int16_t id##_error_code(const void *elem)                                               \
    {                                                                                              \
        return ((const elem_type *)elem)->error_code;                                              \
    }                                                                                              \
    static void id##_init_response(void *resp)                                                     \
    {                                                                                              \
        resp_init(resp);                                                                           \
    }                                                                                              \
    static void *id##_results_of(void *resp, size_t *count)                                        \
    {                                                                                              \
        resp_type *r = resp;                                                                       \
        *count = count_of(r->field.count);                                                         \
        return r->field.items;                                                                     \
    }                                                                                              \
    static void id##_set_results(void *resp, void *items, size_t count)                            \
    {                                                                                              \
        resp_type *r = resp;                                                                       \
        r->field.items = items;                                                                    \
        r->field.count = (int32_t)count;                                                           \
    }                                                                                              \
    static const ka_adm_results_t id##_results = {                                                 \
        .elem_size = sizeof(elem_type),                                                            \
        .init_response = id##_init_response,                                                       \
        .fill = id##_fill,                                                                         \
        .name = id##_name,                                                                         \
        .error_code = id##_error_code,                                                             \
        .items = id##_results_of,                                                                  \
        .set_items = id##_set_results,                                                             \
    }

void *ka_adm_keep_admitted(ka_adm_req_t *req, const void *items, size_t size, size_t *kept,
                           int (*place)(ka_adm_req_t *req, void *elem, const ka_verdict_t *v))
{
    char *out = ka_adm_scratch(req, req->count, size);
    size_t k = 0;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < req->count; i++) {
        const ka_verdict_t *v = &req->verdicts[i];
        char *elem = out + k * size;

        if (v->kind == KA_VERDICT_REJECT)
            continue;
        memcpy(elem, (const char *)items + i * size, size);
        if (v->kind == KA_VERDICT_ADMIT_WITH_ASSIGNMENT && place(req, elem, v) < 0)
            return NULL;
        k++;
    }
    *kept = k;
    return out;
}

/* --- CreateTopics -------------------------------------------------------- */

/* The configs a topic sets, for its rule's config bounds: slices into the frame. */
static int ct_configs(ka_adm_req_t *req, const struct ka_createtopics_request_creatable_topic *t,
                      ka_create_topic_t *in)
{
    size_t n = count_of(t->configs.count);
    ka_topic_config_t *configs = ka_adm_scratch(req, n, sizeof(*configs));

    if (configs == NULL)
        return KA_ENOMEM;
    for (size_t j = 0; j < n; j++)
        configs[j] = (ka_topic_config_t){t->configs.items[j].name, t->configs.items[j].value};
    in->configs = configs;
    in->config_count = n;
    return 0;
}

static int ct_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_createtopics_request *m = req->msg;
    size_t n = count_of(m->topics.count);
    ka_create_topic_t *in;

    (void)ctx;
    if (n == 0 || ka_adm_items_begin(req, n, sizeof(*in)) < 0)
        return n == 0 ? 0 : KA_ENOMEM;
    in = req->inputs;
    for (size_t i = 0; i < n; i++) {
        const struct ka_createtopics_request_creatable_topic *t = &m->topics.items[i];
        size_t rows = count_of(t->assignments.count);
        ka_replica_assignment_t *ra = ka_adm_scratch(req, rows, sizeof(*ra));

        if (ra == NULL)
            return KA_ENOMEM;
        req->names[i] = t->name;
        in[i] = (ka_create_topic_t){.name = t->name,
                                    .num_partitions = t->num_partitions,
                                    .replication_factor = t->replication_factor,
                                    .validate_only = m->validate_only != 0};
        if (rows > 0) {
            in[i].assignments = ra;
            in[i].assignment_count = (int32_t)rows;
        }
        for (size_t j = 0; j < rows; j++)
            ra[j] = (ka_replica_assignment_t){
                t->assignments.items[j].partition_index, t->assignments.items[j].broker_ids.items,
                (int32_t)count_of(t->assignments.items[j].broker_ids.count)};
        if (ct_configs(req, t, &in[i]) < 0)
            return KA_ENOMEM;
    }
    return 0;
}

static int ct_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    return ka_engine_create_topics(dctx, req->inputs, req->count, req->verdicts);
}

/* kadmit's assignment for a placed topic, num_partitions and replication_factor -1. */
static int ct_place(ka_adm_req_t *req, void *elem, const ka_verdict_t *v)
{
    struct ka_createtopics_request_creatable_topic *t = elem;
    struct ka_createtopics_request_creatable_replica_assignment *rows =
        ka_adm_scratch(req, count_of(v->assignment_partitions), sizeof(*rows));
    int32_t rf = v->assignment_replication;

    if (rows == NULL)
        return KA_ENOMEM;
    t->num_partitions = -1;
    t->replication_factor = -1;
    t->assignments.count = v->assignment_partitions;
    t->assignments.items = rows;
    for (int32_t p = 0; p < v->assignment_partitions; p++) {
        ka_createtopics_request_creatable_replica_assignment_init(&rows[p]);
        rows[p].partition_index = p;
        rows[p].broker_ids = (ka_i32_array_t){rf, &v->assignment[(size_t)p * (size_t)rf]};
    }
    return 0;
}

static int ct_subset(ka_adm_req_t *req)
{
    struct ka_createtopics_request *m = req->msg;
    size_t k = 0;
    void *kept = ka_adm_keep_admitted(req, m->topics.items, sizeof(*m->topics.items), &k, ct_place);

    if (kept == NULL)
        return KA_ENOMEM;
    m->topics.items = kept;
    m->topics.count = (int32_t)k;
    return 0;
}

TOPIC_RESULTS(ct, struct ka_createtopics_response,
              struct ka_createtopics_response_creatable_topic_result, topics,
              ka_createtopics_response_init, ka_createtopics_response_creatable_topic_result_init,
              t->configs.count = -1);

/* --- CreatePartitions ---------------------------------------------------- */

static int cp_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_createpartitions_request *m = req->msg;
    size_t n = count_of(m->topics.count);
    ka_create_partitions_t *in;

    (void)ctx;
    if (n == 0 || ka_adm_items_begin(req, n, sizeof(*in)) < 0)
        return n == 0 ? 0 : KA_ENOMEM;
    in = req->inputs;
    for (size_t i = 0; i < n; i++) {
        const struct ka_createpartitions_request_create_partitions_topic *t = &m->topics.items[i];
        size_t rows = count_of(t->assignments.count);
        ka_replica_assignment_t *ra = ka_adm_scratch(req, rows, sizeof(*ra));

        if (ra == NULL)
            return KA_ENOMEM;
        req->names[i] = t->name;
        in[i] = (ka_create_partitions_t){
            .name = t->name, .count = t->count, .validate_only = m->validate_only != 0};
        /* A null array lets the broker place; an empty one is a (bad) explicit list. */
        if (t->assignments.count >= 0) {
            in[i].assignments = ra;
            in[i].assignment_count = t->assignments.count;
        }
        for (size_t j = 0; j < rows; j++)
            ra[j] = (ka_replica_assignment_t){
                (int32_t)j, t->assignments.items[j].broker_ids.items,
                (int32_t)count_of(t->assignments.items[j].broker_ids.count)};
    }
    return 0;
}

static int cp_engine(const ka_decision_context_t *dctx, const void *inputs, size_t count,
                     ka_verdict_t *verdicts)
{
    return ka_engine_create_partitions(dctx, inputs, count, verdicts);
}

/* A partition added to kadmit's ledger would break its one order: refused before the engine. */
static int cp_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    return ka_adm_own_judge(dctx, req, sizeof(ka_create_partitions_t), cp_engine);
}

/* kadmit's assignment for a placed topic: one row per added partition, in order. */
static int cp_place(ka_adm_req_t *req, void *elem, const ka_verdict_t *v)
{
    struct ka_createpartitions_request_create_partitions_topic *t = elem;
    struct ka_createpartitions_request_create_partitions_assignment *rows =
        ka_adm_scratch(req, count_of(v->assignment_partitions), sizeof(*rows));
    int32_t rf = v->assignment_replication;

    if (rows == NULL)
        return KA_ENOMEM;
    t->assignments.count = v->assignment_partitions;
    t->assignments.items = rows;
    for (int32_t p = 0; p < v->assignment_partitions; p++) {
        ka_createpartitions_request_create_partitions_assignment_init(&rows[p]);
        rows[p].broker_ids = (ka_i32_array_t){rf, &v->assignment[(size_t)p * (size_t)rf]};
    }
    return 0;
}

static int cp_subset(ka_adm_req_t *req)
{
    struct ka_createpartitions_request *m = req->msg;
    size_t k = 0;
    void *kept = ka_adm_keep_admitted(req, m->topics.items, sizeof(*m->topics.items), &k, cp_place);

    if (kept == NULL)
        return KA_ENOMEM;
    m->topics.items = kept;
    m->topics.count = (int32_t)k;
    return 0;
}

TOPIC_RESULTS(cp, struct ka_createpartitions_response,
              struct ka_createpartitions_response_create_partitions_topic_result, results,
              ka_createpartitions_response_init,
              ka_createpartitions_response_create_partitions_topic_result_init, (void)t);

/* --- AlterPartitionReassignments ------------------------------------------ */

/* One item per partition, topics flattened in request order. */
static int apr_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    static const int32_t empty_target[1]; /* an empty target, not a cancel */
    const struct ka_alterpartitionreassignments_request *m = req->msg;
    ka_reassignment_t *in;
    size_t n = 0, k = 0;

    (void)ctx;
    for (int32_t i = 0; i < m->topics.count; i++)
        n += count_of(m->topics.items[i].partitions.count);
    if (n == 0 || ka_adm_items_begin(req, n, sizeof(*in)) < 0)
        return n == 0 ? 0 : KA_ENOMEM;
    in = req->inputs;
    for (int32_t i = 0; i < m->topics.count; i++) {
        const struct ka_alterpartitionreassignments_request_reassignable_topic *t =
            &m->topics.items[i];

        for (int32_t j = 0; j < t->partitions.count; j++, k++) {
            const struct ka_alterpartitionreassignments_request_reassignable_partition *p =
                &t->partitions.items[j];

            req->names[k] = t->name;
            req->partitions[k] = p->partition_index;
            in[k] =
                (ka_reassignment_t){.topic = t->name,
                                    .partition = p->partition_index,
                                    .replicas = p->replicas.count >= 0 ? p->replicas.items : NULL,
                                    .replica_count = (int32_t)count_of(p->replicas.count)};
            if (p->replicas.count == 0)
                in[k].replicas = empty_target;
        }
    }
    return 0;
}

static int apr_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    return ka_engine_alter_reassignments(dctx, req->inputs, req->count, req->verdicts);
}

/* Keeps the admitted partitions, and the topics that still have one (or had none). */
static int apr_subset(ka_adm_req_t *req)
{
    struct ka_alterpartitionreassignments_request *m = req->msg;
    size_t nt = count_of(m->topics.count), mt = 0, mp = 0, k = 0;
    struct ka_alterpartitionreassignments_request_reassignable_topic *kt =
        ka_adm_scratch(req, nt, sizeof(*kt));
    struct ka_alterpartitionreassignments_request_reassignable_partition *kp =
        ka_adm_scratch(req, req->count, sizeof(*kp));

    if (kt == NULL || kp == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < nt; i++) {
        const struct ka_alterpartitionreassignments_request_reassignable_topic *t =
            &m->topics.items[i];
        size_t first = mp;

        for (int32_t j = 0; j < t->partitions.count; j++, k++)
            if (req->verdicts[k].kind != KA_VERDICT_REJECT)
                kp[mp++] = t->partitions.items[j];
        if (mp > first || t->partitions.count == 0) {
            kt[mt] = *t;
            kt[mt].partitions.items = &kp[first];
            kt[mt].partitions.count = (int32_t)(mp - first);
            mt++;
        }
    }
    m->topics.items = kt;
    m->topics.count = (int32_t)mt;
    return 0;
}

/* --- Metadata auto-creation ---------------------------------------------- */

/* One item per named topic, but only when auto-creation could happen. */
static int md_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_metadata_request *m = req->msg;
    bool absent = ctx->view == NULL;
    ka_slice_t *in;
    size_t n = 0, k = 0;

    if (!m->allow_auto_topic_creation || m->topics.count <= 0)
        return 0;
    /* Fast path: every named topic is already in the view. */
    for (int32_t i = 0; i < m->topics.count; i++) {
        ka_slice_t name = m->topics.items[i].name;

        if (name.len < 0)
            continue;
        n++;
        if (!absent && ka_cluster_find_topic(ctx->view, name) == NULL)
            absent = true;
    }
    if (ctx->view != NULL && !ka_cluster_broker_defaults(ctx->view)->auto_create_topics_enable)
        return 0;
    if (!absent || n == 0) {
        /* Every topic is listed: the flag can only re-create one deleted a moment ago, which
         * the view cannot show yet. Cleared, it changes nothing for topics that exist. */
        req->rewrite_unjudged = n > 0;
        return 0;
    }
    if (ka_adm_items_begin(req, n, sizeof(*in)) < 0)
        return KA_ENOMEM;
    in = req->inputs;
    for (int32_t i = 0; i < m->topics.count; i++) {
        if (m->topics.items[i].name.len < 0)
            continue;
        in[k] = req->names[k] = m->topics.items[i].name;
        k++;
    }
    return 0;
}

static int md_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    return ka_engine_auto_create(dctx, req->inputs, req->count, true, req->verdicts);
}

/*
 * A denied auto-creation forwards the request with the flag cleared. Before
 * v4 there is no flag: those versions auto-create whenever the broker
 * allows it, so the request goes on as v4 (same request header, same topic
 * list) and the broker's answer is re-encoded at the client's version
 * (ka_adm_response). v0's empty list means every topic, v4's none, but an
 * empty list has no item, so it is never rewritten.
 */
static int md_subset(ka_adm_req_t *req)
{
    struct ka_metadata_request *m = req->msg;

    m->allow_auto_topic_creation = 0;
    if (req->hdr.request_api_version < KA_ADM_METADATA_FLAG_VERSION)
        req->hdr.request_api_version = KA_ADM_METADATA_FLAG_VERSION;
    return 0;
}

/* Only a request sent on at another version has something to do: the
 * response is re-encoded, fields the client's version lacks left out. */
static int md_merge(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp, ka_arena_t *arena,
                    bool *rewrite)
{
    const struct ka_metadata_response *m = resp;

    (void)d;
    (void)arena;
    /* Each auto-created topic's answer, so that a refusal (the principal may not create it)
     * ends its reservation and a creation under way keeps it. */
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];

        it->broker_error = -1;
        for (int32_t t = 0; t < m->topics.count; t++)
            if (ka_adm_slice_eq(m->topics.items[t].name, ka_adm_item_topic(it))) {
                it->broker_error = m->topics.items[t].error_code;
                break;
            }
    }
    *rewrite = p->client_version != p->api_version;
    return 0;
}

/* --- StreamsGroupHeartbeat: a streams group's internal topics -------------- */

/*
 * A heartbeat that carries a topology (KIP-1071) makes the group
 * coordinator create every repartition and changelog topic of it that does
 * not exist, placed by the broker. Each is an item, judged like an
 * auto-created topic with its own counts (ka_engine_broker_creates).
 *
 * The counts follow the coordinator: a subtopology has as many tasks as its
 * widest input (source topics from the view, repartition topics with a
 * fixed count, and repartition topics written by another subtopology, which
 * take that one's task count); its changelog topics have one partition per
 * task. A topic whose count cannot be known yet (a source topic missing
 * from the view) is not created by the broker either, which answers
 * MISSING_SOURCE_TOPICS; it is judged when a later topology names it again.
 */
static int32_t sh_source_width(const ka_adm_ctx_t *ctx,
                               const struct ka_streamsgroupheartbeat_request_subtopology *s)
{
    int32_t width = 0;

    for (int32_t i = 0; ctx->view != NULL && i < s->source_topics.count; i++) {
        const ka_cluster_topic_t *t = ka_cluster_find_topic(ctx->view, s->source_topics.items[i]);
        int32_t n = t != NULL ? ka_cluster_topic_partition_count(t) : 0;

        if (t == NULL)
            return -1; /* the coordinator waits for every source topic */
        width = n > width ? n : width;
    }
    return width;
}

/* The task count of the subtopology that writes repartition topic `name`, or 0. */
static int32_t sh_writer_width(const struct ka_streamsgroupheartbeat_request_topology *t,
                               const int32_t *width, ka_slice_t name)
{
    for (int32_t i = 0; i < t->subtopologies.count; i++) {
        const ka_slice_array_t *sinks = &t->subtopologies.items[i].repartition_sink_topics;

        for (int32_t j = 0; j < sinks->count; j++)
            if (width[i] > 0 && ka_adm_slice_eq(sinks->items[j], name))
                return width[i];
    }
    return 0;
}

/* Each subtopology's task count into width (0: not known yet). */
static void sh_widths(const ka_adm_ctx_t *ctx,
                      const struct ka_streamsgroupheartbeat_request_topology *t, int32_t *width)
{
    size_t n = count_of(t->subtopologies.count);

    /* -1 while a source topic is missing: such a subtopology stays unknown. */
    for (size_t i = 0; i < n; i++)
        width[i] = sh_source_width(ctx, &t->subtopologies.items[i]);
    /* Repartition topics pass counts downstream; n rounds reach every chain. */
    for (size_t round = 0; round < n; round++) {
        for (size_t i = 0; i < n; i++) {
            const struct ka_streamsgroupheartbeat_request_subtopology *s =
                &t->subtopologies.items[i];

            for (int32_t j = 0; width[i] >= 0 && j < s->repartition_source_topics.count; j++) {
                const struct ka_streamsgroupheartbeat_request_topic_info *r =
                    &s->repartition_source_topics.items[j];
                int32_t p = r->partitions > 0 ? r->partitions : sh_writer_width(t, width, r->name);

                width[i] = p > width[i] ? p : width[i];
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        width[i] = width[i] < 0 ? 0 : width[i];
}

static void sh_add(ka_adm_req_t *req, size_t *k,
                   const struct ka_streamsgroupheartbeat_request_topic_info *ti, int32_t partitions)
{
    ka_create_topic_t *in = req->inputs;

    if (partitions <= 0)
        return;
    req->names[*k] = ti->name;
    in[*k] = (ka_create_topic_t){.name = ti->name,
                                 .num_partitions = partitions,
                                 .replication_factor =
                                     ti->replication_factor > 0 ? ti->replication_factor : -1};
    (*k)++;
}

static int sh_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx)
{
    const struct ka_streamsgroupheartbeat_request *m = req->msg;
    const struct ka_streamsgroupheartbeat_request_topology *t = m->topology;
    size_t n = 0, k = 0, subs;
    int32_t *width;

    if (t == NULL || t->subtopologies.count <= 0)
        return 0;
    subs = count_of(t->subtopologies.count);
    for (size_t i = 0; i < subs; i++)
        n += count_of(t->subtopologies.items[i].state_changelog_topics.count) +
             count_of(t->subtopologies.items[i].repartition_source_topics.count);
    if (n == 0)
        return 0;
    if ((width = ka_adm_scratch(req, subs, sizeof(*width))) == NULL ||
        ka_adm_items_begin(req, n, sizeof(ka_create_topic_t)) < 0)
        return KA_ENOMEM;
    sh_widths(ctx, t, width);
    for (size_t i = 0; i < subs; i++) {
        const struct ka_streamsgroupheartbeat_request_subtopology *s = &t->subtopologies.items[i];

        for (int32_t j = 0; width[i] > 0 && j < s->repartition_source_topics.count; j++) {
            const struct ka_streamsgroupheartbeat_request_topic_info *r =
                &s->repartition_source_topics.items[j];

            sh_add(req, &k, r,
                   r->partitions > 0 ? r->partitions : sh_writer_width(t, width, r->name));
        }
        for (int32_t j = 0; j < s->state_changelog_topics.count; j++)
            sh_add(req, &k, &s->state_changelog_topics.items[j], width[i]);
    }
    req->count = k;
    return 0;
}

static int sh_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req)
{
    return ka_engine_broker_creates(dctx, req->inputs, req->count, req->verdicts);
}

/* The heartbeat answered with the first rejection: the member learns why its
 * group cannot start, and nothing reaches the coordinator. */
static int sh_answer(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p, const ka_adm_top_t *top,
                     void *resp, ka_arena_t *arena)
{
    struct ka_streamsgroupheartbeat_response *r = resp;

    (void)d;
    (void)arena;
    ka_streamsgroupheartbeat_response_init(r);
    r->error_code = top->error_code;
    r->error_message = top->error_message;
    for (size_t i = 0; top->error_code == 0 && i < p->count; i++) {
        if (p->items[i].local) {
            r->error_code = p->items[i].error_code;
            r->error_message = ka_adm_item_message(&p->items[i]);
            break;
        }
    }
    return 0;
}

/* --- DeleteTopics, DeleteRecords: protected topics (ka_admission_delete.c) -- */

TOPIC_RESULTS(dt, struct ka_deletetopics_response,
              struct ka_deletetopics_response_deletable_topic_result, responses,
              ka_deletetopics_response_init, ka_deletetopics_response_deletable_topic_result_init,
              (void)t);

/* --- the table ----------------------------------------------------------- */

/*
 * Indexed by enum ka_adm_api. The api keys come from the generated codecs'
 * headers: this table is the one place that maps them to the path.
 */
static const ka_adm_api_desc_t descs[KA_ADM_API_COUNT] = {
    [KA_ADM_CREATE_TOPICS] = {.api = KA_ADM_CREATE_TOPICS,
                              .api_key = KA_CREATETOPICS_REQUEST_API_KEY,
                              .items = ct_items,
                              .judge = ct_judge,
                              .subset = ct_subset,
                              .answer = ka_adm_answer_topics,
                              .merge = ka_adm_merge_topics,
                              .results = &ct_results},
    [KA_ADM_CREATE_PARTITIONS] = {.api = KA_ADM_CREATE_PARTITIONS,
                                  .api_key = KA_CREATEPARTITIONS_REQUEST_API_KEY,
                                  .items = cp_items,
                                  .judge = cp_judge,
                                  .subset = cp_subset,
                                  .answer = ka_adm_answer_topics,
                                  .merge = ka_adm_merge_topics,
                                  .results = &cp_results},
    [KA_ADM_REASSIGN] = {.api = KA_ADM_REASSIGN,
                         .api_key = KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY,
                         .answers_decode_errors = true,
                         .items = apr_items,
                         .judge = apr_judge,
                         .subset = apr_subset,
                         .answer = ka_adm_answer_partitions,
                         .merge = ka_adm_merge_partitions},
    /* Every version is judged: v0-3 auto-create with no flag (md_subset). */
    [KA_ADM_METADATA] = {.api = KA_ADM_METADATA,
                         .api_key = KA_METADATA_REQUEST_API_KEY,
                         .tolerates_trailing = true,
                         .whole_request = true,
                         .items = md_items,
                         .judge = md_judge,
                         .subset = md_subset,
                         .merge = md_merge},
    /* No subset: a rejected internal topic refuses the whole heartbeat. */
    [KA_ADM_STREAMS_HEARTBEAT] = {.api = KA_ADM_STREAMS_HEARTBEAT,
                                  .api_key = KA_STREAMSGROUPHEARTBEAT_REQUEST_API_KEY,
                                  .answers_decode_errors = true,
                                  .whole_request = true,
                                  .items = sh_items,
                                  .judge = sh_judge,
                                  .answer = sh_answer},
    [KA_ADM_DELETE_TOPICS] = {.api = KA_ADM_DELETE_TOPICS,
                              .api_key = KA_DELETETOPICS_REQUEST_API_KEY,
                              .items = ka_adm_dt_items,
                              .judge = ka_adm_protect_judge,
                              .judged = ka_adm_protect_audit,
                              .subset = ka_adm_dt_subset,
                              .answer = ka_adm_dt_answer,
                              .merge = ka_adm_dt_merge,
                              .results = &dt_results},
    [KA_ADM_DELETE_RECORDS] = {.api = KA_ADM_DELETE_RECORDS,
                               .api_key = KA_DELETERECORDS_REQUEST_API_KEY,
                               .items = ka_adm_dr_items,
                               .judge = ka_adm_protect_judge,
                               .judged = ka_adm_protect_audit,
                               .subset = ka_adm_dr_subset,
                               .answer = ka_adm_dr_answer,
                               .merge = ka_adm_dr_merge},
};

const ka_adm_api_desc_t *ka_adm_desc_find(int16_t api_key)
{
    for (size_t i = 0; i < KA_ADM_API_COUNT; i++)
        if (descs[i].api_key == api_key)
            return &descs[i];
    return NULL;
}
