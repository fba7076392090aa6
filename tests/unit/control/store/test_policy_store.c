/*
 * test_policy_store.c: the atomic write helper, reloads of the policy file
 * (unchanged, invalid, missing, kadmit's own write), persistence of API
 * changes in the policy file or the state file, and which directory events
 * the watcher acts on. Works in a fresh temporary directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "ka_atomic_file.h"
#include "ka_policy_store.h"
#include "ka_policy_watch.h"

#include <uv.h>

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ka-store-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
    char p[512];
    path_of(p, sizeof(p), name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *name)
{
    static char buf[4096];
    char p[512];
    path_of(p, sizeof(p), name);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_atomic_write_replaces_content_and_keeps_the_mode(void **state)
{
    char p[512], err[256];
    struct stat st;

    (void)state;
    put("a.json", "old");
    path_of(p, sizeof(p), "a.json");
    chmod(p, 0640);
    assert_int_equal(ka_atomic_write(p, "new", 3, err, sizeof(err)), 0);
    assert_string_equal(get("a.json"), "new");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(entries(), 1); /* no temporary file left behind */
}

static void test_atomic_write_through_a_symlink_keeps_the_link(void **state)
{
    char link[512], target[512], err[256];
    struct stat st;

    (void)state;
    put("real.json", "old");
    path_of(link, sizeof(link), "link.json");
    assert_int_equal(symlink("real.json", link), 0);
    assert_int_equal(ka_atomic_write(link, "new", 3, err, sizeof(err)), 0);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_string_equal(get("real.json"), "new");
    assert_int_equal(ka_atomic_resolve(link, target, sizeof(target)), 0);
    assert_non_null(strstr(target, "real.json"));
}

static void test_atomic_write_failure_names_the_file_and_leaves_nothing(void **state)
{
    char p[512], err[256] = "";

    (void)state;
    path_of(p, sizeof(p), "no-such-dir/a.json");
    assert_true(ka_atomic_write(p, "x", 1, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "a.json"));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_int_equal(entries(), 0);
}

static void open_store(ka_policy_store_t *s, const char *state, ka_policy_t **initial)
{
    char p[512], sp[512], err[512];
    path_of(p, sizeof(p), "policy.json");
    path_of(sp, sizeof(sp), state ? state : "");
    assert_int_equal(ka_policy_store_open(s, p, state ? sp : NULL, initial, err, sizeof(err)), 0);
}

static void test_reload_skips_same_bytes_and_keeps_the_policy_on_errors(void **state)
{
    ka_policy_store_t s;
    ka_policy_t *cur, *next;
    char err[512];

    (void)state;
    put("policy.json", "{\"max.broker.partitions\": 10}");
    open_store(&s, NULL, &cur);
    assert_int_equal(s.mode, KA_PERSIST_FILE);
    assert_int_equal(ka_policy_store_reload(&s, cur, &next, err, sizeof(err)), KA_RELOAD_UNCHANGED);

    put("policy.json", "{\"max.broker.partitions\": -2}");
    assert_int_equal(ka_policy_store_reload(&s, cur, &next, err, sizeof(err)), KA_RELOAD_INVALID);
    assert_null(next);
    assert_non_null(strstr(err, "max.broker.partitions"));
    assert_false(s.last_ok);
    assert_non_null(strstr(s.last_error, "-2"));

    char p[512];
    path_of(p, sizeof(p), "policy.json");
    unlink(p);
    assert_int_equal(ka_policy_store_reload(&s, cur, &next, err, sizeof(err)), KA_RELOAD_MISSING);

    /* The old bytes again: an error is cleared even though they hash the same. */
    put("policy.json", "{\"max.broker.partitions\": 10}");
    assert_int_equal(ka_policy_store_reload(&s, cur, &next, err, sizeof(err)), KA_RELOAD_UNCHANGED);
    assert_true(s.last_ok);

    put("policy.json", "{\"max.broker.partitions\": 12}");
    assert_int_equal(ka_policy_store_reload(&s, cur, &next, err, sizeof(err)), KA_RELOAD_OK);
    assert_int_equal(ka_policy_default_broker_limit(next), 12);
    assert_true(ka_policy_version(next) > ka_policy_version(cur));
    assert_int_equal(s.reloads[KA_RELOAD_OK], 1);
    assert_int_equal(s.reloads[KA_RELOAD_INVALID], 1);
    assert_int_equal(s.reloads[KA_RELOAD_MISSING], 1);
    assert_int_equal(s.reloads[KA_RELOAD_UNCHANGED], 2);
    ka_policy_unref(cur);
    ka_policy_unref(next);
    ka_policy_store_close(&s);
}

