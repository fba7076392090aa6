/*
 * admin_fixtures.h: a fake proxy behind ka_admin_ops_t, a server running on
 * a real libuv loop in a thread, and a blocking HTTP client, for the
 * admin-http/ tests.
 *
 * The loop thread owns the server and the fake; the test thread only talks
 * HTTP to it, and reads the fake's counters after a response proves the
 * loop has finished with them.
 */
#ifndef ADMIN_FIXTURES_H
#define ADMIN_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ka_admin.h"
#include "ka_metrics.h"

/* The proxy's side of the contract, with knobs for each test. */
typedef struct fake_proxy {
    ka_policy_t *policy;
    uint64_t last_version;
    bool persist_ok;  /* what policy_apply reports as persisted */
    bool apply_fails; /* policy_apply refuses the policy */
    int apply_calls;
    ka_admin_reload_status_t reload;
    ka_policy_t *file_policy; /* what file_policy_get returns; NULL: no policy file */
    ka_cluster_t *cluster;    /* NULL: no view yet */
    ka_reservations_t *ledger;
    bool ready;
    int admission; /* a ka_admin_admission_t */
    int64_t now_ms;
    ka_metrics_t metrics; /* what metrics_get lends: the latest decisions */
} fake_proxy_t;

void fake_init(fake_proxy_t *fake);
void fake_free(fake_proxy_t *fake);
/* Brokers 1..3 on racks a, b, c, hosting 10, 20, 30 replicas; 2 reserved on broker 1. */
void fake_add_cluster(fake_proxy_t *fake);
ka_admin_ops_t fake_ops(fake_proxy_t *fake);

typedef struct admin_harness {
    uv_loop_t loop;
    uv_async_t stop;
    uv_thread_t thread;
    ka_admin_server_t *server;
    int port;
    fake_proxy_t fake;
    ka_admin_ops_t ops;
} admin_harness_t;

#define TEST_TOKEN "s3cret-token"

/* Starts a server on 127.0.0.1:0 with cfg (NULL: TEST_TOKEN, short timeouts). */
void harness_start(admin_harness_t *h, const ka_admin_config_t *cfg);
/* The same on another address (e.g. "0.0.0.0:0"); clients still connect to 127.0.0.1. */
void harness_start_on(admin_harness_t *h, const ka_admin_config_t *cfg, const char *address);
/* Closes the server from its own thread, joins it and checks nothing leaked. */
void harness_stop(admin_harness_t *h);

/* A blocking client connection with its own read buffer, for pipelining. */
typedef struct client {
    int fd;
    char buf[256 * 1024];
    size_t len;
} client_t;

typedef struct reply {
    int status;
    char head[4096]; /* status line and headers, NUL-terminated */
    char *body;      /* NUL-terminated, malloc'd */
    size_t body_len;
} reply_t;

client_t *client_connect(int port);
void client_send(client_t *c, const char *data, size_t len);
void client_sends(client_t *c, const char *s);
/* Reads one response; returns its status, or -1 on EOF or timeout (5 s). */
int client_read(client_t *c, reply_t *r);
/* True when the server closed the connection (within timeout_ms). */
bool client_closed(client_t *c, int timeout_ms);
void client_close(client_t *c);
void reply_free(reply_t *r);
/* The value of header `name` in r->head (copied into buf), or NULL. */
const char *reply_header(const reply_t *r, const char *name, char *buf, size_t len);

/* One request on a fresh connection. token NULL sends no Authorization. */
int http_call(int port, const char *method, const char *path, const char *token, const char *body,
              reply_t *r);

#endif
