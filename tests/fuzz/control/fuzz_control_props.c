/*
 * fuzz_control_props.c: the --ledger-properties file (librdkafka key=value
 * lines) on arbitrary bytes. The parser must stay within its caps (pairs,
 * line length), never read past the text, and on success hand back pairs
 * that are each a non-empty key with a value, NULL-terminated.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_rdk_side.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char **pairs = NULL, err[256];
    size_t n = 0;

    if (ka_rdk_props_parse((const char *)data, size, &pairs, err, sizeof(err)) != 0)
        return 0;
    for (; pairs[2 * n] != NULL; n++) {
        if (pairs[2 * n][0] == '\0' || pairs[2 * n + 1] == NULL)
            abort();
    }
    if (n > KA_RDK_PROPS_MAX)
        abort();
    free(pairs);
    return 0;
}
