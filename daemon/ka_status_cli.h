/*
 * ka_status_cli.h: `kadmit status`, the brokers' capacity table of a running
 * sidecar, read from its admin server.
 */
#ifndef KA_STATUS_CLI_H
#define KA_STATUS_CLI_H

#include <stddef.h>

/* argv[0] is "status". Returns the process's exit status: 0, 1 (no answer), 2 (usage). */
int ka_status_cli_main(int argc, char **argv);

/*
 * One request to the admin server at `admin` (HOST:PORT) over HTTP/1.1 with
 * Connection: close: `method` `path` with `send_body` (JSON, or NULL). The
 * answer's status into *status, its body into *body (malloc'd). Blocking,
 * with a 5 s timeout: for the one-shot subcommands only. 0, or a negative
 * error with a sentence in err.
 */
int ka_status_cli_http(const char *admin, const char *method, const char *path,
                       const char *send_body, int *status, char **body, char *err, size_t errlen);

#endif
