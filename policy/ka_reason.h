/*
 * ka_reason.h: why a verdict is what it is, as data.
 *
 * Every verdict carries one of these next to its message. The message is
 * for people; logs, counters and callers branch on the enum, never on the
 * text. A header of its own so that base/ka_metrics.h can size its counters
 * without including the engine.
 */
#ifndef KA_REASON_H
#define KA_REASON_H

enum ka_reason {
    KA_REASON_NONE = 0,           /* admitted, or deferred to the broker */
    KA_REASON_BROKER_LIMIT,       /* a broker's max.broker.partitions */
    KA_REASON_STALE_VIEW,         /* the view is older than metadata.max.staleness.ms */
    KA_REASON_NO_VIEW,            /* no view of the cluster yet */
    KA_REASON_MAX_PARTITIONS,     /* the cluster-wide max.partitions */
    KA_REASON_UNKNOWN_TOPIC,      /* the view does not know the topic or partition */
    KA_REASON_UNKNOWN_BROKER,     /* the view does not know a broker the item names */
    KA_REASON_LEDGER_UNAVAILABLE, /* the cluster-wide ledger could not be reached */
    KA_REASON_CONCURRENT,         /* earlier admissions elsewhere took the headroom */
    KA_REASON_TOPIC_NAME,         /* the name does not match topic.name.pattern */
    KA_REASON_PRINCIPAL_TOPICS,   /* the principal may not create topics of that name */
    KA_REASON_RULE_REPLICATION,   /* a topic rule's replication.factor.min/max */
    KA_REASON_RULE_PARTITIONS,    /* a topic rule's partitions.min/max */
    KA_REASON_RULE_CONFIG,        /* a topic rule's bounds on topic configs */
    KA_REASON_RULE_BUDGET,        /* a topic rule's budget.partitions */
    KA_REASON_PRINCIPAL_BUDGET,   /* a principal's budget.partitions */
    KA_REASON_PROTECTED_TOPIC,    /* a protected topic deleted, or kadmit's own widened */
    KA_REASON_PARTIAL_VIEW,       /* the view may lack topics kadmit may not Describe */
    KA_REASON_COUNT
};

#endif
