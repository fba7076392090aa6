/*
 * ka_own_topics.h: the default names of kadmit's own Kafka topics, in one
 * place: the configuration's defaults (--ledger-topic, --limits-topic), the
 * limits store and the policy's always-protected topics all read them here.
 * Header only, so that base/ and control/ need no link to policy/.
 */
#ifndef KA_OWN_TOPICS_H
#define KA_OWN_TOPICS_H

/* The cluster-wide admission ledger (control/ledger/ka_ledger.h). */
#define KA_OWN_TOPIC_LEDGER "__kadmit_ledger"
/* The cluster-wide limits, a compacted topic (control/limits/ka_limits.h). */
#define KA_OWN_TOPIC_LIMITS "__kadmit_limits"

#endif
