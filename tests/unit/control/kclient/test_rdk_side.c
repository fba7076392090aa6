/*
 * test_rdk_side.c: what the ledger and limits clients speak and where they
 * bootstrap, for each layout (control/kclient/ka_rdk_side.h), and the parser of
 * --ledger-properties.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ka_error.h"
#include "ka_rdk_side.h"

#include <librdkafka/rdkafka.h>

typedef struct side {
    ka_rdk_security_t sec;
    char bootstrap[KA_RDK_BOOTSTRAP_MAX];
    enum ka_rdk_bootstrap_source source;
} side_t;

static ka_config_t base_config(void)
{
    ka_config_t cfg;
    ka_config_defaults(&cfg);
    snprintf(cfg.listen.host, sizeof(cfg.listen.host), "10.0.0.5");
    cfg.listen.port = 9092;
    cfg.listen.set = 1;
    snprintf(cfg.upstream.host, sizeof(cfg.upstream.host), "127.0.0.1");
    cfg.upstream.port = 19092;
    cfg.upstream.set = 1;
    return cfg;
}

static side_t derive(const ka_config_t *cfg, const ka_upstream_security_t *up)
{
    side_t s;
    char err[200] = "";
    assert_int_equal(ka_rdk_side_from(&s.sec, s.bootstrap, sizeof(s.bootstrap), &s.source, cfg, up,
                                      err, sizeof(err)),
                     0);
    return s;
}

static void test_plaintext_bootstraps_from_the_upstream(void **state)
{
    (void)state;
    ka_config_t cfg = base_config();
    side_t s = derive(&cfg, NULL);
    assert_false(s.sec.tls);
    assert_null(s.sec.mechanism);
    assert_int_equal(s.source, KA_RDK_BOOT_UPSTREAM);
    assert_string_equal(s.bootstrap, "127.0.0.1:19092");
}

static void test_tls_toward_clients_speaks_tls_through_listen(void **state)
{
    (void)state;
    ka_config_t cfg = base_config();
    snprintf(cfg.tls_cert, sizeof(cfg.tls_cert), "sidecar.pem");
    snprintf(cfg.tls_key, sizeof(cfg.tls_key), "sidecar.key");
    snprintf(cfg.upstream_ca, sizeof(cfg.upstream_ca), "broker-ca.pem");
    side_t s = derive(&cfg, NULL);
    assert_true(s.sec.tls);
    assert_true(s.sec.verify);
    assert_string_equal(s.sec.ca_file, "broker-ca.pem"); /* no client CA: the upstream CA */
    assert_null(s.sec.cert_file);                        /* the sidecars ask for no certificate */
    assert_int_equal(s.source, KA_RDK_BOOT_LISTEN);
    assert_string_equal(s.bootstrap, "10.0.0.5:9092");
    cfg.upstream_ca[0] = '\0';
    s = derive(&cfg, NULL);
    assert_null(s.sec.ca_file); /* the system store */
    snprintf(cfg.listen.host, sizeof(cfg.listen.host), "0.0.0.0");
    assert_string_equal(derive(&cfg, NULL).bootstrap, "127.0.0.1:9092");
    snprintf(cfg.listen.host, sizeof(cfg.listen.host), "::");
    assert_string_equal(derive(&cfg, NULL).bootstrap, "[::1]:9092");
}

static void test_mtls_presents_the_sidecar_certificate(void **state)
{
    (void)state;
    ka_config_t cfg = base_config();
    snprintf(cfg.tls_cert, sizeof(cfg.tls_cert), "sidecar.pem");
    snprintf(cfg.tls_key, sizeof(cfg.tls_key), "sidecar.key");
    snprintf(cfg.tls_client_ca, sizeof(cfg.tls_client_ca), "client-ca.pem");
    snprintf(cfg.upstream_ca, sizeof(cfg.upstream_ca), "broker-ca.pem");
    cfg.tls_client_auth = 2;
    side_t s = derive(&cfg, NULL);
    assert_string_equal(s.sec.ca_file, "client-ca.pem");
    assert_string_equal(s.sec.cert_file, "sidecar.pem");
    assert_string_equal(s.sec.key_file, "sidecar.key");
    /* The ledger's own files win. */
    snprintf(cfg.ledger_ca, sizeof(cfg.ledger_ca), "ledger-ca.pem");
    snprintf(cfg.ledger_cert, sizeof(cfg.ledger_cert), "ledger.pem");
    snprintf(cfg.ledger_key, sizeof(cfg.ledger_key), "ledger.key");
    s = derive(&cfg, NULL);
    assert_string_equal(s.sec.ca_file, "ledger-ca.pem");
    assert_string_equal(s.sec.cert_file, "ledger.pem");
    assert_string_equal(s.sec.key_file, "ledger.key");
}

