/*
 * ka_policy_file.h: reading the policy file given with --policy.
 *
 * The whole file is read (at most 16 MiB) and handed to ka_policy_parse. A
 * failure gives one sentence naming the file and, for validation errors,
 * the field: "policy.json: brokers.7.max.broker.partitions: must be ...".
 */
#ifndef KA_POLICY_FILE_H
#define KA_POLICY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "ka_policy.h"

#define KA_POLICY_FILE_MAX (16u * 1024u * 1024u)

/* The whole file, NUL-terminated, in *out (free() it); its length in *out_len. */
int ka_policy_file_read(const char *path, char **out, size_t *out_len, char *err, size_t errlen);
/* Parses bytes read from `path`; errors are prefixed with the path. */
int ka_policy_file_parse(const char *path, const char *buf, size_t len, uint64_t version,
                         ka_policy_t **out, char *err, size_t errlen);
int ka_policy_file_load(const char *path, uint64_t version, ka_policy_t **out, char *err,
                        size_t errlen);

#endif
