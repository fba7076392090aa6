/*
 * ka_rules_configs.h: a topic rule's bounds on topic configs
 * ("configs": {"min.insync.replicas": {"min": 2}, ...}), judged against
 * the values a request sets and, for keys it leaves out or deletes, the
 * broker's default as the view shows it. Pure.
 */
#ifndef KA_RULES_CONFIGS_H
#define KA_RULES_CONFIGS_H

#include <stdbool.h>
#include <stddef.h>

#include "ka_cluster.h"
#include "ka_policy_rules.h"
#include "ka_reader.h"

/* One topic config as a request sets it; value.len < 0: null (deleted, back to the default). */
typedef struct ka_topic_config {
    ka_slice_t name;
    ka_slice_t value;
} ka_topic_config_t;

/*
 * Checks configs[0..count) against rule's bounds. With absent_means_default
 * (CreateTopics, legacy AlterConfigs, which replaces every config), a bounded
 * key the request leaves out is judged at the broker's default; otherwise
 * (IncrementalAlterConfigs) only the keys given are. Returns 0 when every
 * bound holds, 1 with a sentence in msg naming the config, the value, the
 * bound and the rule, or a negative error.
 */
int ka_rules_check_configs(const ka_topic_rule_t *rule, const ka_cluster_t *view,
                           const ka_topic_config_t *configs, size_t count,
                           bool absent_means_default, char *msg, size_t msglen);

/*
 * The broker's default for a topic config key ("retention.ms", ...) as the
 * text a request would set, from the defaults the view read. Returns 0 with
 * the text in buf, 1 when kadmit does not know that default (never
 * guessed), or KA_EINVALID.
 */
int ka_rules_config_default(const ka_broker_defaults_t *defaults, const char *key, char *buf,
                            size_t buflen);

#endif
