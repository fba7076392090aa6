# control/ unit tests: the SCRAM client and the policy store (reload,
# overrides, atomic writes, the watcher on a real libuv loop).
set(KA_CONTROL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/control)
ka_unit_test(test_control_scram SOURCES ${KA_CONTROL_TEST_DIR}/scram/test_scram.c LIBS ka_control_core)
ka_unit_test(test_control_mdc_logdirs SOURCES ${KA_CONTROL_TEST_DIR}/metadata/test_mdc_logdirs.c
  LIBS ka_control_core)
ka_unit_test(test_control_mdc_idle SOURCES ${KA_CONTROL_TEST_DIR}/metadata/test_mdc_idle.c
  LIBS ka_control_core)
ka_unit_test(test_control_policy_store
  SOURCES ${KA_CONTROL_TEST_DIR}/store/test_policy_store.c LIBS ka_control)
ka_unit_test(test_control_mdc_conn SOURCES ${KA_CONTROL_TEST_DIR}/metadata/test_mdc_conn.c LIBS ka_control)
ka_unit_test(test_control_loop_watch SOURCES ${KA_CONTROL_TEST_DIR}/metadata/test_loop_watch.c LIBS ka_control)
ka_unit_test(test_control_limits_record
  SOURCES ${KA_CONTROL_TEST_DIR}/limits/test_limits_record.c LIBS ka_control_core)
# The admin API over the cluster's limits (deferred answers, layers); the
# fixtures' source is compiled in, as admin-http.cmake is read after this.
if(TARGET ka_admin)
  ka_unit_test(test_control_limits_admin
    SOURCES ${KA_CONTROL_TEST_DIR}/limits/test_limits_admin.c
            ${CMAKE_CURRENT_LIST_DIR}/admin-http/admin_fixtures.c
    LIBS ka_admin)
  target_include_directories(test_control_limits_admin PRIVATE ${CMAKE_CURRENT_LIST_DIR}/admin-http)
endif()
ka_unit_test(test_control_rdk SOURCES ${KA_CONTROL_TEST_DIR}/kclient/test_rdk.c LIBS ka_control)
# What the ledger and limits clients speak in each layout, and --ledger-properties.
ka_unit_test(test_control_rdk_side SOURCES ${KA_CONTROL_TEST_DIR}/kclient/test_rdk_side.c LIBS ka_control)
# The MAC of kadmit's own records (ledger and limits topics).
ka_unit_test(test_control_own_mac SOURCES ${KA_CONTROL_TEST_DIR}/kclient/test_own_mac.c LIBS ka_control_core)
ka_unit_test(test_control_ledger_record
  SOURCES ${KA_CONTROL_TEST_DIR}/ledger/test_ledger_record.c LIBS ka_control_core)
ka_unit_test(test_control_ledger_state
  SOURCES ${KA_CONTROL_TEST_DIR}/ledger/test_ledger_state.c LIBS ka_control_core)
ka_unit_test(test_control_ledger_claims
  SOURCES ${KA_CONTROL_TEST_DIR}/ledger/test_ledger_claims.c LIBS ka_control_core)
# kafka-configs' changes to the limits layer, and the layers DescribeConfigs shows.
ka_unit_test(test_control_configs_layer
  SOURCES ${KA_CONTROL_TEST_DIR}/limits/test_configs_layer.c LIBS ka_control_core)

# The control fuzz target's replay binary replays the seed corpus in ordinary builds.
if(NOT KADMIT_FUZZ)
  include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/control.cmake)
endif()
# Three simulated sidecars over one simulated cluster whose views lag: deletes, creates again
# under the same names, fenced brokers; the real engine, ledger records and ledger state.
ka_unit_test(test_control_ledger_sim
  SOURCES ${KA_CONTROL_TEST_DIR}/ledger/test_ledger_sim.c LIBS ka_control_core)
# The ledger's health: what makes it unusable, and the recreate path of a fatal producer.
ka_unit_test(test_control_ledger_health
  SOURCES ${KA_CONTROL_TEST_DIR}/ledger/test_ledger_health.c LIBS ka_control)
# Raising kadmit's topics' replication to min(3, brokers): when, to what.
ka_unit_test(test_control_own_rf SOURCES ${KA_CONTROL_TEST_DIR}/kclient/test_own_rf.c LIBS ka_control_core)
