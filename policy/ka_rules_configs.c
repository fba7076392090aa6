/*
 * ka_rules_configs.c: see ka_rules_configs.h.
 *
 * Interface first: a policy has no rules until the parser fills them in
 * (ka_policy_rules.c), so there is no bound to check yet.
 */
#include "ka_rules_configs.h"

int ka_rules_check_configs(const ka_topic_rule_t *rule, const ka_cluster_t *view,
                           const ka_topic_config_t *configs, size_t count,
                           bool absent_means_default, char *msg, size_t msglen)
{
    (void)view;
    (void)configs;
    (void)count;
    (void)absent_means_default;
    (void)msg;
    (void)msglen;
    return rule == NULL || rule->config_count == 0 ? 0 : KA_EINVALID;
}
