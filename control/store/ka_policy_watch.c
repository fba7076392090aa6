/*
 * ka_policy_watch.c: see ka_policy_watch.h.
 */
#include "ka_policy_watch.h"

#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_atomic_file.h"
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

static void debounce_cb(uv_timer_t *t);

static void target_event_cb(uv_fs_event_t *h, const char *filename, int events, int status)
{
    ka_policy_watch_t *w = h->data;
    (void)events;
    if (status < 0)
        return;
    if (filename == NULL || filename[0] == '\0' || strcmp(filename, w->target_name) == 0)
        uv_timer_start(&w->debounce, debounce_cb, w->debounce_ms, 0);
}

/*
 * Watches the directory the link points into, when that is not the
 * directory already watched. Called at start and after every reload, since
 * a ConfigMap swap or an operator can move the target.
 */
static void follow_target(ka_policy_watch_t *w)
{
    char file[PATH_MAX], dir[PATH_MAX], real[PATH_MAX], base[PATH_MAX];

    if (!w->event_started || ka_atomic_resolve(w->path, file, sizeof(file)) < 0)
        return;
    snprintf(dir, sizeof(dir), "%s", file);
    snprintf(base, sizeof(base), "%s", file);
    if (realpath(dirname(dir), real) == NULL || strcmp(real, w->dir_real) == 0)
        real[0] = '\0'; /* gone, or the same directory: nothing more to watch */
    if (strcmp(real, w->target_dir) == 0)
        return;
    if (w->target_dir[0] != '\0')
        uv_fs_event_stop(&w->target_event);
    snprintf(w->target_dir, sizeof(w->target_dir), "%s", real);
    snprintf(w->target_name, sizeof(w->target_name), "%s", basename(base));
    if (real[0] != '\0' && uv_fs_event_start(&w->target_event, target_event_cb, real, 0) < 0)
        w->target_dir[0] = '\0';
}

static void debounce_cb(uv_timer_t *t)
{
    ka_policy_watch_t *w = t->data;
    w->cb(w->arg, "file-event");
    follow_target(w);
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
    follow_target(w);
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
    snprintf(w->path, sizeof(w->path), "%s", path);

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
    const char *watched = dirname(dir); /* "." for a bare file name */
    rc = uv_fs_event_start(&w->event, event_cb, watched, 0);
    uv_unref((uv_handle_t *)&w->event);
    if (rc < 0) {
        snprintf(err, errlen, "cannot watch the directory of %s: %s", path, uv_strerror(rc));
        return KA_EINVALID;
    }
    if (realpath(watched, w->dir_real) == NULL)
        snprintf(w->dir_real, sizeof(w->dir_real), "%s", watched);
    uv_fs_event_init(loop, &w->target_event);
    w->target_event.data = w;
    uv_unref((uv_handle_t *)&w->target_event);
    w->target_started = 1;
    follow_target(w);
    return 0;
}

void ka_policy_watch_close(ka_policy_watch_t *w)
{
    if (w->event_started && !uv_is_closing((uv_handle_t *)&w->event))
        uv_close((uv_handle_t *)&w->event, NULL);
    if (w->target_started && !uv_is_closing((uv_handle_t *)&w->target_event))
        uv_close((uv_handle_t *)&w->target_event, NULL);
    if (w->timer_started && !uv_is_closing((uv_handle_t *)&w->debounce))
        uv_close((uv_handle_t *)&w->debounce, NULL);
    if (w->signal_started && !uv_is_closing((uv_handle_t *)&w->sighup))
        uv_close((uv_handle_t *)&w->sighup, NULL);
}
