/*
 * ka_scram.h: the client side of SASL SCRAM (RFC 5802) with SHA-256 or
 * SHA-512 (RFC 7677), for kadmit's own metadata connection.
 *
 * Three steps, each a pure function of what came before, so the math can
 * be tested against the RFC's vector without a broker:
 *   client-first   "n,,n=USER,r=CNONCE"
 *   client-final   from the server-first "r=NONCE,s=SALT,i=ITER"
 *   verify         the server-final "v=SIGNATURE" (or "e=ERROR")
 * No channel binding ("n,,"), as Kafka does not support it.
 */
#ifndef KA_SCRAM_H
#define KA_SCRAM_H

#include <stddef.h>
#include <stdint.h>

#define KA_SCRAM_MAX_HASH       64 /* SHA-512 */
#define KA_SCRAM_MAX_MESSAGE    1024
#define KA_SCRAM_MIN_ITERATIONS 4096    /* Kafka's own minimum */
#define KA_SCRAM_MAX_ITERATIONS 1000000 /* a broker cannot make us spin longer */

typedef struct ka_scram {
    int hash; /* 256 or 512 */
    size_t hash_len;
    char password[512];
    char client_first_bare[KA_SCRAM_MAX_MESSAGE]; /* "n=USER,r=CNONCE" */
    char client_nonce[64];
    char auth_message[3 * KA_SCRAM_MAX_MESSAGE];
    uint8_t server_signature[KA_SCRAM_MAX_HASH];
    int have_signature;
} ka_scram_t;

/*
 * mechanism is "SCRAM-SHA-256" or "SCRAM-SHA-512". nonce NULL draws 18
 * random bytes (RAND_bytes), base64-encoded; tests pass the RFC's. Returns
 * 0 or a negative ka_err (unknown mechanism, a name or password too long).
 */
int ka_scram_init(ka_scram_t *s, const char *mechanism, const char *user, const char *password,
                  const char *nonce);
/* Writes the client-first message; returns its length or a negative ka_err. */
long ka_scram_client_first(const ka_scram_t *s, char *out, size_t cap);
/*
 * Reads the server-first message and writes the client-final message.
 * Returns its length, or a negative ka_err with a sentence in err (a nonce
 * that does not extend ours, too few or too many iterations, bad base64).
 */
long ka_scram_client_final(ka_scram_t *s, const uint8_t *server_first, size_t n, char *out,
                           size_t cap, char *err, size_t errlen);
/* Checks the server-final message: 0 when the server proved it knows the password. */
int ka_scram_verify_server(ka_scram_t *s, const uint8_t *server_final, size_t n, char *err,
                           size_t errlen);
/* Wipes the password and keys. */
void ka_scram_clear(ka_scram_t *s);

#endif
