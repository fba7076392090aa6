/*
 * ka_configs_layer.h: kadmit's limits as kafka-configs sees them, over the
 * limits store's layer (a JSON merge patch over the policy file, the same
 * document PUT /v1/limits/... writes).
 *
 * kafka-configs' SET puts a value into the layer; DELETE takes the key out
 * of the layer, so the next layer (the policy file, then KIP-578's default)
 * applies again. No I/O: unit-tested with strings.
 */
#ifndef KA_CONFIGS_LAYER_H
#define KA_CONFIGS_LAYER_H

#include <stddef.h>

#include "ka_admission_configs.h"
#include "ka_policy.h"

/*
 * The layer `layer` (NULL for none) with `changes` applied, in order, as
 * new JSON in *out (free()). Returns 0, KA_ENOMEM, or KA_EINVALID with a
 * sentence in err when `layer` is not a JSON object.
 */
int ka_configs_layer_apply(const char *layer, const ka_cfg_change_t *changes, size_t n, char **out,
                           char *err, size_t errlen);

/* The limits for DescribeConfigs, with the arrays they point to. */
typedef struct ka_configs_limits {
    ka_cfg_limits_t limits;
    ka_cfg_override_t *dynamic_brokers;
    ka_cfg_override_t *file_brokers;
} ka_configs_limits_t;

/*
 * Reads the two layers: `layer` (NULL for none) and the policy file's own
 * policy `file` (NULL for none). A layer that does not parse counts as
 * none. Returns 0 or KA_ENOMEM; free with ka_configs_limits_free.
 */
int ka_configs_limits_read(const char *layer, const ka_policy_t *file, ka_configs_limits_t *out);
void ka_configs_limits_free(ka_configs_limits_t *l);

#endif
