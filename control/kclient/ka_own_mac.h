/*
 * ka_own_mac.h: the authenticity of kadmit's own records (ledger, limits).
 *
 * Anyone with Produce rights on kadmit's topics could otherwise write a
 * record that every sidecar applies: a raised limit, an outcome releasing
 * another sidecar's reservations, an intent blocking every create. So every
 * record a sidecar writes carries HMAC-SHA256 under a secret shared by the
 * sidecars of one cluster (--cluster-secret-file), in the Kafka record
 * header KA_OWN_MAC_HEADER, and a record whose MAC does not verify changes
 * nothing.
 *
 * The MAC covers, in this order, each part prefixed by its length as 8
 * big-endian bytes so that no byte can move from one part to the next:
 *   the domain tag ("kadmit-ledger-v1" or "kadmit-limits-v1"), so a record
 *   of one topic is never valid on the other;
 *   the record's key; and its value (a null key or value has the length
 *   2^64-1, so a tombstone differs from an empty value).
 * The header carries the 32 raw bytes. It is a header, not a JSON field,
 * so the MAC covers exactly the bytes in the log (no canonical form of
 * JSON to agree on), readers that predate it ignore it, and a tombstone,
 * which has no value, can carry one too.
 *
 * Pure (OpenSSL's libcrypto only): unit-tested without Kafka.
 */
#ifndef KA_OWN_MAC_H
#define KA_OWN_MAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KA_OWN_MAC_HEADER "kadmit-mac"
#define KA_OWN_MAC_LEN    32 /* HMAC-SHA256 */
/* A shorter secret is refused at start: below the hash's own strength. */
#define KA_OWN_SECRET_MIN 32
#define KA_OWN_SECRET_MAX 4095
/* A key or value above this is no record of kadmit's (theirs stay under 1 MiB):
 * it is refused before it is copied to be hashed. */
#define KA_OWN_RECORD_MAX (4u * 1024u * 1024u)

/* Which of kadmit's topics a record belongs to: its domain tag. */
enum ka_own_topic { KA_OWN_LEDGER = 0, KA_OWN_LIMITS, KA_OWN_TOPIC_KINDS };

/* What reading a record's MAC found. */
enum ka_own_verdict {
    KA_OWN_AUTHENTIC = 0, /* the MAC verifies under the secret */
    KA_OWN_UNCHECKED,     /* no secret configured: accepted as before (upgrades) */
    KA_OWN_UNSIGNED,      /* a secret is configured and the record has no MAC */
    KA_OWN_BAD_MAC,       /* a MAC that does not verify (forged, changed, another secret) */
    KA_OWN_VERDICT_COUNT
};

/* The secret, borrowed from the configuration for the process's lifetime. */
typedef struct ka_own_key {
    const uint8_t *secret; /* NULL or len 0: no secret configured */
    size_t len;
} ka_own_key_t;

/* Refusals are logged at most once per interval, with the count left out. */
#define KA_OWN_WARN_INTERVAL_MS 10000

typedef struct ka_own_warn {
    int64_t next_ms;     /* no line before this (the caller's clock) */
    uint64_t suppressed; /* refusals not logged since the last line */
} ka_own_warn_t;

/* True when a line is due at now_ms; *suppressed gets how many were left out before it. */
bool ka_own_warn_due(ka_own_warn_t *w, int64_t now_ms, uint64_t *suppressed);

/* The domain tag of a topic kind ("kadmit-ledger-v1", "kadmit-limits-v1"). */
const char *ka_own_mac_domain(enum ka_own_topic topic);
/* The metrics' label of a topic kind and of a refusal ("ledger"; "bad_mac"). */
const char *ka_own_topic_name(enum ka_own_topic topic);
const char *ka_own_verdict_name(enum ka_own_verdict v);

/* True when a secret is configured (records are signed and checked). */
bool ka_own_key_set(const ka_own_key_t *key);

/*
 * The MAC of a record (key or value NULL: null). Returns 0, KA_EINVALID
 * without a secret, KA_ELIMIT for a key or value above KA_OWN_RECORD_MAX, or
 * KA_ENOMEM.
 */
int ka_own_mac_sign(const ka_own_key_t *key, enum ka_own_topic topic, const void *rkey,
                    size_t rkey_len, const void *value, size_t value_len,
                    uint8_t out[KA_OWN_MAC_LEN]);

/*
 * Checks a record read back; mac is the header's value (NULL: no header).
 * The comparison takes the same time wherever the bytes differ.
 */
enum ka_own_verdict ka_own_mac_verify(const ka_own_key_t *key, enum ka_own_topic topic,
                                      const void *rkey, size_t rkey_len, const void *value,
                                      size_t value_len, const void *mac, size_t mac_len);

#endif
