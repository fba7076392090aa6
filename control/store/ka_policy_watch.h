/*
 * ka_policy_watch.h: noticing that the policy file was replaced.
 *
 * The watcher observes the file's DIRECTORY (uv_fs_event), not the file:
 * a watch on the file itself dies with the inode that editors and
 * Kubernetes replace. Three ways of replacing the file are seen:
 * - an editor's atomic rename (a temporary file renamed over the name);
 * - a ConfigMap update: `policy.json -> ..data/policy.json`, where kubelet
 *   renames a new `..data` symlink over the old one;
 * - delete and recreate (and writes in place).
 * Events for the file's name or for a name starting with ".." restart a
 * short debounce timer; when it fires the callback runs once, on the loop.
 * When the file is a symbolic link into another directory, that directory
 * is watched too (re-resolved after every reload), so editing the link's
 * target is seen as well.
 * SIGHUP runs the callback at once. Every handle is unreferenced, so the
 * watcher never keeps the loop alive.
 */
#ifndef KA_POLICY_WATCH_H
#define KA_POLICY_WATCH_H

#include <stdint.h>

#include <uv.h>

#define KA_POLICY_WATCH_DEBOUNCE_MS 100

/* trigger: "file-event" or "SIGHUP". */
typedef void (*ka_policy_watch_cb)(void *arg, const char *trigger);

typedef struct ka_policy_watch {
    uv_fs_event_t event;
    uv_fs_event_t target_event; /* the link target's directory, when elsewhere */
    uv_timer_t debounce;
    uv_signal_t sighup;
    char name[256];        /* the file's base name, to filter the directory's events */
    char path[4096];       /* the policy path as given */
    char dir_real[4096];   /* the watched directory, symbolic links resolved */
    char target_dir[4096]; /* the target's directory being watched, or "" */
    char target_name[256]; /* the target's base name */
    uint64_t debounce_ms;
    ka_policy_watch_cb cb;
    void *arg;
    int event_started, timer_started, signal_started, target_started;
} ka_policy_watch_t;

/*
 * Starts watching the directory of `path` (when `fs_events` is nonzero) and
 * SIGHUP. Returns 0, or a negative ka_err with a sentence in err; SIGHUP
 * works even when the directory cannot be watched.
 */
int ka_policy_watch_start(ka_policy_watch_t *w, uv_loop_t *loop, const char *path, int fs_events,
                          uint64_t debounce_ms, ka_policy_watch_cb cb, void *arg, char *err,
                          size_t errlen);

/* Closes every handle; the loop must run afterwards to finish the closes. */
void ka_policy_watch_close(ka_policy_watch_t *w);

/* Whether an event for `filename` in the directory concerns the policy file `name`. */
int ka_policy_watch_relevant(const char *name, const char *filename);

#endif
