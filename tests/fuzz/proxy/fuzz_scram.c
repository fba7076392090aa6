/*
 * fuzz_scram.c: libFuzzer target for the SCRAM client's parsers of the
 * server's messages.
 *
 * Input: byte 0 picks the hash (even: SHA-256, odd: SHA-512); the rest is
 * split at the first newline into a server-first and a server-final
 * message. A server-first that starts "r=+" gets the fixed client nonce
 * spliced in, so the fuzzer reaches the key derivation and the
 * server-final check. Invariants: no out-of-bounds access (ASan), a
 * client-final that is NUL-terminated text of the returned length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ka_scram.h"

#define NONCE "fyko+d2lbbFgONRv9qkxdawL"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ka_scram_t s;
    char out[1024], err[256];
    uint8_t first[1100];
    if (size < 1)
        return 0;
    ka_scram_init(&s, data[0] & 1 ? "SCRAM-SHA-512" : "SCRAM-SHA-256", "user", "pencil", NONCE);
    data++;
    size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first_len = nl ? (size_t)(nl - data) : size;
    size_t flen = 0;
    if (first_len >= 3 && memcmp(data, "r=+", 3) == 0 && first_len + 24 < sizeof(first)) {
        memcpy(first, "r=" NONCE, 2 + 24);
        memcpy(first + 26, data + 3, first_len - 3);
        flen = 26 + first_len - 3;
    } else if (first_len < sizeof(first)) {
        memcpy(first, data, first_len);
        flen = first_len;
    } else {
        return 0;
    }
    long n = ka_scram_client_final(&s, first, flen, out, sizeof(out), err, sizeof(err));
    if (n >= 0 && (size_t)n != strlen(out))
        abort();
    if (nl != NULL)
        ka_scram_verify_server(&s, nl + 1, size - first_len - 1, err, sizeof(err));
    ka_scram_clear(&s);
    return 0;
}
