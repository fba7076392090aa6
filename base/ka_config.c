/*
 * ka_config.c: option table, defaults, environment and flag parsing.
 *
 * Every option accepts `--flag value` and `--flag=value`; its environment
 * variable is KADMIT_ followed by the flag name in upper case with dashes
 * as underscores (--buffer-memory -> KADMIT_BUFFER_MEMORY).
 */
#include "ka_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ka_error.h"
#include "ka_own_topics.h"
#include "ka_pool.h"

#define MiB (1024ull * 1024ull)

typedef ka_config_option_t option_t;

static int set_listen(ka_config_t *c, const char *v, char *e, size_t n)
{
    return ka_config_parse_hostport(v, &c->listen, e, n);
}

static int set_broker_address(ka_hostport_t *field, const char *v, char *e, size_t n)
{
    int rc = ka_config_parse_hostport(v, field, e, n);
    if (rc == 0 && field->port == 0) {
        snprintf(e, n, "the broker's port must not be 0");
        return KA_EINVALID;
    }
    return rc;
}

static int set_upstream(ka_config_t *c, const char *v, char *e, size_t n)
{
    return ka_config_parse_upstreams(c, v, e, n);
}

static int set_log_level(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (ka_log_level_parse(v, &c->log_level) == 0)
        return 0;
    snprintf(e, n, "expected error, warn, info or debug");
    return KA_EINVALID;
}

static int set_log_format(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (ka_log_format_parse(v, &c->log_format) == 0)
        return 0;
    snprintf(e, n, "expected text or json");
    return KA_EINVALID;
}

/* Parses a decimal count in [min, max]. */
static int parse_count(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *e, size_t n)
{
    char *end;
    if (!isdigit((unsigned char)v[0])) {
        snprintf(e, n, "expected a whole number");
        return KA_EINVALID;
    }
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end != '\0') {
        snprintf(e, n, "expected a whole number");
        return KA_EINVALID;
    }
    if (errno == ERANGE || x < min || x > max) {
        snprintf(e, n, "must be between %llu and %llu", (unsigned long long)min,
                 (unsigned long long)max);
        return KA_ELIMIT;
    }
    *out = x;
    return 0;
}

/* A Kafka frame size is an int32; 64 bytes is smaller than any header. */
static int set_frame_size(uint64_t *field, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = ka_config_parse_size(v, &x, e, n);
    if (rc < 0)
        return rc;
    if (x < 64 || x > INT32_MAX) {
        snprintf(e, n, "must be between 64 and %d bytes", INT32_MAX);
        return KA_ELIMIT;
    }
    *field = x;
    return 0;
}

static int set_max_frame(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_frame_size(&c->max_frame_bytes, v, e, n);
}

static int set_max_held_request(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_frame_size(&c->max_held_request, v, e, n);
}

static int set_buffer_memory(ka_config_t *c, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = ka_config_parse_size(v, &x, e, n);
    if (rc < 0)
        return rc;
    if (x < 1 * MiB) {
        snprintf(e, n, "must be at least 1MiB");
        return KA_ELIMIT;
    }
    c->buffer_memory = x;
    return 0;
}

static int set_u32(uint32_t *field, uint64_t min, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = parse_count(v, min, UINT32_MAX, &x, e, n);
    if (rc == 0)
        *field = (uint32_t)x;
    return rc;
}

static int set_max_connections(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_u32(&c->max_connections, 1, v, e, n);
}

static int set_max_inflight(ka_config_t *c, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = parse_count(v, 1, 65536, &x, e, n); /* KA_INFLIGHT_MAX */
    if (rc == 0)
        c->max_inflight = (uint32_t)x;
    return rc;
}

static int set_metadata_upstream(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_broker_address(&c->metadata_upstream, v, e, n);
}

static int set_idle_timeout(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_u32(&c->idle_timeout_s, 0, v, e, n);
}

static int set_held_request_timeout(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_u32(&c->held_request_timeout_ms, 1, v, e, n);
}

