/*
 * ka_tls.c: the OpenSSL implementation of ka_transport.h.
 *
 * Each engine is an SSL object over one BIO of ka_tls_bio.h (not OpenSSL's
 * memory BIOs, whose zeroing and copies cost more than the cipher). OpenSSL
 * keeps its own record buffers (about 17 KiB per direction while a record is
 * in progress, released between records with SSL_MODE_RELEASE_BUFFERS); the
 * wire's input holds at most one socket read that has not been decrypted
 * yet, because the caller stops reading while decrypted bytes wait (and a
 * lent read is copied only when left unread); its output holds the records
 * of one write until the caller takes them out, which it does at once.
 * Those are the per-connection bounds documented in docs/tls-sasl.md.
 *
 * SSL_new takes a reference on its SSL_CTX, so a context replaced by a
 * reload lives until the last connection that started on it closes.
 *
 * Output is gathered: ka_transport_writev copies runs of small slices into
 * one staging buffer of a full record's size, so a flush of many small
 * responses costs one record (one header, one tag, one cipher call) per
 * 16 KiB rather than one per slice; large slices go to SSL_write as they are.
 */
#include "ka_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ka_error.h"
#include "ka_tls_bio.h"

#define PATH_CAP 4096
/* A full TLS record's plaintext (RFC 8446 5.1): the staging buffer of writev. */
#define RECORD_PLAIN 16384
/* Slices at least this long are encrypted in place rather than staged. */
#define STAGE_BELOW 4096

#ifndef TCP_ULP
#define TCP_ULP 31 /* linux/tcp.h; older libc headers lack it */
#endif

/* What identifies a file version without reading it. */
typedef struct file_stamp {
    long long mtime_ns;
    long long size;
    unsigned long long inode;
    int present;
} file_stamp_t;

struct ka_tls_source {
    int is_server;
    char cert[PATH_CAP], key[PATH_CAP], ca[PATH_CAP];
    char server_name[256];
    enum ka_tls_client_auth client_auth;
    int verify;
    int ktls;              /* SSL_OP_ENABLE_KTLS on every context built */
    SSL_CTX *ctx;          /* the context new connections get */
    file_stamp_t stamp[3]; /* cert, key, ca as last built (or last failed) */
};

struct ka_transport {
    SSL *ssl;
    ka_tls_wire_t wire; /* the bytes on either side of ssl's one BIO (owned by ssl) */
    int established;
    int failed;
    char err[256];
};

static void stamp_of(const char *path, file_stamp_t *st)
{
    struct stat sb;
    memset(st, 0, sizeof(*st));
    if (path[0] == '\0' || stat(path, &sb) != 0)
        return;
    st->present = 1;
    st->size = (long long)sb.st_size;
    st->inode = (unsigned long long)sb.st_ino;
    st->mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
}

/* The oldest queued OpenSSL error as text, and the queue cleared. */
static void openssl_error(char *out, size_t cap, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0) {
        snprintf(out, cap, "%s", fallback);
    } else {
        char buf[200];
        ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(out, cap, "%s", buf);
    }
    ERR_clear_error();
}

