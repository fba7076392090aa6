/*
 * ka_configs_layer.c: see ka_configs_layer.h.
 */
#include "ka_configs_layer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ka_error.h"

#define BROKERS_KEY "brokers"

static json_t *layer_load(const char *layer, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc;

    if (layer == NULL || layer[0] == '\0')
        return json_object();
    doc = json_loads(layer, 0, &jerr);
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(err, errlen, "the limits layer is not a JSON object: %s", jerr.text);
        return NULL;
    }
    return doc;
}

static int apply_one(json_t *doc, const ka_cfg_change_t *c)
{
    const char *key = ka_cfg_key_name(c->key);
    json_t *brokers, *entry;
    char id[16];

    if (c->broker_id == KA_CFG_DEFAULT_ENTITY) {
        if (c->remove) {
            json_object_del(doc, key);
            return 0;
        }
        return json_object_set_new(doc, key, json_integer(c->value));
    }
    snprintf(id, sizeof(id), "%" PRId32, c->broker_id);
    brokers = json_object_get(doc, BROKERS_KEY);
    if (c->remove) {
        if (json_is_object(brokers)) {
            json_object_del(brokers, id);
            if (json_object_size(brokers) == 0)
                json_object_del(doc, BROKERS_KEY);
        }
        return 0;
    }
    if (!json_is_object(brokers)) {
        if (json_object_set_new(doc, BROKERS_KEY, json_object()) < 0)
            return KA_ENOMEM;
        brokers = json_object_get(doc, BROKERS_KEY);
    }
    entry = json_pack("{s:i}", key, (int)c->value);
    if (entry == NULL || json_object_set_new(brokers, id, entry) < 0)
        return KA_ENOMEM;
    return 0;
}

int ka_configs_layer_apply(const char *layer, const ka_cfg_change_t *changes, size_t n, char **out,
                           char *err, size_t errlen)
{
    json_t *doc = layer_load(layer, err, errlen);
    int rc = 0;

    *out = NULL;
    if (doc == NULL)
        return KA_EINVALID;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = apply_one(doc, &changes[i]) < 0 ? KA_ENOMEM : 0;
    if (rc == 0 && (*out = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
        rc = KA_ENOMEM;
    json_decref(doc);
    return rc;
}

/* A layer's value: an integer, or null for "no limit"; -1 when absent. */
static int64_t value_of(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    return json_is_null(v) ? KA_POLICY_UNLIMITED : -1;
}

static int64_t unless_unlimited(int32_t v)
{
    return v == KA_POLICY_UNLIMITED ? -1 : v;
}

static int read_dynamic(json_t *doc, ka_configs_limits_t *out)
{
    json_t *brokers = json_object_get(doc, BROKERS_KEY), *entry;
    const char *id;
    size_t k = 0;

    out->limits.dynamic_default = value_of(json_object_get(doc, KA_CFG_MAX_BROKER_PARTITIONS));
    out->limits.dynamic_max_partitions = value_of(json_object_get(doc, KA_CFG_MAX_PARTITIONS));
    if (!json_is_object(brokers) || json_object_size(brokers) == 0)
        return 0;
    out->dynamic_brokers = calloc(json_object_size(brokers), sizeof(*out->dynamic_brokers));
    if (out->dynamic_brokers == NULL)
        return KA_ENOMEM;
    json_object_foreach(brokers, id, entry)
    {
        char *end;
        long v = strtol(id, &end, 10);

        if (*end != '\0' || v < 0 || v > INT32_MAX)
            continue;
        /* {"7": null} removes the file's override of broker 7. */
        out->dynamic_brokers[k++] = (ka_cfg_override_t){
            (int32_t)v, json_is_object(entry)
                            ? value_of(json_object_get(entry, KA_CFG_MAX_BROKER_PARTITIONS))
                            : -1};
    }
    out->limits.dynamic_broker_count = k;
    return 0;
}

int ka_configs_limits_read(const char *layer, const ka_policy_t *file, ka_configs_limits_t *out)
{
    char err[200];
    json_t *doc = layer_load(layer, err, sizeof(err));
    size_t n = file != NULL ? ka_policy_override_count(file) : 0;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    out->limits.dynamic_default = out->limits.dynamic_max_partitions = -1;
    out->limits.file_default = out->limits.file_max_partitions = -1;
    if (doc != NULL)
        rc = read_dynamic(doc, out);
    json_decref(doc);
    if (rc == 0 && file != NULL) {
        out->limits.file_default = unless_unlimited(ka_policy_default_broker_limit(file));
        out->limits.file_max_partitions = unless_unlimited(ka_policy_max_partitions(file));
        if (n > 0 && (out->file_brokers = calloc(n, sizeof(*out->file_brokers))) == NULL)
            rc = KA_ENOMEM;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            int32_t id, value;

            ka_policy_override_at(file, i, &id, &value);
            out->file_brokers[i] = (ka_cfg_override_t){id, value};
        }
        out->limits.file_broker_count = rc == 0 ? n : 0;
    }
    out->limits.dynamic_brokers = out->dynamic_brokers;
    out->limits.file_brokers = out->file_brokers;
    if (rc < 0)
        ka_configs_limits_free(out);
    return rc;
}

void ka_configs_limits_free(ka_configs_limits_t *l)
{
    free(l->dynamic_brokers);
    free(l->file_brokers);
    memset(l, 0, sizeof(*l));
}
