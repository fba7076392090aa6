/*
 * fuzz_sasl_principal.c: libFuzzer target for the parsers of a client's
 * first SASL token (PLAIN, SCRAM client-first).
 *
 * Input: byte 0 picks the mechanism (even: PLAIN, odd: SCRAM), byte 1 the
 * output buffer's size; the rest is the token, copied to a buffer of its
 * exact size so ASan sees any read past it. Invariants: a success writes a
 * NUL-terminated "User:" name within the buffer, with no control byte, and
 * no longer than KA_SASL_USER_MAX; a failure leaves an empty string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"
#include "ka_sasl_principal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[KA_PRINCIPAL_MAX];
    if (size < 2)
        return 0;
    enum ka_sasl_mech mech = data[0] & 1 ? KA_SASL_MECH_SCRAM : KA_SASL_MECH_PLAIN;
    size_t cap = 1 + (size_t)data[1] * 2;
    if (cap > sizeof(out))
        cap = sizeof(out);
    size_t len = size - 2;
    uint8_t *token = malloc(len ? len : 1);
    if (token == NULL)
        return 0;
    memcpy(token, data + 2, len);
    int rc = ka_sasl_token_principal(mech, token, len, out, cap);
    size_t n = strnlen(out, cap);
    if (n == cap)
        abort(); /* not terminated within the buffer */
    if (rc == 0) {
        if (n < 6 || n > 5 + KA_SASL_USER_MAX || memcmp(out, "User:", 5) != 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)out[i] < 0x20)
                abort();
    } else if (n != 0) {
        abort();
    }
    free(token);
    return 0;
}
