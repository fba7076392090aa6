/*
 * ka_admission_configs.c: IncrementalAlterConfigs and AlterConfigs (see
 * ka_admission_configs.h).
 *
 * Both APIs are read into one view (resources, each with its configs and
 * an operation: AlterConfigs' is always SET), planned once, cut down once,
 * and written back into the API's own struct through its accessor pair, so
 * the path is written once. Their responses share one shape as well.
 */
#include "ka_admission_configs_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_SET = KA_CFG_OP_SET,
    OP_DELETE = KA_CFG_OP_DELETE,
    OP_APPEND = KA_CFG_OP_APPEND,
    OP_SUBTRACT = KA_CFG_OP_SUBTRACT
};

static const char *const key_names[KA_CFG_KEY_COUNT] = {KA_CFG_MAX_BROKER_PARTITIONS,
                                                        KA_CFG_MAX_PARTITIONS};

const char *ka_cfg_key_name(enum ka_cfg_key key)
{
    return key < KA_CFG_KEY_COUNT ? key_names[key] : "?";
}

bool ka_cfg_api_handled(int16_t api_key)
{
    return api_key == KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY ||
           api_key == KA_ALTERCONFIGS_REQUEST_API_KEY ||
           api_key == KA_DESCRIBECONFIGS_REQUEST_API_KEY;
}

int ka_cfg_key_of(ka_slice_t name)
{
    for (int k = 0; k < KA_CFG_KEY_COUNT; k++)
        if (name.len == (int32_t)strlen(key_names[k]) &&
            memcmp(name.ptr, key_names[k], (size_t)name.len) == 0)
            return k;
    return -1;
}

int32_t ka_cfg_broker_of(ka_slice_t name)
{
    int64_t v = 0;

    if (name.len == 0)
        return KA_CFG_DEFAULT_ENTITY;
    if (name.len < 0 || name.len > 10)
        return -2;
    for (int32_t i = 0; i < name.len; i++) {
        if (name.ptr[i] < '0' || name.ptr[i] > '9')
            return -2;
        v = v * 10 + (name.ptr[i] - '0');
    }
    return v > INT32_MAX ? -2 : (int32_t)v;
}

ka_cfg_pending_t *ka_cfg_pending_new(int16_t api_key, int16_t api_version, size_t n)
{
    ka_cfg_pending_t *p = calloc(1, sizeof(*p));

    if (p == NULL || (p->res = calloc(n ? n : 1, sizeof(*p->res))) == NULL) {
        free(p);
        return NULL;
    }
    p->api_key = api_key;
    p->api_version = api_version;
    p->count = n;
    return p;
}

void ka_cfg_pending_free(ka_cfg_pending_t *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->res[i].name);
        free(p->res[i].message);
        free(p->res[i].rule);
        free(p->res[i].protect_message);
    }
    free(p->res);
    free(p);
}

void ka_cfg_outcome_release(ka_cfg_outcome_t *out)
{
    free(out->bytes);
    out->bytes = NULL;
    ka_cfg_pending_free(out->pending);
    out->pending = NULL;
}

int ka_cfg_decode_request(const uint8_t *frame, size_t len, ka_arena_t *arena,
                          struct ka_request_header *hdr, size_t *body_off, void **msg, char *why,
                          size_t whylen)
{
    const struct ka_codec *codec;
    ka_reader_t r;

    if (len < 8) {
        snprintf(why, whylen, "frame too short");
        return KA_EUNDERFLOW;
    }
    ka_reader_init(&r, frame + 4, len - 4);
    if (ka_request_header_read(&r, hdr, NULL) < 0) {
        snprintf(why, whylen, "request header does not decode at byte %zu", r.err_off + 4);
        return KA_EINVALID;
    }
    codec = ka_codec_find(hdr->request_api_key, KA_REQUEST);
    if (codec == NULL || hdr->request_api_version < ka_decoded_min_version(hdr->request_api_key) ||
        hdr->request_api_version > ka_decoded_max_version(hdr->request_api_key)) {
        snprintf(why, whylen, "%s v%d is not a version kadmit decodes",
                 ka_api_name(hdr->request_api_key), hdr->request_api_version);
        return KA_EUNSUPPORTED;
    }
    *body_off = 4 + r.off;
    if ((*msg = ka_arena_alloc(arena, codec->struct_size)) == NULL)
        return KA_ENOMEM;
    ka_reader_init(&r, frame + *body_off, len - *body_off);
    if (codec->decode(&r, hdr->request_api_version, arena, *msg) < 0) {
        ka_decode_error_format(why, whylen, hdr->request_api_key, hdr->request_api_version, &r);
        return r.err != 0 ? r.err : KA_EINVALID;
    }
    return 0;
}

