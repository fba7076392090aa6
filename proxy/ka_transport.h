/*
 * ka_transport.h: TLS as a byte transformer, so that the session, the relay
 * and the metadata client never call an SSL_* function themselves.
 *
 * A connection's transport is a pair of memory buffers around one TLS
 * engine: the caller feeds ciphertext it read from the socket, takes
 * plaintext out, puts plaintext in and takes ciphertext out to write. The
 * socket stays with libuv; the transport never does I/O. The plaintext
 * transport is the absence of one (a NULL pointer): a plaintext leg keeps
 * its zero-copy path and pays a single pointer test.
 *
 * A ka_tls_source holds one side's settings (files, verification) and the
 * TLS context built from them. When the files change, ka_tls_source_check
 * builds a new context; connections opened from then on use it, while those
 * already open keep the one they started with (the engine holds a reference
 * on its context, dropped when the connection closes). A reload that fails
 * (a half-written key, a key that does not match its certificate) keeps the
 * previous context and reports why.
 *
 * Only TLS 1.2 and later are offered or accepted, and renegotiation is refused.
 *
 * Kernel TLS: with settings.ktls the contexts carry SSL_OP_ENABLE_KTLS, but
 * OpenSSL hands records to the kernel only through a socket BIO, and these
 * engines sit on kadmit's own buffer BIO (the socket belongs to libuv). So no engine
 * uses kTLS today: ka_transport_ktls says so per connection, and
 * docs/tls-sasl.md ("Kernel TLS") says what using it would take.
 */
#ifndef KA_TRANSPORT_H
#define KA_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Client certificate checking on a listener (--tls-client-auth). */
enum ka_tls_client_auth { KA_TLS_AUTH_NONE = 0, KA_TLS_AUTH_OPTIONAL, KA_TLS_AUTH_REQUIRED };

typedef struct ka_tls_settings {
    int is_server;         /* accept (listener) or originate (upstream, metadata) */
    const char *cert_file; /* PEM chain; required for a server, optional for a client */
    const char *key_file;  /* PEM private key of cert_file */
    const char *ca_file;   /* server: CA for client certificates; client: trusted roots
                              (empty: the system's) */
    enum ka_tls_client_auth client_auth; /* server only */
    int verify;                          /* client only: check the server's chain and name */
    const char *server_name;             /* client only: SNI and the name checked */
    int ktls; /* set SSL_OP_ENABLE_KTLS (--tls-ktls auto); inert on a buffer BIO */
} ka_tls_settings_t;

typedef struct ka_tls_source ka_tls_source_t;
typedef struct ka_transport ka_transport_t;

/* Builds the first context; fills err with a sentence naming the file on failure. */
int ka_tls_source_new(const ka_tls_settings_t *settings, ka_tls_source_t **out, char *err,
                      size_t errlen);
void ka_tls_source_free(ka_tls_source_t *src);
/*
 * Rebuilds the context if any of its files changed since the last build
 * (size, modification time or inode). Returns 1 after a reload, 0 when
 * nothing changed, or a negative ka_err with the reason in err (the
 * previous context stays in use and the same files are not retried until
 * they change again).
 */
int ka_tls_source_check(ka_tls_source_t *src, char *err, size_t errlen);
/* The subject and serial of the certificate now served, for log lines. */
void ka_tls_source_describe(const ka_tls_source_t *src, char *out, size_t cap);

/* A new engine on the source's current context; NULL when out of memory. */
ka_transport_t *ka_transport_new(ka_tls_source_t *src);
/* The same, toward a server named server_name (SNI and the name verified)
 * instead of the source's: a gateway reaches each broker under its own name. */
ka_transport_t *ka_transport_new_named(ka_tls_source_t *src, const char *server_name);
/* Server side: the name the client asked for (SNI), or NULL when it sent none. */
const char *ka_transport_sni(const ka_transport_t *t);
void ka_transport_free(ka_transport_t *t);

/* Ciphertext read from the socket, copied. Returns 0 or KA_ENOMEM. */
int ka_transport_feed(ka_transport_t *t, const uint8_t *p, size_t n);
/*
 * The same without the copy: p is read in place by the following
 * ka_transport_read calls, and must stay valid until ka_transport_settle,
 * which copies whatever is left unread (call it before p is released).
 * Returns 0 or KA_ENOMEM.
 */
int ka_transport_lend(ka_transport_t *t, const uint8_t *p, size_t n);
int ka_transport_settle(ka_transport_t *t);
/*
 * Plaintext decrypted from what was fed, up to cap bytes; also advances the
 * handshake. Returns the byte count (0: more ciphertext is needed), or a
 * negative ka_err when the peer failed the handshake or sent a bad record
 * (see ka_transport_error).
 */
long ka_transport_read(ka_transport_t *t, uint8_t *out, size_t cap);
/* Encrypts plaintext; only once established. Returns 0 or a negative ka_err. */
int ka_transport_write(ka_transport_t *t, const uint8_t *p, size_t n);
/*
 * Encrypts n slices as if they were one buffer: small slices are gathered
 * into records of up to 16 KiB instead of one record (and one record header
 * and tag) each. Returns 0 or a negative ka_err.
 */
int ka_transport_writev(ka_transport_t *t, const struct iovec *iov, size_t n);
/* Ciphertext waiting to be written to the socket, and taking it out. */
size_t ka_transport_pending(const ka_transport_t *t);
size_t ka_transport_take(ka_transport_t *t, uint8_t *out, size_t cap);
/* True once the handshake has completed. */
int ka_transport_established(const ka_transport_t *t);
/* True while decrypted bytes or whole records wait inside the engine. */
int ka_transport_has_input(const ka_transport_t *t);
/* Why the last call failed, as a sentence (certificate checks included). */
const char *ka_transport_error(const ka_transport_t *t);
/*
 * The subject of the certificate the peer presented, in RFC 2253 form
 * ("CN=alice,OU=eng,O=example"), once established and only when the chain
 * was verified against the configured CA. Returns its length, 0 when there
 * is no verified certificate, or KA_EOVERFLOW when cap is too small.
 */
long ka_transport_peer_subject(const ka_transport_t *t, char *out, size_t cap);
/*
 * Whether the kernel offers kTLS: 1 when OpenSSL was built with it and the
 * kernel has the "tls" TCP upper-layer protocol, else 0; why gets a sentence
 * either way. Opens (and closes) one unconnected socket: call it once.
 */
int ka_tls_ktls_probe(char *why, size_t cap);
/* Whether the kernel encrypts (send) and decrypts (recv) this engine's records. */
void ka_transport_ktls(const ka_transport_t *t, int *send, int *recv);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" once established. */
void ka_transport_describe(const ka_transport_t *t, char *out, size_t cap);

/*
 * TLS and SASL of kadmit's own connections to the broker (the metadata
 * client, and the control plane's other clients): the upstream TLS source
 * the sessions use, and the SASL identity of --metadata-sasl-*.
 */
typedef struct ka_upstream_security {
    ka_tls_source_t *tls; /* TLS toward the broker, or NULL (not owned) */
    char mechanism[32];   /* "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", or "" for none */
    char username[256];
    char password[512];
} ka_upstream_security_t;

#endif
