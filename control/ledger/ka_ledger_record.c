/*
 * ka_ledger_record.c: JSON encoding and bounded decoding of ledger records
 * (see ka_ledger_record.h).
 */
#include "ka_ledger_record.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool id_is_zero(const uint8_t id[16])
{
    static const uint8_t zero[16];

    return memcmp(id, zero, sizeof(zero)) == 0;
}

/* "replaces_topic_id": 32 hex digits, optional (absent: none). */
static int decode_replaces(json_t *o, ka_ledger_item_t *it, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, "replaces_topic_id");
    const char *hex = json_string_value(v);

    if (v == NULL)
        return 0;
    if (hex == NULL || json_string_length(v) != 32) {
        snprintf(err, errlen, "\"replaces_topic_id\" is not 32 hex digits");
        return KA_EINVALID;
    }
    for (size_t i = 0; i < 16; i++) {
        unsigned byte;

        if (!isxdigit((unsigned char)hex[2 * i]) || !isxdigit((unsigned char)hex[2 * i + 1]) ||
            sscanf(hex + 2 * i, "%2x", &byte) != 1) {
            snprintf(err, errlen, "\"replaces_topic_id\" is not 32 hex digits");
            return KA_EINVALID;
        }
        it->spec.replaces_topic_id[i] = (uint8_t)byte;
    }
    return 0;
}