static void test_file_mode_writes_the_file_and_its_own_write_is_unchanged(void **state)
{
    ka_policy_store_t s, again;
    ka_policy_t *cur, *next, *reopened;
    char err[512], where[512];
    bool persisted;

    (void)state;
    put("policy.json", "{\"max.broker.partitions\": 10}");
    open_store(&s, NULL, &cur);
    assert_int_equal(ka_policy_with_broker_limit(cur, 2, 3, ka_policy_store_next_version(&s), &next,
                                                 err, sizeof(err)),
                     0);
    assert_int_equal(ka_policy_store_persist(&s, next, &persisted, where, sizeof(where)), 0);
    assert_true(persisted);
    assert_non_null(strstr(where, "policy.json"));
    assert_non_null(strstr(get("policy.json"), "\"2\""));
    assert_null(s.overrides);
    /* The watcher's event for kadmit's own write changes nothing. */
    ka_policy_t *none;
    assert_int_equal(ka_policy_store_reload(&s, next, &none, err, sizeof(err)),
                     KA_RELOAD_UNCHANGED);
    /* A restart reads the change back. */
    open_store(&again, NULL, &reopened);
    assert_int_equal(ka_policy_broker_limit(reopened, 2), 3);
    ka_policy_unref(cur);
    ka_policy_unref(next);
    ka_policy_unref(reopened);
    ka_policy_store_close(&s);
    ka_policy_store_close(&again);
}

static void test_state_mode_layers_overrides_over_reloads_and_restarts(void **state)
{
    ka_policy_store_t s, again;
    ka_policy_t *cur, *api, *next, *reopened;
    char err[512], where[512];
    bool persisted;

    (void)state;
    put("policy.json", "{\"max.broker.partitions\": 10}");
    open_store(&s, "state.json", &cur);
    assert_int_equal(s.mode, KA_PERSIST_STATE);
    assert_int_equal(ka_policy_with_broker_limit(cur, 2, 3, ka_policy_store_next_version(&s), &api,
                                                 err, sizeof(err)),
                     0);
    assert_int_equal(ka_policy_store_persist(&s, api, &persisted, where, sizeof(where)), 0);
    assert_true(persisted);
    assert_non_null(strstr(where, "state.json"));
    assert_string_equal(get("policy.json"), "{\"max.broker.partitions\": 10}"); /* untouched */
    assert_non_null(strstr(get("state.json"), "\"overrides\""));

    /* The operator changes the file: the new default, the API's broker 2. */
    put("policy.json", "{\"max.broker.partitions\": 20}");
    assert_int_equal(ka_policy_store_reload(&s, api, &next, err, sizeof(err)), KA_RELOAD_OK);
    assert_int_equal(ka_policy_default_broker_limit(next), 20);
    assert_int_equal(ka_policy_broker_limit(next, 2), 3);

    /* A restart gives the same policy. */
    open_store(&again, "state.json", &reopened);
    assert_true(ka_policy_equal(reopened, next));

    /* Putting the file's own policy in force clears the overrides. */
    assert_int_equal(ka_policy_store_persist(&s, ka_policy_store_file_policy(&s), &persisted, where,
                                             sizeof(where)),
                     0);
    assert_null(s.overrides);
    assert_non_null(strstr(get("state.json"), "\"overrides\": {}"));
    ka_policy_unref(cur);
    ka_policy_unref(api);
    ka_policy_unref(next);
    ka_policy_unref(reopened);
    ka_policy_store_close(&s);
    ka_policy_store_close(&again);
}

static void test_a_corrupt_state_file_stops_the_start_with_its_name(void **state)
{
    ka_policy_store_t s;
    ka_policy_t *cur = NULL;
    char p[512], sp[512], err[512] = "";

    (void)state;
    put("policy.json", "{}");
    put("state.json", "{\"kadmit.state\": 1, \"overrides\": ");
    path_of(p, sizeof(p), "policy.json");
    path_of(sp, sizeof(sp), "state.json");
    assert_true(ka_policy_store_open(&s, p, sp, &cur, err, sizeof(err)) < 0);
    assert_null(cur);
    assert_non_null(strstr(err, "state.json"));
}

