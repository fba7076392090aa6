/*
 * adm_fixture.h: the synthetic cluster and the frame helpers the admission
 * unit tests share.
 *
 * The synthetic cluster: brokers 1, 2, 3 (no racks), limit 10 replicas per
 * broker (POLICY), topic "full" with 8 partitions of replication 1 on
 * broker 1 and topic "three" with one partition on brokers 2 and 3, so
 * broker 1 has room for 2 more replicas and brokers 2 and 3 for 9.
 *
 * Frames are written and read through the generated codecs' type-correct
 * entries (ka_codec_find), so no test casts a function pointer.
 */
#ifndef ADM_FIXTURE_H
#define ADM_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ka_admission.h"
#include "ka_protocol.h"

#define POLICY "{\"max.broker.partitions\": 10}"

typedef struct fx {
    ka_policy_t *policy;
    ka_cluster_t *view;
    ka_reservations_t *ledger;
    ka_adm_ctx_t ctx;
} fx_t;

static inline ka_slice_t S(const char *s)
{
    return (ka_slice_t){(const uint8_t *)s, (int32_t)strlen(s)};
}

static inline bool slice_is(ka_slice_t s, const char *lit)
{
    return s.len == (int32_t)strlen(lit) && memcmp(s.ptr, lit, strlen(lit)) == 0;
}

fx_t *fx_new(const char *policy_json);
void fx_free(fx_t *f);

/* A whole request (response) frame: size, header of the right version, body. */
uint8_t *fx_request_frame(int16_t api_key, int16_t version, int32_t cid, const void *body,
                          size_t *len);
uint8_t *fx_response_frame(int16_t api_key, int16_t version, int32_t cid, const void *body,
                           size_t *len);
/* Decodes a request frame's body (header skipped) into out; *version from the header. */
void fx_decode_request(const uint8_t *frame, size_t len, ka_arena_t *arena, int16_t *version,
                       void *out);
/* Decodes a response frame, checking its size prefix and correlation id. */
void fx_decode_response(const uint8_t *frame, size_t len, int16_t api_key, int16_t version,
                        int32_t cid, ka_arena_t *arena, void *out);

/* A frame captured from a real client (tests/data/frames/<path>; the file holds it after
 * its size prefix) with the prefix put back; malloc'd. */
uint8_t *fx_captured(const char *path, size_t *len);

/* CreateTopics: one topic (no assignments), and a request (correlation id 77). */
struct ka_createtopics_request_creatable_topic fx_ct_topic(const char *name, int32_t np,
                                                           int16_t rf);
uint8_t *fx_ct_request(int16_t version, struct ka_createtopics_request_creatable_topic *topics,
                       int32_t n, bool validate_only, size_t *len);
/* CreatePartitions of one topic to `count`, the broker placing (correlation id 9). */
uint8_t *fx_cp_request(int16_t ver, const char *name, int32_t count, size_t *len);

#endif
