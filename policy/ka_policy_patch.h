/*
 * ka_policy_patch.h: policy differences as JSON merge patches (RFC 7396).
 *
 * When the policy file is read-only (a Kubernetes ConfigMap), the changes
 * made over the admin API are kept in a state file as the merge patch that
 * turns the file's policy into the policy in force. On every reload of the
 * file the patch is applied again on top of the new file, so API changes
 * stay in force until they are cleared. A patch holds only the keys whose
 * values differ; a broker override that the API removed is `null`.
 *
 * Both functions are pure: they work on the canonical serialization of the
 * snapshots (ka_policy_serialize), so apply(base, diff(base, t)) equals t.
 */
#ifndef KA_POLICY_PATCH_H
#define KA_POLICY_PATCH_H

#include <stddef.h>
#include <stdint.h>

#include "ka_policy.h"

/*
 * The merge patch that turns `base` into `target`, as compact JSON ("{}"
 * when they are equal). A NUL-terminated string to free(), or NULL when
 * out of memory.
 */
char *ka_policy_diff(const ka_policy_t *base, const ka_policy_t *target);

/*
 * Applies the merge patch `patch` (JSON text of `len` bytes, an object) to
 * `base` and validates the result like a policy file. On success *out holds
 * a new snapshot with `version`. Returns KA_EINVALID with a sentence in err
 * (naming the field) when the patch is not an object or the result is not a
 * valid policy; KA_ENOMEM when out of memory.
 */
int ka_policy_apply_patch(const ka_policy_t *base, const char *patch, size_t len, uint64_t version,
                          ka_policy_t **out, char *err, size_t errlen);

/* 1 when the patch text is an empty object (no difference), 0 otherwise. */
int ka_policy_patch_is_empty(const char *patch);

#endif
