/*
 * ka_proxy.h: the data path as other folders see it.
 *
 * The proxy forwards every Kafka frame between clients and one broker. From
 * outside it is a server to start, drain and close; an interception table
 * where the control plane installs its handlers; and read-only views of
 * what the server owns (its loop, configuration, memory pool, metrics and
 * upstream addresses). The server and its sessions are opaque: their
 * structs live in ka_proxy_internal.h, which only proxy/ includes.
 *
 * One server per process. Create it with ka_server_new, start accepting
 * with ka_server_listen, run the loop; ka_server_drain (or SIGTERM) closes
 * the listener and lets the sessions finish; after the loop has stopped,
 * ka_server_close releases the last handles and ka_server_free the memory.
 */
#ifndef KA_PROXY_H
#define KA_PROXY_H

#include <sys/socket.h>
#include <uv.h>

#include "ka_config.h"
#include "ka_intercept.h"
#include "ka_metrics.h"
#include "ka_pool.h"
#include "ka_transport.h"

typedef struct ka_server ka_server_t;
typedef struct ka_session ka_session_t;
/* The control plane's admission runtime; the proxy only keeps the pointer. */
struct ka_admission;

/* Resolves the upstream, sets up the pool, signals and TLS; err says why not. */
int ka_server_new(uv_loop_t *loop, const ka_config_t *cfg, ka_server_t **out, char *err,
                  size_t errlen);
int ka_server_listen(ka_server_t *srv, char *err, size_t errlen);
/* Stops accepting; sessions close once their in-flight requests are answered. */
void ka_server_drain(ka_server_t *srv);
/* After the loop has stopped: closes the last handles and frees caches. */
void ka_server_close(ka_server_t *srv);
/* After ka_server_close and uv_loop_close. */
void ka_server_free(ka_server_t *srv);

/* Read-only views. */
uv_loop_t *ka_server_loop(const ka_server_t *srv);
const ka_config_t *ka_server_config(const ka_server_t *srv);
/* The port the listener is bound to (useful with --listen HOST:0), 0 before listening. */
int ka_server_listen_port(const ka_server_t *srv);
int ka_server_draining(const ka_server_t *srv);
/* Where sessions connect, and where kadmit's own metadata connection goes. */
const struct sockaddr *ka_server_upstream_addr(const ka_server_t *srv);
const char *ka_server_upstream_name(const ka_server_t *srv);
const struct sockaddr *ka_server_metadata_addr(const ka_server_t *srv);
const char *ka_server_metadata_name(const ka_server_t *srv);
/* TLS and SASL for kadmit's own connections to the broker. */
const ka_upstream_security_t *ka_server_upstream_security(const ka_server_t *srv);
/* The pool, for its figures; its buffers belong to the sessions. */
ka_pool_t *ka_server_pool(ka_server_t *srv);
/* The process's counters. The control plane adds its own (admission) to the same struct. */
ka_metrics_t *ka_server_metrics(ka_server_t *srv);

/* What the control plane installs. */
/* Handlers installed here apply to frames read from then on. */
ka_intercept_table_t *ka_server_intercept(ka_server_t *srv);
void ka_server_set_admission(ka_server_t *srv, struct ka_admission *admission);
struct ka_admission *ka_server_admission(const ka_server_t *srv);
/* Called once when a drain starts (SIGTERM/SIGINT), e.g. to close the admin server. */
void ka_server_on_drain(ka_server_t *srv, void (*cb)(void *arg), void *arg);

/* Gateway mode (proxy/ka_gateway.h): one broker of the cluster as kadmit's
 * own metadata view lists it. */
typedef struct ka_gw_broker_addr {
    int32_t node_id;
    ka_slice_t host; /* points into the caller's answer, for the call only */
    int32_t port;
} ka_gw_broker_addr_t;
/* The cluster's whole broker list, on every refresh of the view: a new broker
 * gets its port, one gone from two lists in a row has its listener and its
 * connections closed. No-op outside gateway mode. */
void ka_server_gateway_brokers(ka_server_t *srv, const ka_gw_broker_addr_t *list, size_t n);
/* Nonzero in gateway mode. */
int ka_server_is_gateway(const ka_server_t *srv);

#endif
