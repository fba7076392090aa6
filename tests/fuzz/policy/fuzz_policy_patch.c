/*
 * fuzz_policy_patch.c: the state file's overrides (a JSON merge patch) and
 * the policy parser, on untrusted bytes.
 *
 * The input is parsed as a policy and applied as a patch over a fixed base
 * policy with overrides. Whenever the patch applies, the diff from the base
 * to the result must apply back to exactly the result: the property that
 * keeps API changes intact across reloads and restarts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_policy.h"
#include "ka_policy_patch.h"

#define BASE                                                                                       \
    "{\"max.broker.partitions\": 100, \"brokers\": {\"1\": {\"max.broker.partitions\": 5}, "       \
    "\"9\": {\"max.broker.partitions\": 50}}, \"enforcement\": \"audit\"}"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ka_policy_t *base = NULL, *parsed = NULL, *out = NULL, *again = NULL;
    char err[512];

    if (ka_policy_parse((const char *)data, size, 1, &parsed, err, sizeof(err)) == 0)
        ka_policy_unref(parsed);
    if (ka_policy_parse(BASE, strlen(BASE), 1, &base, err, sizeof(err)) != 0)
        abort();
    if (ka_policy_apply_patch(base, (const char *)data, size, 2, &out, err, sizeof(err)) == 0) {
        char *patch = ka_policy_diff(base, out);
        if (patch == NULL)
            abort();
        if (ka_policy_apply_patch(base, patch, strlen(patch), 3, &again, err, sizeof(err)) != 0 ||
            !ka_policy_equal(out, again))
            abort();
        free(patch);
        ka_policy_unref(again);
        ka_policy_unref(out);
    }
    ka_policy_unref(base);
    return 0;
}