static json_t *spec_json(const ka_reservation_spec_t *s)
{
    json_t *replicas = json_array(), *deltas = json_array();
    json_t *o = json_object();
    if (o == NULL || replicas == NULL || deltas == NULL)
        goto fail;
    for (int32_t i = 0; i < s->replica_count; i++) {
        if (json_array_append_new(replicas, json_integer(s->replicas[i])) < 0)
            goto fail;
    }
    for (size_t i = 0; i < s->delta_count; i++) {
        json_t *pair = json_pack("[ii]", (json_int_t)s->deltas[i].broker_id,
                                 (json_int_t)s->deltas[i].replicas);
        if (pair == NULL || json_array_append_new(deltas, pair) < 0)
            goto fail;
    }
    if (json_object_set_new(
            o, "kind",
            json_string(s->kind == KA_RESERVATION_PARTITIONS ? "partitions" : "replicas")) < 0 ||
        json_object_set_new(o, "topic",
                            json_stringn((const char *)s->topic.ptr, (size_t)s->topic.len)) < 0 ||
        json_object_set_new(o, "partition_count", json_integer(s->partition_count)) < 0 ||
        json_object_set_new(o, "partition", json_integer(s->partition)) < 0 ||
        json_object_set_new(o, "new_partitions", json_integer(s->new_partitions)) < 0)
        goto fail;
    json_object_set_new(o, "replicas", replicas);
    json_object_set_new(o, "deltas", deltas);
    if (s->creates_topic && json_object_set_new(o, "creates", json_true()) < 0) {
        json_decref(o);
        return NULL;
    }
    if (!id_is_zero(s->replaces_topic_id)) {
        char hex[33];

        for (size_t i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", s->replaces_topic_id[i]);
        if (json_object_set_new(o, "replaces_topic_id", json_string(hex)) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
fail:
    json_decref(replicas);
    json_decref(deltas);
    json_decref(o);
    return NULL;
}

static int dump(json_t *root, char **out, size_t *len)
{
    if (root == NULL)
        return KA_ENOMEM;
    *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (*out == NULL)
        return KA_ENOMEM;
    *len = strlen(*out);
    return 0;
}

static json_t *header(const char *type, const char *sidecar, uint64_t seq)
{
    return json_pack("{sssssI}", "type", type, "sidecar", sidecar, "seq", (json_int_t)seq);
}

int ka_ledger_encode_intent(const char *sidecar, uint64_t seq, int64_t ts_ms,
                            const ka_reservation_spec_t *specs, size_t count, char **out,
                            size_t *len)
{
    json_t *root = header("intent", sidecar, seq), *items = json_array();
    if (root == NULL || items == NULL || count > KA_LEDGER_ITEMS_MAX) {
        json_decref(root);
        json_decref(items);
        return count > KA_LEDGER_ITEMS_MAX ? KA_ELIMIT : KA_ENOMEM;
    }
    json_object_set_new(root, "ts", json_integer(ts_ms));
    json_object_set_new(root, "items", items);
    for (size_t i = 0; i < count; i++) {
        if (json_array_append_new(items, spec_json(&specs[i])) < 0) {
            json_decref(root);
            return KA_ENOMEM;
        }
    }
    return dump(root, out, len);
}

int ka_ledger_encode_heartbeat(const char *sidecar, int64_t ts_ms, char **out, size_t *len)
{
    json_t *root = header("heartbeat", sidecar, 0);

    if (root == NULL || json_object_set_new(root, "ts", json_integer(ts_ms)) < 0 ||
        json_object_set_new(root, "items", json_array()) < 0) {
        json_decref(root);
        return KA_ENOMEM;
    }
    return dump(root, out, len);
}

int ka_ledger_encode_outcome(const char *sidecar, uint64_t seq, const uint8_t *admitted,
                             size_t count, char **out, size_t *len)
{
    json_t *root = header("outcome", sidecar, seq), *items = json_array();
    if (root == NULL || items == NULL || count > KA_LEDGER_ITEMS_MAX) {
        json_decref(root);
        json_decref(items);
        return count > KA_LEDGER_ITEMS_MAX ? KA_ELIMIT : KA_ENOMEM;
    }
    json_object_set_new(root, "items", items);
    for (size_t i = 0; i < count; i++) {
        if (json_array_append_new(items, json_string(admitted[i] ? "admitted" : "released")) < 0) {
            json_decref(root);
            return KA_ENOMEM;
        }
    }
    return dump(root, out, len);
}

/* Reading back: each helper fills err naming the field and returns a ka_err. */

static int get_int(json_t *o, const char *key, int64_t min, int64_t max, int64_t *out, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) {
        snprintf(err, errlen, "\"%s\" is missing or not an integer", key);
        return KA_EINVALID;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        snprintf(err, errlen, "\"%s\" is %lld, outside %lld..%lld", key, (long long)x,
                 (long long)min, (long long)max);
        return KA_ELIMIT;
    }
    *out = x;
    return 0;
}

static int get_i32(json_t *o, const char *key, int32_t min, int32_t *out, char *err, size_t errlen)
{
    int64_t x;
    int rc = get_int(o, key, min, INT32_MAX, &x, err, errlen);
    if (rc == 0)
        *out = (int32_t)x;
    return rc;
}

static int get_array(json_t *o, const char *key, size_t cap, json_t **out, char *err, size_t errlen)
{
    *out = json_object_get(o, key);
    if (!json_is_array(*out)) {
        snprintf(err, errlen, "\"%s\" is missing or not an array", key);
        return KA_EINVALID;
    }
    if (json_array_size(*out) > cap) {
        snprintf(err, errlen, "\"%s\" has %zu entries, more than %zu", key, json_array_size(*out),
                 cap);
        return KA_ELIMIT;
    }
    return 0;
}

static int decode_replicas(json_t *o, ka_ledger_item_t *it, char *err, size_t errlen)
{
    json_t *a;
    int rc = get_array(o, "replicas", KA_LEDGER_REPLICAS_MAX, &a, err, errlen);
    if (rc < 0)
        return rc;
    it->spec.replica_count = (int32_t)json_array_size(a);
    it->replicas = calloc((size_t)it->spec.replica_count + 1, sizeof(int32_t));
    if (it->replicas == NULL)
        return KA_ENOMEM;
    it->spec.replicas = it->replicas;
    for (int32_t i = 0; i < it->spec.replica_count; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            snprintf(err, errlen, "\"replicas\"[%d] is not a broker id", (int)i);
            return KA_EINVALID;
        }
        it->replicas[i] = (int32_t)json_integer_value(v);
    }
    return 0;
}

static int decode_deltas(json_t *o, ka_ledger_item_t *it, char *err, size_t errlen)
{
    json_t *a;
    int rc = get_array(o, "deltas", KA_LEDGER_DELTAS_MAX, &a, err, errlen);
    if (rc < 0)
        return rc;
    it->spec.delta_count = json_array_size(a);
    it->deltas = calloc(it->spec.delta_count + 1, sizeof(*it->deltas));
    if (it->deltas == NULL)
        return KA_ENOMEM;
    it->spec.deltas = it->deltas;
    for (size_t i = 0; i < it->spec.delta_count; i++) {
        json_t *pair = json_array_get(a, i);
        json_t *b = json_array_get(pair, 0), *n = json_array_get(pair, 1);
        if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(b) ||
            !json_is_integer(n) || json_integer_value(b) < 0 || json_integer_value(b) > INT32_MAX ||
            json_integer_value(n) <= 0 ||
            json_integer_value(n) > KA_LEDGER_ITEMS_MAX * (json_int_t)KA_LEDGER_REPLICAS_MAX) {
            snprintf(err, errlen, "\"deltas\"[%zu] is not [broker id, replicas > 0]", i);
            return KA_EINVALID;
        }
        it->deltas[i] =
            (ka_broker_delta_t){(int32_t)json_integer_value(b), (int32_t)json_integer_value(n)};
    }
    return 0;
}

