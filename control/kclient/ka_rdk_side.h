/*
 * ka_rdk_side.h: what kadmit's own Kafka clients (the ledger and limits
 * clients) speak, and where they bootstrap, in every supported layout.
 *
 * Those clients bootstrap from one address, then follow the brokers'
 * advertised listeners, which are the sidecars (README: the broker's client
 * listener advertises kadmit's address). librdkafka uses one
 * security.protocol for the bootstrap address and for the advertised
 * brokers, so the protocol must be the sidecars' client side, not the
 * upstream side: TLS when --tls-cert is set, SASL with kadmit's metadata
 * identity when --metadata-sasl-* is set (SASL passes through kadmit to the
 * broker), a client certificate when the sidecars require one.
 *
 * The bootstrap address must then speak that protocol too:
 *  - --ledger-bootstrap when given (an address the sidecar certificate names,
 *    typically a sidecar's advertised address);
 *  - else the metadata upstream when both sides speak the same protocol (no
 *    TLS on either side: plaintext or SASL_PLAINTEXT), as before;
 *  - else this sidecar's own --listen address, which speaks the sidecars'
 *    protocol by construction (a wildcard host becomes loopback). Its host
 *    name is verified like any sidecar's, so the sidecar certificate must
 *    name it, or --ledger-bootstrap must be set.
 * --ledger-properties FILE (librdkafka key=value lines) is applied last.
 */
#ifndef KA_RDK_SIDE_H
#define KA_RDK_SIDE_H

#include <stddef.h>

#include "ka_config.h"
#include "ka_rdk.h"
#include "ka_transport.h"

/* Longest "[host]:port" a bootstrap address takes, with its NUL. */
/* One host:port, or in gateway mode a few bootstrap brokers. */
#define KA_RDK_BOOTSTRAP_MAX (4 * (KA_CONFIG_HOST_MAX + 16))

/* Where the bootstrap address came from, for the start log line. */
enum ka_rdk_bootstrap_source {
    KA_RDK_BOOT_FLAG = 0, /* --ledger-bootstrap */
    KA_RDK_BOOT_UPSTREAM, /* the metadata upstream: both sides speak the same protocol */
    KA_RDK_BOOT_LISTEN    /* this sidecar's --listen address */
};

/*
 * Fills *out (the sidecars' client-side security, the cluster secret, and
 * the --ledger-properties pairs) and bootstrap (cap bytes, at least
 * KA_RDK_BOOTSTRAP_MAX). Strings point into cfg, sec or process-lifetime
 * storage. Returns 0, or a negative ka_err with a sentence in err (an
 * unreadable or malformed --ledger-properties file).
 */
int ka_rdk_side_from(ka_rdk_security_t *out, char *bootstrap, size_t cap,
                     enum ka_rdk_bootstrap_source *source, const ka_config_t *cfg,
                     const ka_upstream_security_t *sec, char *err, size_t errlen);

/* Which of kadmit's own clients a handle is: each has its librdkafka settings. */
enum ka_rdk_use {
    KA_RDK_USE_LEDGER_PRODUCER = 0, /* intents, outcomes, heartbeats */
    KA_RDK_USE_LEDGER_CONSUMER,     /* reads the ledger, every intent back */
    KA_RDK_USE_LIMITS_PRODUCER,     /* the limits topic's layers */
    KA_RDK_USE_LIMITS_CONSUMER,     /* reads the limits topic from its beginning */
};

/*
 * kadmit's librdkafka settings for one of its clients, as name, value pairs
 * ending with a NULL name (static storage). They make a sidecar useful from
 * its first second and keep a decision's ledger round trip short; see
 * ka_rdk_side.c for why each is set. --ledger-properties still wins.
 */
const char *const *ka_rdk_side_props(enum ka_rdk_use use);

/* "--ledger-bootstrap", "metadata upstream", "--listen". */
const char *ka_rdk_bootstrap_source_name(enum ka_rdk_bootstrap_source s);

/*
 * Parses librdkafka properties text: one key=value a line, blank lines and
 * lines starting with '#' skipped, spaces around key and value trimmed. On
 * success *pairs is a NULL-terminated name, value array in one allocation
 * (free() it). At most KA_RDK_PROPS_MAX pairs, KA_RDK_PROP_LINE_MAX bytes a
 * line. Returns 0 or KA_EINVALID / KA_ENOMEM with the line number in err.
 */
#define KA_RDK_PROPS_MAX     128
#define KA_RDK_PROP_LINE_MAX 4096
int ka_rdk_props_parse(const char *text, size_t len, char ***pairs, char *err, size_t errlen);

#endif