static int set_stalled_reader_timeout(ka_config_t *c, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = parse_count(v, 100, 3600000, &x, e, n);
    if (rc == 0)
        c->stalled_reader_timeout_ms = (uint32_t)x;
    return rc;
}

static int set_drain_timeout(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_u32(&c->drain_timeout_s, 0, v, e, n);
}

static int set_path(char *field, size_t cap, const char *v, char *e, size_t n)
{
    if (v[0] == '\0' || strlen(v) >= cap) {
        snprintf(e, n, "expected a file path shorter than %zu bytes", cap);
        return KA_EINVALID;
    }
    memcpy(field, v, strlen(v) + 1);
    return 0;
}

#define PATH_SETTER(name, field)                                                                   \
    static int name(ka_config_t *c, const char *v, char *e, size_t n)                              \
    {                                                                                              \
        return set_path(c->field, sizeof(c->field), v, e, n);                                      \
    }
PATH_SETTER(set_tls_cert, tls_cert)
PATH_SETTER(set_tls_key, tls_key)
PATH_SETTER(set_tls_client_ca, tls_client_ca)
PATH_SETTER(set_upstream_ca, upstream_ca)
PATH_SETTER(set_upstream_cert, upstream_cert)
PATH_SETTER(set_upstream_key, upstream_key)
PATH_SETTER(set_upstream_server_name, upstream_server_name)
PATH_SETTER(set_sasl_username, metadata_sasl_username)
PATH_SETTER(set_sasl_password_file, metadata_sasl_password_file)
PATH_SETTER(set_ledger_ca, ledger_ca)
PATH_SETTER(set_ledger_cert, ledger_cert)
PATH_SETTER(set_ledger_key, ledger_key)
PATH_SETTER(set_ledger_properties, ledger_properties)

static int set_bool(int *field, const char *v, char *e, size_t n)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "on") == 0 || strcmp(v, "1") == 0) {
        *field = 1;
        return 0;
    }
    if (strcmp(v, "false") == 0 || strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
        *field = 0;
        return 0;
    }
    snprintf(e, n, "expected true or false");
    return KA_EINVALID;
}

static int set_upstream_tls(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_bool(&c->upstream_tls, v, e, n);
}

static int set_upstream_verify(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_bool(&c->upstream_verify, v, e, n);
}

static int set_tls_client_auth(ka_config_t *c, const char *v, char *e, size_t n)
{
    static const char *modes[] = {"none", "optional", "required"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(v, modes[i]) == 0) {
            c->tls_client_auth = i;
            return 0;
        }
    }
    snprintf(e, n, "expected none, optional or required");
    return KA_EINVALID;
}

static int set_splice(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "auto") == 0 || strcmp(v, "off") == 0) {
        c->splice_off = strcmp(v, "off") == 0;
        return 0;
    }
    snprintf(e, n, "expected auto or off");
    return KA_EINVALID;
}

static int set_tls_ktls(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "auto") == 0 || strcmp(v, "off") == 0) {
        c->tls_ktls_off = strcmp(v, "off") == 0;
        return 0;
    }
    snprintf(e, n, "expected auto or off");
    return KA_EINVALID;
}

static int set_sasl_mechanism(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "PLAIN") != 0 && strcmp(v, "SCRAM-SHA-256") != 0 &&
        strcmp(v, "SCRAM-SHA-512") != 0) {
        snprintf(e, n, "expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
        return KA_EINVALID;
    }
    snprintf(c->metadata_sasl_mechanism, sizeof(c->metadata_sasl_mechanism), "%s", v);
    return 0;
}

static int set_policy(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_path(c->policy_path, sizeof(c->policy_path), v, e, n);
}

static int set_check_policy(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_path(c->check_policy, sizeof(c->check_policy), v, e, n);
}

static int set_admin(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "off") == 0) {
        c->admin_off = 1;
        return 0;
    }
    int rc = ka_config_parse_hostport(v, &c->admin, e, n);
    if (rc < 0)
        snprintf(e + strlen(e), n - strlen(e), ", or off");
    else
        c->admin_off = 0;
    return rc;
}

