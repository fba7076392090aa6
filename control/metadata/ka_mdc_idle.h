/*
 * ka_mdc_idle.h: when the metadata client refreshes at the idle interval.
 *
 * Every sidecar refreshing its whole view every metadata.refresh.interval.ms
 * is load on Kafka that buys nothing while no admission request comes: a
 * decision refreshes first anyway when the view is older than
 * metadata.refresh.before.decision.ms. So once no request the admission hook
 * judges has arrived for metadata.refresh.idle.interval.ms, the periodic
 * refresh (and with it the partial-view check) runs at that interval, and
 * the first judged request brings the normal interval back.
 *
 * Pure: the caller passes the time and restarts its timer when told to.
 */
#ifndef KA_MDC_IDLE_H
#define KA_MDC_IDLE_H

#include <stdint.h>

struct ka_metrics;

/* The shortest period the client's timer runs at. */
#define KA_MDC_IDLE_MIN_INTERVAL_MS 100

typedef struct ka_mdc_idle {
    int64_t interval_ms;      /* the normal period */
    int64_t idle_interval_ms; /* the idle period; not above interval_ms: no idle mode */
    int64_t last_activity_ms; /* the last judged request, or the start */
    int idle;                 /* 1 while refreshing at the idle interval */
} ka_mdc_idle_t;

/* Normal mode at both intervals interval_ms, no request seen since now_ms. */
void ka_mdc_idle_init(ka_mdc_idle_t *s, int64_t interval_ms, int64_t now_ms);

/* The period the periodic refresh runs at now. */
int64_t ka_mdc_idle_period(const ka_mdc_idle_t *s);

/* A judged request at now_ms. When it ends idleness, returns how long no request came (restart
 * the timer at ka_mdc_idle_period); else -1. */
int64_t ka_mdc_idle_activity(ka_mdc_idle_t *s, int64_t now_ms);

/*
 * At a periodic refresh. When the mode changed (idle once no request came
 * for the idle interval; back to normal when the idle interval no longer
 * exceeds the normal one), returns how long no request came (restart the
 * timer at ka_mdc_idle_period); else -1.
 */
int64_t ka_mdc_idle_tick(ka_mdc_idle_t *s, int64_t now_ms);

/* New intervals (a policy reload), bounded below; returns as ka_mdc_idle_tick. */
int64_t ka_mdc_idle_set(ka_mdc_idle_t *s, int64_t interval_ms, int64_t idle_interval_ms,
                        int64_t now_ms);

/* Logs a change of mode at info and sets the gauge (kadmit_metadata_refresh_idle). */
void ka_mdc_idle_announce(const ka_mdc_idle_t *s, const char *upstream, int64_t quiet_ms,
                          struct ka_metrics *metrics);

#endif
