/*
 * ka_limits_record.h: the record of the cluster's limits topic, and how a
 * change made over the admin API joins the override layer.
 *
 * With the ledger on, the limits changed at runtime are one truth for the
 * cluster: a compacted topic (--limits-topic, default __kadmit_limits) with
 * one partition holds, under one key, the whole override layer, the JSON
 * merge patch (RFC 7396) that every sidecar layers over its policy file.
 * Every sidecar consumes the topic from the beginning and applies the
 * records in offset order, so all of them converge on the same layer.
 *
 * The record's value is a small JSON document:
 *   {"kadmit.limits": 1, "overrides": {<merge patch>}, "at": <offset>,
 *    "written_by": "<sidecar>", "written_at_ms": <unix ms>}
 * An empty "overrides" clears the layer. Unknown keys are ignored, so a
 * newer writer's additions do not stop an older reader; a record that is
 * not such a document is reported and skipped.
 *
 * Each record carries the whole layer, composed by its writer over the
 * layer in force when every record before offset "at" had been read, so a
 * record changes the layer only if it landed at exactly that offset
 * (ka_limits_record_place): a concurrent change that landed first moves it,
 * and so does re-producing an old record, which then changes nothing. The
 * rule needs only the record and its offset, so it holds alike for a
 * sidecar that read the topic from its first record and for one that
 * started after compaction removed older ones. Records written before "at"
 * existed (and tombstones) apply only while no cluster secret is set.
 *
 * Pure code (jansson only): unit-tested without Kafka.
 */
#ifndef KA_LIMITS_RECORD_H
#define KA_LIMITS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_own_topics.h"

/* The one key every record is written under, so compaction keeps the last. */
#define KA_LIMITS_RECORD_KEY "overrides"
/* The default topic; --limits-topic changes it. */
#define KA_LIMITS_DEFAULT_TOPIC KA_OWN_TOPIC_LIMITS
/* A record's value is refused above this size before it is parsed. */
#define KA_LIMITS_RECORD_MAX_BYTES (1024u * 1024u)
/* Room for "written_by", NUL included; longer names are cut. */
#define KA_LIMITS_WRITER_MAX 256

typedef struct ka_limits_record {
    char *overrides;                       /* compact, sorted merge patch; NULL: layer empty */
    char written_by[KA_LIMITS_WRITER_MAX]; /* who wrote it; "" for a tombstone */
    int64_t written_at_ms;                 /* wall-clock ms of the write; 0 when unknown */
    int64_t at;     /* the offset it was written to land at; -1: none (an older writer) */
    bool tombstone; /* the record had no value */
} ka_limits_record_t;

/* Whether a record read at an offset may change the layer. */
enum ka_limits_place {
    KA_LIMITS_IN_PLACE = 0, /* it landed where it was written for: it applies */
    KA_LIMITS_MOVED,        /* it landed elsewhere: a concurrent change came first, or a copy */
    KA_LIMITS_UNPLACED, /* it names no offset (older writer, tombstone): only without a secret */
};

/*
 * The value for a layer (`overrides` NULL or "{}" clears it) that must land
 * at offset `at`. *out gets a NUL-terminated JSON text to free(). Returns
 * 0, KA_EINVALID when `overrides` is not a JSON object, or KA_ENOMEM.
 */
int ka_limits_record_encode(const char *overrides, int64_t at, const char *written_by,
                            int64_t written_at_ms, char **out, size_t *out_len);

/*
 * The apply rule for a record read at `offset`. With `secret_set`, a record
 * without "at" is refused as KA_LIMITS_UNPLACED; without one it applies as
 * it did before "at" existed (so a cluster can be upgraded sidecar by
 * sidecar).
 */
enum ka_limits_place ka_limits_record_place(const ka_limits_record_t *rec, int64_t offset,
                                            bool secret_set);

/*
 * Reads a record's value (NULL for a tombstone). Fills rec (free it with
 * ka_limits_record_clear). Returns 0, KA_ELIMIT for a value above
 * KA_LIMITS_RECORD_MAX_BYTES, or KA_EINVALID with a sentence in err.
 */
int ka_limits_record_decode(const void *value, size_t len, ka_limits_record_t *rec, char *err,
                            size_t errlen);

void ka_limits_record_clear(ka_limits_record_t *rec);

/*
 * The layer after a change: `change` (a merge patch, the difference between
 * the policy in force and the one the API asked for) applied on top of the
 * merge patch `layer` (NULL: empty), so that applying the result to a base
 * equals applying `layer` and then `change`. Nulls are kept, since in a
 * merge patch they remove a value of the file's. *out gets compact, sorted
 * JSON ("{}" for an empty layer) to free(). Returns 0, KA_EINVALID when
 * either is not a JSON object, or KA_ENOMEM.
 */
int ka_limits_layer_compose(const char *layer, const char *change, char **out);

/* True when the layer is NULL, empty or "{}". */
bool ka_limits_layer_is_empty(const char *layer);

/*
 * True when the layer sets `key` (a top-level key such as
 * "max.broker.partitions"), or, with broker_id >= 0, broker broker_id's
 * entry under "brokers" (a null entry, which removes the file's, counts).
 */
bool ka_limits_layer_sets(const char *layer, const char *key, int32_t broker_id);

#endif