static int set_admin_token_file(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_path(c->admin_token_file, sizeof(c->admin_token_file), v, e, n);
}

static int set_cluster_secret_file(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_path(c->cluster_secret_file, sizeof(c->cluster_secret_file), v, e, n);
}

/* --admin-allowed-hosts: comma-separated host names (or host:port), each of
 * the characters a Host header's name can hold; empty entries are refused. */
static int set_admin_allowed_hosts(ka_config_t *c, const char *v, char *e, size_t n)
{
    size_t len = strlen(v), entry = 0;

    if (len >= sizeof(c->admin_allowed_hosts)) {
        snprintf(e, n, "expected a list shorter than %zu bytes", sizeof(c->admin_allowed_hosts));
        return KA_EINVALID;
    }
    for (size_t i = 0; i <= len; i++) {
        unsigned char ch = (unsigned char)v[i];

        if (ch == ',' || ch == '\0') {
            if (entry == 0 || entry > 255) {
                snprintf(e, n, "expected host names separated by commas (each 1 to 255 bytes)");
                return KA_EINVALID;
            }
            entry = 0;
        } else if (ch == ' ') {
            continue; /* around entries */
        } else if (isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':' || ch == '[' ||
                   ch == ']') {
            entry++;
        } else {
            snprintf(e, n, "'%c' cannot be part of a host name", ch);
            return KA_EINVALID;
        }
    }
    memcpy(c->admin_allowed_hosts, v, len + 1);
    return 0;
}

static int set_state_file(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_path(c->state_file, sizeof(c->state_file), v, e, n);
}

static int set_policy_watch(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
        snprintf(e, n, "expected on or off");
        return KA_EINVALID;
    }
    c->policy_watch_off = strcmp(v, "off") == 0;
    return 0;
}

static int set_ledger(ka_config_t *c, const char *v, char *e, size_t n)
{
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
        snprintf(e, n, "expected on or off");
        return KA_EINVALID;
    }
    c->ledger = strcmp(v, "on") == 0;
    return 0;
}

/* Kafka's rule for topic names: 1 to 249 of [a-zA-Z0-9._-], not "." or "..". */
static int set_topic_name(char *field, size_t cap, const char *v, char *e, size_t n)
{
    size_t len = strlen(v);
    if (len == 0 || len >= cap || strcmp(v, ".") == 0 || strcmp(v, "..") == 0 ||
        strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-") != len) {
        snprintf(e, n, "expected a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -");
        return KA_EINVALID;
    }
    memcpy(field, v, len + 1);
    return 0;
}

static int set_ledger_topic(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_topic_name(c->ledger_topic, sizeof(c->ledger_topic), v, e, n);
}

/* The cluster's limits topic (control/limits/ka_limits.h). */
static int set_limits_topic(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_topic_name(c->limits_topic, sizeof(c->limits_topic), v, e, n);
}

static int set_ledger_bootstrap(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_broker_address(&c->ledger_bootstrap, v, e, n);
}

/* Milliseconds in [min, max]. */
static int set_ms(uint32_t *field, uint64_t min, uint64_t max, const char *v, char *e, size_t n)
{
    uint64_t x;
    int rc = parse_count(v, min, max, &x, e, n);
    if (rc == 0)
        *field = (uint32_t)x;
    return rc;
}

static int set_ledger_timeout(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_ms(&c->ledger_timeout_ms, 100, 600000, v, e, n);
}

static int set_ledger_ttl(ka_config_t *c, const char *v, char *e, size_t n)
{
    return set_ms(&c->ledger_intent_ttl_ms, 1000, 86400000, v, e, n);
}

