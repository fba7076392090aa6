/*
 * ka_status_cli.h: `kadmit status`, the brokers' capacity table of a running
 * sidecar, read from its admin server.
 */
#ifndef KA_STATUS_CLI_H
#define KA_STATUS_CLI_H

/* argv[0] is "status". Returns the process's exit status: 0, 1 (no answer), 2 (usage). */
int ka_status_cli_main(int argc, char **argv);

#endif
