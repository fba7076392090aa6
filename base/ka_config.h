/*
 * ka_config.h: the command line and environment of the kadmit binary.
 *
 * Options are rows of one table (ka_config.c): a flag, its environment
 * variable and a setter. Defaults are applied first, then the environment,
 * then the flags, so a flag always wins over its variable. A new option is
 * one new field here and one new row there.
 */
#ifndef KA_CONFIG_H
#define KA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ka_log.h"

#define KA_CONFIG_HOST_MAX 256
/* Gateway mode (docs/gateway.md): bootstrap brokers and explicit ports. */
#define KA_GW_MAX_UPSTREAMS 16
#define KA_GW_MAX_PORT_MAP  256

enum ka_mode { KA_MODE_SIDECAR = 0, KA_MODE_GATEWAY = 1 };

/* A HOST:PORT pair as given; resolution happens at startup, not here. */
typedef struct ka_hostport {
    char host[KA_CONFIG_HOST_MAX]; /* brackets of an IPv6 literal removed */
    uint16_t port;
    int set; /* nonzero once given, so required options can be checked */
} ka_hostport_t;

typedef struct ka_config {
    ka_hostport_t listen;            /* where Kafka clients connect */
    ka_hostport_t upstream;          /* the broker's client listener */
    ka_hostport_t metadata_upstream; /* the metadata client's broker; unset = upstream */
    enum ka_log_level log_level;
    enum ka_log_format log_format;
    uint64_t max_frame_bytes;  /* largest request frame accepted, like socket.request.max.bytes */
    uint64_t buffer_memory;    /* KIP-81 buffer.memory: the bound on all buffered bytes */
    uint64_t max_held_request; /* largest admission request held whole (--max-held-request) */
    uint32_t held_request_timeout_ms;   /* a held request must have arrived whole by then */
    uint32_t stalled_reader_timeout_ms; /* while others wait for memory, a client that has read
                                           none of its queued answers this long is closed */
    uint32_t max_connections;           /* client connections beyond this are accepted and closed */
    uint32_t max_inflight;              /* a client with this many requests in flight is not read */
    int splice_off;                     /* --splice off: bodies always pass through user space */
    uint32_t idle_timeout_s;            /* close connections silent this long; 0 turns it off */
    uint32_t drain_timeout_s;           /* how long SIGTERM waits for in-flight requests */
    char policy_path[4096];             /* --policy: admission policy file; empty = no admission */
    char check_policy[4096];            /* --check-policy: validate this file and exit */
    char state_file[4096];       /* --state-file: API changes kept here, not in the policy file */
    int policy_watch_off;        /* --policy-watch off: reload on SIGHUP only */
    ka_hostport_t admin;         /* --admin: the admin HTTP API (default 127.0.0.1:9644) */
    int admin_off;               /* --admin off: no admin server */
    char admin_token_file[4096]; /* --admin-token-file: bearer token for mutations */
    char admin_allowed_hosts[1024]; /* --admin-allowed-hosts: Host names besides loopback's */
    /* TLS toward clients (docs/tls-sasl.md): on when tls_cert is set. */
    char tls_cert[4096], tls_key[4096], tls_client_ca[4096];
    int tls_client_auth; /* enum ka_tls_client_auth; --tls-client-ca alone means required */
    int tls_ktls_off;    /* --tls-ktls off: never set SSL_OP_ENABLE_KTLS (default auto) */
    /* TLS toward the broker, for client sessions and the metadata connection. */
    int upstream_tls;
    char upstream_ca[4096], upstream_cert[4096], upstream_key[4096];
    char upstream_server_name[256]; /* SNI and verified name; empty = the --upstream host */
    int upstream_verify;            /* check the broker's chain and name (default on) */
    /* SASL of kadmit's own metadata connection; empty mechanism = none. */
    char metadata_sasl_mechanism[32];
    char metadata_sasl_username[256];
    char metadata_sasl_password_file[4096];
    /* The cluster-wide admission ledger (control/ledger/ka_ledger.h). */
    int ledger;                     /* --ledger on|off; on by default when --policy is given */
    char ledger_topic[250];         /* --ledger-topic (default __kadmit_ledger) */
    ka_hostport_t ledger_bootstrap; /* --ledger-bootstrap; unset: control/kclient/ka_rdk_side.h */
    /* The ledger and limits clients speak the sidecars' client side
     * (control/kclient/ka_rdk_side.h): the CA that signs sidecar certificates (empty:
     * --tls-client-ca, else --upstream-ca, else the system store), a client
     * certificate for sidecars requiring mTLS (empty: --tls-cert when they
     * do), and librdkafka properties applied last. */
    char ledger_ca[4096], ledger_cert[4096], ledger_key[4096], ledger_properties[4096];
    uint32_t ledger_timeout_ms;    /* --ledger-timeout-ms: an intent not read back by then fails */
    uint32_t ledger_intent_ttl_ms; /* --ledger-intent-ttl-ms: intents count this long at most */
    char sidecar_id[256];          /* --sidecar-id (default hostname:listen port) */
    /* The cluster's limits: with the ledger on, admin API changes go to this
     * compacted topic, which every sidecar reads (--limits-topic). */
    char limits_topic[250];
    /* The secret every sidecar of the cluster signs its own records with
     * (control/kclient/ka_own_mac.h): --cluster-secret-file, or KADMIT_CLUSTER_SECRET.
     * Loaded by ka_config_load_cluster_secret; length 0 = none (unsigned). */
    char cluster_secret_file[4096];
    char cluster_secret[4096];
    size_t cluster_secret_len;
    /* Gateway mode (ka_config_gateway.c, docs/gateway.md): kadmit in front
     * of a whole cluster whose brokers it may not reconfigure. */
    int mode; /* enum ka_mode, --mode (default sidecar) */
    /* --upstream as a list: in gateway mode the bootstrap brokers; upstream
     * above is the first of them. */
    ka_hostport_t upstreams[KA_GW_MAX_UPSTREAMS];
    int upstream_count;
    uint32_t gw_port_base; /* --gateway-port-base: broker id i on port base + i; 0 = unset */
    struct {
        int32_t node_id;
        uint16_t port;
    } gw_port_map[KA_GW_MAX_PORT_MAP]; /* --gateway-port-map ID=PORT,... */
    int gw_port_map_count;
    char gw_sni_domain[200];  /* --gateway-sni-domain: SNI broker-<id>.DOMAIN routes to id */
    char advertise_host[256]; /* --advertise-host: the host responses carry; "" = --listen's */
    uint16_t advertise_port;  /* --advertise-port (SNI mode): 0 = the listen port */
} ka_config_t;

