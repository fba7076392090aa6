/*
 * ka_rdk_side.c: the ledger and limits clients' protocol and bootstrap
 * address, derived from kadmit's own configuration (see ka_rdk_side.h for
 * why it is the sidecars' client side and not the upstream side).
 *
 * --ledger-properties is read once per process (both clients start at
 * startup, on the loop) and kept for the process' lifetime, so the pairs
 * handed to librdkafka never dangle and both clients see the same file.
 */
#include "ka_rdk_side.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"

/* Largest --ledger-properties file read: far above any real one. */
#define PROPS_FILE_MAX (256 * 1024)

static char **loaded_props;    /* the pairs of loaded_path, or NULL */
static char loaded_path[4096]; /* the file loaded_props came from */

static int is_set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static const char *first_set(const char *a, const char *b, const char *c)
{
    return is_set(a) ? a : is_set(b) ? b : is_set(c) ? c : NULL;
}

static size_t trim(const char **s, size_t len)
{
    while (len > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        len--;
    }
    while (len > 0 && ((*s)[len - 1] == ' ' || (*s)[len - 1] == '\t' || (*s)[len - 1] == '\r'))
        len--;
    return len;
}

int ka_rdk_props_parse(const char *text, size_t len, char ***pairs, char *err, size_t errlen)
{
    /* Pass 1 bounds and counts; pass 2 copies into one allocation: the
     * pointer array, then every name and value with its NUL. */
    size_t count = 0, bytes = 0;
    *pairs = NULL;
    for (int pass = 0; pass < 2; pass++) {
        char **out = NULL, *store = NULL;
        if (pass == 1) {
            size_t head = (2 * count + 1) * sizeof(char *);
            out = malloc(head + bytes + 1);
            if (out == NULL) {
                snprintf(err, errlen, "out of memory");
                return KA_ENOMEM;
            }
            store = (char *)out + head;
        }
        size_t n = 0, line_no = 0;
        for (size_t pos = 0; pos < len;) {
            const char *line = text + pos;
            const char *nl = memchr(line, '\n', len - pos);
            size_t line_len = nl ? (size_t)(nl - line) : len - pos;
            pos += line_len + (nl != NULL);
            line_no++;
            if (line_len > KA_RDK_PROP_LINE_MAX) {
                snprintf(err, errlen, "line %zu is longer than %d bytes", line_no,
                         KA_RDK_PROP_LINE_MAX);
                free(out);
                return KA_EINVALID;
            }
            line_len = trim(&line, line_len);
            if (line_len == 0 || line[0] == '#')
                continue;
            const char *eq = memchr(line, '=', line_len);
            if (eq == NULL || eq == line) {
                snprintf(err, errlen, "line %zu is not key=value", line_no);
                free(out);
                return KA_EINVALID;
            }
            if (memchr(line, '\0', line_len) != NULL) {
                snprintf(err, errlen, "line %zu holds a NUL byte", line_no);
                free(out);
                return KA_EINVALID;
            }
            const char *key = line, *value = eq + 1;
            size_t key_len = trim(&key, (size_t)(eq - line));
            size_t value_len = trim(&value, line_len - (size_t)(value - line));
            if (key_len == 0) { /* a name of only blanks ("\r\r=v") */
                snprintf(err, errlen, "line %zu is not key=value", line_no);
                free(out);
                return KA_EINVALID;
            }
            if (pass == 0) {
                if (++count > KA_RDK_PROPS_MAX) {
                    snprintf(err, errlen, "more than %d properties", KA_RDK_PROPS_MAX);
                    return KA_EINVALID;
                }
                bytes += key_len + value_len + 2;
                continue;
            }
            out[n++] = memcpy(store, key, key_len);
            store[key_len] = '\0';
            store += key_len + 1;
            out[n++] = memcpy(store, value, value_len);
            store[value_len] = '\0';
            store += value_len + 1;
        }
        if (pass == 1) {
            out[n] = NULL;
            *pairs = out;
        }
    }
    return 0;
}

