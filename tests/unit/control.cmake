# control/ unit tests: the SCRAM client and the policy store (reload,
# overrides, atomic writes, the watcher on a real libuv loop).
set(KA_CONTROL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/control)
ka_unit_test(test_control_scram SOURCES ${KA_CONTROL_TEST_DIR}/test_scram.c LIBS ka_control_core)
ka_unit_test(test_control_policy_store
  SOURCES ${KA_CONTROL_TEST_DIR}/test_policy_store.c LIBS ka_control)
ka_unit_test(test_control_rdk SOURCES ${KA_CONTROL_TEST_DIR}/test_rdk.c LIBS ka_control)
ka_unit_test(test_control_ledger_record
  SOURCES ${KA_CONTROL_TEST_DIR}/test_ledger_record.c LIBS ka_control_core)
ka_unit_test(test_control_ledger_state
  SOURCES ${KA_CONTROL_TEST_DIR}/test_ledger_state.c LIBS ka_control_core)
ka_unit_test(test_control_ledger_claims
  SOURCES ${KA_CONTROL_TEST_DIR}/test_ledger_claims.c LIBS ka_control_core)
