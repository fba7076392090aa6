/*
 * ka_message.c: bounded, human rejection sentences.
 */
#include "ka_message.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room kept at the end of the list for ", and 2147483647 more". */
#define TAIL_ROOM 32

/* Gives back the unused part of a KA_MESSAGE_MAX buffer: requests can carry many items. */
char *ka_message_shrink(char *text)
{
    char *smaller;

    if (text == NULL)
        return NULL;
    smaller = realloc(text, strlen(text) + 1);
    return smaller != NULL ? smaller : text;
}

char *ka_message_format(const char *fmt, ...)
{
    char *text = malloc(KA_MESSAGE_MAX);
    va_list ap;

    if (text == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(text, KA_MESSAGE_MAX, fmt, ap);
    va_end(ap);
    return ka_message_shrink(text);
}

char *ka_message_brokers(const ka_concern_t *c, size_t count, const char *advice)
{
    char *text = malloc(KA_MESSAGE_MAX), entry[128];
    size_t len, limit, shown = 0;

    if (text == NULL)
        return NULL;
    len = (size_t)snprintf(text, KA_MESSAGE_MAX, "%s", KA_MESSAGE_BROKER_PREFIX);
    limit = KA_MESSAGE_MAX - 1 - TAIL_ROOM - strlen(advice) - 2;
    for (; shown < count; shown++) {
        int n = snprintf(entry, sizeof(entry),
                         "%s %" PRId32 " (limit %" PRId64 ", current %" PRId64
                         ", projected %" PRId64 ")",
                         shown == 0 ? "" : ",", c[shown].broker_id, c[shown].limit,
                         c[shown].current, c[shown].projected);

        if (len + (size_t)n > limit)
            break;
        memcpy(text + len, entry, (size_t)n + 1);
        len += (size_t)n;
    }
    if (shown < count)
        len += (size_t)snprintf(text + len, KA_MESSAGE_MAX - len, "%s and %zu more",
                                shown == 0 ? "" : ",", count - shown);
    snprintf(text + len, KA_MESSAGE_MAX - len, ". %s", advice);
    return ka_message_shrink(text);
}

char *ka_message_max_partitions(int64_t limit, int64_t current, int64_t projected)
{
    return ka_message_format("Cannot satisfy request without exceeding the max.partitions limit "
                             "of %" PRId64 " (current %" PRId64 ", projected %" PRId64
                             "). Raise max.partitions, delete unused topics, or create fewer "
                             "partitions.",
                             limit, current, projected);
}
