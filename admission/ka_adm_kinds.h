/*
 * ka_adm_kinds.h: the admission path's domain enums, the labels of its logs
 * and counters: which API, what was decided, and why (policy/ka_reason.h).
 *
 * Header only, so that base/ka_metrics.h can size its counter arrays
 * without depending on the admission code; the label names are rendered by
 * base/ka_metrics.c.
 */
#ifndef KA_ADM_KINDS_H
#define KA_ADM_KINDS_H

#include "ka_reason.h"

/* The admission APIs, in the order of ka_admission_apis.c's table. */
enum ka_adm_api {
    KA_ADM_CREATE_TOPICS = 0,
    KA_ADM_CREATE_PARTITIONS,
    KA_ADM_REASSIGN,
    KA_ADM_METADATA,
    KA_ADM_STREAMS_HEARTBEAT, /* a streams group's internal topics (KIP-1071) */
    KA_ADM_DELETE_TOPICS,     /* protected topics (ka_admission_delete.c) */
    KA_ADM_DELETE_RECORDS,
    KA_ADM_API_COUNT
};

enum ka_adm_decision {
    KA_ADM_D_ADMIT = 0, /* forwarded unchanged */
    KA_ADM_D_REWRITE,   /* forwarded with kadmit's assignment (place mode) */
    KA_ADM_D_PARTIAL,   /* some items rejected, the rest forwarded and merged */
    KA_ADM_D_REJECT,    /* every item rejected, answered locally */
    KA_ADM_D_AUDIT,     /* audit mode: forwarded, enforce would have rejected */
    KA_ADM_D_COUNT
};

#endif
