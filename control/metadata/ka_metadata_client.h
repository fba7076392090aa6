/*
 * ka_metadata_client.h: kadmit's own connection to its broker, which
 * builds the cluster view the admission engine decides against.
 *
 * The client owns one TCP connection to --upstream (never a client's
 * connection, and its own correlation ids: ARCHITECTURE invariant 3) and
 * speaks, in order:
 *   ApiVersions v0      once per connection, to learn the broker's versions;
 *   Metadata            all topics, at min(broker max, kadmit's decoded max);
 *   DescribeCluster     v1 or v2 (endpoint type brokers, fenced brokers
 *                       included in v2), so that fenced and registering
 *                       brokers, which still host replicas and still have a
 *                       limit, are in the view; skipped when the broker lacks
 *                       it (Metadata's live brokers then stand alone);
 *   DescribeConfigs     resource type BROKER for every broker id in the
 *                       Metadata answer: a KRaft broker answers only for its
 *                       own id (and refuses the others per resource), so the
 *                       one result without error carries num.partitions,
 *                       default.replication.factor and
 *                       auto.create.topics.enable.
 * Each refresh yields a new immutable ka_cluster_t (ka_view_build.h) handed
 * to the callback (or NULL when the attempt failed). A refresh runs every interval and on
 * demand (ka_mdc_refresh). A failed connection is retried with exponential
 * backoff (100 ms doubling to 5 s); a request unanswered for 30 s closes the
 * connection.
 *
 * With ka_mdc_set_security the connection runs over TLS (the upstream's
 * TLS settings) and authenticates after ApiVersions with SaslHandshake v1
 * and SaslAuthenticate v1: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
 * (ka_scram.h). A refused authentication is a failed connection like any
 * other: logged with the broker's message, retried after the backoff.
 *
 * The files: ka_metadata_client.c (the refresh state machine),
 * ka_mdc_conn.c (socket, TLS, framing, pool buffers), ka_mdc_sasl.c (the
 * SASL exchange), and policy/ka_view_build.c (answers to view, pure).
 */
#ifndef KA_METADATA_CLIENT_H
#define KA_METADATA_CLIENT_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "ka_cluster.h"
#include "ka_metrics.h"
#include "ka_pool.h"
#include "ka_transport.h"

struct ka_metadata_response;

typedef struct ka_mdc ka_mdc_t;

/* view: a new view with one reference for the callee, or NULL after a failed attempt. */
typedef void (*ka_mdc_cb)(void *arg, ka_cluster_t *view, const char *error);

int ka_mdc_start(uv_loop_t *loop, const struct sockaddr *upstream, const char *upstream_name,
                 int64_t interval_ms, ka_metrics_t *metrics, ka_mdc_cb cb, void *arg,
                 ka_mdc_t **out);
/* The TLS and SASL settings of kadmit's own connections (ka_transport.h). */
typedef ka_upstream_security_t ka_mdc_security_t;

/* A copy is kept. Applies from the next connection on; call it right after ka_mdc_start to
 * cover the first. */
void ka_mdc_set_security(ka_mdc_t *c, const ka_mdc_security_t *sec);
/*
 * Charges the response buffers to pool (the server's --buffer-memory);
 * without it the client keeps a private pool sized for its largest
 * response. Call it right after ka_mdc_start, before the first connection.
 */
void ka_mdc_set_pool(ka_mdc_t *c, ka_pool_t *pool);
/* Starts a refresh now unless one is running (its result will do). */
void ka_mdc_refresh(ka_mdc_t *c);
/*
 * The periodic refresh's interval, and the longer one it runs at once no
 * request was judged for idle_interval_ms (ka_mdc_idle.h); idle_interval_ms
 * not above interval_ms: no idle mode.
 */
void ka_mdc_set_interval(ka_mdc_t *c, int64_t interval_ms, int64_t idle_interval_ms);
/* A request the admission hook judges came: an idle client returns to the normal interval. */
void ka_mdc_note_request(ka_mdc_t *c);
/* True when the connection is down (waiting out the reconnect backoff). */
int ka_mdc_down(const ka_mdc_t *c);
/* True once the connection is up and the broker's versions are known. */
int ka_mdc_connected(const ka_mdc_t *c);
/* Each decoded Metadata answer, on the loop, before the view is built (gateway
 * mode reads the brokers' addresses from it); md lives for the call only. */
typedef void (*ka_mdc_brokers_cb)(void *arg, const struct ka_metadata_response *md);
void ka_mdc_set_brokers_cb(ka_mdc_t *c, ka_mdc_brokers_cb cb, void *arg);
/* Closes the connection and timers; the client frees itself once closed. */
void ka_mdc_stop(ka_mdc_t *c);

#endif
