/*
 * test_config.c: flags, environment variables, size suffixes and the error
 * sentences of the kadmit command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "ka_config.h"
#include "ka_error.h"

static char err[512];

static int parse(ka_config_t *cfg, int argc, const char **argv)
{
    err[0] = '\0';
    return ka_config_parse(cfg, argc, (char **)argv, err, sizeof(err));
}

static int clear_env(void **state)
{
    (void)state;
    const char *vars[] = {"KADMIT_LISTEN",
                          "KADMIT_UPSTREAM",
                          "KADMIT_BUFFER_MEMORY",
                          "KADMIT_LOG_LEVEL",
                          "KADMIT_MAX_CONNECTIONS",
                          "KADMIT_IDLE_TIMEOUT",
                          "KADMIT_ADMIN",
                          "KADMIT_ADMIN_TOKEN_FILE",
                          "KADMIT_ADMIN_TOKEN",
                          "KADMIT_MAX_INFLIGHT",
                          "KADMIT_CLUSTER_SECRET",
                          "KADMIT_CLUSTER_SECRET_FILE",
                          "KADMIT_ADMIN_ALLOWED_HOSTS"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return 0;
}

static void test_defaults_and_required_upstream(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *none[] = {"kadmit"};
    assert_true(parse(&cfg, 1, none) < 0);
    assert_non_null(strstr(err, "--upstream"));
    const char *argv[] = {"kadmit", "--upstream", "127.0.0.1:19092"};
    assert_int_equal(parse(&cfg, 3, argv), KA_CONFIG_RUN);
    assert_string_equal(cfg.listen.host, "0.0.0.0");
    assert_int_equal(cfg.listen.port, 9092);
    assert_string_equal(cfg.upstream.host, "127.0.0.1");
    assert_int_equal(cfg.upstream.port, 19092);
    assert_int_equal(cfg.buffer_memory, 256ull << 20);
    assert_int_equal(cfg.max_frame_bytes, 100ull << 20);
    assert_int_equal(cfg.idle_timeout_s, 600);
    assert_int_equal(cfg.drain_timeout_s, 25);
    assert_int_equal(cfg.log_level, KA_LOG_INFO);
    assert_int_equal(cfg.admin_off, 0);
    char addr[300];
    ka_config_admin_address(&cfg, addr, sizeof(addr));
    assert_string_equal(addr, "127.0.0.1:9644");
    assert_string_equal(cfg.admin_token_file, "");
}

static void test_every_flag_in_both_spellings(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *argv[] = {"kadmit",
                          "--listen=[::1]:9093",
                          "--upstream",
                          "broker.local:19092",
                          "--log-level",
                          "debug",
                          "--log-format=json",
                          "--max-frame-bytes",
                          "1MiB",
                          "--buffer-memory",
                          "2GiB",
                          "--max-connections",
                          "7",
                          "--idle-timeout",
                          "0",
                          "--drain-timeout=3"};
    assert_int_equal(parse(&cfg, 16, argv), KA_CONFIG_RUN);
    assert_string_equal(cfg.listen.host, "::1");
    assert_int_equal(cfg.listen.port, 9093);
    assert_string_equal(cfg.upstream.host, "broker.local");
    assert_int_equal(cfg.log_level, KA_LOG_DEBUG);
    assert_int_equal(cfg.log_format, KA_LOG_JSON);
    assert_int_equal(cfg.max_frame_bytes, 1u << 20);
    assert_int_equal(cfg.buffer_memory, 2ull << 30);
    assert_int_equal(cfg.max_connections, 7);
    assert_int_equal(cfg.idle_timeout_s, 0);
    assert_int_equal(cfg.drain_timeout_s, 3);
}

static void test_inflight_and_metadata_upstream(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *d[] = {"kadmit", "--upstream", "h:1"};
    assert_int_equal(parse(&cfg, 3, d), KA_CONFIG_RUN);
    assert_int_equal(cfg.max_inflight, 1000);
    assert_int_equal(cfg.metadata_upstream.set, 0);
    setenv("KADMIT_MAX_INFLIGHT", "5", 1);
    const char *a[] = {"kadmit", "--upstream", "h:1", "--metadata-upstream=m:2"};
    assert_int_equal(parse(&cfg, 4, a), KA_CONFIG_RUN);
    assert_int_equal(cfg.max_inflight, 5);
    assert_string_equal(cfg.metadata_upstream.host, "m");
    assert_int_equal(cfg.metadata_upstream.port, 2);
    unsetenv("KADMIT_MAX_INFLIGHT");
}

static void test_environment_and_flags_win(void **state)
{
    (void)state;
    ka_config_t cfg;
    setenv("KADMIT_UPSTREAM", "10.0.0.1:9092", 1);
    setenv("KADMIT_BUFFER_MEMORY", "64MiB", 1);
    setenv("KADMIT_MAX_CONNECTIONS", "5", 1);
    const char *argv[] = {"kadmit", "--max-connections", "9"};
    assert_int_equal(parse(&cfg, 3, argv), KA_CONFIG_RUN);
    assert_string_equal(cfg.upstream.host, "10.0.0.1");
    assert_int_equal(cfg.buffer_memory, 64ull << 20);
    assert_int_equal(cfg.max_connections, 9);
    /* A bad variable names itself. */
    setenv("KADMIT_BUFFER_MEMORY", "lots", 1);
    assert_true(parse(&cfg, 1, argv) < 0);
    assert_non_null(strstr(err, "KADMIT_BUFFER_MEMORY=lots"));
    clear_env(NULL);
}