static SSL_CTX *build_ctx(const ka_tls_source_t *src, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(src->is_server ? TLS_server_method() : TLS_client_method());
    char why[200];
    if (ctx == NULL) {
        snprintf(err, errlen, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    /* A renegotiation would only be a way to make kadmit do handshakes mid-stream. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (src->ktls)
        SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    if (src->cert[0] != '\0') {
        if (SSL_CTX_use_certificate_chain_file(ctx, src->cert) != 1) {
            openssl_error(why, sizeof(why), "unreadable");
            snprintf(err, errlen, "certificate %s: %s", src->cert, why);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, src->key, SSL_FILETYPE_PEM) != 1) {
            openssl_error(why, sizeof(why), "unreadable");
            snprintf(err, errlen, "key %s: %s", src->key, why);
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            ERR_clear_error();
            snprintf(err, errlen, "key %s does not match certificate %s", src->key, src->cert);
            goto fail;
        }
    }
    if (src->is_server) {
        static const unsigned char sid[] = "kadmit";
        SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
        if (src->client_auth != KA_TLS_AUTH_NONE) {
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(src->ca);
            if (names == NULL || SSL_CTX_load_verify_locations(ctx, src->ca, NULL) != 1) {
                if (names != NULL)
                    sk_X509_NAME_pop_free(names, X509_NAME_free);
                openssl_error(why, sizeof(why), "no certificate in the file");
                snprintf(err, errlen, "client CA %s: %s", src->ca, why);
                goto fail;
            }
            SSL_CTX_set_client_CA_list(ctx, names);
            SSL_CTX_set_verify(ctx,
                               src->client_auth == KA_TLS_AUTH_REQUIRED
                                   ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                   : SSL_VERIFY_PEER,
                               NULL);
        }
    } else {
        int ok = src->ca[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, src->ca, NULL)
                                    : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            openssl_error(why, sizeof(why), "no certificate in the file");
            snprintf(err, errlen, "CA %s: %s", src->ca[0] ? src->ca : "(system)", why);
            goto fail;
        }
        SSL_CTX_set_verify(ctx, src->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static int copy_path(char *dst, const char *v)
{
    v = v ? v : "";
    if (strlen(v) >= PATH_CAP)
        return KA_ELIMIT;
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

int ka_tls_source_new(const ka_tls_settings_t *st, ka_tls_source_t **out, char *err, size_t errlen)
{
    ka_tls_source_t *src = calloc(1, sizeof(*src));
    if (src == NULL) {
        snprintf(err, errlen, "out of memory");
        return KA_ENOMEM;
    }
    src->is_server = st->is_server;
    src->client_auth = st->client_auth;
    src->verify = st->verify;
    src->ktls = st->ktls;
    if (copy_path(src->cert, st->cert_file) < 0 || copy_path(src->key, st->key_file) < 0 ||
        copy_path(src->ca, st->ca_file) < 0 ||
        strlen(st->server_name ? st->server_name : "") >= sizeof(src->server_name)) {
        snprintf(err, errlen, "a TLS file path or server name is too long");
        free(src);
        return KA_ELIMIT;
    }
    snprintf(src->server_name, sizeof(src->server_name), "%s",
             st->server_name ? st->server_name : "");
    stamp_of(src->cert, &src->stamp[0]);
    stamp_of(src->key, &src->stamp[1]);
    stamp_of(src->ca, &src->stamp[2]);
    if ((src->ctx = build_ctx(src, err, errlen)) == NULL) {
        free(src);
        return KA_EINVALID;
    }
    *out = src;
    return 0;
}

void ka_tls_source_free(ka_tls_source_t *src)
{
    if (src == NULL)
        return;
    SSL_CTX_free(src->ctx);
    free(src);
}

int ka_tls_source_check(ka_tls_source_t *src, char *err, size_t errlen)
{
    file_stamp_t now[3];
    stamp_of(src->cert, &now[0]);
    stamp_of(src->key, &now[1]);
    stamp_of(src->ca, &now[2]);
    if (memcmp(now, src->stamp, sizeof(now)) == 0)
        return 0;
    memcpy(src->stamp, now, sizeof(now));
    SSL_CTX *ctx = build_ctx(src, err, errlen);
    if (ctx == NULL)
        return KA_EINVALID;
    SSL_CTX_free(src->ctx); /* open connections still hold it */
    src->ctx = ctx;
    return 1;
}

void ka_tls_source_describe(const ka_tls_source_t *src, char *out, size_t cap)
{
    X509 *cert = SSL_CTX_get0_certificate(src->ctx);
    if (cert == NULL) {
        snprintf(out, cap, "no certificate");
        return;
    }
    char subject[256] = "?";
    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof(subject));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(out, cap, "%s serial %s", subject, hex ? hex : "?");
    OPENSSL_free(hex);
    BN_free(bn);
}

ka_transport_t *ka_transport_new(ka_tls_source_t *src)
{
    return ka_transport_new_named(src, NULL);
}

ka_transport_t *ka_transport_new_named(ka_tls_source_t *src, const char *server_name)
{
    ka_transport_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->ssl = SSL_new(src->ctx);
    BIO *bio = ka_tls_bio_new(&t->wire);
    if (t->ssl == NULL || bio == NULL)
        goto fail;
    SSL_set_bio(t->ssl, bio, bio); /* one reference, for both directions */
    if (src->is_server) {
        SSL_set_accept_state(t->ssl);
        return t;
    }
    SSL_set_connect_state(t->ssl);
    const char *name = server_name != NULL ? server_name : src->server_name;
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    if (name[0] != '\0' && !is_ip && SSL_set_tlsext_host_name(t->ssl, name) != 1)
        goto fail_ssl;
    if (src->verify && name[0] != '\0') {
        X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
        int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                       : X509_VERIFY_PARAM_set1_host(param, name, 0);
        if (ok != 1)
            goto fail_ssl;
    }
    return t;
fail:
    BIO_free(bio);
fail_ssl:
    SSL_free(t->ssl);
    ERR_clear_error();
    free(t);
    return NULL;
}

void ka_transport_free(ka_transport_t *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* frees the BIO */
    ka_tls_bytes_free(&t->wire.in);
    ka_tls_bytes_free(&t->wire.out);
    free(t);
}

int ka_transport_feed(ka_transport_t *t, const uint8_t *p, size_t n)
{
    if (ka_tls_wire_settle(&t->wire) < 0)
        return KA_ENOMEM;
    return ka_tls_bytes_append(&t->wire.in, p, n);
}

int ka_transport_lend(ka_transport_t *t, const uint8_t *p, size_t n)
{
    if (ka_tls_wire_settle(&t->wire) < 0) /* an earlier loan not settled: copy it first */
        return KA_ENOMEM;
    t->wire.lent = p;
    t->wire.lent_len = n;
    return 0;
}

int ka_transport_settle(ka_transport_t *t)
{
    return ka_tls_wire_settle(&t->wire);
}

/* Records why the engine failed; certificate problems get OpenSSL's words. */
static void set_failed(ka_transport_t *t)
{
    char why[200];
    long vr = SSL_get_verify_result(t->ssl);
    openssl_error(why, sizeof(why), "the peer closed or sent a bad record");
    if (vr != X509_V_OK)
        snprintf(t->err, sizeof(t->err), "%s (certificate: %s)", why,
                 X509_verify_cert_error_string(vr));
    else
        snprintf(t->err, sizeof(t->err), "%s", why);
    t->failed = 1;
}

long ka_transport_read(ka_transport_t *t, uint8_t *out, size_t cap)
{
    size_t got = 0;
    if (t->failed)
        return KA_EINVALID;
    if (!t->established) {
        int rc = SSL_do_handshake(t->ssl);
        if (rc != 1) {
            int e = SSL_get_error(t->ssl, rc);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return 0;
            set_failed(t);
            return KA_EINVALID;
        }
        t->established = 1;
    }
    while (got < cap) {
        size_t want = cap - got > INT_MAX ? INT_MAX : cap - got;
        int n = SSL_read(t->ssl, out + got, (int)want);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        int e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_ZERO_RETURN)
            break;
        set_failed(t);
        if (got == 0)
            return KA_EINVALID;
        break; /* hand out what was decrypted; the error comes next time */
    }
    return (long)got;
}

