/*
 * ka_gateway_feed.h: gateway mode's broker list (docs/gateway.md).
 *
 * The gateway's table of brokers follows kadmit's own metadata view: a
 * metadata client of its own (control/ka_metadata_client.h, on the same
 * --metadata-upstream and security as admission's) refreshes every
 * KA_GW_FEED_INTERVAL_MS whether or not --policy is given, and hands each
 * Metadata answer's broker list to the data path (ka_server_gateway_brokers).
 */
#ifndef KA_GATEWAY_FEED_H
#define KA_GATEWAY_FEED_H

#include "ka_proxy.h"

/* How often the gateway's own view is refreshed: the time a leaving broker
 * takes to be noticed is about twice this. */
#define KA_GW_FEED_INTERVAL_MS 3000

typedef struct ka_gateway_feed ka_gateway_feed_t;

/* NULL and 0 outside gateway mode; err says why it could not start. */
int ka_gateway_feed_start(ka_server_t *srv, ka_gateway_feed_t **out, char *err, size_t errlen);
/* On drain: stops the metadata client (it frees itself once closed). */
void ka_gateway_feed_stop(ka_gateway_feed_t *f);

#endif
