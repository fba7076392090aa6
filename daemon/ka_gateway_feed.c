/*
 * ka_gateway_feed.c: gateway mode's own metadata client, feeding the data
 * path's broker table (see ka_gateway_feed.h).
 */
#include "ka_gateway_feed.h"

#include <stdio.h>
#include <stdlib.h>

#include "ka_error.h"
#include "ka_log.h"
#include "ka_metadata_client.h"
#include "ka_metadata_response.h"

struct ka_gateway_feed {
    ka_server_t *srv;
    ka_mdc_t *mdc;
};

/* The view itself is admission's business; the gateway needs the brokers only. */
static void on_view(void *arg, ka_cluster_t *view, const char *error)
{
    (void)arg;
    (void)error;
    ka_cluster_unref(view);
}

static void on_brokers(void *arg, const struct ka_metadata_response *md)
{
    ka_gateway_feed_t *f = arg;
    int32_t n = md->brokers.count;
    if (n <= 0)
        return; /* no list: nothing is known to have left */
    ka_gw_broker_addr_t *list = calloc((size_t)n, sizeof(*list));
    if (list == NULL)
        return;
    for (int32_t i = 0; i < n; i++) {
        list[i].node_id = md->brokers.items[i].node_id;
        list[i].host = md->brokers.items[i].host;
        list[i].port = md->brokers.items[i].port;
    }
    ka_server_gateway_brokers(f->srv, list, (size_t)n);
    free(list);
}

int ka_gateway_feed_start(ka_server_t *srv, ka_gateway_feed_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!ka_server_is_gateway(srv))
        return 0;
    ka_gateway_feed_t *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    f->srv = srv;
    int rc = ka_mdc_start(ka_server_loop(srv), ka_server_metadata_addr(srv),
                          ka_server_metadata_name(srv), KA_GW_FEED_INTERVAL_MS,
                          ka_server_metrics(srv), on_view, f, &f->mdc);
    if (rc < 0) {
        snprintf(err, errlen, "gateway: cannot start its metadata client: %s", ka_strerror(rc));
        free(f);
        return rc;
    }
    ka_mdc_set_security(f->mdc, ka_server_upstream_security(srv));
    ka_mdc_set_pool(f->mdc, ka_server_pool(srv));
    ka_mdc_set_brokers_cb(f->mdc, on_brokers, f);
    *out = f;
    return 0;
}

void ka_gateway_feed_stop(ka_gateway_feed_t *f)
{
    if (f == NULL)
        return;
    ka_mdc_stop(f->mdc);
    free(f);
}
