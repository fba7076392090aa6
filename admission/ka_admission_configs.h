/*
 * ka_admission_configs.h: KIP-578's operator interface on the wire, pure.
 *
 * KIP-578 sets its limits as broker configs: `max.broker.partitions` on a
 * BROKER resource (name "" for the default entity, a broker id for one
 * broker) and `max.partitions` on the default entity. kadmit enforces
 * these limits, so their truth is kadmit's limits store, not the broker's
 * config store. This module translates the three config APIs:
 *
 * - IncrementalAlterConfigs and the legacy AlterConfigs: kadmit's keys are
 *   validated and taken out of the request; every other key and resource
 *   goes on to the broker, which still decides authorization. A resource
 *   kadmit refuses (a bad value, APPEND, an unknown broker) is answered
 *   locally and not forwarded at all, so a resource stays all-or-nothing as
 *   in Kafka. The broker's answer is merged per resource, in request order,
 *   and yields the changes to make: those of the resources the broker
 *   accepted, none under validate_only.
 * - DescribeConfigs: for BROKER resources the broker's answer loses its own
 *   entries for kadmit's keys (sensitive, null) and gains the values kadmit
 *   enforces, each with its source and, when asked, its synonyms.
 *
 * No I/O and no clock: frames in, frames out, unit-tested with frames
 * captured from real clients.
 */
#ifndef KA_ADMISSION_CONFIGS_H
#define KA_ADMISSION_CONFIGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_admission.h"

#define KA_CFG_MAX_BROKER_PARTITIONS "max.broker.partitions"
#define KA_CFG_MAX_PARTITIONS        "max.partitions"
/* The broker id of the default entity (resource name ""). */
#define KA_CFG_DEFAULT_ENTITY (-1)

/* Kafka's ConfigResource types of a topic and a broker. */
#define KA_CFG_RESOURCE_TOPIC  2
#define KA_CFG_RESOURCE_BROKER 4

/* DescribeConfigs' config_source values kadmit reports. A value from
 * kadmit's policy file is reported as the broker's static configuration:
 * it is set at deploy time and changes only when the file does. */
enum ka_cfg_source {
    KA_CFG_SOURCE_DYNAMIC_BROKER = 2,
    KA_CFG_SOURCE_DYNAMIC_DEFAULT = 3,
    KA_CFG_SOURCE_STATIC = 4,
    KA_CFG_SOURCE_DEFAULT = 5,
};

enum ka_cfg_key {
    KA_CFG_KEY_MAX_BROKER_PARTITIONS = 0,
    KA_CFG_KEY_MAX_PARTITIONS,
    KA_CFG_KEY_COUNT
};

/* One change to kadmit's limits, made once the broker accepted its resource. */
typedef struct ka_cfg_change {
    int32_t broker_id; /* KA_CFG_DEFAULT_ENTITY for the default entity */
    enum ka_cfg_key key;
    bool remove; /* DELETE (or, in AlterConfigs, absent): back to the next layer */
    int32_t value;
} ka_cfg_change_t;

/* One TOPIC resource judged against its rule's config bounds. */
typedef struct ka_cfg_judged {
    const char *topic;
    size_t topic_len;
    const char *rule;
    const char *verdict; /* "admit", "reject", "audit" (forwarded, flagged) */
    const char *message; /* the broken bound or the protection's sentence, or NULL */
    const char *reason;  /* "rule_config" or "protected_topic" when not admitted; else NULL */
} ka_cfg_judged_t;

typedef struct ka_cfg_ctx {
    /* The brokers the cluster view knows; a change for another id is
     * refused. NULL: no view yet, ids are not checked. */
    const int32_t *broker_ids;
    size_t broker_count;
    /* Non-NULL: kadmit's limits cannot be written now (the sentence says
     * why); a change that is not validate_only is refused with it. */
    const char *store_problem;
    size_t max_frame;
    /* TOPIC resources are judged against their topic rule's config bounds (the policy's
     * "topic.rules"), keys left out or deleted at the view's broker defaults. policy NULL: not
     * judged. view NULL: no default is known, so only the values set can meet a bound. */
    const ka_policy_t *policy;
    const ka_cluster_t *view;
    /* Who sent the request ("User:name"), or NULL: the policy's principal.unknown. */
    const char *principal;
    /* Called for each TOPIC resource a topic rule or protection judged, in request order, for
     * its audit event; NULL: nobody listens. Everything is borrowed for the call. */
    void (*on_topic_judged)(void *arg, const struct ka_cfg_judged *topic);
    void *on_topic_judged_arg;
} ka_cfg_ctx_t;

/* What an alter or describe request keeps until its response. */
typedef struct ka_cfg_pending ka_cfg_pending_t;
void ka_cfg_pending_free(ka_cfg_pending_t *p);

