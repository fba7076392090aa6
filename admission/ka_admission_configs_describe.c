/*
 * ka_admission_configs_describe.c: DescribeConfigs shows kadmit's limits
 * (see ka_admission_configs.h).
 *
 * Each of kadmit's keys has a chain of layers, the one in force first:
 *   for a broker's max.broker.partitions: the dynamic layer's override of
 *   that broker (DYNAMIC_BROKER_CONFIG), the policy file's override
 *   (STATIC_BROKER_CONFIG), the dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG),
 *   the file's default (STATIC_BROKER_CONFIG), KIP-578's default, no limit
 *   (DEFAULT_CONFIG, 2147483647);
 *   for the default entity and for max.partitions: the dynamic default, the
 *   file's, KIP-578's.
 * A broker override, from either layer, outranks any default, because that
 * is how kadmit enforces them. The entry shows the first link; its synonyms,
 * when asked for, every link.
 */
#include "ka_admission_configs_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DescribeConfigs' config_type of an int. */
#define CONFIG_TYPE_INT 3
#define CHAIN_MAX       5

static const char *const docs[KA_CFG_KEY_COUNT] = {
    "The largest number of partition replicas a broker may host, enforced by kadmit (KIP-578). "
    "Set per broker or on the default entity.",
    "The largest number of partitions in the cluster, each counted once, enforced by kadmit "
    "(KIP-578). Set on the default broker entity.",
};

typedef struct link {
    int64_t value;
    int8_t source;
} link_t;

/* A layer's override for `id`: 1 with *value (-1: removed), or 0. */
static int override_of(const ka_cfg_override_t *o, size_t n, int32_t id, int64_t *value)
{
    for (size_t i = 0; i < n; i++) {
        if (o[i].broker_id == id) {
            *value = o[i].value;
            return 1;
        }
    }
    return 0;
}

static size_t push(link_t *chain, size_t n, int64_t value, int8_t source)
{
    if (value >= 0 && n < CHAIN_MAX)
        chain[n++] = (link_t){value, source};
    return n;
}

/* The chain of one key for one entity, the value in force first. */
static size_t chain_of(const ka_cfg_limits_t *l, int32_t broker_id, enum ka_cfg_key key,
                       link_t *chain)
{
    size_t n = 0;

    if (key == KA_CFG_KEY_MAX_PARTITIONS) {
        n = push(chain, n, l->dynamic_max_partitions, KA_CFG_SOURCE_DYNAMIC_DEFAULT);
        n = push(chain, n, l->file_max_partitions, KA_CFG_SOURCE_STATIC);
        return push(chain, n, KA_POLICY_UNLIMITED, KA_CFG_SOURCE_DEFAULT);
    }
    if (broker_id != KA_CFG_DEFAULT_ENTITY) {
        int64_t dyn = -1, file = -1;
        bool removed =
            override_of(l->dynamic_brokers, l->dynamic_broker_count, broker_id, &dyn) && dyn < 0;

        n = push(chain, n, dyn, KA_CFG_SOURCE_DYNAMIC_BROKER);
        /* The dynamic layer can remove the file's override: it is then no layer at all. */
        if (!removed && override_of(l->file_brokers, l->file_broker_count, broker_id, &file))
            n = push(chain, n, file, KA_CFG_SOURCE_STATIC);
    }
    n = push(chain, n, l->dynamic_default, KA_CFG_SOURCE_DYNAMIC_DEFAULT);
    n = push(chain, n, l->file_default, KA_CFG_SOURCE_STATIC);
    return push(chain, n, KA_POLICY_UNLIMITED, KA_CFG_SOURCE_DEFAULT);
}

/* A decimal string in the arena. */
static ka_slice_t number(ka_arena_t *a, int64_t v)
{
    char *s = ka_arena_alloc(a, 24);

    if (s == NULL)
        return KA_SLICE_NULL;
    return (ka_slice_t){(const uint8_t *)s, snprintf(s, 24, "%" PRId64, v)};
}

