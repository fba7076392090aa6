/*
 * ka_rdk.h: a librdkafka handle driven from the libuv loop.
 *
 * kadmit keeps some of its state in Kafka topics of the cluster it guards
 * (the admission ledger, the limits topic). librdkafka runs its own broker
 * threads; everything it reports to kadmit (delivery reports, fetched
 * messages, admin results, errors, log lines) is routed to one queue per
 * handle. The queue's wake-up fd (rd_kafka_queue_io_event_enable) is the
 * read end of a pipe watched with uv_poll, so those events are served on the
 * loop like any other I/O, and no thread of kadmit ever waits for Kafka.
 *
 * The handle is generic: the caller chooses producer or consumer, adds any
 * librdkafka properties it needs, and passes ka_rdk_queue() wherever
 * librdkafka takes a result queue (rd_kafka_CreateTopics, the legacy
 * rd_kafka_consume_start_queue of a group-less consumer). Every event is
 * handed to the caller's callback and destroyed after it returns; log events
 * are written to kadmit's log here and not passed on.
 *
 * Security is the sidecars' client side (ka_rdk_side.h): these clients
 * follow the advertised listeners, which are the sidecars. librdkafka
 * checks a broker's name against the host it connects to (it has no
 * separate SNI setting).
 *
 * The watch does not keep the loop alive (uv_unref), so a drain can end
 * while a handle is open. Not thread-safe: one owner on the loop. ka_rdk_blocking_run() is the one
 * way to call librdkafka's blocking functions (rd_kafka_offsets_for_times):
 * on libuv's thread pool, with the result back on the loop.
 */
#ifndef KA_RDK_H
#define KA_RDK_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <uv.h>

#include "ka_config.h"
#include "ka_own_mac.h"
#include "ka_transport.h"

typedef struct ka_rdk ka_rdk_t;

enum ka_rdk_role { KA_RDK_PRODUCER = 0, KA_RDK_CONSUMER };

/* TLS and SASL toward the brokers; strings are copied into the handle's config. */
typedef struct ka_rdk_security {
    int tls;               /* security.protocol SSL or SASL_SSL */
    const char *ca_file;   /* trusted roots; NULL or "" for OpenSSL's default paths */
    const char *cert_file; /* client certificate (mTLS), or NULL */
    const char *key_file;  /* its private key, or NULL */
    int verify;            /* check the broker's chain and host name */
    const char *mechanism; /* "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"; NULL or "" for none */
    const char *username;
    const char *password;
    /* The cluster secret that signs and checks the records of kadmit's own
     * topics (ka_own_mac.h); not a librdkafka setting, but it travels with
     * the rest of what makes these clients trusted. */
    ka_own_key_t records;
    /* The operator's librdkafka properties (--ledger-properties) as name,
     * value pairs ending with a NULL name, or NULL; applied after every
     * other setting, so they win. */
    const char *const *user_props;
} ka_rdk_security_t;

typedef struct ka_rdk_settings {
    enum ka_rdk_role role;
    const char *bootstrap; /* bootstrap.servers, "HOST:PORT[,...]" */
    const char *client_id; /* client.id, shown in the brokers' logs and quotas */
    ka_rdk_security_t security;
    /* More librdkafka properties as name, value pairs, ending with a NULL
     * name; they are applied last, so they win over kadmit's defaults. */
    const char *const *props;
} ka_rdk_settings_t;

/*
 * Called on the loop for each event served from the queue, except log
 * events. The event is destroyed when the callback returns. Error events
 * were already logged; a callback typically looks at rd_kafka_event_type.
 */
typedef void (*ka_rdk_event_cb)(void *arg, ka_rdk_t *rdk, rd_kafka_event_t *ev);

/*
 * Creates the handle and starts serving its queue on loop. Returns 0, or a
 * negative ka_err with a sentence in err (a property librdkafka refused, a
 * pipe that could not be made).
 */
int ka_rdk_new(uv_loop_t *loop, const ka_rdk_settings_t *settings, ka_rdk_event_cb cb, void *arg,
               ka_rdk_t **out, char *err, size_t errlen);
/* The librdkafka handle, for produce, consume_start_queue, admin calls. */
rd_kafka_t *ka_rdk_handle(const ka_rdk_t *r);
/* The served queue: pass it wherever librdkafka takes a result queue. */
rd_kafka_queue_t *ka_rdk_queue(const ka_rdk_t *r);

/* Work for ka_rdk_blocking_run: `run` on a pool thread, `done` on the loop. */
typedef struct ka_rdk_work {
    uv_work_t req; /* private */
    ka_rdk_t *rdk; /* private: NULL once the handle is being closed */
    void (*run)(struct ka_rdk_work *w, rd_kafka_t *rk);
    /* closed: the handle was closed meanwhile (w is still the caller's to free). */
    void (*done)(struct ka_rdk_work *w, int closed);
} ka_rdk_work_t;

/*
 * Runs w->run on libuv's thread pool with the handle, then w->done on the
 * loop. The handle stays alive until every such work has completed, so a
 * blocking call bounded by its own timeout is safe to make. Returns 0 or a
 * negative ka_err (the work is then not run).
 */
int ka_rdk_blocking_run(ka_rdk_t *r, ka_rdk_work_t *w);

/*
 * True when the client hit a fatal error (rd_kafka_fatal_error): it will
 * not produce again until recreated. why gets librdkafka's sentence.
 */
int ka_rdk_fatal(const ka_rdk_t *r, char *why, size_t len);

/*
 * Replaces the librdkafka client with a new one made from the same
 * configuration; the ka_rdk_t stays, so callers keep their pointer. Every
 * rd_kafka_topic_t of the old client must be destroyed first, and anything
 * it had queued (a producer's undelivered messages, events not served yet)
 * is dropped without a callback: the caller fails what waited on it.
 * Returns 0, KA_ECONFLICT while a blocking work still runs on the client
 * (try again later), or another negative ka_err with a sentence in err.
 */
int ka_rdk_recreate(ka_rdk_t *r, char *err, size_t errlen);

/*
 * Stops serving and destroys the handle once its blocking work, if any, has
 * completed. A producer's undelivered messages are purged, not flushed:
 * callers that care record outcomes themselves. rd_kafka_destroy joins
 * librdkafka's threads, which takes at most a few hundred milliseconds.
 */
void ka_rdk_close(ka_rdk_t *r);

#endif
