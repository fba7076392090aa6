/*
 * ka_ledger_record.h: the records of the cluster-wide admission ledger.
 *
 * Every record is a JSON object keyed (in Kafka) by the sidecar's id:
 *   intent   {"type":"intent","sidecar":ID,"seq":N,"ts":MS,"items":[SPEC...]}
 *            the reservations a sidecar is about to admit, one SPEC per
 *            item: {"kind":"partitions"|"replicas","topic":T,
 *            "partition_count":N,"partition":P,"replicas":[B...],
 *            "new_partitions":N,"deltas":[[BROKER,REPLICAS]...],
 *            "replaces_topic_id":HEX32 (optional: the id of a topic of that name a
 *            view still showed, so only a view with another id shows the item)};
 *   outcome  {"type":"outcome","sidecar":ID,"seq":N,"items":["admitted"|"released"...]}
 *            what became of each item of intent (ID, N), in the same order;
 *   heartbeat {"type":"heartbeat","sidecar":ID,"seq":0,"ts":MS,"items":[]}
 *            changes nothing: a sidecar appends one at start, and the broker's
 *            LogAppendTime in its delivery report tells it the ledger's clock.
 *
 * The ledger is written by every sidecar of the cluster, so a record read
 * back is untrusted input: every count, length and number is checked
 * against a cap before use, and anything out of shape is refused with a
 * sentence (the caller counts it and goes on).
 *
 * Pure: no I/O, no clock.
 */
#ifndef KA_LEDGER_RECORD_H
#define KA_LEDGER_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "ka_reservations.h"

#define KA_LEDGER_RECORD_MAX   (1024 * 1024) /* bytes of one record */
#define KA_LEDGER_ITEMS_MAX    10000         /* items of one record */
#define KA_LEDGER_REPLICAS_MAX 1024          /* replicas of one partition */
#define KA_LEDGER_DELTAS_MAX   10000         /* brokers touched by one item */
#define KA_LEDGER_TOPIC_MAX    249           /* Kafka's own bound on topic names */
#define KA_LEDGER_SIDECAR_MAX  255           /* bytes of a sidecar id */

enum ka_ledger_type { KA_LEDGER_INTENT = 0, KA_LEDGER_OUTCOME, KA_LEDGER_HEARTBEAT };

/* One item of an intent: a reservation spec whose arrays the item owns. */
typedef struct ka_ledger_item {
    ka_reservation_spec_t spec; /* topic, replicas, deltas point into this item; no expiry */
    char topic[KA_LEDGER_TOPIC_MAX + 1];
    int32_t *replicas;
    ka_broker_delta_t *deltas;
} ka_ledger_item_t;

typedef struct ka_ledger_record {
    enum ka_ledger_type type;
    char sidecar[KA_LEDGER_SIDECAR_MAX + 1];
    uint64_t seq;
    int64_t ts_ms;           /* intents: when the sidecar wrote it (its wall clock) */
    size_t count;            /* items */
    ka_ledger_item_t *items; /* intents */
    uint8_t *admitted;       /* outcomes: 1 admitted, 0 released, per item */
} ka_ledger_record_t;

/* Encodes an intent; *out is malloc'd JSON (not NUL-counted in *len). */
int ka_ledger_encode_intent(const char *sidecar, uint64_t seq, int64_t ts_ms,
                            const ka_reservation_spec_t *specs, size_t count, char **out,
                            size_t *len);
/* Encodes a heartbeat (ts_ms: the writer's clock, for people reading the log). */
int ka_ledger_encode_heartbeat(const char *sidecar, int64_t ts_ms, char **out, size_t *len);
/* Encodes an outcome: admitted[i] nonzero for "admitted", zero for "released". */
int ka_ledger_encode_outcome(const char *sidecar, uint64_t seq, const uint8_t *admitted,
                             size_t count, char **out, size_t *len);
/*
 * Decodes a record. Returns 0, KA_ENOMEM, or KA_EINVALID / KA_ELIMIT with a
 * sentence in err naming the field. On failure *out holds nothing to free.
 */
int ka_ledger_decode(const void *bytes, size_t len, ka_ledger_record_t *out, char *err,
                     size_t errlen);
void ka_ledger_record_free(ka_ledger_record_t *r);

#endif