/* --- the request ------------------------------------------------------------ */

int ka_cfg_describe_request(const uint8_t *frame, size_t len, ka_cfg_outcome_t *out)
{
    const struct ka_describeconfigs_request *m;
    struct ka_request_header hdr;
    size_t body_off = 0, n = 0, k = 0;
    ka_arena_t arena;
    void *msg = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    out->action = KA_ADM_FORWARD;
    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    rc = ka_cfg_decode_request(frame, len, &arena, &hdr, &body_off, &msg, out->message,
                               sizeof(out->message));
    if (rc < 0 || hdr.request_api_key != KA_DESCRIBECONFIGS_REQUEST_API_KEY)
        goto done; /* the broker answers what kadmit cannot read */
    m = msg;
    for (int32_t i = 0; i < m->resources.count; i++)
        n += m->resources.items[i].resource_type == KA_CFG_RESOURCE_BROKER &&
             ka_cfg_broker_of(m->resources.items[i].resource_name) >= KA_CFG_DEFAULT_ENTITY;
    if (n == 0)
        goto done;
    if ((out->pending = ka_cfg_pending_new(hdr.request_api_key, hdr.request_api_version, n)) ==
        NULL) {
        rc = KA_ENOMEM;
        goto done;
    }
    out->pending->include_synonyms = m->include_synonyms != 0;
    out->pending->include_documentation = m->include_documentation != 0;
    for (int32_t i = 0; i < m->resources.count; i++) {
        const struct ka_describeconfigs_request_describe_configs_resource *r =
            &m->resources.items[i];
        ka_cfg_resource_t *res = &out->pending->res[k];

        if (r->resource_type != KA_CFG_RESOURCE_BROKER ||
            ka_cfg_broker_of(r->resource_name) < KA_CFG_DEFAULT_ENTITY)
            continue;
        k++;
        res->type = r->resource_type;
        res->broker_id = ka_cfg_broker_of(r->resource_name);
        res->name_len = r->resource_name.len > 0 ? r->resource_name.len : 0;
        if ((res->name = ka_adm_dup_slice(r->resource_name)) == NULL) {
            rc = KA_ENOMEM;
            goto done;
        }
        /* A null key list asks for every config. */
        if (r->configuration_keys.count < 0) {
            res->want[KA_CFG_KEY_MAX_BROKER_PARTITIONS] = true;
            res->want[KA_CFG_KEY_MAX_PARTITIONS] = true;
        }
        for (int32_t j = 0; j < r->configuration_keys.count; j++) {
            int key = ka_cfg_key_of(r->configuration_keys.items[j]);

            if (key >= 0)
                res->want[key] = true;
        }
        out->resources += res->want[0] || res->want[1];
    }
done:
    ka_arena_destroy(&arena);
    if (rc == KA_ENOMEM || out->resources == 0) {
        ka_cfg_pending_free(out->pending);
        out->pending = NULL;
    }
    return rc == KA_ENOMEM ? rc : 0;
}

/* --- the response ----------------------------------------------------------- */

typedef struct ka_describeconfigs_response_describe_configs_resource_result entry_t;
typedef struct ka_describeconfigs_response_describe_configs_synonym synonym_t;

/* One of kadmit's entries for a resource. */
static int fill_entry(const ka_cfg_pending_t *p, const ka_cfg_limits_t *l, int32_t broker_id,
                      enum ka_cfg_key key, entry_t *e, ka_arena_t *a)
{
    link_t chain[CHAIN_MAX];
    size_t n = chain_of(l, broker_id, key, chain);
    const char *name = ka_cfg_key_name(key);
    ka_slice_t name_slice = {(const uint8_t *)name, (int32_t)strlen(name)};

