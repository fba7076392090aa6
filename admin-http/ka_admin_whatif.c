/*
 * ka_admin_whatif.c: parsing the body of POST /v1/what-if (see
 * ka_admin_whatif.h).
 *
 * Names and values stay slices into the parsed JSON document, which the
 * parsed body keeps; the engine's arrays live in one arena. Every count is
 * capped before anything is allocated for it, and every error names the
 * field by its path, so a caller can fix the body without guessing.
 */
#include "ka_admin_whatif.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ka_arena.h"
#include "ka_codec.h"
#include "ka_rules_configs.h"

struct ka_whatif {
    enum ka_whatif_kind kind;
    json_t *doc; /* every slice below points into its strings */
    const char *principal;
    size_t count;
    ka_create_topic_t *topics;
    ka_create_partitions_t *partitions;
    ka_arena_t arena;
};

/* What the parse of one body carries: where errors go, and the arena. */
typedef struct parse {
    ka_whatif_t *w;
    char *err;
    size_t errlen;
} parse_t;

static int fail(parse_t *p, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(parse_t *p, const char *path, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s: %s", path, what);
    return KA_EINVALID;
}

/* where = path + the formatted suffix (cut to fit: paths are short, and only for messages). */
static void path_at(char *where, size_t cap, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void path_at(char *where, size_t cap, const char *path, const char *fmt, ...)
{
    size_t n = strlen(path) < cap ? strlen(path) : cap - 1;
    va_list ap;

    memcpy(where, path, n);
    where[n] = '\0';
    va_start(ap, fmt);
    vsnprintf(where + n, cap - n, fmt, ap);
    va_end(ap);
}

static void *alloc(parse_t *p, size_t n, size_t size)
{
    void *out = NULL;

    if (ka_arena_alloc_array(&p->w->arena, n ? n : 1, size, &out) < 0)
        return NULL;
    return out;
}

static ka_slice_t slice_of(const json_t *s)
{
    return (ka_slice_t){(const uint8_t *)json_string_value(s), (int32_t)json_string_length(s)};
}

/* Only the listed keys may appear: a typo is an error, as in the policy file. */
static int only_keys(parse_t *p, const json_t *obj, const char *path, const char *const *keys)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)obj, key, v)
    {
        bool known = false;

        for (size_t i = 0; keys[i] != NULL && !known; i++)
            known = strcmp(key, keys[i]) == 0;
        if (!known)
            return fail(p, path, "unknown field \"%s\"", key);
    }
    return 0;
}