int ka_transport_write(ka_transport_t *t, const uint8_t *p, size_t n)
{
    if (t->failed || !t->established)
        return KA_EINVALID;
    while (n > 0) {
        int chunk = n > INT_MAX ? INT_MAX : (int)n;
        int w = SSL_write(t->ssl, p, chunk);
        if (w <= 0) {
            set_failed(t);
            return KA_EINVALID;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ka_transport_writev(ka_transport_t *t, const struct iovec *iov, size_t n)
{
    uint8_t stage[RECORD_PLAIN];
    size_t staged = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const uint8_t *p = iov[i].iov_base;
        size_t len = iov[i].iov_len;
        if (len >= STAGE_BELOW) {
            if (staged > 0 && (rc = ka_transport_write(t, stage, staged)) < 0)
                break;
            staged = 0;
            rc = ka_transport_write(t, p, len);
            continue;
        }
        if (staged + len > sizeof(stage)) {
            if ((rc = ka_transport_write(t, stage, staged)) < 0)
                break;
            staged = 0;
        }
        memcpy(stage + staged, p, len);
        staged += len;
    }
    if (rc == 0 && staged > 0)
        rc = ka_transport_write(t, stage, staged);
    return rc;
}

size_t ka_transport_pending(const ka_transport_t *t)
{
    return t->wire.out.len;
}

size_t ka_transport_take(ka_transport_t *t, uint8_t *out, size_t cap)
{
    return ka_tls_bytes_take(&t->wire.out, out, cap);
}

int ka_transport_established(const ka_transport_t *t)
{
    return t->established;
}

int ka_transport_has_input(const ka_transport_t *t)
{
    return SSL_pending(t->ssl) > 0 || t->wire.in.len > 0 || t->wire.lent_len > 0;
}

const char *ka_transport_error(const ka_transport_t *t)
{
    return t->err[0] ? t->err : "no error";
}

const char *ka_transport_sni(const ka_transport_t *t)
{
    return SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);
}

int ka_tls_ktls_probe(char *why, size_t cap)
{
#ifdef OPENSSL_NO_KTLS
    snprintf(why, cap, "OpenSSL was built without kTLS");
    return 0;
#else
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        snprintf(why, cap, "cannot open a probe socket: %s", strerror(errno));
        return 0;
    }
    /* The tls module refuses a socket that is not connected (ENOTCONN), which
     * is how it shows it is there; without it the kernel says ENOENT. */
    int rc = setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls"));
    int e = errno;
    close(fd);
    if (rc == 0 || e == ENOTCONN) {
        snprintf(why, cap, "the kernel has the tls module");
        return 1;
    }
    snprintf(why, cap, "the kernel has no tls module (TCP_ULP \"tls\": %s)", strerror(e));
    return 0;
#endif
}