static void test_size_suffixes(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {{"1024", 1024},       {"1B", 1},     {"32KiB", 32768}, {"32MiB", 32u << 20},
              {"3GiB", 3ull << 30}, {"5KB", 5000}, {"5MB", 5000000}, {"2GB", 2000000000}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = 0;
        assert_int_equal(ka_config_parse_size(ok[i].in, &v, err, sizeof(err)), 0);
        assert_int_equal(v, ok[i].want);
    }
    static const char *bad[] = {"",
                                "MiB",
                                "-1",
                                "12XB",
                                "1.5GiB",
                                "10 MiB",
                                "99999999999999999999",
                                "18446744073709551615GiB"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 0;
        assert_true(ka_config_parse_size(bad[i], &v, err, sizeof(err)) < 0);
        assert_true(strlen(err) > 0);
    }
}

static void expect_error(int argc, const char **argv, const char *fragment)
{
    ka_config_t cfg;
    assert_true(parse(&cfg, argc, argv) < 0);
    if (strstr(err, fragment) == NULL)
        fail_msg("error \"%s\" does not mention \"%s\"", err, fragment);
}

static void test_errors_name_flag_and_value(void **state)
{
    (void)state;
    const char *a1[] = {"kadmit", "--upstream", "h:1", "--buffer-memory", "12XB"};
    expect_error(5, a1, "--buffer-memory 12XB: unknown size suffix");
    const char *a2[] = {"kadmit", "--upstream", "h:1", "--listen", "nohostport"};
    expect_error(5, a2, "--listen nohostport: expected HOST:PORT");
    const char *a3[] = {"kadmit", "--upstream", "h:70000"};
    expect_error(3, a3, "--upstream h:70000: expected a port");
    const char *a4[] = {"kadmit", "--upstream", "h:1", "--bogus"};
    expect_error(4, a4, "--bogus: unknown option");
    const char *a5[] = {"kadmit", "--upstream"};
    expect_error(2, a5, "--upstream: missing value");
    const char *a6[] = {"kadmit", "--upstream", "h:1", "--log-level", "loud"};
    expect_error(5, a6, "--log-level loud: expected error, warn, info or debug");
    const char *a7[] = {"kadmit", "--upstream", "h:1", "--max-connections", "0"};
    expect_error(5, a7, "--max-connections 0: must be between");
    const char *a8[] = {"kadmit", "--upstream", "h:1", "--buffer-memory", "1KiB"};
    expect_error(5, a8, "at least 1MiB");
    const char *a9[] = {"kadmit", "--upstream", "::1:9092"};
    expect_error(3, a9, "brackets");
    const char *a10[] = {"kadmit", "stray"};
    expect_error(2, a10, "stray: unexpected argument");
    const char *a11[] = {"kadmit", "--upstream", "h:0"};
    expect_error(3, a11, "must not be 0");
    const char *a12[] = {"kadmit", "--upstream", "h:1", "--max-inflight", "65537"};
    expect_error(5, a12, "--max-inflight 65537: must be between");
    const char *a13[] = {"kadmit", "--upstream", "h:1", "--metadata-upstream", "h:0"};
    expect_error(5, a13, "must not be 0");
}