    ka_describeconfigs_response_describe_configs_resource_result_init(e);
    e->name = name_slice;
    e->value = number(a, chain[0].value);
    e->read_only = 0;
    e->is_sensitive = 0;
    e->config_source = chain[0].source;
    e->config_type = CONFIG_TYPE_INT;
    e->synonyms.count = 0;
    if (p->include_documentation)
        e->documentation = (ka_slice_t){(const uint8_t *)docs[key], (int32_t)strlen(docs[key])};
    if (e->value.len < 0)
        return KA_ENOMEM;
    if (!p->include_synonyms)
        return 0;
    if ((e->synonyms.items = ka_cfg_scratch(a, n, sizeof(*e->synonyms.items))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        synonym_t *s = &e->synonyms.items[i];

        ka_describeconfigs_response_describe_configs_synonym_init(s);
        s->name = name_slice;
        s->value = number(a, chain[i].value);
        s->source = chain[i].source;
        if (s->value.len < 0)
            return KA_ENOMEM;
    }
    e->synonyms.count = (int32_t)n;
    return 0;
}

/* The broker's entries without its own for kadmit's keys, then kadmit's. */
static int rewrite_result(const ka_cfg_pending_t *p, const ka_cfg_resource_t *res,
                          const ka_cfg_limits_t *l,
                          struct ka_describeconfigs_response_describe_configs_result *r,
                          ka_arena_t *a)
{
    size_t nb = r->configs.count > 0 ? (size_t)r->configs.count : 0, m = 0;
    entry_t *es = ka_cfg_scratch(a, nb + KA_CFG_KEY_COUNT, sizeof(*es));
    int rc;

    if (es == NULL)
        return KA_ENOMEM;
    for (size_t j = 0; j < nb; j++)
        if (ka_cfg_key_of(r->configs.items[j].name) < 0)
            es[m++] = r->configs.items[j];
    for (int k = 0; k < KA_CFG_KEY_COUNT; k++) {
        if (!res->want[k])
            continue;
        if ((rc = fill_entry(p, l, res->broker_id, (enum ka_cfg_key)k, &es[m++], a)) < 0)
            return rc;
    }
    r->configs.items = es;
    r->configs.count = (int32_t)m;
    return 0;
}

static const ka_cfg_resource_t *resource_for(const ka_cfg_pending_t *p, int8_t type,
                                             ka_slice_t name)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->res[i].type == type &&
            ka_adm_slice_eq(name,
                            (ka_slice_t){(const uint8_t *)p->res[i].name, p->res[i].name_len}))
            return &p->res[i];
    return NULL;
}

int ka_cfg_describe_response(const ka_cfg_pending_t *p, const ka_cfg_limits_t *limits,
                             const uint8_t *frame, size_t len, size_t max_frame, uint8_t **out,
                             size_t *out_len)
{
    struct ka_describeconfigs_response *resp = NULL;
    struct ka_response_header rh;
    bool changed = false;
    ka_arena_t arena;
    void *msg = NULL;
    int rc;

    *out = NULL;
    *out_len = 0;
    ka_arena_init(&arena, KA_ADM_ARENA_CAP);
    if ((rc = ka_cfg_decode_response(p, frame, len, &arena, &rh, &msg)) < 0)
        goto done;
    resp = msg;
    for (int32_t i = 0; i < resp->results.count && rc == 0; i++) {
        struct ka_describeconfigs_response_describe_configs_result *r = &resp->results.items[i];
        const ka_cfg_resource_t *res = resource_for(p, r->resource_type, r->resource_name);

        /* The broker's refusal (authorization, an unknown broker) stands. */
        if (res == NULL || r->error_code != 0 || !(res->want[0] || res->want[1]))
            continue;
        rc = rewrite_result(p, res, limits, r, &arena);
        changed = true;
    }
    if (rc == 0 && changed)
        rc = ka_adm_encode_response(p->api_key, p->api_version, rh.correlation_id, rh.tagged_fields,
                                    resp, max_frame, out, out_len);
done:
    ka_arena_destroy(&arena);
    return rc;
}
