/*
 * ka_config_gateway.c: the options of gateway mode (docs/gateway.md), a
 * second table of rows that ka_config.c reads after its own.
 *
 * Gateway mode puts one kadmit in front of a whole cluster whose brokers keep
 * advertising their own addresses: clients bootstrap at --listen and reach
 * broker id i on a port of kadmit's (--gateway-port-base N: N + i, or
 * --gateway-port-map ID=PORT,...), or on one TLS port by SNI
 * (--gateway-sni-domain: broker-<id>.DOMAIN). The responses that carry
 * broker addresses are rewritten to --advertise-host (and, in SNI mode,
 * --advertise-port). Exactly one of the three routings is given.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_config.h"
#include "ka_error.h"

#define SNI_LABEL_MAX 63

/* A decimal in [min, max], the whole of [v, v + len). */
static int parse_num(const char *v, size_t len, uint64_t min, uint64_t max, uint64_t *out)
{
    char buf[24];
    if (len == 0 || len >= sizeof(buf))
        return KA_EINVALID;
    memcpy(buf, v, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)buf[i]))
            return KA_EINVALID;
    errno = 0;
    unsigned long long x = strtoull(buf, NULL, 10);
    if (errno == ERANGE || x < min || x > max)
        return KA_ELIMIT;
    *out = x;
    return 0;
}

int ka_config_parse_upstreams(ka_config_t *c, const char *v, char *e, size_t n)
{
    char item[KA_CONFIG_HOST_MAX + 16];
    int count = 0;
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == KA_GW_MAX_UPSTREAMS) {
            snprintf(e, n, "at most %d brokers", KA_GW_MAX_UPSTREAMS);
            return KA_ELIMIT;
        }
        if (len == 0 || len >= sizeof(item)) {
            snprintf(e, n, "expected HOST:PORT[,HOST:PORT...]");
            return KA_EINVALID;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        int rc = ka_config_parse_hostport(item, &c->upstreams[count], e, n);
        if (rc < 0)
            return rc;
        if (c->upstreams[count].port == 0) {
            snprintf(e, n, "the broker's port must not be 0");
            return KA_EINVALID;
        }
        count++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    c->upstream_count = count;
    c->upstream = c->upstreams[0];
    return 0;
}

static int set_mode(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "sidecar") == 0)
        c->mode = KA_MODE_SIDECAR;
    else if (strcmp(v, "gateway") == 0)
        c->mode = KA_MODE_GATEWAY;
    else {
        snprintf(e, n, "expected sidecar or gateway");
        return KA_EINVALID;
    }
    return 0;
}

static int set_port_base(ka_config_t *c, const char *v, char *e, size_t n)
{
    uint64_t x;
    if (parse_num(v, strlen(v), 1, 65535, &x) < 0) {
        snprintf(e, n, "expected a port between 1 and 65535");
        return KA_EINVALID;
    }
    c->gw_port_base = (uint32_t)x;
    return 0;
}

static int set_port_map(ka_config_t *c, const char *v, char *e, size_t n)
{
    const char *p = v;
    int count = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        uint64_t id, port;
        if (count == KA_GW_MAX_PORT_MAP) {
            snprintf(e, n, "at most %d entries", KA_GW_MAX_PORT_MAP);
            return KA_ELIMIT;
        }
        if (eq == NULL || parse_num(p, (size_t)(eq - p), 0, INT32_MAX, &id) < 0 ||
            parse_num(eq + 1, len - (size_t)(eq + 1 - p), 1, 65535, &port) < 0) {
            snprintf(e, n, "expected ID=PORT[,ID=PORT...] with ports between 1 and 65535");
            return KA_EINVALID;
        }
        for (int i = 0; i < count; i++) {
            if (c->gw_port_map[i].node_id == (int32_t)id || c->gw_port_map[i].port == port) {
                snprintf(e, n, "broker %llu or port %llu is given twice", (unsigned long long)id,
                         (unsigned long long)port);
                return KA_EINVALID;
            }
        }
        c->gw_port_map[count].node_id = (int32_t)id;
        c->gw_port_map[count].port = (uint16_t)port;
        count++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    c->gw_port_map_count = count;
    return 0;
}

/* A DNS name: labels of letters, digits and dashes, at most 63 each. */
static int set_sni_domain(ka_config_t *c, const char *v, char *e, size_t n)
{
    size_t len = strlen(v), label = 0;
    int ok = len > 0 && len < sizeof(c->gw_sni_domain) && v[0] != '.' && v[len - 1] != '.';
    for (size_t i = 0; ok && i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == '.') {
            ok = label > 0;
            label = 0;
        } else {
            ok = (isalnum(ch) || ch == '-') && ++label <= SNI_LABEL_MAX;
        }
    }
    if (!ok) {
        snprintf(e, n, "expected a DNS domain such as kafka.example.com");
        return KA_EINVALID;
    }
    for (size_t i = 0; i <= len; i++)
        c->gw_sni_domain[i] = (char)tolower((unsigned char)v[i]);
    return 0;
}