static void test_admin_address_and_off(void **state)
{
    (void)state;
    ka_config_t cfg;
    char addr[300];
    const char *a1[] = {"kadmit", "--upstream", "h:1", "--admin", "[::1]:0"};
    assert_int_equal(parse(&cfg, 5, a1), KA_CONFIG_RUN);
    assert_int_equal(cfg.admin_off, 0);
    ka_config_admin_address(&cfg, addr, sizeof(addr));
    assert_string_equal(addr, "[::1]:0");
    const char *a2[] = {"kadmit", "--upstream", "h:1", "--admin=off"};
    assert_int_equal(parse(&cfg, 4, a2), KA_CONFIG_RUN);
    assert_int_equal(cfg.admin_off, 1);
    /* The environment sets it, a flag wins. */
    setenv("KADMIT_ADMIN", "off", 1);
    const char *a3[] = {"kadmit", "--upstream", "h:1"};
    assert_int_equal(parse(&cfg, 3, a3), KA_CONFIG_RUN);
    assert_int_equal(cfg.admin_off, 1);
    const char *a4[] = {"kadmit", "--upstream", "h:1", "--admin", "localhost:9700"};
    assert_int_equal(parse(&cfg, 5, a4), KA_CONFIG_RUN);
    assert_int_equal(cfg.admin_off, 0);
    ka_config_admin_address(&cfg, addr, sizeof(addr));
    assert_string_equal(addr, "localhost:9700");
    setenv("KADMIT_ADMIN", "nope", 1);
    assert_true(parse(&cfg, 3, a3) < 0);
    assert_non_null(strstr(err, "KADMIT_ADMIN=nope: expected HOST:PORT, or off"));
    clear_env(NULL);
    const char *a5[] = {"kadmit", "--upstream", "h:1", "--admin", "9644"};
    expect_error(5, a5, "--admin 9644: expected HOST:PORT, or off");
    const char *a6[] = {"kadmit", "--upstream", "h:1", "--admin-token-file", ""};
    expect_error(5, a6, "--admin-token-file : expected a file path");
}

static void test_admin_allowed_hosts(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *a1[] = {"kadmit", "--upstream", "h:1"};
    assert_int_equal(parse(&cfg, 3, a1), KA_CONFIG_RUN);
    assert_string_equal(cfg.admin_allowed_hosts, "");
    const char *a2[] = {"kadmit", "--upstream", "h:1",
                        "--admin-allowed-hosts=kadmit.internal, admin.example:9644,[fd00::1]"};
    assert_int_equal(parse(&cfg, 4, a2), KA_CONFIG_RUN);
    assert_string_equal(cfg.admin_allowed_hosts, "kadmit.internal, admin.example:9644,[fd00::1]");
    setenv("KADMIT_ADMIN_ALLOWED_HOSTS", "from-env.example", 1);
    assert_int_equal(parse(&cfg, 3, a1), KA_CONFIG_RUN);
    assert_string_equal(cfg.admin_allowed_hosts, "from-env.example");
    clear_env(NULL);
    const char *a3[] = {"kadmit", "--upstream", "h:1", "--admin-allowed-hosts", "a,,b"};
    expect_error(5, a3, "--admin-allowed-hosts a,,b: expected host names separated by commas");
    const char *a4[] = {"kadmit", "--upstream", "h:1", "--admin-allowed-hosts", "a/b"};
    expect_error(5, a4, "'/' cannot be part of a host name");
    const char *a5[] = {"kadmit", "--upstream", "h:1", "--admin-allowed-hosts", ""};
    expect_error(5, a5, "expected host names");
}

