/*
 * ka_whatif_cli.h: `kadmit what-if`, what a running sidecar would decide
 * for a CreateTopics or CreatePartitions (POST /v1/what-if), changing nothing.
 */
#ifndef KA_WHATIF_CLI_H
#define KA_WHATIF_CLI_H

/* argv[0] is "what-if". Returns the exit status: 0 admit, 1 reject, 2 error. */
int ka_whatif_cli_main(int argc, char **argv);

#endif
