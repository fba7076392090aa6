/*
 * ka_policy_json.h: the JSON value readers that both policy parsers share
 * (ka_policy_parse.c for the limits, ka_policy_rules_parse.c for the
 * guardrails), so that every error sentence reads alike:
 * "<dotted.field>: <what is wrong>, got <value>". Private to policy/.
 */
#ifndef KA_POLICY_JSON_H
#define KA_POLICY_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"

/* Describes a JSON value for "got ..." in an error sentence. */
void ka_policy_describe(const json_t *v, char *buf, size_t len);
/* An integer in [min, max] into *out, or KA_EINVALID with the sentence for field in err. */
int ka_policy_get_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
                      char *err, size_t errlen);

#endif