int ka_cfg_decode_response(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                           ka_arena_t *arena, struct ka_response_header *rh, void **msg)
{
    const struct ka_codec *codec = ka_codec_find(p->api_key, KA_RESPONSE);
    ka_reader_t r;
    int rc;

    if (len < 8 || codec == NULL)
        return KA_EUNDERFLOW;
    ka_reader_init(&r, frame + 4, len - 4);
    rc = ka_response_header_decode(&r, ka_response_header_version(p->api_key, p->api_version), rh);
    if (rc < 0)
        return rc;
    if ((*msg = ka_arena_alloc(arena, codec->struct_size)) == NULL)
        return KA_ENOMEM;
    return codec->decode(&r, p->api_version, arena, *msg);
}

/* --- one view of both alter APIs ------------------------------------------ */

typedef struct alter_view {
    size_t count;
    cfg_res_view_t *res;
} alter_view_t;

typedef struct cfg_result {
    int16_t error_code;
    ka_slice_t error_message;
    int8_t type;
    ka_slice_t name;
    ka_slice_t tags;
} cfg_result_t;

static size_t count_of(int32_t n)
{
    return n > 0 ? (size_t)n : 0;
}

/*
 * The accessors of one alter API: its request read into the view and the
 * (cut-down) view written back, its response's results read and written.
 * GET_OP/SET_OP carry the operation, which only IncrementalAlterConfigs has.
 */