static int set_advertise_host(ka_config_t *c, const char *v, char *e, size_t n)
{
    size_t len = strlen(v);
    if (len == 0 || len >= sizeof(c->advertise_host) || strpbrk(v, " ,") != NULL) {
        snprintf(e, n, "expected a host name or address");
        return KA_EINVALID;
    }
    memcpy(c->advertise_host, v, len + 1);
    return 0;
}

static int set_advertise_port(ka_config_t *c, const char *v, char *e, size_t n)
{
    uint64_t x;
    if (parse_num(v, strlen(v), 1, 65535, &x) < 0) {
        snprintf(e, n, "expected a port between 1 and 65535");
        return KA_EINVALID;
    }
    c->advertise_port = (uint16_t)x;
    return 0;
}

const ka_config_option_t ka_config_gateway_options[] = {
    {"mode", "KADMIT_MODE", set_mode, "MODE",
     "sidecar (in front of one broker) or gateway (in front of a cluster; default sidecar)"},
    {"gateway-port-base", "KADMIT_GATEWAY_PORT_BASE", set_port_base, "N",
     "gateway: broker id i is served on the listen host at port N+i"},
    {"gateway-port-map", "KADMIT_GATEWAY_PORT_MAP", set_port_map, "ID=PORT,...",
     "gateway: the port of each broker id (instead of --gateway-port-base)"},
    {"gateway-sni-domain", "KADMIT_GATEWAY_SNI_DOMAIN", set_sni_domain, "DOMAIN",
     "gateway with --tls-cert: SNI broker-<id>.DOMAIN reaches broker id on the listen port"},
    {"advertise-host", "KADMIT_ADVERTISE_HOST", set_advertise_host, "HOST",
     "gateway: the host responses carry (default the --listen host; required when wildcard)"},
    {"advertise-port", "KADMIT_ADVERTISE_PORT", set_advertise_port, "PORT",
     "gateway SNI mode: the port responses carry (default the --listen port)"},
};
const size_t ka_config_gateway_option_count =
    sizeof(ka_config_gateway_options) / sizeof(ka_config_gateway_options[0]);

static int wildcard(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || host[0] == '\0';
}

int ka_config_gateway_check(ka_config_t *c, char *e, size_t n)
{
    if (c->upstream_count == 0 && c->upstream.set) {
        c->upstreams[0] = c->upstream;
        c->upstream_count = 1;
    }
    int gw_flag = c->gw_port_base || c->gw_port_map_count || c->gw_sni_domain[0] ||
                  c->advertise_host[0] || c->advertise_port;
    if (c->mode != KA_MODE_GATEWAY) {
        if (c->upstream_count > 1) {
            snprintf(e, n, "--upstream: a sidecar has one broker; a list needs --mode gateway");
            return KA_EINVALID;
        }
        if (gw_flag) {
            snprintf(e, n, "--gateway-* and --advertise-* need --mode gateway");
            return KA_EINVALID;
        }
        return 0;
    }
    int routings = (c->gw_port_base != 0) + (c->gw_port_map_count > 0) + (c->gw_sni_domain[0] != 0);
    if (routings != 1) {
        snprintf(e, n,
                 "--mode gateway needs exactly one of --gateway-port-base, --gateway-port-map "
                 "and --gateway-sni-domain");
        return KA_EINVALID;
    }
    if (c->gw_sni_domain[0] && c->tls_cert[0] == '\0') {
        snprintf(e, n, "--gateway-sni-domain needs --tls-cert (SNI is read from the TLS hello)");
        return KA_EINVALID;
    }
    if (c->advertise_port && !c->gw_sni_domain[0]) {
        snprintf(e, n, "--advertise-port is for SNI mode; with ports, each broker has its own");
        return KA_EINVALID;
    }
    if (c->advertise_host[0] == '\0' && !c->gw_sni_domain[0]) {
        if (wildcard(c->listen.host)) {
            snprintf(e, n,
                     "--mode gateway with a wildcard --listen %s needs --advertise-host: "
                     "clients must be told a host they can reach",
                     c->listen.host);
            return KA_EINVALID;
        }
        snprintf(c->advertise_host, sizeof(c->advertise_host), "%s", c->listen.host);
    }
    for (int i = 0; i < c->gw_port_map_count; i++) {
        if (c->gw_port_map[i].port == c->listen.port) {
            snprintf(e, n, "--gateway-port-map: port %u is the bootstrap --listen port",
                     (unsigned)c->listen.port);
            return KA_EINVALID;
        }
    }
    if (c->gw_port_base && c->listen.port >= c->gw_port_base) {
        /* Broker ids are small in practice; the bootstrap port below the base
         * can never collide with a broker's. */
        snprintf(e, n, "--listen port %u must be below --gateway-port-base %u",
                 (unsigned)c->listen.port, (unsigned)c->gw_port_base);
        return KA_EINVALID;
    }
    return 0;
}

int ka_config_gateway_port(const ka_config_t *c, int32_t node_id)
{
    if (node_id < 0)
        return 0;
    if (c->gw_port_base) {
        int64_t p = (int64_t)c->gw_port_base + node_id;
        return p <= 65535 ? (int)p : 0;
    }
    for (int i = 0; i < c->gw_port_map_count; i++)
        if (c->gw_port_map[i].node_id == node_id)
            return c->gw_port_map[i].port;
    return 0;
}