static void test_watcher_acts_on_the_file_and_configmap_names_only(void **state)
{
    (void)state;
    assert_true(ka_policy_watch_relevant("policy.json", "policy.json"));
    assert_true(ka_policy_watch_relevant("policy.json", "..data"));
    assert_true(ka_policy_watch_relevant("policy.json", "..2026_11_29_10_00_00.123"));
    assert_true(ka_policy_watch_relevant("policy.json", NULL));
    assert_false(ka_policy_watch_relevant("policy.json", "other.json"));
    assert_false(ka_policy_watch_relevant("policy.json", ".policy.json.tmp.AbC123"));
}

/* ---- the watcher on a real loop ---- */

typedef struct watch_run {
    uv_loop_t loop;
    uv_timer_t step;
    ka_policy_watch_t w;
    int calls;
    int step_no;
    void (*act)(int step_no); /* what the test does at each 20 ms step */
} watch_run_t;

static void on_reload(void *arg, const char *trigger)
{
    watch_run_t *r = arg;
    assert_string_equal(trigger, "file-event");
    r->calls++;
}

static void step_cb(uv_timer_t *t)
{
    watch_run_t *r = t->data;
    if (r->step_no == 20) { /* 400 ms: long past the debounce */
        uv_close((uv_handle_t *)&r->step, NULL);
        ka_policy_watch_close(&r->w);
        return;
    }
    r->act(r->step_no++);
}

/* Runs the watcher on `name` (in the temp dir) while `act` changes files. */
static int run_watch(const char *name, void (*act)(int))
{
    watch_run_t r = {.act = act};
    char p[512], err[256];

    path_of(p, sizeof(p), name);
    assert_int_equal(uv_loop_init(&r.loop), 0);
    assert_int_equal(
        ka_policy_watch_start(&r.w, &r.loop, p, 1, 50, on_reload, &r, err, sizeof(err)), 0);
    uv_timer_init(&r.loop, &r.step);
    r.step.data = &r;
    uv_timer_start(&r.step, step_cb, 20, 20);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&r.loop), 0);
    return r.calls;
}

static void burst_of_writes(int step_no)
{
    if (step_no == 0)
        for (int i = 0; i < 5; i++)
            put("policy.json", i % 2 ? "{}" : "{ }");
    if (step_no == 1)
        put("unrelated.json", "{}");
}

static void test_watcher_debounces_a_burst_into_one_reload(void **state)
{
    (void)state;
    put("policy.json", "{}");
    assert_int_equal(run_watch("policy.json", burst_of_writes), 1);
}

static void edit_link_target(int step_no)
{
    if (step_no == 0)
        put("elsewhere/real.json", "{\"max.broker.partitions\": 3}");
}

static void test_watcher_sees_edits_of_a_link_target_in_another_directory(void **state)
{
    char d[512], link[512];

    (void)state;
    path_of(d, sizeof(d), "elsewhere");
    assert_int_equal(mkdir(d, 0755), 0);
    put("elsewhere/real.json", "{}");
    path_of(link, sizeof(link), "policy.json");
    assert_int_equal(symlink("elsewhere/real.json", link), 0);
    assert_int_equal(run_watch("policy.json", edit_link_target), 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_atomic_write_replaces_content_and_keeps_the_mode),
        T(test_atomic_write_through_a_symlink_keeps_the_link),
        T(test_atomic_write_failure_names_the_file_and_leaves_nothing),
        T(test_reload_skips_same_bytes_and_keeps_the_policy_on_errors),
        T(test_file_mode_writes_the_file_and_its_own_write_is_unchanged),
        T(test_state_mode_layers_overrides_over_reloads_and_restarts),
        T(test_a_corrupt_state_file_stops_the_start_with_its_name),
        cmocka_unit_test(test_watcher_acts_on_the_file_and_configmap_names_only),
        T(test_watcher_debounces_a_burst_into_one_reload),
        T(test_watcher_sees_edits_of_a_link_target_in_another_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