typedef struct ka_cfg_outcome {
    enum ka_adm_action action; /* FORWARD (untouched), REWRITE, ANSWER or CLOSE */
    uint8_t *bytes;            /* REWRITE and ANSWER: the frame (free()) */
    size_t len;
    ka_cfg_pending_t *pending; /* non-NULL: pass the response to ka_cfg_*_response */
    size_t resources;          /* BROKER resources that carry kadmit's keys */
    size_t refused;            /* of which kadmit answered locally */
    bool validate_only;
    char message[KA_ADM_MESSAGE_MAX]; /* the first refusal, or why it closed */
    /* TOPIC resources a topic rule's config bounds judged (exempt principals' are not), of
     * which refused (answered POLICY_VIOLATION, not forwarded) and audited (an audit rule
     * found a bound broken; forwarded). */
    size_t topics_judged, topics_refused, topics_audited;
    char rule[128];                         /* the rule of the first topic judged */
    char topic_message[KA_ADM_MESSAGE_MAX]; /* the first broken bound, refused or audited */
    /* TOPIC resources protection refused (kadmit's own, or a destructive change to a protected
     * topic; answered POLICY_VIOLATION, not forwarded) and flagged (audit mode; forwarded),
     * and the first such sentence. */
    size_t protected_refused, protected_audited;
    char protect_message[KA_ADM_MESSAGE_MAX];
} ka_cfg_outcome_t;

void ka_cfg_outcome_release(ka_cfg_outcome_t *out);

/* True for the API keys this module handles (44, 33, 32). */
bool ka_cfg_api_handled(int16_t api_key);

/*
 * An IncrementalAlterConfigs or AlterConfigs request frame (size prefix
 * included). Returns 0 or KA_ENOMEM; a frame that does not decode gives
 * CLOSE with the reason in out->message.
 */
int ka_cfg_alter_request(const ka_cfg_ctx_t *ctx, const uint8_t *frame, size_t len,
                         ka_cfg_outcome_t *out);
/*
 * The broker's response to an alter request that left `pending`. *out gets
 * the merged frame (free()) or NULL when the response goes on unchanged;
 * *changes (free()) the changes of the resources the broker accepted, none
 * under validate_only. Returns 0, KA_ENOMEM, or a decode error (the response
 * then goes on unchanged and nothing is changed).
 */
int ka_cfg_alter_response(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                          size_t max_frame, uint8_t **out, size_t *out_len,
                          ka_cfg_change_t **changes, size_t *nchanges);

/*
 * The same response when the changes it yields could not be stored (why: a
 * sentence): each resource the broker accepted with kadmit's keys in it is
 * answered UNKNOWN_SERVER_ERROR with why, so no client is told a limit was
 * set that nobody enforces. *out as above (NULL: unchanged).
 */
int ka_cfg_alter_response_unstored(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                                   size_t max_frame, const char *why, uint8_t **out,
                                   size_t *out_len);

/* One broker's override in a layer of kadmit's limits. */
typedef struct ka_cfg_override {
    int32_t broker_id;
    int64_t value; /* -1: the layer removes the file's override for this broker */
} ka_cfg_override_t;

/*
 * kadmit's limits as two layers, for DescribeConfigs: the dynamic layer
 * (the limits store: kafka-configs and the admin API) over the policy file.
 * -1 means the layer does not set the value.
 */
typedef struct ka_cfg_limits {
    int64_t dynamic_default, dynamic_max_partitions;
    const ka_cfg_override_t *dynamic_brokers;
    size_t dynamic_broker_count;
    int64_t file_default, file_max_partitions;
    const ka_cfg_override_t *file_brokers;
    size_t file_broker_count;
} ka_cfg_limits_t;

/*
 * A DescribeConfigs request frame: FORWARD, with `pending` when it names a
 * BROKER resource whose answer must show kadmit's keys. Returns 0 or
 * KA_ENOMEM (a frame that does not decode is left to the broker).
 */
int ka_cfg_describe_request(const uint8_t *frame, size_t len, ka_cfg_outcome_t *out);
/*
 * The broker's DescribeConfigs response: *out gets the frame with kadmit's
 * keys as `limits` says (free()), or NULL when nothing changed. Returns 0,
 * KA_ENOMEM or a decode error (the response then goes on unchanged).
 */
int ka_cfg_describe_response(const ka_cfg_pending_t *p, const ka_cfg_limits_t *limits,
                             const uint8_t *frame, size_t len, size_t max_frame, uint8_t **out,
                             size_t *out_len);

/* The key's config name. */
const char *ka_cfg_key_name(enum ka_cfg_key key);

#endif
