/*
 * ka_policy_watch.c: see ka_policy_watch.h.
 */
#include "ka_policy_watch.h"

#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ka_error.h"
#include "ka_log.h"

int ka_policy_watch_relevant(const char *name, const char *filename)
{
    /* No name: the kernel's queue overflowed, so anything may have changed. */
    if (filename == NULL || filename[0] == '\0')
        return 1;
    /* "..data", "..data_tmp", "..2026_11_29_..." of a ConfigMap volume. */
    if (strncmp(filename, "..", 2) == 0)
        return 1;
    return strcmp(filename, name) == 0;
}

static void debounce_cb(uv_timer_t *t)
{
    ka_policy_watch_t *w = t->data;
    w->cb(w->arg, "file-event");
}

static void event_cb(uv_fs_event_t *h, const char *filename, int events, int status)
{
    ka_policy_watch_t *w = h->data;
    (void)events;
    if (status < 0) {
        ka_log(KA_LOG_WARN, "policy watcher error", KA_KS("error", uv_strerror(status)));
        return;
    }
    if (!ka_policy_watch_relevant(w->name, filename))
        return;
    /* Restarting the timer coalesces a burst (rename, delete + create, a
     * write in several parts) into one reload after the last event. */
    uv_timer_start(&w->debounce, debounce_cb, w->debounce_ms, 0);
}

static void sighup_cb(uv_signal_t *h, int signum)
{
    ka_policy_watch_t *w = h->data;
    (void)signum;
    uv_timer_stop(&w->debounce);
    w->cb(w->arg, "SIGHUP");
}

int ka_policy_watch_start(ka_policy_watch_t *w, uv_loop_t *loop, const char *path, int fs_events,
                          uint64_t debounce_ms, ka_policy_watch_cb cb, void *arg, char *err,
                          size_t errlen)
{
    char dir[PATH_MAX], base[PATH_MAX];
    int rc;

    memset(w, 0, sizeof(*w));
    w->cb = cb;
    w->arg = arg;
    w->debounce_ms = debounce_ms;
    snprintf(base, sizeof(base), "%s", path);
    snprintf(w->name, sizeof(w->name), "%s", basename(base));
    snprintf(dir, sizeof(dir), "%s", path);

    uv_timer_init(loop, &w->debounce);
    w->debounce.data = w;
    uv_unref((uv_handle_t *)&w->debounce);
    w->timer_started = 1;
    uv_signal_init(loop, &w->sighup);
    w->sighup.data = w;
    w->signal_started = 1;
    rc = uv_signal_start(&w->sighup, sighup_cb, SIGHUP);
    uv_unref((uv_handle_t *)&w->sighup);
    if (rc < 0) {
        snprintf(err, errlen, "cannot handle SIGHUP: %s", uv_strerror(rc));
        return KA_EINVALID;
    }
    if (!fs_events)
        return 0;
    uv_fs_event_init(loop, &w->event);
    w->event.data = w;
    w->event_started = 1;
    rc = uv_fs_event_start(&w->event, event_cb, dirname(dir), 0);
    uv_unref((uv_handle_t *)&w->event);
    if (rc < 0) {
        snprintf(err, errlen, "cannot watch the directory of %s: %s", path, uv_strerror(rc));
        return KA_EINVALID;
    }
    return 0;
}

void ka_policy_watch_close(ka_policy_watch_t *w)
{
    if (w->event_started && !uv_is_closing((uv_handle_t *)&w->event))
        uv_close((uv_handle_t *)&w->event, NULL);
    if (w->timer_started && !uv_is_closing((uv_handle_t *)&w->debounce))
        uv_close((uv_handle_t *)&w->debounce, NULL);
    if (w->signal_started && !uv_is_closing((uv_handle_t *)&w->sighup))
        uv_close((uv_handle_t *)&w->sighup, NULL);
}
