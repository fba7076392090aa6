/*
 * ka_mdc_idle.c: the idle refresh mode (see ka_mdc_idle.h).
 */
#include "ka_mdc_idle.h"

#include "ka_log.h"
#include "ka_metrics.h"

void ka_mdc_idle_init(ka_mdc_idle_t *s, int64_t interval_ms, int64_t now_ms)
{
    s->interval_ms = s->idle_interval_ms = interval_ms;
    s->last_activity_ms = now_ms;
    s->idle = 0;
}

int64_t ka_mdc_idle_period(const ka_mdc_idle_t *s)
{
    return s->idle ? s->idle_interval_ms : s->interval_ms;
}

int64_t ka_mdc_idle_activity(ka_mdc_idle_t *s, int64_t now_ms)
{
    int64_t quiet = s->idle ? now_ms - s->last_activity_ms : -1;
    s->last_activity_ms = now_ms;
    s->idle = 0;
    return quiet;
}

int64_t ka_mdc_idle_tick(ka_mdc_idle_t *s, int64_t now_ms)
{
    int64_t quiet = now_ms - s->last_activity_ms;
    if (s->idle) {
        if (s->idle_interval_ms > s->interval_ms)
            return -1;
        s->idle = 0; /* the idle mode was turned off */
        return quiet;
    }
    if (s->idle_interval_ms <= s->interval_ms || quiet < s->idle_interval_ms)
        return -1;
    s->idle = 1;
    return quiet;
}

int64_t ka_mdc_idle_set(ka_mdc_idle_t *s, int64_t interval_ms, int64_t idle_interval_ms,
                        int64_t now_ms)
{
    s->interval_ms =
        interval_ms < KA_MDC_IDLE_MIN_INTERVAL_MS ? KA_MDC_IDLE_MIN_INTERVAL_MS : interval_ms;
    s->idle_interval_ms = idle_interval_ms < s->interval_ms ? s->interval_ms : idle_interval_ms;
    return ka_mdc_idle_tick(s, now_ms);
}

void ka_mdc_idle_announce(const ka_mdc_idle_t *s, const char *upstream, int64_t quiet_ms,
                          struct ka_metrics *metrics)
{
    metrics->metadata_refresh_idle = (uint64_t)s->idle;
    ka_log(KA_LOG_INFO,
           s->idle ? "metadata refresh idle: no admission request for a while"
                   : "metadata refresh active again",
           KA_KS("upstream", upstream), KA_KI("quiet_ms", quiet_ms),
           KA_KI("refresh_every_ms", ka_mdc_idle_period(s)));
}