static void test_sasl_and_upstream_tls(void **state)
{
    (void)state;
    ka_config_t cfg = base_config();
    ka_upstream_security_t up = {0};
    snprintf(up.mechanism, sizeof(up.mechanism), "SCRAM-SHA-512");
    snprintf(up.username, sizeof(up.username), "kadmit");
    snprintf(up.password, sizeof(up.password), "secret");
    /* SASL_PLAINTEXT on both sides: the upstream is a fine start. */
    side_t s = derive(&cfg, &up);
    assert_string_equal(s.sec.mechanism, "SCRAM-SHA-512");
    assert_string_equal(s.sec.username, "kadmit");
    assert_string_equal(s.sec.password, "secret");
    assert_false(s.sec.tls);
    assert_int_equal(s.source, KA_RDK_BOOT_UPSTREAM);
    /* TLS toward the broker only: the sidecars speak plaintext (SASL_PLAINTEXT). */
    cfg.upstream_tls = 1;
    s = derive(&cfg, &up);
    assert_false(s.sec.tls);
    assert_int_equal(s.source, KA_RDK_BOOT_LISTEN);
    /* --ledger-bootstrap wins over every default. */
    snprintf(cfg.ledger_bootstrap.host, sizeof(cfg.ledger_bootstrap.host), "kafka-0.kafka");
    cfg.ledger_bootstrap.port = 9093;
    cfg.ledger_bootstrap.set = 1;
    s = derive(&cfg, &up);
    assert_int_equal(s.source, KA_RDK_BOOT_FLAG);
    assert_string_equal(s.bootstrap, "kafka-0.kafka:9093");
}

/* A gateway's brokers advertise themselves: the own clients speak the brokers' side, whatever
 * kadmit serves clients, and bootstrap from every broker it was given. */
static void test_gateway_speaks_the_brokers_side(void **state)
{
    (void)state;
    ka_config_t cfg = base_config();
    cfg.mode = KA_MODE_GATEWAY;
    const char *hosts[] = {"b1.internal", "b2.internal", "b3.internal"};
    for (int i = 0; i < 3; i++) {
        snprintf(cfg.upstreams[i].host, sizeof(cfg.upstreams[i].host), "%s", hosts[i]);
        cfg.upstreams[i].port = 9093;
        cfg.upstreams[i].set = 1;
    }
    cfg.upstream_count = 3;
    cfg.upstream = cfg.upstreams[0];
    snprintf(cfg.tls_cert, sizeof(cfg.tls_cert), "gateway.pem"); /* TLS toward clients only */
    snprintf(cfg.tls_key, sizeof(cfg.tls_key), "gateway.key");
    snprintf(cfg.tls_client_ca, sizeof(cfg.tls_client_ca), "clients-ca.pem");
    side_t s = derive(&cfg, NULL);
    assert_false(s.sec.tls);
    assert_null(s.sec.cert_file);
    assert_int_equal(s.source, KA_RDK_BOOT_UPSTREAM);
    assert_string_equal(s.bootstrap, "b1.internal:9093,b2.internal:9093,b3.internal:9093");

    cfg.upstream_tls = 1; /* TLS to the brokers: their CA and kadmit's client certificate */
    snprintf(cfg.upstream_ca, sizeof(cfg.upstream_ca), "broker-ca.pem");
    snprintf(cfg.upstream_cert, sizeof(cfg.upstream_cert), "kadmit.pem");
    snprintf(cfg.upstream_key, sizeof(cfg.upstream_key), "kadmit.key");
    cfg.upstream_verify = 0;
    s = derive(&cfg, NULL);
    assert_true(s.sec.tls);
    assert_false(s.sec.verify);
    assert_string_equal(s.sec.ca_file, "broker-ca.pem");
    assert_string_equal(s.sec.cert_file, "kadmit.pem");
    assert_string_equal(s.sec.key_file, "kadmit.key");

    for (int i = 0; i < KA_GW_MAX_UPSTREAMS; i++) { /* only whole addresses, as many as fit */
        memset(cfg.upstreams[i].host, 'h', KA_CONFIG_HOST_MAX - 1);
        cfg.upstreams[i].host[KA_CONFIG_HOST_MAX - 1] = '\0';
        cfg.upstreams[i].port = 9093;
    }
    cfg.upstream_count = KA_GW_MAX_UPSTREAMS;
    cfg.upstream = cfg.upstreams[0];
    s = derive(&cfg, NULL);
    size_t len = strlen(s.bootstrap), one = KA_CONFIG_HOST_MAX - 1 + strlen(":9093");
    assert_true(len < sizeof(s.bootstrap));
    assert_int_equal((len + 1) % (one + 1), 0);
    assert_string_equal(s.bootstrap + len - 5, ":9093");
}

