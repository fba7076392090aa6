/*
 * ka_sasl_principal.h: the user a client names in its first SASL token.
 *
 * kadmit never authenticates anyone: the broker does. It reads the name a
 * PLAIN or SCRAM client offers, keeps it as a candidate, and the session
 * makes it the connection's principal only once the broker has said the
 * authentication succeeded (ka_session_auth.c). The password (PLAIN) is
 * never copied; SCRAM's first message carries none. Kafka's principal for
 * both mechanisms is "User:" + the username, with no mapping rules.
 *
 * Pure C, no I/O: the parsers read only within the token they are given.
 */
#ifndef KA_SASL_PRINCIPAL_H
#define KA_SASL_PRINCIPAL_H

#include <stddef.h>
#include <stdint.h>

/* The longest principal kept: "User:" and a 250-byte name, or a certificate's subject. */
#define KA_PRINCIPAL_MAX 512
/* The longest username accepted from a token. */
#define KA_SASL_USER_MAX 250

/* The mechanisms whose first token names the user. */
enum ka_sasl_mech {
    KA_SASL_MECH_OTHER = 0, /* GSSAPI, OAUTHBEARER, unknown: the principal stays unknown */
    KA_SASL_MECH_PLAIN,
    KA_SASL_MECH_SCRAM, /* SCRAM-SHA-256 and SCRAM-SHA-512 */
};

enum ka_sasl_mech ka_sasl_mech_of(const uint8_t *name, size_t len);

/* How many client tokens the mechanism's exchange has (PLAIN 1, SCRAM 2), or 0. */
int ka_sasl_mech_steps(enum ka_sasl_mech mech);

/*
 * Writes "User:<name>" (NUL-terminated) into out from the client's first
 * token of mech, read exactly as the broker reads it (ka_sasl_principal.c).
 * Returns 0, or:
 *  - KA_EINVALID: a token the broker refuses (malformed, an authorization
 *    id other than the name, an empty PLAIN password);
 *  - KA_EUNSUPPORTED: one the broker may accept, whose principal kadmit
 *    cannot name: a SCRAM delegation token (the principal is the token's
 *    owner), a name with a control byte, a PLAIN name that is not UTF-8,
 *    a mechanism without a name (GSSAPI, OAUTHBEARER);
 *  - KA_ELIMIT: a name longer than KA_SASL_USER_MAX;
 *  - KA_EOVERFLOW: cap is too small.
 * out is "" on any error.
 */
int ka_sasl_token_principal(enum ka_sasl_mech mech, const uint8_t *token, size_t len, char *out,
                            size_t cap);

#endif