static int set_sidecar_id(ka_config_t *c, const char *v, char *e, size_t n)
{
    size_t len = strlen(v);
    if (len == 0 || len >= sizeof(c->sidecar_id)) {
        snprintf(e, n, "expected 1 to %zu characters", sizeof(c->sidecar_id) - 1);
        return KA_EINVALID;
    }
    memcpy(c->sidecar_id, v, len + 1);
    return 0;
}

static const option_t options[] = {
    {"listen", "KADMIT_LISTEN", set_listen, "HOST:PORT",
     "where Kafka clients connect (default 0.0.0.0:9092)"},
    {"upstream", "KADMIT_UPSTREAM", set_upstream, "HOST:PORT",
     "the broker's client listener; gateway mode: bootstrap brokers, comma-separated "
     "(required)"},
    {"log-level", "KADMIT_LOG_LEVEL", set_log_level, "LEVEL",
     "error, warn, info or debug (default info)"},
    {"log-format", "KADMIT_LOG_FORMAT", set_log_format, "FORMAT",
     "text or json lines on stdout (default text)"},
    {"max-frame-bytes", "KADMIT_MAX_FRAME_BYTES", set_max_frame, "BYTES",
     "largest request frame accepted (default 100MiB)"},
    {"buffer-memory", "KADMIT_BUFFER_MEMORY", set_buffer_memory, "BYTES",
     "bound on all buffered bytes, KIP-81 (default 256MiB)"},
    {"max-held-request", "KADMIT_MAX_HELD_REQUEST", set_max_held_request, "BYTES",
     "largest admission request held whole for judging (default 4MiB)"},
    {"held-request-timeout-ms", "KADMIT_HELD_REQUEST_TIMEOUT_MS", set_held_request_timeout, "MS",
     "close a connection whose held request has not fully arrived by then (default 30000)"},
    {"stalled-reader-timeout-ms", "KADMIT_STALLED_READER_TIMEOUT_MS", set_stalled_reader_timeout,
     "MS",
     "while clients wait for memory, close one that has read none of its queued answers for MS "
     "(default 2000)"},
    {"max-connections", "KADMIT_MAX_CONNECTIONS", set_max_connections, "N",
     "client connections beyond N are closed at once (default 10000)"},
    {"max-inflight", "KADMIT_MAX_INFLIGHT", set_max_inflight, "N",
     "stop reading a client with N requests in flight (default 1000)"},
    {"splice", "KADMIT_SPLICE", set_splice, "auto|off",
     "move the bodies of large pass-through frames socket to socket with splice(2) on "
     "plaintext connections (default off: opt-in until it passes the pool-bound tests "
     "every time)"},
    {"metadata-upstream", "KADMIT_METADATA_UPSTREAM", set_metadata_upstream, "HOST:PORT",
     "broker the metadata client asks (default: --upstream)"},
    {"idle-timeout", "KADMIT_IDLE_TIMEOUT", set_idle_timeout, "SECONDS",
     "close connections idle this long, 0 = never (default 600)"},
    {"drain-timeout", "KADMIT_DRAIN_TIMEOUT", set_drain_timeout, "SECONDS",
     "on SIGTERM, wait this long for in-flight requests (default 25)"},
    {"policy", "KADMIT_POLICY", set_policy, "FILE",
     "admission policy (JSON); without it kadmit only forwards"},
    {"state-file", "KADMIT_STATE_FILE", set_state_file, "FILE",
     "keep admin API changes here, never in the policy file"},
    {"policy-watch", "KADMIT_POLICY_WATCH", set_policy_watch, "on|off",
     "reload the policy file when it changes (default on; SIGHUP always reloads)"},
    {"admin", "KADMIT_ADMIN", set_admin, "HOST:PORT",
     "admin HTTP API, or off (default 127.0.0.1:9644)"},
    {"admin-token-file", "KADMIT_ADMIN_TOKEN_FILE", set_admin_token_file, "FILE",
     "bearer token for admin changes (or env KADMIT_ADMIN_TOKEN)"},
    {"admin-allowed-hosts", "KADMIT_ADMIN_ALLOWED_HOSTS", set_admin_allowed_hosts, "HOSTS",
     "Host names the admin API answers besides localhost, when bound to loopback"},
    {"tls-cert", "KADMIT_TLS_CERT", set_tls_cert, "FILE",
     "PEM certificate chain served to clients; turns on TLS toward clients"},
    {"tls-key", "KADMIT_TLS_KEY", set_tls_key, "FILE", "PEM private key of --tls-cert"},
    {"tls-client-ca", "KADMIT_TLS_CLIENT_CA", set_tls_client_ca, "FILE",
     "CA that signs client certificates (mTLS)"},
    {"tls-client-auth", "KADMIT_TLS_CLIENT_AUTH", set_tls_client_auth, "MODE",
     "none, optional or required (default: required with --tls-client-ca, else none)"},
    {"tls-ktls", "KADMIT_TLS_KTLS", set_tls_ktls, "auto|off",
     "ask OpenSSL for kernel TLS where the kernel has it (default auto)"},
    {"upstream-tls", "KADMIT_UPSTREAM_TLS", set_upstream_tls, "BOOL",
     "speak TLS to the broker (default false)"},
    {"upstream-ca", "KADMIT_UPSTREAM_CA", set_upstream_ca, "FILE",
     "CA that signs the broker's certificate (default: system roots)"},
    {"upstream-cert", "KADMIT_UPSTREAM_CERT", set_upstream_cert, "FILE",
     "client certificate kadmit presents to the broker"},
    {"upstream-key", "KADMIT_UPSTREAM_KEY", set_upstream_key, "FILE",
     "private key of --upstream-cert"},
    {"upstream-server-name", "KADMIT_UPSTREAM_SERVER_NAME", set_upstream_server_name, "NAME",
     "SNI and verified name (default: the --upstream host)"},
    {"upstream-verify", "KADMIT_UPSTREAM_VERIFY", set_upstream_verify, "BOOL",
     "verify the broker's certificate and name (default true)"},
    {"metadata-sasl-mechanism", "KADMIT_METADATA_SASL_MECHANISM", set_sasl_mechanism, "MECH",
     "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 for kadmit's own connection"},
    {"metadata-sasl-username", "KADMIT_METADATA_SASL_USERNAME", set_sasl_username, "USER",
     "SASL user of the metadata connection"},
    {"metadata-sasl-password-file", "KADMIT_METADATA_SASL_PASSWORD_FILE", set_sasl_password_file,
     "FILE", "its password (or env KADMIT_METADATA_SASL_PASSWORD)"},
    {"ledger", "KADMIT_LEDGER", set_ledger, "on|off",
     "decide in the order of the cluster-wide ledger topic (default on with --policy)"},
    {"limits-topic", "KADMIT_LIMITS_TOPIC", set_limits_topic, "TOPIC",
     "compacted topic holding the cluster's limits (default __kadmit_limits)"},
    {"ledger-topic", "KADMIT_LEDGER_TOPIC", set_ledger_topic, "TOPIC",
     "the ledger topic, created when missing (default __kadmit_ledger)"},
    {"ledger-bootstrap", "KADMIT_LEDGER_BOOTSTRAP", set_ledger_bootstrap, "HOST:PORT",
     "where the ledger and limits clients bootstrap; speaks the sidecars' protocol (default: "
     "the upstream if no TLS on either side, else --listen)"},
    {"ledger-ca", "KADMIT_LEDGER_CA", set_ledger_ca, "FILE",
     "CA of the sidecars' certificates (default --tls-client-ca, else --upstream-ca)"},
    {"ledger-cert", "KADMIT_LEDGER_CERT", set_ledger_cert, "FILE",
     "client certificate toward mTLS sidecars (default --tls-cert when they need one)"},
    {"ledger-key", "KADMIT_LEDGER_KEY", set_ledger_key, "FILE", "PEM private key of --ledger-cert"},
    {"ledger-properties", "KADMIT_LEDGER_PROPERTIES", set_ledger_properties, "FILE",
     "librdkafka key=value lines for the ledger and limits clients, applied last"},
    {"ledger-timeout-ms", "KADMIT_LEDGER_TIMEOUT_MS", set_ledger_timeout, "MS",
     "fail a decision whose intent is not read back in time (default 5000)"},
    {"ledger-intent-ttl-ms", "KADMIT_LEDGER_INTENT_TTL_MS", set_ledger_ttl, "MS",
     "an intent counts at most this long; above the view staleness plus the ledger timeout "
     "(default 180000)"},
    {"cluster-secret-file", "KADMIT_CLUSTER_SECRET_FILE", set_cluster_secret_file, "FILE",
     "secret (32+ bytes) signing kadmit's own records, shared by the cluster's sidecars "
     "(or env KADMIT_CLUSTER_SECRET)"},
    {"sidecar-id", "KADMIT_SIDECAR_ID", set_sidecar_id, "ID",
     "this sidecar's name in the ledger (default hostname:listen port)"},
    {"check-policy", NULL, set_check_policy, "FILE", "validate a policy file and exit"},
    {"help", NULL, NULL, NULL, "print this help and exit"},
    {"version", NULL, NULL, NULL, "print the version and exit"},
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

void ka_config_defaults(ka_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen.host, sizeof(cfg->listen.host), "0.0.0.0");
    cfg->listen.port = 9092;
    cfg->log_level = KA_LOG_INFO;
    cfg->splice_off = 1; /* opt-in for now: --splice auto */
    cfg->log_format = KA_LOG_TEXT;
    cfg->max_frame_bytes = 100 * MiB;
    cfg->buffer_memory = 256 * MiB;
    cfg->max_held_request = 4 * MiB;
    cfg->held_request_timeout_ms = 30000;
    cfg->stalled_reader_timeout_ms = 2000;
    cfg->max_connections = 10000;
    cfg->max_inflight = 1000;
    cfg->idle_timeout_s = 600;
    cfg->drain_timeout_s = 25;
    snprintf(cfg->admin.host, sizeof(cfg->admin.host), "127.0.0.1");
    cfg->admin.port = 9644;
    cfg->upstream_verify = 1;
    cfg->tls_client_auth = -1; /* decided by check_combinations */
    cfg->ledger = -1;          /* decided by check_combinations */
    snprintf(cfg->ledger_topic, sizeof(cfg->ledger_topic), "%s", KA_OWN_TOPIC_LEDGER);
    cfg->ledger_timeout_ms = 5000;
    cfg->ledger_intent_ttl_ms = 180000; /* above the policy's default staleness, 120 s */
    snprintf(cfg->limits_topic, sizeof(cfg->limits_topic), "%s", KA_OWN_TOPIC_LIMITS);
}