static void test_properties_parse(void **state)
{
    (void)state;
    char err[200] = "", **pairs = NULL;
    const char *text = "# comment\n\n ssl.endpoint.identification.algorithm = none \r\n"
                       "socket.timeout.ms=5000\nempty=\n";
    assert_int_equal(ka_rdk_props_parse(text, strlen(text), &pairs, err, sizeof(err)), 0);
    assert_string_equal(pairs[0], "ssl.endpoint.identification.algorithm");
    assert_string_equal(pairs[1], "none");
    assert_string_equal(pairs[2], "socket.timeout.ms");
    assert_string_equal(pairs[3], "5000");
    assert_string_equal(pairs[4], "empty");
    assert_string_equal(pairs[5], "");
    assert_null(pairs[6]);
    free(pairs);

    const char *bad = "a=1\nno equals sign\n";
    assert_int_equal(ka_rdk_props_parse(bad, strlen(bad), &pairs, err, sizeof(err)), KA_EINVALID);
    assert_non_null(strstr(err, "line 2"));
    assert_null(pairs);
    assert_int_equal(ka_rdk_props_parse("=x\n", 3, &pairs, err, sizeof(err)), KA_EINVALID);

    /* Bounded: too many pairs, too long a line. */
    size_t n = (KA_RDK_PROPS_MAX + 1) * 6;
    char *many = malloc(n + 1), *p = many;
    for (int i = 0; i <= KA_RDK_PROPS_MAX; i++)
        p += sprintf(p, "k%03d=\n", i % 1000);
    assert_int_equal(ka_rdk_props_parse(many, (size_t)(p - many), &pairs, err, sizeof(err)),
                     KA_EINVALID);
    assert_non_null(strstr(err, "more than"));
    free(many);
    char *longline = malloc(KA_RDK_PROP_LINE_MAX + 8);
    memset(longline, 'a', KA_RDK_PROP_LINE_MAX + 8);
    longline[1] = '=';
    assert_int_equal(
        ka_rdk_props_parse(longline, KA_RDK_PROP_LINE_MAX + 8, &pairs, err, sizeof(err)),
        KA_EINVALID);
    assert_non_null(strstr(err, "longer than"));
    free(longline);
}

static void test_properties_file_reaches_the_security(void **state)
{
    (void)state;
    char path[] = "/tmp/kadmit-rdk-side-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("socket.keepalive.enable=true\n", f);
    fclose(f);
    ka_config_t cfg = base_config();
    snprintf(cfg.ledger_properties, sizeof(cfg.ledger_properties), "%s", path);
    side_t s = derive(&cfg, NULL);
    assert_non_null(s.sec.user_props);
    assert_string_equal(s.sec.user_props[0], "socket.keepalive.enable");
    assert_string_equal(s.sec.user_props[1], "true");
    assert_null(s.sec.user_props[2]);
    remove(path);
    snprintf(cfg.ledger_properties, sizeof(cfg.ledger_properties), "%s.missing", path);
    char err[300] = "";
    assert_int_equal(ka_rdk_side_from(&s.sec, s.bootstrap, sizeof(s.bootstrap), &s.source, &cfg,
                                      NULL, err, sizeof(err)),
                     KA_EINVALID);
    assert_non_null(strstr(err, "--ledger-properties"));
}

