/*
 * test_config_gateway.c: gateway mode's options (base/ka_config_gateway.c):
 * the upstream list, the three routings and what each needs, the advertised
 * host, the port of a broker id, the environment variables, and the errors
 * that name the flag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
                          "KADMIT_MODE",
                          "KADMIT_GATEWAY_PORT_BASE",
                          "KADMIT_GATEWAY_PORT_MAP",
                          "KADMIT_GATEWAY_SNI_DOMAIN",
                          "KADMIT_ADVERTISE_HOST",
                          "KADMIT_ADVERTISE_PORT"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    return 0;
}

static void test_sidecar_is_the_default_and_takes_one_broker(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *one[] = {"kadmit", "--upstream", "b1:9092"};
    assert_int_equal(parse(&cfg, 3, one), KA_CONFIG_RUN);
    assert_int_equal(cfg.mode, KA_MODE_SIDECAR);
    assert_int_equal(cfg.upstream_count, 1);
    const char *list[] = {"kadmit", "--upstream", "b1:9092,b2:9092"};
    assert_true(parse(&cfg, 3, list) < 0);
    assert_non_null(strstr(err, "--mode gateway"));
    const char *base[] = {"kadmit", "--upstream", "b1:9092", "--gateway-port-base", "9100"};
    assert_true(parse(&cfg, 5, base) < 0);
    assert_non_null(strstr(err, "need --mode gateway"));
}

static void test_gateway_with_a_port_base(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *argv[] = {"kadmit",
                          "--mode",
                          "gateway",
                          "--upstream",
                          "b1:9092,[::1]:9093,b3:9094",
                          "--listen",
                          "10.0.0.1:9092",
                          "--gateway-port-base",
                          "9100"};
    assert_int_equal(parse(&cfg, 9, argv), KA_CONFIG_RUN);
    assert_int_equal(cfg.mode, KA_MODE_GATEWAY);
    assert_int_equal(cfg.upstream_count, 3);
    assert_string_equal(cfg.upstream.host, "b1");
    assert_string_equal(cfg.upstreams[1].host, "::1");
    assert_int_equal(cfg.upstreams[2].port, 9094);
    /* The advertised host defaults to the --listen host. */
    assert_string_equal(cfg.advertise_host, "10.0.0.1");
    assert_int_equal(ka_config_gateway_port(&cfg, 0), 9100);
    assert_int_equal(ka_config_gateway_port(&cfg, 7), 9107);
    assert_int_equal(ka_config_gateway_port(&cfg, -1), 0);
    assert_int_equal(ka_config_gateway_port(&cfg, 70000), 0); /* past 65535 */
}

static void test_a_wildcard_listen_needs_an_advertised_host(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *argv[] = {
        "kadmit", "--mode", "gateway", "--upstream", "b1:9092", "--gateway-port-base", "9100"};
    assert_true(parse(&cfg, 7, argv) < 0); /* --listen defaults to 0.0.0.0 */
    assert_non_null(strstr(err, "--advertise-host"));
    const char *ok[] = {"kadmit",     "--mode",           "gateway",
                        "--upstream", "b1:9092",          "--gateway-port-base",
                        "9100",       "--advertise-host", "kafka.example.com"};
    assert_int_equal(parse(&cfg, 9, ok), KA_CONFIG_RUN);
    assert_string_equal(cfg.advertise_host, "kafka.example.com");
}