static void test_admin_token(void **state)
{
    (void)state;
    ka_config_t cfg;
    char token[64];
    const char *a1[] = {"kadmit", "--upstream", "h:1"};

    /* No file, no variable: no token (mutations will be refused). */
    assert_int_equal(parse(&cfg, 3, a1), KA_CONFIG_RUN);
    assert_int_equal(ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)), 0);
    assert_string_equal(token, "");
    /* The token itself from the environment. */
    setenv("KADMIT_ADMIN_TOKEN", "s3cret\n", 1);
    assert_int_equal(ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)), 0);
    assert_string_equal(token, "s3cret");

    /* The file's first line wins over the variable; trailing whitespace goes. */
    char path[] = "/tmp/kadmit-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("from-file  \nsecond line\n", f);
    fclose(f);
    setenv("KADMIT_ADMIN_TOKEN_FILE", path, 1);
    assert_int_equal(parse(&cfg, 3, a1), KA_CONFIG_RUN);
    assert_string_equal(cfg.admin_token_file, path);
    assert_int_equal(ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)), 0);
    assert_string_equal(token, "from-file");

    /* An empty file is an error, as is a token too long for the buffer. */
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_true(ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "the file is empty"));
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("0123456789\n", f);
    fclose(f);
    char small[4];
    assert_true(ka_config_load_admin_token(&cfg, small, sizeof(small), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "longer than 3 bytes"));
    unlink(path);

    /* A missing file names the flag, the file and the reason. */
    const char *a2[] = {"kadmit", "--upstream", "h:1", "--admin-token-file",
                        "/nonexistent/kadmit-token"};
    assert_int_equal(parse(&cfg, 5, a2), KA_CONFIG_RUN);
    assert_true(ka_config_load_admin_token(&cfg, token, sizeof(token), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "--admin-token-file /nonexistent/kadmit-token: No such file"));
    clear_env(NULL);
}

/* The cluster secret: from its file or variable, refused below 32 bytes. */
static void test_cluster_secret(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *a1[] = {"kadmit", "--upstream", "h:1"};

    assert_int_equal(parse(&cfg, 3, a1), KA_CONFIG_RUN);
    assert_int_equal(ka_config_load_cluster_secret(&cfg, 32, err, sizeof(err)), 0);
    assert_int_equal(cfg.cluster_secret_len, 0);
    setenv("KADMIT_CLUSTER_SECRET", "too-short-for-a-cluster-secret", 1);
    assert_true(ka_config_load_cluster_secret(&cfg, 32, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "KADMIT_CLUSTER_SECRET: the cluster secret has 30 bytes, fewer "
                                "than the 32 it needs"));
    assert_int_equal(cfg.cluster_secret_len, 0);
    setenv("KADMIT_CLUSTER_SECRET", "0123456789abcdef0123456789abcdef\n", 1);
    assert_int_equal(ka_config_load_cluster_secret(&cfg, 32, err, sizeof(err)), 0);
    assert_int_equal(cfg.cluster_secret_len, 32);

    char path[] = "/tmp/kadmit-secret-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("short\n", f);
    fclose(f);
    const char *a2[] = {"kadmit", "--upstream", "h:1", "--cluster-secret-file", path};
    assert_int_equal(parse(&cfg, 5, a2), KA_CONFIG_RUN);
    assert_true(ka_config_load_cluster_secret(&cfg, 32, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "--cluster-secret-file: the cluster secret has 5 bytes"));
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("a-secret-of-the-cluster-from-its-file-0123456789\n", f);
    fclose(f);
    assert_int_equal(ka_config_load_cluster_secret(&cfg, 32, err, sizeof(err)), 0);
    assert_int_equal(cfg.cluster_secret_len, 48);
    assert_memory_equal(cfg.cluster_secret, "a-secret-of-the-cluster-from-its-file-0123456789", 48);
    unlink(path);
    clear_env(NULL);
}

static void test_help_and_version(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *h[] = {"kadmit", "--help"};
    assert_int_equal(parse(&cfg, 2, h), KA_CONFIG_HELP);
    const char *v[] = {"kadmit", "--version"};
    assert_int_equal(parse(&cfg, 2, v), KA_CONFIG_VERSION);
}

