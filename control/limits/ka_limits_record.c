/*
 * ka_limits_record.c: see ka_limits_record.h.
 */
#include "ka_limits_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ka_error.h"

#define RECORD_FORMAT 1
#define DUMP_FLAGS    (JSON_COMPACT | JSON_SORT_KEYS)

/* The layer as an object: NULL text is an empty one; anything else must be an object. */
static json_t *layer_object(const char *text)
{
    json_t *doc;

    if (text == NULL || text[0] == '\0')
        return json_object();
    doc = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    if (doc != NULL && !json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

bool ka_limits_layer_is_empty(const char *layer)
{
    json_t *doc;
    bool empty;

    if (layer == NULL || layer[0] == '\0' || strcmp(layer, "{}") == 0)
        return true;
    doc = layer_object(layer);
    empty = doc != NULL && json_object_size(doc) == 0;
    json_decref(doc);
    return empty;
}

int ka_limits_record_encode(const char *overrides, int64_t at, const char *written_by,
                            int64_t written_at_ms, char **out, size_t *out_len)
{
    json_t *layer = layer_object(overrides), *doc;

    *out = NULL;
    *out_len = 0;
    if (layer == NULL)
        return KA_EINVALID;
    doc = json_pack("{s:i,s:o,s:I,s:s,s:I}", "kadmit.limits", RECORD_FORMAT, "overrides", layer,
                    "at", (json_int_t)at, "written_by", written_by ? written_by : "",
                    "written_at_ms", (json_int_t)written_at_ms);
    if (doc == NULL)
        return KA_ENOMEM;
    *out = json_dumps(doc, DUMP_FLAGS);
    json_decref(doc);
    if (*out == NULL)
        return KA_ENOMEM;
    *out_len = strlen(*out);
    return 0;
}

void ka_limits_record_clear(ka_limits_record_t *rec)
{
    free(rec->overrides);
    memset(rec, 0, sizeof(*rec));
}

int ka_limits_record_decode(const void *value, size_t len, ka_limits_record_t *rec, char *err,
                            size_t errlen)
{
    json_error_t jerr;
    json_t *doc, *format, *layer, *by, *at, *place;
    int rc = KA_EINVALID;

    memset(rec, 0, sizeof(*rec));
    rec->at = -1;
    if (value == NULL) {
        rec->tombstone = true;
        return 0;
    }
    if (len > KA_LIMITS_RECORD_MAX_BYTES) {
        snprintf(err, errlen, "the record is %zu bytes, more than the %u a limits record may have",
                 len, KA_LIMITS_RECORD_MAX_BYTES);
        return KA_ELIMIT;
    }
    doc = json_loadb(value, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL) {
        snprintf(err, errlen, "the record is not valid JSON (line %d): %s", jerr.line, jerr.text);
        return KA_EINVALID;
    }
    format = json_object_get(doc, "kadmit.limits");
    layer = json_object_get(doc, "overrides");
    by = json_object_get(doc, "written_by");
    at = json_object_get(doc, "written_at_ms");
    place = json_object_get(doc, "at");
    if (!json_is_integer(format) || json_integer_value(format) != RECORD_FORMAT) {
        snprintf(err, errlen,
                 "the record does not start a format-1 limits document "
                 "(\"kadmit.limits\": 1 is missing)");
        goto out;
    }
    if (!json_is_object(layer)) {
        snprintf(err, errlen, "the record's \"overrides\" must be a JSON object");
        goto out;
    }
    if ((by != NULL && !json_is_string(by)) || (at != NULL && !json_is_integer(at))) {
        snprintf(err, errlen,
                 "the record's \"written_by\" must be a string and "
                 "\"written_at_ms\" an integer");
        goto out;
    }
    if (place != NULL && (!json_is_integer(place) || json_integer_value(place) < 0)) {
        snprintf(err, errlen, "the record's \"at\" must be an offset (an integer >= 0)");
        goto out;
    }
    if (place != NULL)
        rec->at = (int64_t)json_integer_value(place);
    if (json_object_size(layer) > 0) {
        rec->overrides = json_dumps(layer, DUMP_FLAGS);
        if (rec->overrides == NULL) {
            rc = KA_ENOMEM;
            goto out;
        }
    }
    if (by != NULL)
        snprintf(rec->written_by, sizeof(rec->written_by), "%s", json_string_value(by));
    rec->written_at_ms = at != NULL ? (int64_t)json_integer_value(at) : 0;
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

enum ka_limits_place ka_limits_record_place(const ka_limits_record_t *rec, int64_t offset,
                                            bool secret_set)
{
    if (rec->tombstone || rec->at < 0)
        return secret_set ? KA_LIMITS_UNPLACED : KA_LIMITS_IN_PLACE;
    return rec->at == offset ? KA_LIMITS_IN_PLACE : KA_LIMITS_MOVED;
}

/*
 * Applies the patch `change` onto the patch `layer` in place. Unlike
 * applying a patch to a document, a null is stored rather than acted on:
 * it removes a key from the base when the layer is applied. An object that
 * replaces a scalar is kept whole, which applies the same way.
 */
static int compose_into(json_t *layer, json_t *change)
{
    for (void *it = json_object_iter(change); it != NULL; it = json_object_iter_next(change, it)) {
        json_t *value = json_object_iter_value(it);
        json_t *old = json_object_get(layer, json_object_iter_key(it));
        int rc = json_is_object(value) && json_is_object(old)
                     ? compose_into(old, value)
                     : json_object_set(layer, json_object_iter_key(it), value);
        if (rc < 0)
            return KA_ENOMEM;
    }
    return 0;
}

int ka_limits_layer_compose(const char *layer, const char *change, char **out)
{
    json_t *base = layer_object(layer), *delta = layer_object(change);
    int rc = KA_EINVALID;

    *out = NULL;
    if (base == NULL || delta == NULL)
        goto out;
    rc = compose_into(base, delta);
    if (rc == 0) {
        *out = json_dumps(base, DUMP_FLAGS);
        rc = *out != NULL ? 0 : KA_ENOMEM;
    }
out:
    json_decref(base);
    json_decref(delta);
    return rc;
}

bool ka_limits_layer_sets(const char *layer, const char *key, int32_t broker_id)
{
    json_t *doc = layer_object(layer), *entry;
    char id[16];
    bool sets;

    if (doc == NULL)
        return false;
    if (broker_id < 0) {
        sets = json_object_get(doc, key) != NULL;
    } else {
        snprintf(id, sizeof(id), "%d", (int)broker_id);
        entry = json_object_get(doc, "brokers");
        /* "brokers": null removes every override of the file's. */
        if (!json_is_null(entry))
            entry = json_object_get(entry, id);
        /* {"brokers": {"2": {...}}} sets the key inside; a null entry removes it. */
        sets = json_is_null(entry) || json_object_get(entry, key) != NULL;
    }
    json_decref(doc);
    return sets;
}
