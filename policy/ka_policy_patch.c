/*
 * ka_policy_patch.c: see ka_policy_patch.h.
 *
 * The diff and the merge are generic over JSON objects; the policy's own
 * validation (ka_policy_parse) then judges the merged document, so a patch
 * can never produce a policy that the file could not hold.
 */
#include "ka_policy_patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static json_t *policy_object(const ka_policy_t *policy)
{
    char *text = ka_policy_serialize(policy);
    json_t *doc = text != NULL ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return doc;
}

/* Adds to `patch` what turns object `base` into object `target`; 0 or -1 (ENOMEM). */
static int diff_objects(json_t *base, json_t *target, json_t *patch)
{
    const char *key;
    json_t *value;

    json_object_foreach(target, key, value)
    {
        json_t *old = json_object_get(base, key);

        if (old != NULL && json_equal(old, value))
            continue;
        if (old != NULL && json_is_object(old) && json_is_object(value)) {
            json_t *sub = json_object();

            if (sub == NULL || diff_objects(old, value, sub) < 0 ||
                json_object_set_new(patch, key, sub) < 0)
                return -1;
        } else if (json_object_set(patch, key, value) < 0) {
            return -1;
        }
    }
    json_object_foreach(base, key, value)
    {
        if (json_object_get(target, key) == NULL &&
            json_object_set_new(patch, key, json_null()) < 0)
            return -1;
    }
    return 0;
}

char *ka_policy_diff(const ka_policy_t *base, const ka_policy_t *target)
{
    json_t *b = policy_object(base), *t = policy_object(target), *patch = json_object();
    char *text = NULL;

    if (b != NULL && t != NULL && patch != NULL && diff_objects(b, t, patch) == 0)
        text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(b);
    json_decref(t);
    json_decref(patch);
    return text;
}

/* RFC 7396: null removes a key, an object merges, anything else replaces. */
static int merge(json_t *target, json_t *patch)
{
    const char *key;
    json_t *value;

    json_object_foreach(patch, key, value)
    {
        json_t *old = json_object_get(target, key);

        if (json_is_null(value)) {
            json_object_del(target, key);
        } else if (json_is_object(value) && old != NULL && json_is_object(old)) {
            if (merge(old, value) < 0)
                return -1;
        } else if (json_object_set(target, key, value) < 0) {
            return -1;
        }
    }
    return 0;
}

int ka_policy_apply_patch(const ka_policy_t *base, const char *patch, size_t len, uint64_t version,
                          ka_policy_t **out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc, *p;
    char *text = NULL;
    int rc = KA_ENOMEM;

    p = json_loadb(patch, len, JSON_REJECT_DUPLICATES, &jerr);
    if (p == NULL || !json_is_object(p)) {
        snprintf(err, errlen, "the overrides are not a JSON object%s%s", p == NULL ? ": " : "",
                 p == NULL ? jerr.text : "");
        json_decref(p);
        return KA_EINVALID;
    }
    doc = policy_object(base);
    if (doc != NULL && merge(doc, p) == 0)
        text = json_dumps(doc, JSON_COMPACT);
    if (text != NULL)
        rc = ka_policy_parse(text, strlen(text), version, out, err, errlen);
    else
        snprintf(err, errlen, "out of memory");
    free(text);
    json_decref(doc);
    json_decref(p);
    return rc;
}

int ka_policy_patch_is_empty(const char *patch)
{
    json_t *p = json_loads(patch, 0, NULL);
    int empty = p != NULL && json_is_object(p) && json_object_size(p) == 0;

    json_decref(p);
    return empty;
}
