/*
 * ka_mdc_logdirs.h: whether the cluster view may be partial.
 *
 * Metadata answers only the topics the asking principal may Describe, and
 * says nothing of the others: a view built from it silently undercounts.
 * DescribeLogDirs is authorised on the cluster alone (Describe on CLUSTER)
 * and lists every replica in the answering broker's log directories,
 * whatever the topic ACLs, so comparing its answer with the view shows
 * replicas the view lacks. The metadata client asks its own broker (the one
 * connection it has; each broker's sidecar asks its broker) and compares on
 * a worker thread, since the answer grows with the partitions.
 *
 * Pure: no I/O, no clock; unit tests feed it encoded answers.
 */
#ifndef KA_MDC_LOGDIRS_H
#define KA_MDC_LOGDIRS_H

#include <stddef.h>
#include <stdint.h>

#include "ka_cluster.h"
#include "ka_reader.h"

typedef enum ka_logdirs_result {
    KA_LOGDIRS_COMPLETE = 0, /* every replica the broker hosts is in the view */
    KA_LOGDIRS_MISSING,      /* the broker hosts replicas the view lacks */
    KA_LOGDIRS_UNAUTHORIZED, /* the broker refused: no Describe on CLUSTER */
    KA_LOGDIRS_FAILED,       /* the answer could not be decoded */
} ka_logdirs_result_t;

/* Distinct missing topics a check remembers (by a 64-bit hash of the name). */
#define KA_LOGDIRS_TOPICS_TRACKED 256

typedef struct ka_logdirs_check {
    ka_logdirs_result_t result;
    int64_t replicas;        /* current (not future) replicas the broker listed */
    int64_t missing;         /* of them, replicas of partitions the view lacks */
    char first_missing[250]; /* a topic the view lacks, NUL-terminated, for the message */
    char err[200];           /* FAILED: what the decoder said */
    /* The topics the view lacks, hashed, so that a later check can tell a topic hidden from
     * kadmit (missing every time) from one created between two answers (missing once). */
    uint64_t missing_topics[KA_LOGDIRS_TOPICS_TRACKED];
    size_t missing_topic_count;
    int missing_topics_overflow; /* more distinct topics than tracked */
} ka_logdirs_check_t;

/*
 * Decodes a DescribeLogDirs answer of `version` (the body after its
 * response header) and compares every current replica it lists with view.
 * Log directories answering an error (offline) are skipped; a future
 * replica (one being moved between directories) is the same partition.
 */
void ka_logdirs_compare(const ka_cluster_t *view, ka_reader_t r, int16_t version,
                        ka_logdirs_check_t *out);

/*
 * The sentence for ka_cluster_mark_partial: why the view may be partial
 * and what to grant `principal` (the metadata client's SASL user, or ""
 * when it has none).
 */
void ka_logdirs_partial_reason(const ka_logdirs_check_t *check, const char *principal, char *why,
                               size_t len);

/*
 * What the checks so far say, kept by the metadata client across refreshes.
 * A topic created between the Metadata request and DescribeLogDirs shows as
 * missing once; the next refresh's Metadata has it. Under a burst of
 * creates every check finds some such topic, each time another one. So
 * replicas missing mark the view partial only when two checks in a row find
 * the same topic missing (or more topics than they track); a refusal marks
 * it at once; a complete check clears it; a failed one changes nothing.
 */
typedef struct ka_logdirs_state {
    int missing_before;                                 /* the last check found replicas missing */
    uint64_t missing_topics[KA_LOGDIRS_TOPICS_TRACKED]; /* the last check's, sorted */
    size_t missing_topic_count;
    int missing_topics_overflow;
    int64_t last_ms;                      /* when the last check was asked; 0: never */
    char partial[KA_CLUSTER_PARTIAL_MAX]; /* the reason in force, or "" */
} ka_logdirs_state_t;

/* The view is checked at most this often: the answer lists every replica of the broker. */
#define KA_LOGDIRS_INTERVAL_MS 10000

static inline int ka_logdirs_due(const ka_logdirs_state_t *st, int64_t now_ms)
{
    return st->last_ms == 0 || now_ms - st->last_ms >= KA_LOGDIRS_INTERVAL_MS;
}

struct ka_metrics;

/* Folds one check into st, counts it, logs changes; st->partial is then the reason in force. */
void ka_logdirs_track(ka_logdirs_state_t *st, const ka_logdirs_check_t *check,
                      const char *principal, const char *upstream, struct ka_metrics *metrics);

#endif
