/*
 * ka_admission_errors.c: which broker answers mean that nothing was created
 * (ARCHITECTURE invariant 12).
 *
 * An admitted item holds a reservation until a view shows what it created.
 * The broker's answer may end it early, but only when the answer says the
 * item created nothing: the request was refused before the controller
 * wrote anything (a validation, authorization or quota error). Any other
 * answer keeps the reservation until a view shows the result or its expiry
 * passes: a timeout (REQUEST_TIMED_OUT: the controller may still commit),
 * NOT_CONTROLLER (a controller that lost its leadership after appending may
 * still see the record committed by its successor), an unknown server
 * error, a disconnect, an error code kadmit does not know, or an answer
 * that lacks the item.
 *
 * The codes are Kafka's (org.apache.kafka.common.protocol.Errors).
 */
#include "ka_admission.h"

#include "ka_alterpartitionreassignments_request.h"
#include "ka_createpartitions_request.h"
#include "ka_createtopics_request.h"
#include "ka_metadata_request.h"

enum {
    UNKNOWN_TOPIC_OR_PARTITION = 3,
    INVALID_TOPIC_EXCEPTION = 17,
    TOPIC_AUTHORIZATION_FAILED = 29,
    CLUSTER_AUTHORIZATION_FAILED = 31,
    UNSUPPORTED_VERSION = 35,
    TOPIC_ALREADY_EXISTS = 36,
    INVALID_PARTITIONS = 37,
    INVALID_REPLICATION_FACTOR = 38,
    INVALID_REPLICA_ASSIGNMENT = 39,
    INVALID_CONFIG = 40,
    INVALID_REQUEST = 42,
    POLICY_VIOLATION = 44,
    THROTTLING_QUOTA_EXCEEDED = 89,
    UNKNOWN_TOPIC_ID = 100,
};

/* Refused before anything was written, whatever the API. */
static bool refused_up_front(int16_t error)
{
    switch (error) {
    case INVALID_TOPIC_EXCEPTION:
    case TOPIC_AUTHORIZATION_FAILED:
    case CLUSTER_AUTHORIZATION_FAILED:
    case UNSUPPORTED_VERSION:
    case INVALID_REQUEST:
    case POLICY_VIOLATION:
    case THROTTLING_QUOTA_EXCEEDED:
        return true;
    default:
        return false;
    }
}

bool ka_adm_error_created_nothing(int16_t api_key, int16_t error)
{
    if (error == 0)
        return false;
    if (refused_up_front(error))
        return true;
    switch (api_key) {
    case KA_CREATETOPICS_REQUEST_API_KEY:
        return error == TOPIC_ALREADY_EXISTS || error == INVALID_PARTITIONS ||
               error == INVALID_REPLICATION_FACTOR || error == INVALID_REPLICA_ASSIGNMENT ||
               error == INVALID_CONFIG;
    case KA_CREATEPARTITIONS_REQUEST_API_KEY:
        return error == UNKNOWN_TOPIC_OR_PARTITION || error == INVALID_PARTITIONS ||
               error == INVALID_REPLICATION_FACTOR || error == INVALID_REPLICA_ASSIGNMENT ||
               error == UNKNOWN_TOPIC_ID;
    case KA_ALTERPARTITIONREASSIGNMENTS_REQUEST_API_KEY:
        return error == UNKNOWN_TOPIC_OR_PARTITION || error == INVALID_REPLICA_ASSIGNMENT ||
               error == INVALID_REPLICATION_FACTOR || error == UNKNOWN_TOPIC_ID;
    case KA_METADATA_REQUEST_API_KEY:
        /* Auto-creation: the principal may not create (or describe) the topic, or its name
         * is invalid. LEADER_NOT_AVAILABLE (being created) and UNKNOWN_TOPIC_OR_PARTITION
         * (the broker's own creation may still be on its way) keep it. */
        return false;
    default:
        return false;
    }
}