static void test_a_port_map(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *argv[] = {"kadmit",
                          "--mode",
                          "gateway",
                          "--upstream",
                          "b:1",
                          "--listen",
                          "h:9092",
                          "--gateway-port-map",
                          "1=9201,2=9202,100=9300"};
    assert_int_equal(parse(&cfg, 9, argv), KA_CONFIG_RUN);
    assert_int_equal(cfg.gw_port_map_count, 3);
    assert_int_equal(ka_config_gateway_port(&cfg, 100), 9300);
    assert_int_equal(ka_config_gateway_port(&cfg, 2), 9202);
    assert_int_equal(ka_config_gateway_port(&cfg, 3), 0); /* no port for it */
    const char *bad[][2] = {
        {"--gateway-port-map", "1=9201,1=9202"}, {"--gateway-port-map", "1=9201,2=9201"},
        {"--gateway-port-map", "1:9201"},        {"--gateway-port-map", "1=0"},
        {"--gateway-port-map", "x=9201"},        {"--gateway-port-map", "1=9092"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *a[] = {"kadmit",   "--mode", "gateway", "--upstream", "b:1",
                           "--listen", "h:9092", bad[i][0], bad[i][1]};
        assert_true(parse(&cfg, 9, a) < 0);
        assert_non_null(strstr(err, "--gateway-port-map"));
    }
}

static void test_exactly_one_routing(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *none[] = {"kadmit", "--mode", "gateway", "--upstream", "b:1", "--listen", "h:1"};
    assert_true(parse(&cfg, 7, none) < 0);
    assert_non_null(strstr(err, "exactly one of"));
    const char *two[] = {"kadmit",  "--mode",
                         "gateway", "--upstream",
                         "b:1",     "--listen",
                         "h:1",     "--gateway-port-base",
                         "9100",    "--gateway-port-map",
                         "1=9300"};
    assert_true(parse(&cfg, 11, two) < 0);
    assert_non_null(strstr(err, "exactly one of"));
    /* The bootstrap port must be below the broker ports of a base. */
    const char *clash[] = {"kadmit", "--mode",   "gateway", "--upstream",
                           "b:1",    "--listen", "h:9105",  "--gateway-port-base",
                           "9100"};
    assert_true(parse(&cfg, 9, clash) < 0);
    assert_non_null(strstr(err, "below --gateway-port-base"));
}

static void test_sni_mode(void **state)
{
    (void)state;
    ka_config_t cfg;
    const char *notls[] = {"kadmit",
                           "--mode",
                           "gateway",
                           "--upstream",
                           "b:1",
                           "--listen",
                           "0.0.0.0:9093",
                           "--gateway-sni-domain",
                           "Kafka.Example.com"};
    assert_true(parse(&cfg, 9, notls) < 0);
    assert_non_null(strstr(err, "--tls-cert"));
    const char *ok[] = {"kadmit",
                        "--mode",
                        "gateway",
                        "--upstream",
                        "b:1",
                        "--listen",
                        "0.0.0.0:9093",
                        "--gateway-sni-domain",
                        "Kafka.Example.com",
                        "--tls-cert",
                        "c.pem",
                        "--tls-key",
                        "k.pem",
                        "--advertise-port",
                        "443"};
    assert_int_equal(parse(&cfg, 15, ok), KA_CONFIG_RUN);
    assert_string_equal(cfg.gw_sni_domain, "kafka.example.com"); /* names are case-blind */
    assert_int_equal(cfg.advertise_port, 443);
    assert_int_equal(ka_config_gateway_port(&cfg, 1), 0); /* one port for all */
    const char *badname[][2] = {{"--gateway-sni-domain", ".example.com"},
                                {"--gateway-sni-domain", "a..b"},
                                {"--gateway-sni-domain", "under_score.com"},
                                {"--gateway-sni-domain", ""}};
    for (size_t i = 0; i < sizeof(badname) / sizeof(badname[0]); i++) {
        const char *a[] = {"kadmit", "--mode", "gateway", badname[i][0], badname[i][1]};
        assert_true(parse(&cfg, 5, a) < 0);
        assert_non_null(strstr(err, "--gateway-sni-domain"));
    }
    /* --advertise-port is SNI mode's only. */
    const char *port[] = {"kadmit", "--mode",           "gateway", "--upstream",
                          "b:1",    "--listen",         "h:9092",  "--gateway-port-base",
                          "9100",   "--advertise-port", "443"};
    assert_true(parse(&cfg, 11, port) < 0);
    assert_non_null(strstr(err, "--advertise-port"));
}

static void test_environment_and_errors(void **state)
{
    (void)state;
    ka_config_t cfg;
    setenv("KADMIT_MODE", "gateway", 1);
    setenv("KADMIT_UPSTREAM", "b1:9092,b2:9092", 1);
    setenv("KADMIT_LISTEN", "10.1.1.1:9092", 1);
    setenv("KADMIT_GATEWAY_PORT_BASE", "19000", 1);
    setenv("KADMIT_ADVERTISE_HOST", "gw.example.com", 1);
    const char *none[] = {"kadmit"};
    assert_int_equal(parse(&cfg, 1, none), KA_CONFIG_RUN);
    assert_int_equal(cfg.mode, KA_MODE_GATEWAY);
    assert_int_equal(cfg.upstream_count, 2);
    assert_int_equal(cfg.gw_port_base, 19000);
    assert_string_equal(cfg.advertise_host, "gw.example.com");
    /* A flag wins over its variable. */
    const char *flag[] = {"kadmit", "--gateway-port-base", "20000"};
    assert_int_equal(parse(&cfg, 3, flag), KA_CONFIG_RUN);
    assert_int_equal(cfg.gw_port_base, 20000);
    setenv("KADMIT_MODE", "router", 1);
    assert_true(parse(&cfg, 1, none) < 0);
    assert_non_null(strstr(err, "KADMIT_MODE=router"));
    unsetenv("KADMIT_MODE");
    const char *many[] = {"kadmit", "--upstream",
                          "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,a:16,"
                          "a:17"};
    assert_true(parse(&cfg, 3, many) < 0);
    assert_non_null(strstr(err, "at most 16"));
    const char *empty[] = {"kadmit", "--upstream", "a:1,,a:2"};
    assert_true(parse(&cfg, 3, empty) < 0);
    assert_non_null(strstr(err, "--upstream"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sidecar_is_the_default_and_takes_one_broker, clear_env),
        cmocka_unit_test_setup(test_gateway_with_a_port_base, clear_env),
        cmocka_unit_test_setup(test_a_wildcard_listen_needs_an_advertised_host, clear_env),
        cmocka_unit_test_setup(test_a_port_map, clear_env),
        cmocka_unit_test_setup(test_exactly_one_routing, clear_env),
        cmocka_unit_test_setup(test_sni_mode, clear_env),
        cmocka_unit_test_setup(test_environment_and_errors, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