static int decode_item(json_t *o, ka_ledger_item_t *it, char *err, size_t errlen)
{
    int rc;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "an item is not an object");
        return KA_EINVALID;
    }
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (kind != NULL && strcmp(kind, "partitions") == 0)
        it->spec.kind = KA_RESERVATION_PARTITIONS;
    else if (kind != NULL && strcmp(kind, "replicas") == 0)
        it->spec.kind = KA_RESERVATION_REPLICAS;
    else {
        snprintf(err, errlen, "\"kind\" is not \"partitions\" or \"replicas\"");
        return KA_EINVALID;
    }
    json_t *topic = json_object_get(o, "topic");
    size_t tlen = json_string_length(topic);
    if (!json_is_string(topic) || tlen == 0 || tlen > KA_LEDGER_TOPIC_MAX ||
        memchr(json_string_value(topic), '\0', tlen) != NULL) {
        snprintf(err, errlen, "\"topic\" is not a topic name of 1 to %d bytes",
                 KA_LEDGER_TOPIC_MAX);
        return KA_EINVALID;
    }
    memcpy(it->topic, json_string_value(topic), tlen);
    it->topic[tlen] = '\0';
    it->spec.topic = (ka_slice_t){(const uint8_t *)it->topic, (int32_t)tlen};
    if ((rc = get_i32(o, "partition_count", 0, &it->spec.partition_count, err, errlen)) < 0 ||
        (rc = get_i32(o, "partition", -1, &it->spec.partition, err, errlen)) < 0 ||
        (rc = get_i32(o, "new_partitions", 0, &it->spec.new_partitions, err, errlen)) < 0 ||
        (rc = decode_replicas(o, it, err, errlen)) < 0 ||
        (rc = decode_deltas(o, it, err, errlen)) < 0 ||
        (rc = decode_replaces(o, it, err, errlen)) < 0)
        return rc;
    /* Optional ("creates": true), absent from the records of sidecars before it: a growth. */
    json_t *creates = json_object_get(o, "creates");
    if (creates != NULL && !json_is_boolean(creates)) {
        snprintf(err, errlen, "\"creates\" is not true or false");
        return KA_EINVALID;
    }
    it->spec.creates_topic = json_is_true(creates);
    return 0;
}

