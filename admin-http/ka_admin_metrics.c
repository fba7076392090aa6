/*
 * ka_admin_metrics.c: GET /metrics in Prometheus text format 0.0.4.
 *
 * The proxy renders its data-path counters through ops->metrics_render;
 * admin-http adds what it can compute itself from the snapshots: the policy
 * in force and the last reload (ARCHITECTURE invariant 9: a failed reload
 * shows here), each broker's count, reservations, limit and headroom, and
 * the admin server's own counters. Families never repeat a name the proxy
 * uses: the proxy's are kadmit_<counter>, these are kadmit_policy_*,
 * kadmit_broker_*, kadmit_cluster_* and kadmit_admin_*.
 */
#include "ka_admin_router.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define CONTENT_TYPE_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"

static void family(ka_admin_buf_t *out, const char *name, const char *type, const char *help)
{
    ka_admin_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(ka_admin_buf_t *out, const char *name, int64_t value)
{
    ka_admin_buf_printf(out, "%s %" PRId64 "\n", name, value);
}

static void render_policy(ka_admin_context_t *ctx, const ka_policy_t *policy, ka_admin_buf_t *out)
{
    ka_admin_reload_status_t st;

    family(out, "kadmit_policy_version", "gauge", "Version of the policy in force.");
    sample(out, "kadmit_policy_version", (int64_t)ka_policy_version(policy));
    family(out, "kadmit_policy_default_broker_partitions_limit", "gauge",
           "Default max.broker.partitions (2147483647 means unlimited).");
    sample(out, "kadmit_policy_default_broker_partitions_limit",
           ka_policy_default_broker_limit(policy));
    family(out, "kadmit_policy_broker_partitions_limit_override", "gauge",
           "Per-broker max.broker.partitions overrides.");
    for (size_t i = 0; i < ka_policy_override_count(policy); i++) {
        int32_t id, limit;

        ka_policy_override_at(policy, i, &id, &limit);
        ka_admin_buf_printf(out,
                            "kadmit_policy_broker_partitions_limit_override{broker=\"%" PRId32
                            "\"} %" PRId32 "\n",
                            id, limit);
    }
    family(out, "kadmit_policy_max_partitions", "gauge",
           "Cluster-wide max.partitions (2147483647 means unlimited).");
    sample(out, "kadmit_policy_max_partitions", ka_policy_max_partitions(policy));
    family(out, "kadmit_policy_enforcing", "gauge", "1 in enforce mode, 0 in audit mode.");
    sample(out, "kadmit_policy_enforcing",
           ka_policy_enforcement(policy) == KA_ENFORCEMENT_ENFORCE ? 1 : 0);

    if (ctx->ops->reload_status == NULL)
        return;
    memset(&st, 0, sizeof(st));
    ctx->ops->reload_status(ctx->ops->ctx, &st);
    family(out, "kadmit_policy_last_reload_success", "gauge",
           "0 when the last policy-file reload failed and the previous policy is still in force.");
    sample(out, "kadmit_policy_last_reload_success", !st.attempted || st.ok ? 1 : 0);
    if (st.attempted) {
        family(out, "kadmit_policy_last_reload_timestamp_seconds", "gauge",
               "Wall-clock time of the last policy-file reload attempt.");
        ka_admin_buf_printf(out, "kadmit_policy_last_reload_timestamp_seconds %" PRId64 ".%03d\n",
                            st.at_unix_ms / 1000, (int)(st.at_unix_ms % 1000));
    }
    family(out, "kadmit_policy_reload_failures_total", "counter",
           "Policy-file reloads rejected since start.");
    sample(out, "kadmit_policy_reload_failures_total", (int64_t)st.failures);
    family(out, "kadmit_policy_reloads_total", "counter",
           "Policy-file reloads by result: ok (a new policy in force), unchanged, invalid (did "
           "not parse or validate), missing (could not be read).");
    ka_admin_buf_printf(out,
                        "kadmit_policy_reloads_total{result=\"ok\"} %" PRIu64 "\n"
                        "kadmit_policy_reloads_total{result=\"unchanged\"} %" PRIu64 "\n"
                        "kadmit_policy_reloads_total{result=\"invalid\"} %" PRIu64 "\n"
                        "kadmit_policy_reloads_total{result=\"missing\"} %" PRIu64 "\n",
                        st.reloads_ok, st.reloads_unchanged, st.reloads_invalid,
                        st.reloads_missing);
    st.file_hash[sizeof(st.file_hash) - 1] = '\0';
    if (st.file_hash[0] != '\0') {
        family(out, "kadmit_policy_file_info", "gauge",
               "Always 1; the hash label identifies the policy file content in force.");
        ka_admin_buf_printf(out, "kadmit_policy_file_info{hash=\"%s\"} 1\n", st.file_hash);
    }
    family(out, "kadmit_policy_overrides_active", "gauge",
           "1 while changes made over the admin API are layered over the policy file.");
    sample(out, "kadmit_policy_overrides_active", st.overrides ? 1 : 0);
}

static void broker_sample(ka_admin_buf_t *out, const char *name, int32_t id, int64_t value)
{
    ka_admin_buf_printf(out, "%s{broker=\"%" PRId32 "\"} %" PRId64 "\n", name, id, value);
}

/* Per-broker gauges, one family at a time as the format requires. */
static void render_brokers(ka_admin_context_t *ctx, const ka_policy_t *policy, ka_admin_buf_t *out)
{
    const ka_admin_ops_t *ops = ctx->ops;
    ka_cluster_t *view = ops->cluster_get ? ops->cluster_get(ops->ctx) : NULL;
    const ka_reservations_t *ledger =
        ops->reservations_get ? ops->reservations_get(ops->ctx) : NULL;
    size_t n;

    if (view == NULL)
        return;
    n = ka_cluster_broker_count(view);
    family(out, "kadmit_broker_partitions", "gauge",
           "Partition replicas hosted by each broker, per the cluster view.");
    for (size_t i = 0; i < n; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        broker_sample(out, "kadmit_broker_partitions", b->id, b->replicas);
    }
    family(out, "kadmit_broker_reserved_partitions", "gauge",
           "Replicas admitted but not yet visible in the cluster view.");
    for (size_t i = 0; i < n; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        broker_sample(out, "kadmit_broker_reserved_partitions", b->id,
                      ledger ? ka_reservations_broker_replicas(ledger, b->id) : 0);
    }
    family(out, "kadmit_broker_partitions_limit", "gauge",
           "max.broker.partitions that applies to each broker.");
    for (size_t i = 0; i < n; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        broker_sample(out, "kadmit_broker_partitions_limit", b->id,
                      ka_policy_broker_limit(policy, b->id));
    }
    family(out, "kadmit_broker_headroom_partitions", "gauge",
           "Limit minus hosted and reserved replicas (negative when over the limit).");
    for (size_t i = 0; i < n; i++) {
        const ka_cluster_broker_t *b = ka_cluster_broker_at(view, i);
        int64_t reserved = ledger ? ka_reservations_broker_replicas(ledger, b->id) : 0;
        broker_sample(out, "kadmit_broker_headroom_partitions", b->id,
                      (int64_t)ka_policy_broker_limit(policy, b->id) - b->replicas - reserved);
    }
    family(out, "kadmit_cluster_partitions", "gauge",
           "Partitions in the cluster, each counted once.");
    sample(out, "kadmit_cluster_partitions", ka_cluster_total_partitions(view));
    family(out, "kadmit_cluster_reserved_partitions", "gauge",
           "Partitions admitted but not yet visible in the cluster view.");
    sample(out, "kadmit_cluster_reserved_partitions",
           ledger ? ka_reservations_partitions(ledger) : 0);
    if (ops->clock_ms != NULL) {
        int64_t age = ops->clock_ms(ops->ctx) - ka_cluster_taken_at_ms(view);
        family(out, "kadmit_cluster_view_age_seconds", "gauge", "Age of the cluster view.");
        ka_admin_buf_printf(out, "kadmit_cluster_view_age_seconds %" PRId64 ".%03d\n", age / 1000,
                            (int)(age % 1000 < 0 ? -(age % 1000) : age % 1000));
    }
    ka_cluster_unref(view);
}

static void render_admin(const ka_admin_context_t *ctx, ka_admin_buf_t *out)
{
    const ka_admin_stats_t *s = &ctx->stats;

    family(out, "kadmit_admin_http_responses_total", "counter",
           "Admin API responses by status code.");
    for (int code = KA_ADMIN_STATUS_MIN; code <= KA_ADMIN_STATUS_MAX; code++) {
        uint64_t n = s->responses[code - KA_ADMIN_STATUS_MIN];
        if (n > 0)
            ka_admin_buf_printf(out, "kadmit_admin_http_responses_total{code=\"%d\"} %" PRIu64 "\n",
                                code, n);
    }
    family(out, "kadmit_admin_policy_changes_total", "counter",
           "Policies put in force through the admin API.");
    sample(out, "kadmit_admin_policy_changes_total", (int64_t)s->policy_changes);
    family(out, "kadmit_admin_connections_active", "gauge", "Open admin connections.");
    sample(out, "kadmit_admin_connections_active", (int64_t)s->connections_active);
    family(out, "kadmit_admin_connections_accepted_total", "counter",
           "Admin connections accepted.");
    sample(out, "kadmit_admin_connections_accepted_total", (int64_t)s->connections_accepted);
    family(out, "kadmit_admin_connections_rejected_total", "counter",
           "Admin connections refused because every slot and the probe reserve were in use.");
    sample(out, "kadmit_admin_connections_rejected_total", (int64_t)s->connections_rejected);
    family(out, "kadmit_admin_connections_evicted_total", "counter",
           "Idle keep-alive admin connections closed to make room for a new one.");
    sample(out, "kadmit_admin_connections_evicted_total", (int64_t)s->connections_evicted);
    family(out, "kadmit_admin_reserve_connections_total", "counter",
           "Admin connections taken into the probe reserve (every slot busy).");
    sample(out, "kadmit_admin_reserve_connections_total", (int64_t)s->reserve_accepted);
    family(out, "kadmit_admin_reserve_refused_total", "counter",
           "Requests on a probe reserve connection for a path other than a probe (503).");
    sample(out, "kadmit_admin_reserve_refused_total", (int64_t)s->reserve_refused);
    family(out, "kadmit_admin_host_rejected_total", "counter",
           "Admin requests refused (403) because their Host header named another site.");
    sample(out, "kadmit_admin_host_rejected_total", (int64_t)s->host_rejected);
    family(out, "kadmit_admin_request_timeouts_total", "counter",
           "Admin connections cut because a request did not arrive in time.");
    sample(out, "kadmit_admin_request_timeouts_total", (int64_t)s->request_timeouts);
    family(out, "kadmit_admin_parse_errors_total", "counter",
           "Admin requests that were not valid HTTP/1.1.");
    sample(out, "kadmit_admin_parse_errors_total", (int64_t)s->parse_errors);
}

/* The process's fields 14 (utime), 15 (stime) and 22 (starttime) of /proc/self/stat, in ticks. */
static int read_proc_stat(unsigned long long *utime, unsigned long long *stime,
                          unsigned long long *start)
{
    char line[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(line, 1, sizeof(line) - 1, f) : 0;

    if (f != NULL)
        fclose(f);
    line[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: skip to its last ')'. */
    char *p = strrchr(line, ')');
    if (p == NULL || sscanf(p + 2,
                            "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
                            "%*d %*d %*d %llu",
                            utime, stime, start) != 3)
        return -1;
    return 0;
}

static long long boot_time_s(void)
{
    char line[256];
    long long btime = -1;
    FILE *f = fopen("/proc/stat", "r");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "btime %lld", &btime) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return btime;
}

static long count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;

    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

/* The standard process_* families (as Prometheus' client libraries name them),
 * from /proc; a figure that cannot be read is left out. */
static void render_process(ka_admin_buf_t *out)
{
    unsigned long long utime, stime, start, vsize_pages, rss_pages;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds = count_open_fds();
    long long btime = boot_time_s();
    struct rlimit rl;
    FILE *f = fopen("/proc/self/statm", "r");
    int statm = f != NULL && fscanf(f, "%llu %llu", &vsize_pages, &rss_pages) == 2;

    if (f != NULL)
        fclose(f);
    if (ticks > 0 && read_proc_stat(&utime, &stime, &start) == 0) {
        family(out, "process_cpu_seconds_total", "counter",
               "User and system CPU time spent, in seconds.");
        ka_admin_buf_printf(out, "process_cpu_seconds_total %.2f\n",
                            (double)(utime + stime) / (double)ticks);
        if (btime > 0) {
            family(out, "process_start_time_seconds", "gauge",
                   "Start time of the process since the Unix epoch, in seconds.");
            ka_admin_buf_printf(out, "process_start_time_seconds %.2f\n",
                                (double)btime + (double)start / (double)ticks);
        }
    }
    if (statm && page > 0) {
        family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        sample(out, "process_resident_memory_bytes", (int64_t)(rss_pages * (unsigned long)page));
        family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        sample(out, "process_virtual_memory_bytes", (int64_t)(vsize_pages * (unsigned long)page));
    }
    if (fds >= 0) {
        family(out, "process_open_fds", "gauge", "Open file descriptors.");
        sample(out, "process_open_fds", fds);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        family(out, "process_max_fds", "gauge", "The limit on open file descriptors.");
        sample(out, "process_max_fds", (int64_t)rl.rlim_cur);
    }
}

static void render_build_info(ka_admin_buf_t *out)
{
    family(out, "kadmit_build_info", "gauge",
           "Always 1; the labels name the running build (version, compiler).");
    ka_admin_buf_printf(out, "kadmit_build_info{version=\"%s\",compiler=\"%s\"} 1\n",
                        KADMIT_VERSION, __VERSION__);
}

void ka_admin_handle_metrics_get(ka_admin_context_t *ctx, const ka_admin_request_t *req,
                                 const char *arg, ka_admin_response_t *res)
{
    ka_policy_t *policy;

    (void)req, (void)arg;
    ka_admin_buf_reset(&res->body);
    if (ctx->ops->metrics_render != NULL &&
        ctx->ops->metrics_render(ctx->ops->ctx, &res->body) < 0) {
        ka_admin_response_error(res, 500, "the proxy's metrics could not be rendered");
        return;
    }
    policy = ctx->ops->policy_get(ctx->ops->ctx);
    render_policy(ctx, policy, &res->body);
    render_brokers(ctx, policy, &res->body);
    ka_policy_unref(policy);
    render_admin(ctx, &res->body);
    render_build_info(&res->body);
    render_process(&res->body);
    res->status = 200;
    res->content_type = CONTENT_TYPE_PROMETHEUS;
}