/* An optional integer field within [lo, hi]; *out keeps its default when absent. */
static int int_field(parse_t *p, const json_t *obj, const char *key, const char *path, int64_t lo,
                     int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    char where[160];

    if (v == NULL)
        return 0;
    path_at(where, sizeof(where), path, ".%s", key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(p, where, "must be an integer from %lld to %lld", (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* An array field of at most max elements; NULL (and *n 0) when absent. */
static int array_field(parse_t *p, const json_t *obj, const char *key, const char *path, size_t max,
                       const json_t **out, size_t *n)
{
    json_t *v = json_object_get(obj, key);
    char where[160];

    *out = NULL;
    *n = 0;
    if (v == NULL)
        return 0;
    path_at(where, sizeof(where), path, ".%s", key);
    if (!json_is_array(v))
        return fail(p, where, "must be an array");
    if (json_array_size(v) > max)
        return fail(p, where, "at most %zu entries", max);
    *out = v;
    *n = json_array_size(v);
    return 0;
}

static int broker_ids(parse_t *p, const json_t *row, const char *path, ka_replica_assignment_t *out)
{
    static const char *const keys[] = {"partitionIndex", "brokerIds", NULL};
    const json_t *ids;
    size_t n;
    int32_t *b;
    char where[160];
    int rc;

    if (!json_is_object(row))
        return fail(p, path, "must be an object");
    if ((rc = only_keys(p, row, path, keys)) < 0 ||
        (rc = array_field(p, row, "brokerIds", path, KA_WHATIF_MAX_BROKER_IDS, &ids, &n)) < 0)
        return rc;
    if (ids == NULL)
        return fail(p, path, "brokerIds is required");
    if ((b = alloc(p, n, sizeof(*b))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *id = json_array_get(ids, i);

        path_at(where, sizeof(where), path, ".brokerIds[%zu]", i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > INT32_MAX)
            return fail(p, where, "must be a broker id (an integer from 0)");
        b[i] = (int32_t)json_integer_value(id);
    }
    out->broker_ids = b;
    out->broker_count = (int32_t)n;
    return 0;
}

/* "assignments": one row per partition; CreateTopics rows carry partitionIndex. */
static int assignments(parse_t *p, const json_t *topic, const char *path, bool indexed,
                       const ka_replica_assignment_t **out, int32_t *count)
{
    const json_t *rows;
    size_t n;
    ka_replica_assignment_t *ra;
    char where[160];
    int rc;

    if ((rc = array_field(p, topic, "assignments", path, KA_WHATIF_MAX_ROWS, &rows, &n)) < 0 ||
        rows == NULL)
        return rc;
    if ((ra = alloc(p, n, sizeof(*ra))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(rows, i);
        int64_t index = (int64_t)i;

        path_at(where, sizeof(where), path, ".assignments[%zu]", i);
        if ((rc = broker_ids(p, row, where, &ra[i])) < 0)
            return rc;
        if (indexed && (rc = int_field(p, row, "partitionIndex", where, 0, INT32_MAX, &index)) < 0)
            return rc;
        if (!indexed && json_object_get(row, "partitionIndex") != NULL)
            return fail(p, where, "partitionIndex is not a CreatePartitions field");
        ra[i].partition_index = (int32_t)index;
    }
    *out = ra;
    *count = (int32_t)n;
    return 0;
}

static int configs(parse_t *p, const json_t *topic, const char *path, ka_create_topic_t *t)
{
    static const char *const keys[] = {"name", "value", NULL};
    const json_t *list;
    size_t n;
    ka_topic_config_t *c;
    char where[160];
    int rc;

    if ((rc = array_field(p, topic, "configs", path, KA_WHATIF_MAX_ROWS, &list, &n)) < 0 ||
        list == NULL)
        return rc;
    if ((c = alloc(p, n, sizeof(*c))) == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(list, i);
        const json_t *name = json_object_get(e, "name"), *value = json_object_get(e, "value");

        path_at(where, sizeof(where), path, ".configs[%zu]", i);
        if (!json_is_object(e))
            return fail(p, where, "must be an object");
        if ((rc = only_keys(p, e, where, keys)) < 0)
            return rc;
        if (!json_is_string(name))
            return fail(p, where, "name must be a string");
        if (value != NULL && !json_is_string(value) && !json_is_null(value))
            return fail(p, where, "value must be a string or null");
        c[i].name = slice_of(name);
        c[i].value = json_is_string(value) ? slice_of(value) : KA_SLICE_NULL;
    }
    t->configs = c;
    t->config_count = n;
    return 0;
}

/* The topic's name: a non-empty string (Kafka's own checks are the broker's). */
static int topic_name(parse_t *p, const json_t *topic, const char *path, ka_slice_t *out)
{
    const json_t *name = json_object_get(topic, "name");

    if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > 249)
        return fail(p, path, "name must be a topic name (a string of 1 to 249 characters)");
    *out = slice_of(name);
    return 0;
}

static int create_topic(parse_t *p, const json_t *topic, const char *path, ka_create_topic_t *t)
{
    static const char *const keys[] = {"name",        "numPartitions", "replicationFactor",
                                       "assignments", "configs",       NULL};
    int64_t np = -1, rf = -1;
    int rc;

    if (!json_is_object(topic))
        return fail(p, path, "must be an object");
    if ((rc = only_keys(p, topic, path, keys)) < 0 ||
        (rc = topic_name(p, topic, path, &t->name)) < 0 ||
        (rc = int_field(p, topic, "numPartitions", path, -1, INT32_MAX, &np)) < 0 ||
        (rc = int_field(p, topic, "replicationFactor", path, -1, INT16_MAX, &rf)) < 0 ||
        (rc = assignments(p, topic, path, true, &t->assignments, &t->assignment_count)) < 0 ||
        (rc = configs(p, topic, path, t)) < 0)
        return rc;
    t->num_partitions = (int32_t)np;
    t->replication_factor = (int16_t)rf;
    t->validate_only = true;
    return 0;
}

static int create_partitions(parse_t *p, const json_t *topic, const char *path,
                             ka_create_partitions_t *t)
{
    static const char *const keys[] = {"name", "count", "assignments", NULL};
    int64_t count = -1;
    int rc;

    if (!json_is_object(topic))
        return fail(p, path, "must be an object");
    if ((rc = only_keys(p, topic, path, keys)) < 0 ||
        (rc = topic_name(p, topic, path, &t->name)) < 0 ||
        (rc = int_field(p, topic, "count", path, 1, INT32_MAX, &count)) < 0 ||
        (rc = assignments(p, topic, path, false, &t->assignments, &t->assignment_count)) < 0)
        return rc;
    if (count < 0)
        return fail(p, path, "count is required: the new total number of partitions");
    t->count = (int32_t)count;
    t->validate_only = true;
    return 0;
}

/* The request object: {"topics": [...]} plus fields what-if ignores (timeoutMs, validateOnly). */
static int request(parse_t *p, const json_t *req, const char *path)
{
    static const char *const keys[] = {"topics", "timeoutMs", "validateOnly", NULL};
    ka_whatif_t *w = p->w;
    const json_t *topics;
    char where[160];
    int rc;

    if (!json_is_object(req))
        return fail(p, path, "must be an object");
    if ((rc = only_keys(p, req, path, keys)) < 0 ||
        (rc = array_field(p, req, "topics", path, KA_WHATIF_MAX_TOPICS, &topics, &w->count)) < 0)
        return rc;
    if (w->count == 0) {
        path_at(where, sizeof(where), path, ".topics");
        return fail(p, where, "at least one topic is required");
    }
    if (w->kind == KA_WHATIF_CREATE_TOPICS)
        w->topics = alloc(p, w->count, sizeof(*w->topics));
    else
        w->partitions = alloc(p, w->count, sizeof(*w->partitions));
    if (w->topics == NULL && w->partitions == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < w->count; i++) {
        const json_t *t = json_array_get(topics, i);

        path_at(where, sizeof(where), path, ".topics[%zu]", i);
        rc = w->kind == KA_WHATIF_CREATE_TOPICS ? create_topic(p, t, where, &w->topics[i])
                                                : create_partitions(p, t, where, &w->partitions[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int body(parse_t *p)
{
    static const char *const keys[] = {"createTopics", "createPartitions", "principal", NULL};
    const json_t *doc = p->w->doc, *ct, *cp, *principal;
    int rc;

    if (!json_is_object(doc))
        return fail(p, "body", "must be a JSON object");
    if ((rc = only_keys(p, doc, "body", keys)) < 0)
        return rc;
    ct = json_object_get(doc, "createTopics");
    cp = json_object_get(doc, "createPartitions");
    if ((ct == NULL) == (cp == NULL))
        return fail(p, "body", "exactly one of createTopics and createPartitions is required");
    principal = json_object_get(doc, "principal");
    if (principal != NULL &&
        (!json_is_string(principal) || strchr(json_string_value(principal), ':') == NULL))
        return fail(p, "principal", "must be a string like \"User:alice\"");
    p->w->principal = principal ? json_string_value(principal) : NULL;
    p->w->kind = ct != NULL ? KA_WHATIF_CREATE_TOPICS : KA_WHATIF_CREATE_PARTITIONS;
    return request(p, ct != NULL ? ct : cp, ct != NULL ? "createTopics" : "createPartitions");
}

int ka_whatif_parse(const char *text, size_t len, ka_whatif_t **out, char *err, size_t errlen)
{
    ka_whatif_t *w = calloc(1, sizeof(*w));
    parse_t p = {w, err, errlen};
    json_error_t jerr;
    int rc;

    *out = NULL;
    if (w == NULL)
        return KA_ENOMEM;
    ka_arena_init(&w->arena, (size_t)16 * 1024 * 1024);
    w->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (w->doc == NULL) {
        snprintf(err, errlen, "body: not JSON: %s at line %d, column %d", jerr.text, jerr.line,
                 jerr.column);
        ka_whatif_free(w);
        return KA_EINVALID;
    }
    if ((rc = body(&p)) < 0) {
        if (rc == KA_ENOMEM)
            snprintf(err, errlen, "body: out of memory");
        ka_whatif_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void ka_whatif_free(ka_whatif_t *w)
{
    if (w == NULL)
        return;
    ka_arena_destroy(&w->arena);
    json_decref(w->doc);
    free(w);
}

enum ka_whatif_kind ka_whatif_kind(const ka_whatif_t *w)
{
    return w->kind;
}

const char *ka_whatif_principal(const ka_whatif_t *w)
{
    return w->principal;
}

size_t ka_whatif_count(const ka_whatif_t *w)
{
    return w->count;
}

const ka_create_topic_t *ka_whatif_topics(const ka_whatif_t *w)
{
    return w->topics;
}

const ka_create_partitions_t *ka_whatif_partitions(const ka_whatif_t *w)
{
    return w->partitions;
}
