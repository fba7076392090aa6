/*
 * ka_mdc_int.h: the metadata client's state, private to control/metadata/.
 *
 * ka_metadata_client.c runs the state machine over it; the struct is here so
 * that the parts it drives (its connection, refresh and log-dirs check, each
 * in its own file) can be read beside the fields they use.
 */
#ifndef KA_MDC_INT_H
#define KA_MDC_INT_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "ka_loop_watch.h"
#include "ka_mdc_conn.h"
#include "ka_mdc_idle.h"
#include "ka_mdc_logdirs.h"
#include "ka_mdc_sasl.h"
#include "ka_metadata_client.h"
#include "ka_own_rf.h"

enum state {
    ST_DOWN = 0,
    ST_CONNECTING,
    ST_VERSIONS,
    ST_SASL_HANDSHAKE,
    ST_SASL_AUTH,
    ST_IDLE,
    ST_REASSIGN, /* connected, not refreshing: raising a kadmit topic's replication */
    ST_METADATA,
    ST_CLUSTER,
    ST_CONFIGS,
    ST_LOGDIRS,
    ST_DECODING, /* a worker decodes the Metadata answer */
    ST_BUILDING  /* a worker builds the view */
};

struct ka_mdc {
    uv_loop_t *loop;
    struct sockaddr_storage addr;
    char name[300];
    ka_metrics_t *metrics;
    ka_mdc_cb cb;
    void *arg;

    ka_mdc_conn_t conn;
    uv_timer_t refresh_timer; /* periodic refresh */
    uv_timer_t io_timer;      /* reconnect backoff, request timeout */
    int handles;              /* open handles; freed when 0 after stop */
    int stopping;

    enum state st;
    int refresh_wanted; /* a refresh should run once connected */
    ka_mdc_idle_t idle; /* the refresh's intervals, and which one runs (ka_mdc_idle.h) */
    uint64_t backoff_ms;
    int32_t next_cid;
    int32_t expect_cid;

    /* Versions negotiated on this connection; -1 when the broker lacks the API. */
    int16_t metadata_version;
    int16_t cluster_version;
    int16_t configs_version;
    int16_t logdirs_version;
    ka_logdirs_state_t logdirs; /* whether the view may be partial */

    struct ka_mdc_refresh *refresh; /* the refresh in progress, or NULL */
    ka_broker_defaults_t defaults;  /* last known; kept across refreshes */
    int have_defaults;

    ka_mdc_security_t sec;
    ka_mdc_sasl_t sasl;
    ka_loop_watch_t *watch;
    ka_own_rf_t own_rf;           /* kadmit's topics' replication (ka_own_rf.h) */
    ka_mdc_brokers_cb brokers_cb; /* ka_mdc_set_brokers_cb, or NULL */
    void *brokers_arg;
};

#endif
