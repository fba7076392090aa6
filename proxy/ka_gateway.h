/*
 * ka_gateway.h: gateway mode inside the data path (docs/gateway.md).
 *
 * In gateway mode kadmit fronts a whole cluster whose brokers advertise
 * their own addresses, which clients cannot reach. The gateway keeps a
 * table of the cluster's brokers (node id -> the broker's real address, the
 * port or SNI name kadmit serves it on), fed by kadmit's own metadata view
 * (ka_server_gateway_brokers) and by the broker lists of the Metadata
 * responses it rewrites; routes each new session to its broker (the
 * bootstrap listener to any live broker); and rewrites, in every response
 * that carries broker endpoints (ka_endpoints_carried), each broker's
 * address into kadmit's own. A broker first seen in a response gets its
 * listener before that response goes out; one gone from two consecutive
 * broker lists of the view has its listener and its connections closed.
 *
 * Only proxy/ includes this header; the daemon sees ka_proxy.h.
 */
#ifndef KA_GATEWAY_H
#define KA_GATEWAY_H

#include <stdint.h>

#include "ka_proxy_internal.h"

/* Called by server_init in gateway mode: the bootstrap brokers, the table. */
int ka_gateway_init(ka_server_t *srv, char *err, size_t errlen);
/* Called by ka_server_listen once the bootstrap listener is bound: wraps the
 * response handlers of the keys that carry endpoints (after the control
 * plane installed its own) and opens the --gateway-port-map listeners. */
int ka_gateway_listen(ka_server_t *srv, char *err, size_t errlen);
/* Drain: closes every broker listener. */
void ka_gateway_drain(ka_server_t *srv);
/* After the loop has stopped. */
void ka_gateway_free(ka_server_t *srv);
/*
 * Fills s->target_addr and s->upstream_name (and s->tls_name) for the
 * session's target (s->target_node, KA_GW_ANY_BROKER for the bootstrap).
 * Returns 0, or KA_ENOTFOUND when no address is known for it.
 */
int ka_gateway_route(ka_session_t *s);
/* SNI mode: the broker a TLS server name asks for; KA_GW_ANY_BROKER for any
 * other name (the bootstrap). */
int32_t ka_gateway_sni_target(const ka_server_t *srv, const char *name);

#endif
