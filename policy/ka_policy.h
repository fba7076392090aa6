/*
 * ka_policy.h: the admission policy, an immutable snapshot.
 *
 * A policy is parsed from JSON (the policy file, or a body of the admin
 * API), validated completely, and then never changes: the proxy swaps the
 * whole snapshot when a new one is accepted, so a decision in progress keeps
 * reading the policy it started with. Snapshots are reference counted
 * (ka_policy_ref / ka_policy_unref, thread-safe) and carry a version number
 * that the caller assigns and keeps increasing.
 *
 * The vocabulary is KIP-578's: "max.broker.partitions" (a default and
 * per-broker overrides) and "max.partitions". docs/admission.md lists every
 * key with its type, default and range. Unknown keys are errors, so a typo
 * never silently weakens a limit.
 *
 * This header is policy/'s face and has no source of its own name: the
 * parser is ka_policy_parse.c, everything else ka_policy_snapshot.c. So the
 * files that only need these types (the rules, the engine) depend on
 * neither.
 */
#ifndef KA_POLICY_H
#define KA_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "ka_error.h"

/* KIP-578's "unset": the largest int32, effectively no limit. */
#define KA_POLICY_UNLIMITED INT32_MAX

enum ka_enforcement {
    KA_ENFORCEMENT_ENFORCE, /* reject what would exceed a limit */
    KA_ENFORCEMENT_AUDIT,   /* forward everything; flag what would have been rejected */
};

enum ka_auto_assignment {
    KA_AUTO_ASSIGNMENT_PLACE, /* kadmit computes an explicit, limit-aware assignment */
    KA_AUTO_ASSIGNMENT_BOUND, /* forward unchanged only if the broker's worst case fits */
};

typedef struct ka_policy ka_policy_t;

/*
 * Parses and validates a policy document of `len` bytes. On success *out
 * holds a new snapshot with one reference. On failure returns KA_EINVALID
 * (or KA_ENOMEM) and writes a sentence naming the field and the problem to
 * err, e.g. "brokers.7.max.broker.partitions: must be an integer between 0
 * and 2147483647, got -3".
 */
int ka_policy_parse(const char *json, size_t len, uint64_t version, ka_policy_t **out, char *err,
                    size_t errlen);

/* A policy with every key at its default (no limits, enforce, place). */
int ka_policy_new_default(uint64_t version, ka_policy_t **out);

/*
 * Serializes to canonical JSON: every key present, broker overrides sorted
 * by id. Parsing the result yields an equal policy, and serializing that
 * yields the same bytes. Returns a NUL-terminated string to free() or NULL
 * when out of memory.
 */
char *ka_policy_serialize(const ka_policy_t *policy);

/* Both accept NULL. The last unref frees the snapshot. */
ka_policy_t *ka_policy_ref(ka_policy_t *policy);
void ka_policy_unref(ka_policy_t *policy);

/*
 * Derivations for the admin API: each returns a new snapshot (one
 * reference) equal to `base` except for one change, with `version`. The
 * base is untouched. Limits must lie in [0, 2147483647] and broker ids in
 * [0, 2147483647]; otherwise KA_EINVALID with a message in err.
 */
int ka_policy_with_broker_limit(const ka_policy_t *base, int32_t broker_id, int64_t limit,
                                uint64_t version, ka_policy_t **out, char *err, size_t errlen);
int ka_policy_without_broker_limit(const ka_policy_t *base, int32_t broker_id, uint64_t version,
                                   ka_policy_t **out);
int ka_policy_with_default_limit(const ka_policy_t *base, int64_t limit, uint64_t version,
                                 ka_policy_t **out, char *err, size_t errlen);

/* 1 when the two policies have the same settings (versions are ignored). */
int ka_policy_equal(const ka_policy_t *a, const ka_policy_t *b);

uint64_t ka_policy_version(const ka_policy_t *policy);

/* The limit that applies to broker_id: its override, or the default. */
int32_t ka_policy_broker_limit(const ka_policy_t *policy, int32_t broker_id);
int32_t ka_policy_default_broker_limit(const ka_policy_t *policy);
/* Overrides in ascending broker-id order; index < ka_policy_override_count. */
size_t ka_policy_override_count(const ka_policy_t *policy);
void ka_policy_override_at(const ka_policy_t *policy, size_t index, int32_t *broker_id,
                           int32_t *limit);

int32_t ka_policy_max_partitions(const ka_policy_t *policy);
enum ka_enforcement ka_policy_enforcement(const ka_policy_t *policy);
int16_t ka_policy_reject_error_code(const ka_policy_t *policy);
enum ka_auto_assignment ka_policy_auto_assignment(const ka_policy_t *policy);
int64_t ka_policy_metadata_refresh_interval_ms(const ka_policy_t *policy);
int64_t ka_policy_metadata_max_staleness_ms(const ka_policy_t *policy);
int64_t ka_policy_metadata_refresh_before_decision_ms(const ka_policy_t *policy);
/*
 * metadata.refresh.idle.interval.ms in force: the key's value, or when it is
 * not set 90 s bounded by the other keys (at least metadata.refresh.interval.ms,
 * at most three quarters of metadata.max.staleness.ms, so that an idle view
 * never nears staleness). Equal to the refresh interval: no idle mode.
 */
int64_t ka_policy_metadata_refresh_idle_interval_ms(const ka_policy_t *policy);
int64_t ka_policy_reservation_expiry_ms(const ka_policy_t *policy);

#endif
