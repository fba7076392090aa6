/*
 * ka_policy_rules_parse.h: the parser of the guardrails' keys
 * (ka_policy_rules_parse.c), for the policy's parser (ka_policy_parse.c),
 * which hands it every top-level key that is one of them. Private to policy/.
 */
#ifndef KA_POLICY_RULES_PARSE_H
#define KA_POLICY_RULES_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ka_rules_model.h"

/* True for the keys of the policy's top level that this module parses. */
bool ka_rules_is_key(const char *key);
/* Parses one such key into *rules (allocated on first use). */
int ka_rules_parse_key(ka_rules_t **rules, const char *key, const json_t *value, char *err,
                       size_t errlen);
/* Resolves what depends on other keys, once the whole document is read. */
void ka_rules_finish(ka_rules_t *rules, enum ka_enforcement policy_enforcement);

#endif