void ka_transport_ktls(const ka_transport_t *t, int *send, int *recv)
{
    /* Both are 0 on kadmit's BIO, which answers no kTLS control. */
    *send = BIO_get_ktls_send(SSL_get_wbio(t->ssl)) > 0;
    *recv = BIO_get_ktls_recv(SSL_get_rbio(t->ssl)) > 0;
}

void ka_transport_describe(const ka_transport_t *t, char *out, size_t cap)
{
    snprintf(out, cap, "%s %s", SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl));
}

long ka_transport_peer_subject(const ka_transport_t *t, char *out, size_t cap)
{
    long n = 0;
    if (cap > 0)
        out[0] = '\0';
    if (!t->established || SSL_get_verify_result(t->ssl) != X509_V_OK)
        return 0;
    X509 *cert = SSL_get_peer_certificate(t->ssl);
    if (cert == NULL)
        return 0;
    /* Kafka's DEFAULT principal mapping is the subject as RFC 2253 writes it. */
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio != NULL &&
        X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        char *p;
        long len = BIO_get_mem_data(bio, &p);
        if (len > 0 && (size_t)len < cap) {
            memcpy(out, p, (size_t)len);
            out[len] = '\0';
            n = len;
        } else if (len > 0) {
            n = KA_EOVERFLOW;
        }
    }
    BIO_free(bio);
    X509_free(cert);
    return n;
}
