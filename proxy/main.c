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

#include "ka_config.h"
#include "ka_log.h"
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
    ka_log_setup(cfg.log_level, cfg.log_format);
    /* A peer that vanishes mid-write is an error code, not a signal. */
    signal(SIGPIPE, SIG_IGN);

    uv_loop_t *loop = uv_default_loop();
    ka_server_t *srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        fprintf(stderr, "kadmit: out of memory\n");
        return 1;
    }
    if (ka_server_init(srv, loop, &cfg, err, sizeof(err)) < 0 ||
        ka_server_listen(srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "kadmit: %s\n", err);
        return 1;
    }
    uv_run(loop, UV_RUN_DEFAULT);
    ka_server_close(srv);
    uv_loop_close(loop);
    free(srv);
    return 0;
}