/* The value kadmit sets for name in one client's settings, or NULL. */
static const char *prop(enum ka_rdk_use use, const char *name)
{
    const char *value = NULL;
    for (const char *const *p = ka_rdk_side_props(use); p[0] != NULL; p += 2)
        if (strcmp(p[0], name) == 0)
            value = p[1];
    return value;
}

/*
 * Every setting of every client is one the linked librdkafka accepts (a
 * misspelt name or a bad value would fail the handle at start-up), and the
 * ones the cold start and the ledger's latency depend on are there.
 */
static void test_own_clients_settings_are_accepted_and_tuned(void **state)
{
    static const enum ka_rdk_use uses[] = {KA_RDK_USE_LEDGER_PRODUCER, KA_RDK_USE_LEDGER_CONSUMER,
                                           KA_RDK_USE_LIMITS_PRODUCER, KA_RDK_USE_LIMITS_CONSUMER};
    char err[512];

    (void)state;
    for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        size_t pairs = 0;
        for (const char *const *p = ka_rdk_side_props(uses[i]); p[0] != NULL; p += 2, pairs++) {
            assert_non_null(p[1]);
            if (rd_kafka_conf_set(conf, p[0], p[1], err, sizeof(err)) != RD_KAFKA_CONF_OK)
                fail_msg("client %zu: %s=%s refused: %s", i, p[0], p[1], err);
        }
        assert_true(pairs > 0);
        rd_kafka_conf_destroy(conf);
        /* Only CreateTopics, with kadmit's settings, creates kadmit's topics. */
        assert_string_equal(prop(uses[i], "allow.auto.create.topics"), "false");
        assert_string_equal(prop(uses[i], "topic.metadata.refresh.fast.interval.ms"), "50");
        assert_string_equal(prop(uses[i], "socket.nagle.disable"), "true");
    }
    /* One intent is one record, sent at once, acknowledged by every in-sync replica. */
    assert_string_equal(prop(KA_RDK_USE_LEDGER_PRODUCER, "linger.ms"), "0");
    assert_string_equal(prop(KA_RDK_USE_LEDGER_PRODUCER, "acks"), "all");
    assert_string_equal(prop(KA_RDK_USE_LEDGER_PRODUCER, "enable.idempotence"), "true");
    /* The read-back never waits out a fetch. */
    assert_string_equal(prop(KA_RDK_USE_LEDGER_CONSUMER, "fetch.min.bytes"), "1");
    assert_true(atoi(prop(KA_RDK_USE_LEDGER_CONSUMER, "fetch.wait.max.ms")) <= 10);
    /* Producer-only settings stay off the consumers (librdkafka warns about them). */
    assert_null(prop(KA_RDK_USE_LEDGER_CONSUMER, "retry.backoff.ms"));
    assert_null(prop(KA_RDK_USE_LIMITS_CONSUMER, "linger.ms"));
    assert_string_equal(prop(KA_RDK_USE_LIMITS_CONSUMER, "enable.partition.eof"), "true");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plaintext_bootstraps_from_the_upstream),
        cmocka_unit_test(test_tls_toward_clients_speaks_tls_through_listen),
        cmocka_unit_test(test_mtls_presents_the_sidecar_certificate),
        cmocka_unit_test(test_sasl_and_upstream_tls),
        cmocka_unit_test(test_gateway_speaks_the_brokers_side),
        cmocka_unit_test(test_properties_parse),
        cmocka_unit_test(test_properties_file_reaches_the_security),
        cmocka_unit_test(test_own_clients_settings_are_accepted_and_tuned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