static int load_props(const char *path, char ***out, char *err, size_t errlen)
{
    if (loaded_props != NULL && strcmp(loaded_path, path) == 0) {
        *out = loaded_props;
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "--ledger-properties %s: %s", path, strerror(errno));
        return KA_EINVALID;
    }
    char *text = malloc(PROPS_FILE_MAX + 1);
    size_t len = text ? fread(text, 1, PROPS_FILE_MAX + 1, f) : 0;
    int bad = text == NULL || ferror(f) || len > PROPS_FILE_MAX;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "--ledger-properties %s: %s", path,
                 text == NULL           ? "out of memory"
                 : len > PROPS_FILE_MAX ? "larger than 256 KiB"
                                        : "read error");
        free(text);
        return KA_EINVALID;
    }
    char why[200], **pairs = NULL;
    int rc = ka_rdk_props_parse(text, len, &pairs, why, sizeof(why));
    free(text);
    if (rc < 0) {
        snprintf(err, errlen, "--ledger-properties %s: %s", path, why);
        return rc;
    }
    free(loaded_props);
    loaded_props = pairs;
    snprintf(loaded_path, sizeof(loaded_path), "%s", path);
    *out = pairs;
    return 0;
}

static void format_hostport(char *out, size_t cap, const char *host, unsigned port)
{
    snprintf(out, cap, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

int ka_rdk_side_from(ka_rdk_security_t *out, char *bootstrap, size_t cap,
                     enum ka_rdk_bootstrap_source *source, const ka_config_t *cfg,
                     const ka_upstream_security_t *sec, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int gateway = cfg->mode == KA_MODE_GATEWAY;
    if (gateway) {
        /* A gateway's brokers advertise themselves: kadmit's own clients end up on the
         * brokers' listener, so they speak what the metadata connection speaks there. */
        out->tls = cfg->upstream_tls;
        out->ca_file = first_set(cfg->ledger_ca, cfg->upstream_ca, NULL);
        out->cert_file = is_set(cfg->ledger_cert) ? cfg->ledger_cert : cfg->upstream_cert;
        out->key_file = is_set(cfg->ledger_cert) ? cfg->ledger_key : cfg->upstream_key;
        if (!is_set(out->cert_file))
            out->cert_file = out->key_file = NULL;
        out->verify = cfg->upstream_verify;
    } else {
        /* The sidecars' client side: what every advertised listener speaks. */
        out->tls = is_set(cfg->tls_cert);
        out->ca_file = first_set(cfg->ledger_ca, cfg->tls_client_ca, cfg->upstream_ca);
        if (is_set(cfg->ledger_cert)) {
            out->cert_file = cfg->ledger_cert;
            out->key_file = cfg->ledger_key;
        } else if (cfg->tls_client_auth > 0) {
            /* Sidecars that verify client certificates get this sidecar's own. */
            out->cert_file = cfg->tls_cert;
            out->key_file = cfg->tls_key;
        }
        /* The sidecar certificate names the advertised host: always checked
         * (--ledger-properties may say otherwise, on the operator's word). */
        out->verify = 1;
    }
    out->records.secret = (const uint8_t *)cfg->cluster_secret;
    out->records.len = cfg->cluster_secret_len;
    /* SASL passes through kadmit: a broker listener behind the sidecars
     * that requires it is the one the metadata identity logs in to. */
    if (sec != NULL && sec->mechanism[0] != '\0') {
        out->mechanism = sec->mechanism;
        out->username = sec->username;
        out->password = sec->password;
    }
    if (is_set(cfg->ledger_properties)) {
        char **pairs = NULL;
        int rc = load_props(cfg->ledger_properties, &pairs, err, errlen);
        if (rc < 0)
            return rc;
        out->user_props = (const char *const *)pairs;
    }

    if (cfg->ledger_bootstrap.set) {
        *source = KA_RDK_BOOT_FLAG;
        format_hostport(bootstrap, cap, cfg->ledger_bootstrap.host, cfg->ledger_bootstrap.port);
    } else if (gateway) { /* every bootstrap broker the gateway knows */
        *source = KA_RDK_BOOT_UPSTREAM;
        format_hostport(bootstrap, cap, cfg->upstream.host, cfg->upstream.port);
        size_t used = strlen(bootstrap);
        for (int i = 1; i < cfg->upstream_count; i++) { /* the rest, as many as fit whole */
            char one[KA_CONFIG_HOST_MAX + 16];
            format_hostport(one, sizeof(one), cfg->upstreams[i].host, cfg->upstreams[i].port);
            size_t n = strlen(one);
            if (used + 1 + n + 1 > cap)
                break;
            bootstrap[used++] = ',';
            memcpy(bootstrap + used, one, n + 1);
            used += n;
        }
    } else if (!out->tls && !cfg->upstream_tls) {
        /* Same protocol on both sides: the broker itself is a fine start. */
        const ka_hostport_t *md =
            cfg->metadata_upstream.set ? &cfg->metadata_upstream : &cfg->upstream;
        *source = KA_RDK_BOOT_UPSTREAM;
        format_hostport(bootstrap, cap, md->host, md->port);
    } else {
        const char *host = cfg->listen.host;
        if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0')
            host = "127.0.0.1";
        else if (strcmp(host, "::") == 0)
            host = "::1";
        *source = KA_RDK_BOOT_LISTEN;
        format_hostport(bootstrap, cap, host, cfg->listen.port);
    }
    return 0;
}

/*
 * Every client: only CreateTopics, with the topic's own settings (one
 * partition, LogAppendTime, retention), may create kadmit's topics; a
 * producer's metadata request would otherwise auto-create the ledger with
 * the broker's defaults (CreateTime) on a fresh cluster. A topic just
 * created has no leader for a moment: ask again after 50 ms, not 250.
 * Reconnect fast (producers also retry fast), and send small requests at once (no Nagle):
 * a client's create waits on these connections.
 */
#define KA_RDK_COMMON_PROPS                                                                        \
    "allow.auto.create.topics", "false", "topic.metadata.refresh.fast.interval.ms", "50",          \
        "socket.nagle.disable", "true", "reconnect.backoff.ms", "50", "reconnect.backoff.max.ms",  \
        "1000"

/* One intent is one record, sent at once (linger.ms 0), acknowledged by
 * every in-sync replica by an idempotent producer. */
static const char *const LEDGER_PRODUCER[] = {KA_RDK_COMMON_PROPS,
                                              "enable.idempotence",
                                              "true",
                                              "acks",
                                              "all",
                                              "linger.ms",
                                              "0",
                                              "retry.backoff.ms",
                                              "50",
                                              NULL};
/* Reading back an intent must not wait out a fetch: the broker answers as
 * soon as one byte is there (fetch.min.bytes 1), an empty fetch is
 * re-sent within a few ms, and an error is retried after 50 ms. */
static const char *const LEDGER_CONSUMER[] = {KA_RDK_COMMON_PROPS,
                                              "fetch.wait.max.ms",
                                              "5",
                                              "fetch.min.bytes",
                                              "1",
                                              "fetch.error.backoff.ms",
                                              "50",
                                              "enable.partition.eof",
                                              "false",
                                              NULL};
/* A write not acknowledged in time fails (the admin API answers it). */
static const char *const LIMITS_PRODUCER[] = {KA_RDK_COMMON_PROPS,
                                              "enable.idempotence",
                                              "true",
                                              "message.timeout.ms",
                                              "5000",
                                              "linger.ms",
                                              "0",
                                              "retry.backoff.ms",
                                              "50",
                                              NULL};
/* The end of the partition tells that the limits are loaded. */
static const char *const LIMITS_CONSUMER[] = {KA_RDK_COMMON_PROPS,
                                              "enable.partition.eof",
                                              "true",
                                              "fetch.wait.max.ms",
                                              "100",
                                              "fetch.error.backoff.ms",
                                              "50",
                                              NULL};

const char *const *ka_rdk_side_props(enum ka_rdk_use use)
{
    switch (use) {
    case KA_RDK_USE_LEDGER_PRODUCER:
        return LEDGER_PRODUCER;
    case KA_RDK_USE_LEDGER_CONSUMER:
        return LEDGER_CONSUMER;
    case KA_RDK_USE_LIMITS_PRODUCER:
        return LIMITS_PRODUCER;
    case KA_RDK_USE_LIMITS_CONSUMER:
        return LIMITS_CONSUMER;
    }
    return LEDGER_CONSUMER;
}

const char *ka_rdk_bootstrap_source_name(enum ka_rdk_bootstrap_source s)
{
    switch (s) {
    case KA_RDK_BOOT_FLAG:
        return "--ledger-bootstrap";
    case KA_RDK_BOOT_UPSTREAM:
        return "metadata upstream";
    case KA_RDK_BOOT_LISTEN:
        return "--listen";
    }
    return "?";
}