static int decode_outcome(json_t *items, ka_ledger_record_t *r, char *err, size_t errlen)
{
    r->admitted = calloc(r->count + 1, 1);
    if (r->admitted == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < r->count; i++) {
        const char *s = json_string_value(json_array_get(items, i));
        if (s != NULL && strcmp(s, "admitted") == 0)
            r->admitted[i] = 1;
        else if (s == NULL || strcmp(s, "released") != 0) {
            snprintf(err, errlen, "\"items\"[%zu] is not \"admitted\" or \"released\"", i);
            return KA_EINVALID;
        }
    }
    return 0;
}

static int decode_root(json_t *root, ka_ledger_record_t *r, char *err, size_t errlen)
{
    int64_t x;
    int rc;
    json_t *items;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the record is not a JSON object");
        return KA_EINVALID;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    if (type != NULL && strcmp(type, "intent") == 0)
        r->type = KA_LEDGER_INTENT;
    else if (type != NULL && strcmp(type, "outcome") == 0)
        r->type = KA_LEDGER_OUTCOME;
    else if (type != NULL && strcmp(type, "heartbeat") == 0)
        r->type = KA_LEDGER_HEARTBEAT;
    else {
        snprintf(err, errlen, "\"type\" is not \"intent\", \"outcome\" or \"heartbeat\"");
        return KA_EINVALID;
    }
    json_t *sidecar = json_object_get(root, "sidecar");
    size_t slen = json_string_length(sidecar);
    if (!json_is_string(sidecar) || slen == 0 || slen > KA_LEDGER_SIDECAR_MAX ||
        memchr(json_string_value(sidecar), '\0', slen) != NULL) {
        snprintf(err, errlen, "\"sidecar\" is not an id of 1 to %d bytes", KA_LEDGER_SIDECAR_MAX);
        return KA_EINVALID;
    }
    memcpy(r->sidecar, json_string_value(sidecar), slen);
    r->sidecar[slen] = '\0';
    if ((rc = get_int(root, "seq", 0, INT64_MAX, &x, err, errlen)) < 0)
        return rc;
    r->seq = (uint64_t)x;
    if ((rc = get_array(root, "items", KA_LEDGER_ITEMS_MAX, &items, err, errlen)) < 0)
        return rc;
    r->count = json_array_size(items);
    if (r->type == KA_LEDGER_OUTCOME)
        return decode_outcome(items, r, err, errlen);
    if (r->type == KA_LEDGER_HEARTBEAT) {
        r->count = 0; /* carries nothing to apply */
        return 0;
    }
    if ((rc = get_int(root, "ts", 0, INT64_MAX, &r->ts_ms, err, errlen)) < 0)
        return rc;
    r->items = calloc(r->count + 1, sizeof(*r->items));
    if (r->items == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < r->count; i++) {
        if ((rc = decode_item(json_array_get(items, i), &r->items[i], err, errlen)) < 0)
            return rc;
    }
    return 0;
}

int ka_ledger_decode(const void *bytes, size_t len, ka_ledger_record_t *out, char *err,
                     size_t errlen)
{
    json_error_t jerr;
    memset(out, 0, sizeof(*out));
    if (bytes == NULL || len == 0 || len > KA_LEDGER_RECORD_MAX) {
        snprintf(err, errlen, "the record is empty or larger than %d bytes", KA_LEDGER_RECORD_MAX);
        return KA_ELIMIT;
    }
    json_t *root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        snprintf(err, errlen, "not valid JSON: %s", jerr.text);
        return KA_EINVALID;
    }
    int rc = decode_root(root, out, err, errlen);
    json_decref(root);
    if (rc < 0)
        ka_ledger_record_free(out);
    return rc;
}

void ka_ledger_record_free(ka_ledger_record_t *r)
{
    if (r->items != NULL) {
        for (size_t i = 0; i < r->count; i++) {
            free(r->items[i].replicas);
            free(r->items[i].deltas);
        }
    }
    free(r->items);
    free(r->admitted);
    memset(r, 0, sizeof(*r));
}