/* Settings that only make sense together. */
static int check_combinations(ka_config_t *c, char *err, size_t errlen)
{
    /* A client CA alone means mTLS (ARCHITECTURE.md): required unless told otherwise. */
    if (c->tls_client_auth < 0)
        c->tls_client_auth = c->tls_client_ca[0] != '\0' ? 2 : 0;
    if ((c->tls_cert[0] != '\0') != (c->tls_key[0] != '\0')) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return KA_EINVALID;
    }
    if (c->tls_client_auth != 0 && (c->tls_cert[0] == '\0' || c->tls_client_ca[0] == '\0')) {
        snprintf(err, errlen, "--tls-client-auth needs --tls-cert, --tls-key and --tls-client-ca");
        return KA_EINVALID;
    }
    if ((c->upstream_cert[0] != '\0') != (c->upstream_key[0] != '\0')) {
        snprintf(err, errlen, "--upstream-cert and --upstream-key go together");
        return KA_EINVALID;
    }
    if ((c->ledger_cert[0] != '\0') != (c->ledger_key[0] != '\0')) {
        snprintf(err, errlen, "--ledger-cert and --ledger-key go together");
        return KA_EINVALID;
    }
    if (c->metadata_sasl_mechanism[0] != '\0' && c->metadata_sasl_username[0] == '\0') {
        snprintf(err, errlen, "--metadata-sasl-mechanism needs --metadata-sasl-username");
        return KA_EINVALID;
    }
    if (c->ledger < 0)
        c->ledger = c->policy_path[0] != '\0';
    /* An intent read back after it expired on other sidecars was counted by none of them. */
    if (c->ledger && c->ledger_timeout_ms >= c->ledger_intent_ttl_ms) {
        snprintf(err, errlen,
                 "--ledger-timeout-ms %u must be below --ledger-intent-ttl-ms %u: a decision "
                 "waiting that long for its intent could see it expire on the other sidecars",
                 (unsigned)c->ledger_timeout_ms, (unsigned)c->ledger_intent_ttl_ms);
        return KA_EINVALID;
    }
    /* A large held request lives in the pool's held class, which may take a
     * quarter of it, less the share kept for small ones (ka_pool.h); a cap
     * above that could never be met. */
    uint64_t held_share = c->buffer_memory * KA_POOL_PRIORITY_PERCENT / 100 * KA_POOL_HELD_PERCENT /
                          100 * (100 - KA_POOL_SMALL_PERCENT) / 100;
    if (c->policy_path[0] != '\0' && c->max_held_request > held_share) {
        snprintf(err, errlen,
                 "--max-held-request %llu does not fit --buffer-memory %llu: large held "
                 "requests may take at most 3/16 of the pool (%llu bytes); lower "
                 "--max-held-request or raise --buffer-memory",
                 (unsigned long long)c->max_held_request, (unsigned long long)c->buffer_memory,
                 (unsigned long long)held_share);
        return KA_EINVALID;
    }
    if (c->sidecar_id[0] == '\0') {
        char host[200] = "";
        if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == '\0')
            snprintf(host, sizeof(host), "kadmit");
        snprintf(c->sidecar_id, sizeof(c->sidecar_id), "%s:%u", host, (unsigned)c->listen.port);
    }
    return 0;
}