#define ALTER_ACCESSORS(id, msg_t, res_t, cfg_t, resp_t, result_t, GET_OP, SET_OP)                 \
    static int id##_read(const void *msg, ka_arena_t *a, alter_view_t *v)                          \
    {                                                                                              \
        const msg_t *m = msg;                                                                      \
        v->count = count_of(m->resources.count);                                                   \
        if ((v->res = ka_cfg_scratch(a, v->count, sizeof(*v->res))) == NULL)                       \
            return KA_ENOMEM;                                                                      \
        for (size_t i = 0; i < v->count; i++) {                                                    \
            const res_t *r = &m->resources.items[i];                                               \
            cfg_res_view_t *rv = &v->res[i];                                                       \
            *rv = (cfg_res_view_t){r->resource_type, r->resource_name, r->tagged_fields,           \
                                   count_of(r->configs.count), NULL};                              \
            if ((rv->configs = ka_cfg_scratch(a, rv->count, sizeof(*rv->configs))) == NULL)        \
                return KA_ENOMEM;                                                                  \
            for (size_t j = 0; j < rv->count; j++) {                                               \
                const cfg_t *c = &r->configs.items[j];                                             \
                rv->configs[j] = (cfg_entry_t){c->name, GET_OP(c), c->value, c->tagged_fields};    \
            }                                                                                      \
        }                                                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    static int id##_write(void *msg, const alter_view_t *v, ka_arena_t *a)                         \
    {                                                                                              \
        msg_t *m = msg;                                                                            \
        res_t *rs = ka_cfg_scratch(a, v->count, sizeof(*rs));                                      \
        if (rs == NULL)                                                                            \
            return KA_ENOMEM;                                                                      \
        for (size_t i = 0; i < v->count; i++) {                                                    \
            const cfg_res_view_t *rv = &v->res[i];                                                 \
            cfg_t *cs = ka_cfg_scratch(a, rv->count, sizeof(*cs));                                 \
            if (cs == NULL)                                                                        \
                return KA_ENOMEM;                                                                  \
            for (size_t j = 0; j < rv->count; j++) {                                               \
                cfg_t *c = &cs[j];                                                                 \
                c->name = rv->configs[j].name;                                                     \
                c->value = rv->configs[j].value;                                                   \
                c->tagged_fields = rv->configs[j].tags;                                            \
                SET_OP(c, rv->configs[j].op);                                                      \
            }                                                                                      \
            rs[i].resource_type = rv->type;                                                        \
            rs[i].resource_name = rv->name;                                                        \
            rs[i].tagged_fields = rv->tags;                                                        \
            rs[i].configs.count = (int32_t)rv->count;                                              \
            rs[i].configs.items = cs;                                                              \
        }                                                                                          \
        m->resources.count = (int32_t)v->count;                                                    \
        m->resources.items = rs;                                                                   \
        return 0;                                                                                  \
    }                                                                                              \
    static int id##_results_read(const void *resp, ka_arena_t *a, cfg_result_t **out, size_t *n)   \
    {                                                                                              \
        const resp_t *r = resp;                                                                    \
        *n = count_of(r->responses.count);                                                         \
        if ((*out = ka_cfg_scratch(a, *n, sizeof(**out))) == NULL)                                 \
            return KA_ENOMEM;                                                                      \
        for (size_t i = 0; i < *n; i++) {                                                          \
            const result_t *e = &r->responses.items[i];                                            \
            (*out)[i] = (cfg_result_t){e->error_code, e->error_message, e->resource_type,          \
                                       e->resource_name, e->tagged_fields};                        \
        }                                                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    static int id##_results_write(void *resp, const cfg_result_t *in, size_t n, ka_arena_t *a)     \
    {                                                                                              \
        resp_t *r = resp;                                                                          \
        result_t *es = ka_cfg_scratch(a, n, sizeof(*es));                                          \
        if (es == NULL)                                                                            \
            return KA_ENOMEM;                                                                      \
        for (size_t i = 0; i < n; i++) {                                                           \
            es[i].error_code = in[i].error_code;                                                   \
            es[i].error_message = in[i].error_message;                                             \
            es[i].resource_type = in[i].type;                                                      \
            es[i].resource_name = in[i].name;                                                      \
            es[i].tagged_fields = in[i].tags;                                                      \
        }                                                                                          \
        r->responses.count = (int32_t)n;                                                           \
        r->responses.items = es;                                                                   \
        return 0;                                                                                  \
    }

#define INCREMENTAL_OP(c)        ((c)->config_operation)
#define INCREMENTAL_SET_OP(c, o) ((c)->config_operation = (o))
#define LEGACY_OP(c)             ((void)(c), (int8_t)OP_SET)
#define LEGACY_SET_OP(c, o)      ((void)(c), (void)(o))

ALTER_ACCESSORS(ia, struct ka_incrementalalterconfigs_request,
                struct ka_incrementalalterconfigs_request_alter_configs_resource,
                struct ka_incrementalalterconfigs_request_alterable_config,
                struct ka_incrementalalterconfigs_response,
                struct ka_incrementalalterconfigs_response_alter_configs_resource_response,
                INCREMENTAL_OP, INCREMENTAL_SET_OP)
ALTER_ACCESSORS(ac, struct ka_alterconfigs_request,
                struct ka_alterconfigs_request_alter_configs_resource,
                struct ka_alterconfigs_request_alterable_config, struct ka_alterconfigs_response,
                struct ka_alterconfigs_response_alter_configs_resource_response, LEGACY_OP,
                LEGACY_SET_OP)

typedef struct alter_api {
    int16_t api_key;
    /* AlterConfigs replaces a resource's whole config: a key it does not
     * list is deleted. */
    bool replaces_all;
    int (*read)(const void *msg, ka_arena_t *a, alter_view_t *v);
    int (*write)(void *msg, const alter_view_t *v, ka_arena_t *a);
    int (*results_read)(const void *resp, ka_arena_t *a, cfg_result_t **out, size_t *n);
    int (*results_write)(void *resp, const cfg_result_t *in, size_t n, ka_arena_t *a);
    void (*response_init)(void *resp);
} alter_api_t;

static void ia_response_init(void *resp)
{
    ka_incrementalalterconfigs_response_init(resp);
}

static void ac_response_init(void *resp)
{
    ka_alterconfigs_response_init(resp);
}

static const alter_api_t alter_apis[] = {
    {KA_INCREMENTALALTERCONFIGS_REQUEST_API_KEY, false, ia_read, ia_write, ia_results_read,
     ia_results_write, ia_response_init},
    {KA_ALTERCONFIGS_REQUEST_API_KEY, true, ac_read, ac_write, ac_results_read, ac_results_write,
     ac_response_init},
};

static const alter_api_t *alter_api_find(int16_t api_key)
{
    for (size_t i = 0; i < sizeof(alter_apis) / sizeof(alter_apis[0]); i++)
        if (alter_apis[i].api_key == api_key)
            return &alter_apis[i];
    return NULL;
}

/* --- planning one resource ------------------------------------------------ */

/* Refuses the resource with a sentence; the first refusal wins. */
static int refuse(ka_cfg_resource_t *res, int16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(ka_cfg_resource_t *res, int16_t code, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    if (res->local)
        return 0;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    res->local = true;
    res->ours = false;
    res->error_code = code;
    if ((res->message = strdup(text)) == NULL)
        return KA_ENOMEM;
    return 0;
}

/* A value as Kafka would parse an int: optional sign, digits, spaces around. */
static int parse_limit(ka_slice_t value, int64_t *out)
{
    int32_t i = 0, end = value.len;
    int64_t v = 0;
    bool negative = false;

    if (value.len < 0)
        return -1;
    while (i < end && value.ptr[i] == ' ')
        i++;
    while (end > i && value.ptr[end - 1] == ' ')
        end--;
    if (i < end && (value.ptr[i] == '+' || value.ptr[i] == '-'))
        negative = value.ptr[i++] == '-';
    if (i == end)
        return -1;
    for (; i < end; i++) {
        if (value.ptr[i] < '0' || value.ptr[i] > '9')
            return -1;
        if (v <= (int64_t)INT32_MAX + 1)
            v = v * 10 + (value.ptr[i] - '0');
    }
    *out = negative ? -v : v;
    return 0;
}

static bool broker_known(const ka_cfg_ctx_t *ctx, int32_t id)
{
    if (ctx->broker_ids == NULL || id == KA_CFG_DEFAULT_ENTITY)
        return true;
    for (size_t i = 0; i < ctx->broker_count; i++)
        if (ctx->broker_ids[i] == id)
            return true;
    return false;
}

/* The known brokers as "1, 2, 3" for a message. */
static void list_brokers(const ka_cfg_ctx_t *ctx, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < ctx->broker_count && n + 16 < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? ", " : "", (int)ctx->broker_ids[i]);
}

/* One of kadmit's keys in a resource: a change, or a refusal. */
static int plan_config(const ka_cfg_ctx_t *ctx, ka_cfg_resource_t *res, enum ka_cfg_key key,
                       const cfg_entry_t *c)
{
    const char *name = key_names[key];
    ka_cfg_change_t ch = {.broker_id = res->broker_id, .key = key};
    int64_t v = 0;

    for (size_t i = 0; i < res->nchanges; i++)
        if (res->changes[i].key == key)
            return refuse(res, KA_KAFKA_ERR_INVALID_REQUEST,
                          "the config %s appears more than once for this resource", name);
    if (key == KA_CFG_KEY_MAX_PARTITIONS && res->broker_id != KA_CFG_DEFAULT_ENTITY)
        return refuse(res, KA_KAFKA_ERR_INVALID_CONFIG,
                      "%s limits the whole cluster: set it on the default broker entity "
                      "(kafka-configs --entity-type brokers --entity-default), not on broker %d",
                      name, (int)res->broker_id);
    if (c->op == OP_APPEND || c->op == OP_SUBTRACT)
        return refuse(res, KA_KAFKA_ERR_INVALID_CONFIG,
                      "%s is an integer, not a list: %s is not allowed for it; use SET or DELETE",
                      name, c->op == OP_APPEND ? "APPEND" : "SUBTRACT");
    if (c->op != OP_SET && c->op != OP_DELETE)
        return refuse(res, KA_KAFKA_ERR_INVALID_REQUEST, "unknown config operation %d for %s",
                      c->op, name);
    if (c->op == OP_DELETE) {
        ch.remove = true;
    } else if (parse_limit(c->value, &v) < 0 || v < 0 || v > INT32_MAX) {
        int32_t n = c->value.len > 40 ? 40 : c->value.len;

        return refuse(res, KA_KAFKA_ERR_INVALID_CONFIG,
                      "%s must be an integer between 0 and 2147483647, got %s%.*s%s", name,
                      c->value.len < 0 ? "null" : "\"", n > 0 ? (int)n : 0,
                      n > 0 ? (const char *)c->value.ptr : "", c->value.len < 0 ? "" : "\"");
    }
    if (!broker_known(ctx, res->broker_id)) {
        char ids[256];

        list_brokers(ctx, ids, sizeof(ids));
        return refuse(res, KA_KAFKA_ERR_INVALID_CONFIG,
                      "broker %d is not in the cluster, so %s cannot be set for it; the brokers "
                      "are %s, and the default entity applies to every broker",
                      (int)res->broker_id, name, ids);
    }
    ch.value = (int32_t)v;
    res->changes[res->nchanges++] = ch;
    return 0;
}

/* AlterConfigs: kadmit's keys the resource does not list are deleted. */
static void plan_replace_all(ka_cfg_resource_t *res)
{
    for (int k = 0; k < KA_CFG_KEY_COUNT && !res->local; k++) {
        bool listed = false;

        if (k == KA_CFG_KEY_MAX_PARTITIONS && res->broker_id != KA_CFG_DEFAULT_ENTITY)
            continue;
        for (size_t i = 0; i < res->nchanges; i++)
            listed |= res->changes[i].key == (enum ka_cfg_key)k;
        if (!listed)
            res->changes[res->nchanges++] =
                (ka_cfg_change_t){res->broker_id, (enum ka_cfg_key)k, true, 0};
    }
}

static int plan_resource(const ka_cfg_ctx_t *ctx, const alter_api_t *api, const cfg_res_view_t *rv,
                         bool validate_only, ka_cfg_resource_t *res)
{
    bool has_key = false;
    int rc = 0;

    res->type = rv->type;
    res->name_len = rv->name.len > 0 ? rv->name.len : 0;
    if ((res->name = ka_adm_dup_slice(rv->name)) == NULL)
        return KA_ENOMEM;
    for (size_t j = 0; j < rv->count; j++)
        has_key |= ka_cfg_key_of(rv->configs[j].name) >= 0;
    if (rv->type == KA_CFG_RESOURCE_TOPIC) {
        rc = ka_cfg_protect_topic(ctx, api->api_key, api->replaces_all, rv, res);
        return rc < 0 || res->local ? rc : ka_cfg_plan_topic(ctx, api->replaces_all, rv, res);
    }
    if (rv->type != KA_CFG_RESOURCE_BROKER)
        return 0;
    res->broker_id = ka_cfg_broker_of(rv->name);
    if (res->broker_id < KA_CFG_DEFAULT_ENTITY)
        return has_key ? refuse(res, KA_KAFKA_ERR_INVALID_REQUEST,
                                "a broker resource is named by a broker id, or \"\" for the "
                                "default entity; got \"%.40s\"",
                                res->name)
                       : 0; /* no key of kadmit's: the broker answers */
    if (!has_key && !api->replaces_all)
        return 0;
    res->ours = true;
    for (size_t j = 0; j < rv->count && rc == 0 && !res->local; j++) {
        int k = ka_cfg_key_of(rv->configs[j].name);

        if (k >= 0)
            rc = plan_config(ctx, res, (enum ka_cfg_key)k, &rv->configs[j]);
    }
    if (rc == 0 && api->replaces_all)
        plan_replace_all(res);
    if (rc == 0 && !res->local && has_key && !validate_only && ctx->store_problem != NULL)
        rc = refuse(res, KA_KAFKA_ERR_UNKNOWN_SERVER_ERROR,
                    "kadmit cannot change its limits now, so nothing was changed: %.400s",
                    ctx->store_problem);
    return rc;
}

/* The view of what goes to the broker: refused resources out, kadmit's keys out. */
static int cut_view(const alter_view_t *v, const ka_cfg_pending_t *p, ka_arena_t *a,
                    alter_view_t *out)
{
    size_t k = 0;

    if ((out->res = ka_cfg_scratch(a, v->count, sizeof(*out->res))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < v->count; i++) {
        const cfg_res_view_t *rv = &v->res[i];
        cfg_res_view_t *o = &out->res[k];

        if (p->res[i].local)
            continue;
        *o = *rv;
        o->count = 0;
        if ((o->configs = ka_cfg_scratch(a, rv->count, sizeof(*o->configs))) == NULL)
            return KA_ENOMEM;
        for (size_t j = 0; j < rv->count; j++)
            if (!p->res[i].ours || ka_cfg_key_of(rv->configs[j].name) < 0)
                o->configs[o->count++] = rv->configs[j];
        k++;
    }
    out->count = k;
    return 0;
}

/* --- the request ------------------------------------------------------------ */

static int encode_request(const struct ka_request_header *hdr, const uint8_t *frame,
                          size_t body_off, const void *msg, size_t max, uint8_t **out,
                          size_t *out_len)
{
    ka_adm_req_t req = {.codec = ka_codec_find(hdr->request_api_key, KA_REQUEST),
                        .frame = (uint8_t *)frame,
                        .body_off = body_off,
                        .hdr = *hdr,
                        .msg = (void *)msg};

    return ka_adm_encode_request(&req, max, out, out_len);
}

/* Every resource refused: the answer, built from scratch. */
static int answer_all(const alter_api_t *api, const ka_cfg_pending_t *p,
                      const struct ka_request_header *hdr, size_t max, ka_arena_t *a,
                      ka_cfg_outcome_t *out)
{
    const struct ka_codec *codec = ka_codec_find(api->api_key, KA_RESPONSE);
    cfg_result_t *rs = ka_cfg_scratch(a, p->count, sizeof(*rs));
    void *resp = ka_arena_alloc(a, codec->struct_size);
    int rc;

    if (rs == NULL || resp == NULL)
        return KA_ENOMEM;
    api->response_init(resp);
    for (size_t i = 0; i < p->count; i++) {
        const ka_cfg_resource_t *res = &p->res[i];

        rs[i] = (cfg_result_t){res->error_code,
                               {(const uint8_t *)res->message, (int32_t)strlen(res->message)},
                               res->type,
                               {(const uint8_t *)res->name, res->name_len},
                               {NULL, 0}};
    }
    if ((rc = api->results_write(resp, rs, p->count, a)) < 0)
        return rc;
    out->action = KA_ADM_ANSWER;
    return ka_adm_encode_response(api->api_key, hdr->request_api_version, hdr->correlation_id,
                                  (ka_slice_t){NULL, 0}, resp, max, &out->bytes, &out->len);
}

/* Decides the request from its plan: untouched, cut down, or answered. */
static int finish_alter(const ka_cfg_ctx_t *ctx, const alter_api_t *api,
                        const struct ka_request_header *hdr, const uint8_t *frame, size_t body_off,
                        void *msg, const alter_view_t *view, ka_cfg_outcome_t *out, ka_arena_t *a)
{
    ka_cfg_pending_t *p = out->pending;
    alter_view_t cut;
    int rc;

    size_t kept = 0; /* resources whose answer kadmit writes or follows */

    for (size_t i = 0; i < p->count; i++) {
        const ka_cfg_resource_t *res = &p->res[i];

        kept += res->ours || res->local;
        p->local_count += res->local;
        if (res->local && out->message[0] == '\0')
            snprintf(out->message, sizeof(out->message), "%s", res->message);
        if (res->type == KA_CFG_RESOURCE_TOPIC) {
            size_t topic_len = res->name_len > 0 ? (size_t)res->name_len : 0;

            ka_cfg_count_topic(res, out);
            if (res->protect != KA_CFG_PROTECT_NONE && ctx->on_topic_judged != NULL)
                ctx->on_topic_judged(
                    ctx->on_topic_judged_arg,
                    &(ka_cfg_judged_t){res->name, topic_len, "protected.topics",
                                       res->protect == KA_CFG_PROTECT_REJECT ? "reject" : "audit",
                                       res->protect_message, "protected_topic"});
            if (res->rule != NULL && ctx->on_topic_judged != NULL)
                ctx->on_topic_judged(
                    ctx->on_topic_judged_arg,
                    &(ka_cfg_judged_t){res->name, topic_len, res->rule,
                                       res->local     ? "reject"
                                       : res->audited ? "audit"
                                                      : "admit",
                                       res->message,
                                       res->local || res->audited ? "rule_config" : NULL});
        } else {
            out->resources += res->ours || res->local;
            out->refused += res->local;
        }
    }
    if (kept == 0) { /* nothing of kadmit's: the broker's alone */
        ka_cfg_pending_free(p);
        out->pending = NULL;
        return 0;
    }
    if (p->count > 0 && p->local_count == p->count) {
        rc = answer_all(api, p, hdr, ctx->max_frame, a, out);
        ka_cfg_pending_free(p);
        out->pending = NULL;
        return rc;
    }
    if ((rc = cut_view(view, p, a, &cut)) < 0 || (rc = api->write(msg, &cut, a)) < 0)
        return rc;
    out->action = KA_ADM_REWRITE;
    return encode_request(hdr, frame, body_off, msg, ctx->max_frame, &out->bytes, &out->len);
}

int ka_cfg_alter_request(const ka_cfg_ctx_t *ctx, const uint8_t *frame, size_t len,
                         ka_cfg_outcome_t *out)
{
    struct ka_request_header hdr;
    const alter_api_t *api = NULL;
    alter_view_t view;
    size_t body_off = 0;
    ka_arena_t arena;
    void *msg = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    out->action = KA_ADM_FORWARD;
    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    rc = ka_cfg_decode_request(frame, len, &arena, &hdr, &body_off, &msg, out->message,
                               sizeof(out->message));
    if (rc == 0 && (api = alter_api_find(hdr.request_api_key)) == NULL)
        rc = KA_EUNSUPPORTED;
    if (rc < 0) {
        out->action = rc == KA_ENOMEM ? KA_ADM_FORWARD : KA_ADM_CLOSE;
        goto done;
    }
    rc = api->read(msg, &arena, &view);
    if (rc == 0 && (out->pending = ka_cfg_pending_new(hdr.request_api_key, hdr.request_api_version,
                                                      view.count)) == NULL)
        rc = KA_ENOMEM;
    if (rc < 0)
        goto done;
    /* Both request structs start alike: resources, then validate_only. */
    out->validate_only = out->pending->validate_only =
        api->replaces_all ? ((struct ka_alterconfigs_request *)msg)->validate_only != 0
                          : ((struct ka_incrementalalterconfigs_request *)msg)->validate_only != 0;
    for (size_t i = 0; i < view.count && rc == 0; i++)
        rc = plan_resource(ctx, api, &view.res[i], out->validate_only, &out->pending->res[i]);
    if (rc == 0)
        rc = finish_alter(ctx, api, &hdr, frame, body_off, msg, &view, out, &arena);
done:
    ka_arena_destroy(&arena);
    if (rc == KA_ENOMEM) {
        ka_cfg_outcome_release(out);
        out->action = KA_ADM_CLOSE;
        snprintf(out->message, sizeof(out->message), "out of memory deciding a config change");
        return rc;
    }
    if (rc < 0)
        ka_cfg_outcome_release(out);
    return 0;
}

/* --- the response ----------------------------------------------------------- */

static long find_result(const cfg_result_t *rs, size_t n, const bool *used,
                        const ka_cfg_resource_t *res)
{
    ka_slice_t name = {(const uint8_t *)res->name, res->name_len};

    for (size_t j = 0; j < n; j++)
        if (!used[j] && rs[j].type == res->type && ka_adm_slice_eq(rs[j].name, name))
            return (long)j;
    return -1;
}

/* The changes of the accepted resources, into a new array. */
static int collect_changes(const ka_cfg_pending_t *p, const bool *accepted,
                           ka_cfg_change_t **changes, size_t *nchanges)
{
    size_t n = 0;

    for (size_t i = 0; i < p->count; i++)
        n += accepted[i] ? p->res[i].nchanges : 0;
    if (n == 0 || p->validate_only)
        return 0;
    if ((*changes = calloc(n, sizeof(**changes))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < p->count; i++)
        for (size_t k = 0; accepted[i] && k < p->res[i].nchanges; k++)
            (*changes)[(*nchanges)++] = p->res[i].changes[k];
    return 0;
}

/* The merge of both entry points; store_failure non-NULL: the changes could
 * not be stored, and the resources that carried them say so. */
static int alter_response(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                          size_t max_frame, const char *store_failure, uint8_t **out,
                          size_t *out_len, ka_cfg_change_t **changes, size_t *nchanges)
{
    const alter_api_t *api = alter_api_find(p->api_key);
    struct ka_response_header rh;
    cfg_result_t *br, *merged;
    size_t nb = 0, m = 0;
    bool *used, *accepted;
    ka_arena_t arena;
    void *resp = NULL;
    int rc;

    *out = NULL;
    *out_len = 0;
    *changes = NULL;
    *nchanges = 0;
    if (api == NULL)
        return KA_EUNSUPPORTED;
    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    if ((rc = ka_cfg_decode_response(p, frame, len, &arena, &rh, &resp)) < 0 ||
        (rc = api->results_read(resp, &arena, &br, &nb)) < 0)
        goto done;
    used = ka_cfg_scratch(&arena, nb, sizeof(*used));
    accepted = ka_cfg_scratch(&arena, p->count, sizeof(*accepted));
    merged = ka_cfg_scratch(&arena, p->count + nb, sizeof(*merged));
    size_t *at = ka_cfg_scratch(&arena, p->count, sizeof(*at));
    if (used == NULL || accepted == NULL || merged == NULL || at == NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < p->count; i++) {
        const ka_cfg_resource_t *res = &p->res[i];
        long j = res->local ? -1 : find_result(br, nb, used, res);

        if (res->local) {
            merged[m++] =
                (cfg_result_t){res->error_code,
                               {(const uint8_t *)res->message, (int32_t)strlen(res->message)},
                               res->type,
                               {(const uint8_t *)res->name, res->name_len},
                               {NULL, 0}};
        } else if (j >= 0) {
            used[j] = true;
            accepted[i] = res->ours && br[j].error_code == 0;
            at[i] = m;
            merged[m++] = br[j];
        }
    }
    for (size_t j = 0; j < nb; j++)
        if (!used[j])
            merged[m++] = br[j];
    rc = collect_changes(p, accepted, changes, nchanges);
    bool failed = rc == 0 && store_failure != NULL && *nchanges > 0;
    for (size_t i = 0; failed && i < p->count; i++) {
        if (accepted[i] && p->res[i].nchanges > 0) {
            merged[at[i]].error_code = KA_KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            merged[at[i]].error_message =
                (ka_slice_t){(const uint8_t *)store_failure, (int32_t)strlen(store_failure)};
        }
    }
    if (rc == 0 && (p->local_count > 0 || failed) &&
        (rc = api->results_write(resp, merged, m, &arena)) == 0)
        rc = ka_adm_encode_response(p->api_key, p->api_version, rh.correlation_id, rh.tagged_fields,
                                    resp, max_frame, out, out_len);
done:
    ka_arena_destroy(&arena);
    if (rc < 0) {
        free(*changes);
        *changes = NULL;
        *nchanges = 0;
    }
    return rc;
}

int ka_cfg_alter_response(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                          size_t max_frame, uint8_t **out, size_t *out_len,
                          ka_cfg_change_t **changes, size_t *nchanges)
{
    return alter_response(p, frame, len, max_frame, NULL, out, out_len, changes, nchanges);
}

int ka_cfg_alter_response_unstored(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                                   size_t max_frame, const char *why, uint8_t **out,
                                   size_t *out_len)
{
    ka_cfg_change_t *changes = NULL;
    size_t n = 0;
    int rc = alter_response(p, frame, len, max_frame, why, out, out_len, &changes, &n);

    free(changes);
    return rc;
}
