/*
 * main.c: the kadmit binary.
 *
 * Exit codes: 0 after --help, --version or a drain; 2 for a bad flag or
 * value; 1 for a runtime failure at startup (a port in use, an upstream
 * that does not resolve). Each failure is one line on stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "ka_admission_hook.h"
#include "ka_config.h"
#include "ka_log.h"
#include "ka_policy_file.h"
#include "ka_proxy.h"

int main(int argc, char **argv)
{
    ka_config_t cfg;
    char err[512] = "";

    int rc = ka_config_parse(&cfg, argc, argv, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 2;
    }
    if (rc == KA_CONFIG_HELP) {
        ka_config_usage(stdout);
        return 0;
    }
    if (rc == KA_CONFIG_VERSION) {
        printf("kadmit %s\n", KADMIT_VERSION);
        return 0;
    }
    if (rc == KA_CONFIG_CHECK_POLICY) {
        ka_policy_t *p = NULL;
        if (ka_policy_file_load(cfg.check_policy, 1, &p, err, sizeof(err)) < 0) {
            fprintf(stderr, "kadmit: %s\n", err);
            return 2;
        }
        ka_policy_unref(p);
        printf("kadmit: %s: policy is valid\n", cfg.check_policy);
        return 0;
    }
    /* A bad policy file is a bad argument: one line naming file and field, exit 2. */
    ka_policy_t *policy = NULL;
    if (cfg.policy_path[0] != '\0' &&
        ka_policy_file_load(cfg.policy_path, 1, &policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: --policy %s\n", err);
        return 2;
    }
    ka_log_setup(cfg.log_level, cfg.log_format);
    /* A peer that vanishes mid-write is an error code, not a signal. */
    signal(SIGPIPE, SIG_IGN);

    uv_loop_t *loop = uv_default_loop();
    ka_server_t *srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        fprintf(stderr, "kadmit: out of memory\n");
        return 1;
    }
    if (ka_server_init(srv, loop, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        ka_policy_unref(policy);
        return 1;
    }
    /* Without --policy nothing but ApiVersions is intercepted (the fast path). */
    if (policy != NULL && ka_admission_start(srv, policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    if (ka_server_listen(srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    uv_run(loop, UV_RUN_DEFAULT);
    ka_admission_stop(srv->admission);
    ka_server_close(srv);
    uv_loop_close(loop);
    free(srv);
    return 0;
}