int ka_config_parse_size(const char *s, uint64_t *out, char *e, size_t n)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {
        {"", 1},      {"B", 1},        {"KiB", 1024},     {"MiB", MiB}, {"GiB", 1024 * MiB},
        {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}};
    char *end;

    if (!isdigit((unsigned char)s[0])) {
        snprintf(e, n, "expected a byte count such as 268435456 or 256MiB");
        return KA_EINVALID;
    }
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno == ERANGE) {
        snprintf(e, n, "the number is too large");
        return KA_ELIMIT;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            if (x > UINT64_MAX / units[i].mult) {
                snprintf(e, n, "the number is too large");
                return KA_ELIMIT;
            }
            *out = x * units[i].mult;
            return 0;
        }
    }
    snprintf(e, n, "unknown size suffix \"%s\" (use KiB, MiB, GiB, KB, MB or GB)", end);
    return KA_EINVALID;
}

int ka_config_parse_hostport(const char *s, ka_hostport_t *out, char *e, size_t n)
{
    const char *colon, *host = s;
    size_t hostlen;
    uint64_t port;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':') {
            snprintf(e, n, "expected [IPv6]:PORT");
            return KA_EINVALID;
        }
        host = s + 1;
        hostlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL) {
            snprintf(e, n, "expected HOST:PORT");
            return KA_EINVALID;
        }
        hostlen = (size_t)(colon - s);
        if (memchr(s, ':', hostlen) != NULL) {
            snprintf(e, n, "put an IPv6 address in brackets, as in [::1]:9092");
            return KA_EINVALID;
        }
    }
    if (hostlen == 0 || hostlen >= sizeof(out->host)) {
        snprintf(e, n, "expected a host name or address before the port");
        return KA_EINVALID;
    }
    if (parse_count(colon + 1, 0, 65535, &port, e, n) < 0) {
        snprintf(e, n, "expected a port between 0 and 65535");
        return KA_EINVALID;
    }
    memcpy(out->host, host, hostlen);
    out->host[hostlen] = '\0';
    out->port = (uint16_t)port;
    out->set = 1;
    return 0;
}