static void test_tls_and_sasl_flags(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *argv[] = {"kadmit",
                          "--upstream",
                          "b:1",
                          "--tls-cert",
                          "s.pem",
                          "--tls-key",
                          "s.key",
                          "--tls-client-ca",
                          "ca.pem",
                          "--tls-client-auth",
                          "required",
                          "--upstream-tls=on",
                          "--upstream-verify",
                          "false",
                          "--metadata-sasl-mechanism",
                          "SCRAM-SHA-512",
                          "--metadata-sasl-username",
                          "kadmit"};
    assert_int_equal(parse(&cfg, (int)(sizeof(argv) / sizeof(argv[0])), argv), KA_CONFIG_RUN);
    assert_string_equal(cfg.tls_cert, "s.pem");
    assert_int_equal(cfg.tls_client_auth, 2);
    assert_int_equal(cfg.upstream_tls, 1);
    assert_int_equal(cfg.upstream_verify, 0);
    assert_string_equal(cfg.metadata_sasl_mechanism, "SCRAM-SHA-512");

    const char *mtls[] = {"kadmit", "--upstream",      "b:1",   "--tls-cert", "s.pem", "--tls-key",
                          "s.key",  "--tls-client-ca", "ca.pem"};
    assert_int_equal(parse(&cfg, (int)(sizeof(mtls) / sizeof(mtls[0])), mtls), KA_CONFIG_RUN);
    assert_int_equal(cfg.tls_client_auth, 2); /* a client CA alone means mTLS */
    const char *plain[] = {"kadmit", "--upstream", "b:1"};
    assert_int_equal(parse(&cfg, 3, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.tls_client_auth, 0);
    const char *nokey[] = {"kadmit", "--upstream", "b:1", "--tls-cert", "s.pem"};
    assert_true(parse(&cfg, 5, nokey) < 0);
    assert_non_null(strstr(err, "--tls-cert and --tls-key go together"));
    const char *auth[] = {"kadmit", "--upstream", "b:1", "--tls-client-auth", "sometimes"};
    assert_true(parse(&cfg, 5, auth) < 0);
    assert_non_null(strstr(err, "none, optional or required"));
    const char *mech[] = {"kadmit", "--upstream", "b:1", "--metadata-sasl-mechanism", "GSSAPI"};
    assert_true(parse(&cfg, 5, mech) < 0);
    assert_non_null(strstr(err, "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"));
    /* --tls-ktls: auto by default, off when asked, anything else refused with the choices. */
    assert_int_equal(parse(&cfg, 3, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.tls_ktls_off, 0);
    const char *ktls_off[] = {"kadmit", "--upstream", "b:1", "--tls-ktls", "off"};
    assert_int_equal(parse(&cfg, 5, ktls_off), KA_CONFIG_RUN);
    assert_int_equal(cfg.tls_ktls_off, 1);
    const char *ktls_auto[] = {"kadmit", "--upstream", "b:1", "--tls-ktls=auto"};
    assert_int_equal(parse(&cfg, 4, ktls_auto), KA_CONFIG_RUN);
    assert_int_equal(cfg.tls_ktls_off, 0);
    const char *ktls_bad[] = {"kadmit", "--upstream", "b:1", "--tls-ktls", "on"};
    assert_true(parse(&cfg, 5, ktls_bad) < 0);
    assert_non_null(strstr(err, "expected auto or off"));

    /* The password: the environment when no file is given, and an error without either. */
    const char *sasl[] = {"kadmit", "--upstream",
                          "b:1",    "--metadata-sasl-mechanism",
                          "PLAIN",  "--metadata-sasl-username",
                          "u"};
    assert_int_equal(parse(&cfg, 7, sasl), KA_CONFIG_RUN);
    char pw[64];
    unsetenv("KADMIT_METADATA_SASL_PASSWORD");
    assert_true(ka_config_load_sasl_password(&cfg, pw, sizeof(pw), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "KADMIT_METADATA_SASL_PASSWORD"));
    setenv("KADMIT_METADATA_SASL_PASSWORD", "s3cret\n", 1);
    assert_int_equal(ka_config_load_sasl_password(&cfg, pw, sizeof(pw), err, sizeof(err)), 0);
    assert_string_equal(pw, "s3cret");
    unsetenv("KADMIT_METADATA_SASL_PASSWORD");
}

static void test_stalled_reader_timeout(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *plain[] = {"kadmit", "--upstream", "h:1"};
    assert_int_equal(parse(&cfg, 3, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.stalled_reader_timeout_ms, 2000);
    const char *set[] = {"kadmit", "--upstream", "h:1", "--stalled-reader-timeout-ms=250"};
    assert_int_equal(parse(&cfg, 4, set), KA_CONFIG_RUN);
    assert_int_equal(cfg.stalled_reader_timeout_ms, 250);
    /* Below 100 ms a client's ordinary pause would look like a stall. */
    const char *low[] = {"kadmit", "--upstream", "h:1", "--stalled-reader-timeout-ms=99"};
    assert_true(parse(&cfg, 4, low) < 0);
    setenv("KADMIT_STALLED_READER_TIMEOUT_MS", "5000", 1);
    assert_int_equal(parse(&cfg, 3, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.stalled_reader_timeout_ms, 5000);
    unsetenv("KADMIT_STALLED_READER_TIMEOUT_MS");
}

static void test_held_request_cap_must_fit_the_pool_with_a_policy(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *plain[] = {"kadmit", "--upstream", "h:1"};
    assert_int_equal(parse(&cfg, 3, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.max_held_request, 4u << 20);
    assert_int_equal(cfg.held_request_timeout_ms, 30000);
    const char *set[] = {"kadmit", "--upstream",
                         "h:1",    "--max-held-request",
                         "2MiB",   "--held-request-timeout-ms=1500"};
    assert_int_equal(parse(&cfg, 6, set), KA_CONFIG_RUN);
    assert_int_equal(cfg.max_held_request, 2u << 20);
    assert_int_equal(cfg.held_request_timeout_ms, 1500);
    /* Without a policy nothing is held, so a small pool is fine. */
    const char *small[] = {"kadmit", "--upstream", "h:1", "--buffer-memory", "4MiB"};
    assert_int_equal(parse(&cfg, 5, small), KA_CONFIG_RUN);
    /* With one, the default 4 MiB cap cannot fit half of a 4 MiB pool. */
    const char *tight[] = {"kadmit", "--upstream", "h:1",   "--buffer-memory",
                           "4MiB",   "--policy",   "p.json"};
    assert_true(parse(&cfg, 7, tight) < 0);
    assert_non_null(strstr(err, "--max-held-request"));
    assert_non_null(strstr(err, "--buffer-memory"));
    const char *fits[] = {"kadmit",          "--upstream", "h:1",
                          "--buffer-memory", "4MiB",       "--max-held-request",
                          "768KiB",          "--policy",   "p.json"};
    assert_int_equal(parse(&cfg, 9, fits), KA_CONFIG_RUN);
    const char *zero[] = {"kadmit", "--upstream", "h:1", "--held-request-timeout-ms", "0"};
    assert_true(parse(&cfg, 5, zero) < 0);
}

/* Settings that contradict each other stop kadmit at start, saying which and why. */
static void test_a_ledger_timeout_not_below_the_intent_ttl_is_refused(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *bad[] = {"kadmit", "--upstream",          "h:1",   "--ledger",
                         "on",     "--ledger-timeout-ms", "30000", "--ledger-intent-ttl-ms",
                         "30000"};
    assert_int_equal(parse(&cfg, 9, bad), KA_EINVALID);
    assert_non_null(strstr(err, "--ledger-timeout-ms 30000 must be below --ledger-intent-ttl-ms"));
    const char *off[] = {"kadmit", "--upstream",          "h:1",   "--ledger",
                         "off",    "--ledger-timeout-ms", "30000", "--ledger-intent-ttl-ms",
                         "30000"};
    assert_int_equal(parse(&cfg, 9, off), KA_CONFIG_RUN);
}

static void test_ledger_is_on_with_a_policy_unless_turned_off(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *plain[] = {"kadmit", "--upstream", "h:1", "--listen", "0.0.0.0:9100"};
    assert_int_equal(parse(&cfg, 5, plain), KA_CONFIG_RUN);
    assert_int_equal(cfg.ledger, 0);
    assert_string_equal(cfg.ledger_topic, "__kadmit_ledger");
    assert_int_equal(cfg.ledger_timeout_ms, 5000);
    assert_int_equal(cfg.ledger_intent_ttl_ms, 180000);
    assert_non_null(strstr(cfg.sidecar_id, ":9100"));
    const char *policy[] = {"kadmit", "--upstream", "h:1", "--policy", "p.json"};
    assert_int_equal(parse(&cfg, 5, policy), KA_CONFIG_RUN);
    assert_int_equal(cfg.ledger, 1);
    setenv("KADMIT_LEDGER", "off", 1);
    assert_int_equal(parse(&cfg, 5, policy), KA_CONFIG_RUN);
    assert_int_equal(cfg.ledger, 0);
    unsetenv("KADMIT_LEDGER");
    const char *all[] = {"kadmit",
                         "--upstream",
                         "h:1",
                         "--ledger=on",
                         "--ledger-topic",
                         "my.ledger",
                         "--sidecar-id",
                         "sc-1",
                         "--ledger-bootstrap",
                         "b:9093",
                         "--ledger-timeout-ms",
                         "250",
                         "--ledger-intent-ttl-ms",
                         "60000"};
    assert_int_equal(parse(&cfg, 14, all), KA_CONFIG_RUN);
    assert_int_equal(cfg.ledger, 1);
    assert_string_equal(cfg.ledger_topic, "my.ledger");
    assert_string_equal(cfg.sidecar_id, "sc-1");
    assert_string_equal(cfg.ledger_bootstrap.host, "b");
    assert_int_equal(cfg.ledger_timeout_ms, 250);
    assert_int_equal(cfg.ledger_intent_ttl_ms, 60000);
    const char *bad[] = {"kadmit", "--upstream", "h:1", "--ledger-topic", "no/slash"};
    assert_true(parse(&cfg, 5, bad) < 0);
    assert_non_null(strstr(err, "--ledger-topic"));
}

/* The ledger and limits clients' own TLS files and librdkafka properties (ka_rdk_side.h). */
static void test_ledger_client_security_flags(void **state)
{
    (void)state;
    ka_config_t cfg;
    setenv("KADMIT_LEDGER_CA", "env-ca.pem", 1);
    const char *argv[] = {"kadmit",        "--upstream",   "h:1",   "--ledger-cert",
                          "l.pem",         "--ledger-key", "l.key", "--ledger-properties",
                          "rdk.properties"};
    assert_int_equal(parse(&cfg, 9, argv), KA_CONFIG_RUN);
    assert_string_equal(cfg.ledger_ca, "env-ca.pem");
    assert_string_equal(cfg.ledger_cert, "l.pem");
    assert_string_equal(cfg.ledger_key, "l.key");
    assert_string_equal(cfg.ledger_properties, "rdk.properties");
    const char *flag[] = {"kadmit", "--upstream", "h:1", "--ledger-ca", "flag-ca.pem"};
    assert_int_equal(parse(&cfg, 5, flag), KA_CONFIG_RUN);
    assert_string_equal(cfg.ledger_ca, "flag-ca.pem"); /* a flag wins over its variable */
    unsetenv("KADMIT_LEDGER_CA");
    const char *nokey[] = {"kadmit", "--upstream", "h:1", "--ledger-cert", "l.pem"};
    assert_true(parse(&cfg, 5, nokey) < 0);
    assert_non_null(strstr(err, "--ledger-cert and --ledger-key go together"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults_and_required_upstream, clear_env),
        cmocka_unit_test_setup(test_every_flag_in_both_spellings, clear_env),
        cmocka_unit_test_setup(test_environment_and_flags_win, clear_env),
        cmocka_unit_test_setup(test_inflight_and_metadata_upstream, clear_env),
        cmocka_unit_test_setup(test_size_suffixes, clear_env),
        cmocka_unit_test_setup(test_errors_name_flag_and_value, clear_env),
        cmocka_unit_test_setup(test_admin_allowed_hosts, clear_env),
        cmocka_unit_test_setup(test_admin_address_and_off, clear_env),
        cmocka_unit_test_setup(test_admin_token, clear_env),
        cmocka_unit_test_setup(test_cluster_secret, clear_env),
        cmocka_unit_test_setup(test_help_and_version, clear_env),
        cmocka_unit_test_setup(test_tls_and_sasl_flags, clear_env),
        cmocka_unit_test_setup(test_held_request_cap_must_fit_the_pool_with_a_policy, clear_env),
        cmocka_unit_test_setup(test_stalled_reader_timeout, clear_env),
        cmocka_unit_test_setup(test_ledger_is_on_with_a_policy_unless_turned_off, clear_env),
        cmocka_unit_test_setup(test_a_ledger_timeout_not_below_the_intent_ttl_is_refused,
                               clear_env),
        cmocka_unit_test_setup(test_ledger_client_security_flags, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
