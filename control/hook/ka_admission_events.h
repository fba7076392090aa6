/*
 * ka_admission_events.h: what one admission decision writes: its log event
 * and an audit event per judged item (docs/logging.md has both).
 */
#ifndef KA_ADMISSION_EVENTS_H
#define KA_ADMISSION_EVENTS_H

#include <stdint.h>

#include "ka_admission.h"
#include "ka_frame.h"

/* The one "admission_decision" log event of a decision. */
void ka_admission_log_decision(const ka_adm_outcome_t *o, int32_t correlation_id, int audit_mode,
                               uint64_t duration_ns);
/* Debug: each broker's count in the view and in the reservations ordered before `order`. */
void ka_admission_log_basis(const ka_cluster_t *view, const ka_reservations_t *before,
                            uint64_t order, int64_t now_ms);
/* The audit event of one judged item, from the connection it came on (origin may be NULL). */
void ka_admission_audit_item(const ka_frame_origin_t *origin, const ka_adm_judged_t *it);

#endif