/* The i-th row of both tables: the general options, then the gateway's. */
static const option_t *option_at(size_t i)
{
    return i < NOPTIONS ? &options[i] : &ka_config_gateway_options[i - NOPTIONS];
}
#define NALL (NOPTIONS + ka_config_gateway_option_count)

static const option_t *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < NALL; i++) {
        if (strlen(option_at(i)->flag) == len && strncmp(option_at(i)->flag, name, len) == 0)
            return option_at(i);
    }
    return NULL;
}

int ka_config_parse(ka_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    char why[256];
    int rc;

    ka_config_defaults(cfg);
    for (size_t i = 0; i < NALL; i++) {
        const option_t *o = option_at(i);
        const char *v = o->env ? getenv(o->env) : NULL;
        if (v == NULL || o->set == NULL)
            continue;
        why[0] = '\0';
        if ((rc = o->set(cfg, v, why, sizeof(why))) < 0) {
            snprintf(err, errlen, "%s=%s: %s", o->env, v, why);
            return rc;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "%s: unexpected argument (options start with --)", arg);
            return KA_EINVALID;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t namelen = eq ? (size_t)(eq - name) : strlen(name);
        const option_t *opt = find_option(name, namelen);
        if (opt == NULL) {
            snprintf(err, errlen, "%.*s: unknown option (see --help)", (int)(namelen + 2), arg);
            return KA_EINVALID;
        }
        if (opt->set == NULL) {
            if (eq != NULL) {
                snprintf(err, errlen, "--%s takes no value", opt->flag);
                return KA_EINVALID;
            }
            return strcmp(opt->flag, "help") == 0 ? KA_CONFIG_HELP : KA_CONFIG_VERSION;
        }
        if (eq != NULL) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(err, errlen, "--%s: missing value %s", opt->flag, opt->meta);
            return KA_EINVALID;
        }
        why[0] = '\0';
        if ((rc = opt->set(cfg, value, why, sizeof(why))) < 0) {
            snprintf(err, errlen, "--%s %s: %s", opt->flag, value, why);
            return rc;
        }
    }
    if (cfg->check_policy[0] != '\0')
        return KA_CONFIG_CHECK_POLICY;
    if (!cfg->upstream.set) {
        snprintf(err, errlen, "--upstream HOST:PORT is required (or KADMIT_UPSTREAM)");
        return KA_EINVALID;
    }
    if ((rc = ka_config_gateway_check(cfg, err, errlen)) < 0)
        return rc;
    if ((rc = check_combinations(cfg, err, errlen)) < 0)
        return rc;
    return KA_CONFIG_RUN;
}

void ka_config_admin_address(const ka_config_t *cfg, char *out, size_t cap)
{
    if (strchr(cfg->admin.host, ':') != NULL)
        snprintf(out, cap, "[%s]:%u", cfg->admin.host, (unsigned)cfg->admin.port);
    else
        snprintf(out, cap, "%s:%u", cfg->admin.host, (unsigned)cfg->admin.port);
}

void ka_config_usage(void *stream)
{
    FILE *f = stream;
    fprintf(f, "usage: kadmit --upstream HOST:PORT [options]\n\n"
               "A Kafka-protocol admission proxy in front of one broker.\n\n");
    for (size_t i = 0; i < NALL; i++) {
        const option_t *o = option_at(i);
        char left[64];
        snprintf(left, sizeof(left), "--%s%s%s", o->flag, o->meta ? " " : "",
                 o->meta ? o->meta : "");
        fprintf(f, "  %-28s %s\n", left, o->help);
        if (o->env)
            fprintf(f, "  %-28s env %s\n", "", o->env);
    }
    fprintf(f, "\nFlags win over environment variables. Sizes accept KiB, MiB, GiB, KB, MB, GB.\n");
}
