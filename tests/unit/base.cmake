# base/ unit tests: the memory pool, configuration, metrics rendering and log lines.
set(KA_BASE_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/base)
foreach(name pool config config_gateway metrics)
  ka_unit_test(test_base_${name} SOURCES ${KA_BASE_TEST_DIR}/test_${name}.c LIBS ka_base)
endforeach()
# Log lines: escaping and cutting.
ka_unit_test(test_base_log SOURCES ${KA_BASE_TEST_DIR}/test_log.c LIBS ka_base jansson)
# Audit events and the rule counter.
ka_unit_test(test_base_audit SOURCES ${KA_BASE_TEST_DIR}/test_audit.c LIBS ka_base jansson)
