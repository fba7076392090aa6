/*
 * ka_loop_watch.c: loop-turn busy time (see ka_loop_watch.h).
 *
 * A prepare handle runs once per turn, just before libuv polls. Between
 * two of its runs lies one whole turn: the poll (blocked, counted as idle
 * by libuv) and every callback the poll woke. So busy = elapsed - idle.
 */
#include "ka_loop_watch.h"

#include <stdlib.h>

#include "ka_error.h"

#define OVER_NS   1000000ull            /* a turn over 1 ms */
#define WINDOW_NS (10ull * 1000000000u) /* the longest-turn gauge covers about 10 s */

struct ka_loop_watch {
    uv_prepare_t prepare;
    ka_metrics_t *metrics;
    uint64_t last_ns, last_idle_ns;
    uint64_t control_ns; /* charged during the current turn */
    uint64_t window_start_ns;
    uint64_t window_max_ns, previous_max_ns;
    int stopping;
};

static void turn_cb(uv_prepare_t *h)
{
    ka_loop_watch_t *w = h->data;
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(h->loop);
    uint64_t elapsed = now - w->last_ns, idled = idle - w->last_idle_ns;
    uint64_t busy = elapsed > idled ? elapsed - idled : 0;

    w->last_ns = now;
    w->last_idle_ns = idle;
    if (busy > OVER_NS)
        w->metrics->loop_turns_over_1ms++;
    if (w->control_ns > OVER_NS)
        w->metrics->control_turns_over_1ms++;
    w->control_ns = 0;
    if (busy > w->window_max_ns)
        w->window_max_ns = busy;
    if (now - w->window_start_ns > WINDOW_NS) {
        w->previous_max_ns = w->window_max_ns;
        w->window_max_ns = 0;
        w->window_start_ns = now;
    }
    w->metrics->loop_turn_max_us =
        (w->window_max_ns > w->previous_max_ns ? w->window_max_ns : w->previous_max_ns) / 1000;
}

int ka_loop_watch_start(uv_loop_t *loop, ka_metrics_t *metrics, ka_loop_watch_t **out)
{
    ka_loop_watch_t *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return KA_ENOMEM;
    /* Safe at any time: libuv only starts counting idle time from here on. */
    uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    w->metrics = metrics;
    w->last_ns = w->window_start_ns = uv_hrtime();
    w->last_idle_ns = uv_metrics_idle_time(loop);
    uv_prepare_init(loop, &w->prepare);
    w->prepare.data = w;
    uv_prepare_start(&w->prepare, turn_cb);
    /* Watching alone never keeps the loop running. */
    uv_unref((uv_handle_t *)&w->prepare);
    *out = w;
    return 0;
}

static void closed_cb(uv_handle_t *h)
{
    free(h->data);
}

void ka_loop_watch_stop(ka_loop_watch_t *w)
{
    if (w == NULL || w->stopping)
        return;
    w->stopping = 1;
    uv_close((uv_handle_t *)&w->prepare, closed_cb);
}

void ka_loop_watch_charge(ka_loop_watch_t *w, uint64_t ns)
{
    if (w != NULL)
        w->control_ns += ns;
}
