/*
 * ka_policy_rules.c: the accessors of ka_policy_rules.h.
 *
 * Interface first: until the parser fills the rules in, a policy has none,
 * and the keys stay unknown (an error), so nothing is weakened meanwhile.
 */
#include "ka_policy_rules.h"

#include <string.h>

const ka_topic_rule_t *ka_policy_rule_for(const ka_policy_t *policy, ka_slice_t topic)
{
    (void)policy;
    (void)topic;
    return NULL;
}

size_t ka_policy_rule_count(const ka_policy_t *policy)
{
    (void)policy;
    return 0;
}

const ka_topic_rule_t *ka_policy_rule_at(const ka_policy_t *policy, size_t index)
{
    (void)policy;
    (void)index;
    return NULL;
}

const ka_pattern_t *ka_policy_topic_name_pattern(const ka_policy_t *policy)
{
    (void)policy;
    return NULL;
}

bool ka_policy_topic_is_protected(const ka_policy_t *policy, ka_slice_t topic)
{
    (void)policy;
    (void)topic;
    return false;
}

const char *ka_policy_protected_pattern(const ka_policy_t *policy, ka_slice_t topic)
{
    (void)policy;
    (void)topic;
    return NULL;
}

const ka_principal_rule_t *ka_policy_principal(const ka_policy_t *policy, const char *principal)
{
    (void)policy;
    (void)principal;
    return NULL;
}

size_t ka_policy_principal_count(const ka_policy_t *policy)
{
    (void)policy;
    return 0;
}

const ka_principal_rule_t *ka_policy_principal_at(const ka_policy_t *policy, size_t index)
{
    (void)policy;
    (void)index;
    return NULL;
}

const char *ka_policy_unknown_principal(const ka_policy_t *policy)
{
    (void)policy;
    return "User:ANONYMOUS";
}
