/*
 * ka_message.h: the sentences kadmit puts in error_message, for the engine
 * only (its bound, KA_MESSAGE_MAX, is public through ka_verdict.h).
 *
 * A rejection must be actionable from the client's exception alone (the
 * Java AdminClient uses error_message verbatim), so it names each broker
 * concerned with its limit, its current count and the count the request
 * would produce, and says what the operator can do. Every message fits in
 * KA_MESSAGE_MAX bytes: a long broker list ends with "and K more".
 */
#ifndef KA_MESSAGE_H
#define KA_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

/* Every message fits in this many bytes, NUL included (callers see it through ka_verdict.h). */
#define KA_MESSAGE_MAX 1024

typedef struct ka_concern {
    int32_t broker_id;
    int64_t limit;
    int64_t current;   /* hosted per the view plus reserved */
    int64_t projected; /* current plus what the request adds */
} ka_concern_t;

/* The prefix KIP-578 gave WILL_EXCEED_BROKER_PARTITION_CAPACITY. */
#define KA_MESSAGE_BROKER_PREFIX                                                                   \
    "Cannot satisfy request without exceeding the max.broker.partitions limit on brokers"

/* "<prefix> 1 (limit L, current C, projected P), ... <advice>"; NULL without memory. */
char *ka_message_brokers(const ka_concern_t *concerns, size_t count, const char *advice);
char *ka_message_max_partitions(int64_t limit, int64_t current, int64_t projected);
char *ka_message_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reallocates a message to its length; returns the (possibly moved) text. */
char *ka_message_shrink(char *text);

#endif