/* What ka_config_parse asks the caller to do besides running. */
enum ka_config_action {
    KA_CONFIG_RUN = 0,
    KA_CONFIG_HELP = 1,
    KA_CONFIG_VERSION = 2,
    KA_CONFIG_CHECK_POLICY = 3
};

void ka_config_defaults(ka_config_t *cfg);

/*
 * Fills cfg from the environment and argv. Returns a ka_config_action, or a
 * negative ka_err with a sentence in err naming the flag (or variable) and
 * the problem, e.g. "--buffer-memory 12XB: unknown size suffix".
 */
int ka_config_parse(ka_config_t *cfg, int argc, char **argv, char *err, size_t errlen);

/*
 * The admin API's bearer token: the first line of --admin-token-file (trailing
 * whitespace removed), else the environment variable KADMIT_ADMIN_TOKEN, else
 * none (out[0] == '\0': mutations are refused). Returns 0, or a negative
 * ka_err with a sentence in err when the file is missing, unreadable, empty or
 * its token does not fit in cap.
 */
int ka_config_load_admin_token(const ka_config_t *cfg, char *out, size_t cap, char *err,
                               size_t errlen);

/*
 * The metadata connection's SASL password: the first line of
 * --metadata-sasl-password-file, else KADMIT_METADATA_SASL_PASSWORD. Same
 * contract as ka_config_load_admin_token; an empty result with a mechanism
 * set is an error.
 */
int ka_config_load_sasl_password(const ka_config_t *cfg, char *out, size_t cap, char *err,
                                 size_t errlen);

/*
 * The cluster secret into cfg->cluster_secret: the first line of
 * --cluster-secret-file (trailing whitespace removed), else
 * KADMIT_CLUSTER_SECRET, else none. Returns 0, or a negative ka_err with a
 * sentence in err when the file cannot be read or the secret is shorter
 * than min_len bytes.
 */
int ka_config_load_cluster_secret(ka_config_t *cfg, size_t min_len, char *err, size_t errlen);

/* "HOST:PORT" of the admin API ("[v6]:PORT" for IPv6 literals). */
void ka_config_admin_address(const ka_config_t *cfg, char *out, size_t cap);

/* ka_config_gateway.c: the gateway options' rows, and their checks (0 or a
 * negative ka_err with a sentence in err), run after every option is set. */
typedef int (*ka_config_setter_fn)(ka_config_t *cfg, const char *value, char *err, size_t errlen);
typedef struct ka_config_option {
    const char *flag; /* without the leading dashes */
    const char *env;
    ka_config_setter_fn set; /* NULL for --help and --version */
    const char *meta;
    const char *help;
} ka_config_option_t;
extern const ka_config_option_t ka_config_gateway_options[];
extern const size_t ka_config_gateway_option_count;
int ka_config_gateway_check(ka_config_t *cfg, char *err, size_t errlen);
/* "HOST:PORT[,HOST:PORT...]" into cfg->upstreams (and cfg->upstream, the first). */
int ka_config_parse_upstreams(ka_config_t *cfg, const char *v, char *err, size_t errlen);
/* The port broker node_id is served on, or 0 when it has none (port or SNI mode). */
int ka_config_gateway_port(const ka_config_t *cfg, int32_t node_id);

/* Writes the --help text. */
void ka_config_usage(void *stream);

/* Parsers shared with tests: "32MiB" and "host:port" / "[v6]:port". */
int ka_config_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
int ka_config_parse_hostport(const char *s, ka_hostport_t *out, char *err, size_t errlen);

#endif
