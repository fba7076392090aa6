/*
 * ka_rdk_topic.h: waiting, off the loop, until a topic kadmit has just
 * created is visible to one of its librdkafka handles, with a leader.
 *
 * CreateTopics answers once the controller has the topic; a broker learns it
 * from the metadata log a moment later. A handle that asks for the topic's
 * metadata in between is told it does not exist, and librdkafka asks again
 * only at its once-a-second scan of unknown topics, so a sidecar on a fresh
 * cluster would lose a second or more (a partition without a leader yet is
 * asked again after topic.metadata.refresh.fast.interval.ms instead). This
 * asks for the topic's metadata on libuv's thread pool (ka_rdk_blocking_run)
 * every few milliseconds until partition 0 has a leader, which also puts it
 * in the handle's metadata cache, then calls back on the loop.
 */
#ifndef KA_RDK_TOPIC_H
#define KA_RDK_TOPIC_H

#include "ka_rdk.h"

/* Called on the loop once the topic is visible (ready 1) or the wait ran out (ready 0);
 * never called when the handle was closed meanwhile. */
typedef void (*ka_rdk_topic_ready_cb)(void *arg, int ready);

/*
 * Starts the wait for `topic` on handle r, at most timeout_ms. Returns 0, or a negative
 * ka_err when it cannot be queued (cb is then never called).
 */
int ka_rdk_topic_await(ka_rdk_t *r, const char *topic, int timeout_ms, ka_rdk_topic_ready_cb cb,
                       void *arg);

#endif
