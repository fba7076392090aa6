/*
 * ka_status_cli.c: `kadmit status --admin HOST:PORT`, the brokers' capacity
 * table of a running sidecar, for an operator's shell.
 *
 * It reads GET /v1/brokers from the admin server (no token: reads need none)
 * and prints one line per broker. A blocking client is enough here: it runs
 * once and exits, never inside the proxy's loop.
 */
#include "ka_status_cli.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "ka_error.h"

#define RESPONSE_MAX (8u * 1024 * 1024)
#define TIMEOUT_S    5
#define UNLIMITED    2147483647

static int split_host_port(const char *hp, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon = strrchr(hp, ':');
    const char *h = hp;
    size_t hlen;

    if (colon == NULL || colon[1] == '\0')
        return KA_EINVALID;
    hlen = (size_t)(colon - hp);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') { /* [::1]:9644 */
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= hcap || strlen(colon + 1) >= pcap)
        return KA_EINVALID;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    snprintf(port, pcap, "%s", colon + 1);
    return 0;
}

static int connect_to(const char *host, const char *port, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    struct timeval tv = {.tv_sec = TIMEOUT_S};
    int rc = getaddrinfo(host, port, &hints, &res), fd = -1;

    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return KA_EINVALID;
    }
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to the admin server at %s:%s: %s", host, port,
                 strerror(errno));
    return fd < 0 ? KA_EINVALID : fd;
}

int ka_status_cli_http(const char *admin, const char *method, const char *path,
                       const char *send_body, int *status, char **body, char *err, size_t errlen)
{
    char host[256], port[16], req[640];
    size_t send_len = send_body ? strlen(send_body) : 0;
    size_t len = 0, cap = 16384;
    char *buf;
    int fd;

    if (split_host_port(admin, host, sizeof(host), port, sizeof(port)) < 0) {
        snprintf(err, errlen, "--admin wants HOST:PORT, got \"%s\"", admin);
        return KA_EINVALID;
    }
    if ((fd = connect_to(host, port, err, errlen)) < 0)
        return fd;
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     method, path, admin, send_len);
    if (n < 0 || (size_t)n >= sizeof(req) || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n ||
        (send_len > 0 && send(fd, send_body, send_len, MSG_NOSIGNAL) != (ssize_t)send_len) ||
        (buf = malloc(cap)) == NULL) {
        snprintf(err, errlen, "cannot send to %s: %s", admin, strerror(errno));
        close(fd);
        return KA_EINVALID;
    }
    for (;;) {
        if (len + 1 == cap) {
            char *bigger = cap < RESPONSE_MAX ? realloc(buf, cap * 2) : NULL;
            if (bigger == NULL) {
                snprintf(err, errlen, "the answer of %s is too large", admin);
                free(buf);
                close(fd);
                return KA_EOVERFLOW;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = recv(fd, buf + len, cap - 1 - len, 0);
        if (got <= 0) {
            if (got < 0)
                snprintf(err, errlen, "no answer from %s: %s", admin, strerror(errno));
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (sep == NULL || sscanf(buf, "HTTP/1.%*d %d", status) != 1) {
        if (err[0] == '\0')
            snprintf(err, errlen, "%s did not answer HTTP", admin);
        free(buf);
        return KA_EINVALID;
    }
    memmove(buf, sep + 4, len - (size_t)(sep + 4 - buf) + 1);
    *body = buf;
    return 0;
}

static json_int_t int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void limit_text(json_int_t v, char *buf, size_t len)
{
    if (v >= UNLIMITED)
        snprintf(buf, len, "unlimited");
    else
        snprintf(buf, len, "%lld", (long long)v);
}

/* The table; the used column is (partitions + reserved) / limit. */
static void print_table(FILE *out, const json_t *doc)
{
    const json_t *brokers = json_object_get(doc, "brokers"), *c = json_object_get(doc, "cluster");
    size_t i;
    json_t *b;
    char limit[24];

    fprintf(out, "%-7s %-12s %10s %9s %10s %9s %6s  %s\n", "BROKER", "RACK", "PARTITIONS",
            "RESERVED", "LIMIT", "HEADROOM", "USED", "NOTE");
    json_array_foreach(brokers, i, b)
    {
        json_int_t lim = int_of(b, "limit"), used = int_of(b, "partitions") + int_of(b, "reserved");
        const char *rack = json_string_value(json_object_get(b, "rack"));
        char pct[16] = "-";
        const char *note = !json_is_true(json_object_get(b, "listed"))  ? "not registered"
                           : json_is_true(json_object_get(b, "fenced")) ? "fenced"
                           : int_of(b, "headroom") < 0                  ? "over its limit"
                           : lim < UNLIMITED && used * 10 >= lim * 9    ? "within 10% of its limit"
                                                                        : "";
        if (lim > 0 && lim < UNLIMITED)
            snprintf(pct, sizeof(pct), "%lld%%", (long long)(used * 100 / lim));
        limit_text(lim, limit, sizeof(limit));
        fprintf(out, "%-7lld %-12s %10lld %9lld %10s %9lld %6s  %s\n", (long long)int_of(b, "id"),
                rack ? rack : "-", (long long)int_of(b, "partitions"),
                (long long)int_of(b, "reserved"), limit, (long long)int_of(b, "headroom"), pct,
                note);
    }
    limit_text(int_of(c, "max.partitions"), limit, sizeof(limit));
    fprintf(out,
            "\ncluster: %lld partitions (%lld reserved) of max.partitions %s; %lld topics; "
            "view %.1f s old; policy version %lld\n",
            (long long)int_of(c, "partitions"), (long long)int_of(c, "reserved_partitions"), limit,
            (long long)int_of(c, "topics"), (double)int_of(c, "view_age_ms") / 1000.0,
            (long long)int_of(doc, "policy_version"));
}

static void usage(FILE *out)
{
    fprintf(out, "usage: kadmit status [--admin HOST:PORT]\n"
                 "  prints the brokers' capacity table of a running kadmit, read from its admin\n"
                 "  server (default $KADMIT_ADMIN, else 127.0.0.1:9644)\n");
}

int ka_status_cli_main(int argc, char **argv)
{
    const char *admin = getenv("KADMIT_ADMIN");
    char err[512] = "";
    char *body = NULL;
    int status = 0;

    if (admin == NULL || admin[0] == '\0')
        admin = "127.0.0.1:9644";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--admin") == 0 && i + 1 < argc) {
            admin = argv[++i];
        } else if (strncmp(argv[i], "--admin=", 8) == 0) {
            admin = argv[i] + 8;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "kadmit status: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (ka_status_cli_http(admin, "GET", "/v1/brokers", NULL, &status, &body, err, sizeof(err)) <
        0) {
        fprintf(stderr, "kadmit status: %s\n", err);
        return 1;
    }
    json_error_t jerr;
    json_t *doc = json_loads(body, 0, &jerr);
    free(body);
    if (doc == NULL) {
        fprintf(stderr, "kadmit status: %s answered HTTP %d with no JSON (%s)\n", admin, status,
                jerr.text);
        return 1;
    }
    if (status != 200) {
        const char *why = json_string_value(json_object_get(doc, "error"));
        fprintf(stderr, "kadmit status: %s answered HTTP %d: %s\n", admin, status,
                why ? why : "no reason given");
        json_decref(doc);
        return 1;
    }
    print_table(stdout, doc);
    json_decref(doc);
    return 0;
}
