/*
 * ka_loop_watch.h: how long each turn of the forwarding loop runs, and how
 * much of a turn went to the control plane.
 *
 * One loop forwards every client's bytes, so a turn that runs long holds
 * every connection's traffic for that long. The watch measures each turn's
 * busy time (wall time between two turns minus the time libuv spent blocked
 * in poll, uv_metrics_idle_time) and keeps in the metrics: the longest turn
 * of the last window (a gauge), the number of turns over 1 ms, and the
 * number of turns in which the control plane itself ran for over 1 ms (of
 * CPU time). The control plane reports its own time with
 * ka_loop_watch_charge. A turn's busy time is wall time, what a client
 * waits: on a loaded machine it includes time the process was preempted.
 */
#ifndef KA_LOOP_WATCH_H
#define KA_LOOP_WATCH_H

#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "ka_metrics.h"

typedef struct ka_loop_watch ka_loop_watch_t;

/* Starts watching loop (turns on libuv's idle-time metric). 0 or KA_ENOMEM. */
int ka_loop_watch_start(uv_loop_t *loop, ka_metrics_t *metrics, ka_loop_watch_t **out);
/* Closes the watch's handle; it frees itself once closed. Accepts NULL. */
void ka_loop_watch_stop(ka_loop_watch_t *watch);

/* Control-plane work that ran on the loop in this turn, in nanoseconds. Accepts NULL. */
void ka_loop_watch_charge(ka_loop_watch_t *watch, uint64_t ns);

/*
 * The calling thread's CPU time in nanoseconds, for callers timing their
 * own work: CPU time, so that being preempted on a busy machine is not
 * counted as work done.
 */
static inline uint64_t ka_loop_watch_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
