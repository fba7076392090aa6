/*
 * ka_admin_whatif.h: the body of POST /v1/what-if, parsed into the
 * engine's inputs.
 *
 * The body is shaped like a CreateTopics or a CreatePartitions request,
 * with the field names of Kafka's message specs in camelCase:
 *
 *   {"createTopics": {"topics": [{"name": "team-a.x", "numPartitions": 3,
 *      "replicationFactor": 2, "assignments": [{"partitionIndex": 0, "brokerIds": [1, 2]}],
 *      "configs": [{"name": "min.insync.replicas", "value": "2"}]}]},
 *    "principal": "User:alice"}
 *   {"createPartitions": {"topics": [{"name": "t", "count": 6,
 *      "assignments": [{"brokerIds": [1, 2]}]}]}}
 *
 * Every item is validate_only: judged, counted within the call, never
 * reserved. Pure: no I/O, so the fuzz target drives it with bytes.
 */
#ifndef KA_ADMIN_WHATIF_H
#define KA_ADMIN_WHATIF_H

#include <stddef.h>

#include "ka_engine.h"

/* Bodies above this are refused with 413 before they are parsed. */
#define KA_WHATIF_MAX_BODY ((size_t)256 * 1024)
/* Topics in one body, and partitions or replicas in one assignment. */
#define KA_WHATIF_MAX_TOPICS     1000
#define KA_WHATIF_MAX_ROWS       10000
#define KA_WHATIF_MAX_BROKER_IDS 64

enum ka_whatif_kind { KA_WHATIF_CREATE_TOPICS, KA_WHATIF_CREATE_PARTITIONS };

typedef struct ka_whatif ka_whatif_t;

/*
 * Parses a body; on failure fills err with a sentence naming the field
 * ("createTopics.topics[0].numPartitions: ...") and returns KA_EINVALID
 * (or KA_ENOMEM).
 */
int ka_whatif_parse(const char *body, size_t len, ka_whatif_t **out, char *err, size_t errlen);
void ka_whatif_free(ka_whatif_t *w);

enum ka_whatif_kind ka_whatif_kind(const ka_whatif_t *w);
/* "User:alice", or NULL when the body names no principal. */
const char *ka_whatif_principal(const ka_whatif_t *w);
size_t ka_whatif_count(const ka_whatif_t *w);
/* The items, valid while w is: CreateTopics or CreatePartitions, by kind. */
const ka_create_topic_t *ka_whatif_topics(const ka_whatif_t *w);
const ka_create_partitions_t *ka_whatif_partitions(const ka_whatif_t *w);

#endif
