# proxy/ unit tests: the frame splitter, the in-flight queue, the relay; and an end-to-end forwarding script against
# a tiny framed server (python3).
set(KA_PROXY_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/proxy)
if(TARGET ka_proxy_core)
  ka_unit_test(test_proxy_frame
    SOURCES ${KA_PROXY_TEST_DIR}/test_frame.c ${KA_PROXY_TEST_DIR}/frame_fixtures.c
    LIBS ka_proxy_core)
  ka_unit_test(test_proxy_inflight
    SOURCES ${KA_PROXY_TEST_DIR}/test_inflight.c LIBS ka_proxy_core)
  ka_unit_test(test_proxy_sasl_principal
    SOURCES ${KA_PROXY_TEST_DIR}/test_sasl_principal.c LIBS ka_proxy_core)
  # The same parsers against a port of Kafka's (PlainSaslServer, ScramMessages), on generated tokens.
  find_program(KA_PYTHON3_MODEL python3)
  if(KA_PYTHON3_MODEL)
    add_executable(sasl_principal_driver ${KA_PROXY_TEST_DIR}/sasl_principal_driver.c)
    target_link_libraries(sasl_principal_driver PRIVATE ka_proxy_core)
    target_compile_options(sasl_principal_driver PRIVATE ${KADMIT_WARNINGS})
    add_test(NAME test_proxy_sasl_principal_kafka_model
             COMMAND ${KA_PYTHON3_MODEL} ${KA_PROXY_TEST_DIR}/sasl_principal_kafka_model.py
                     $<TARGET_FILE:sasl_principal_driver>)
    set_tests_properties(test_proxy_sasl_principal_kafka_model PROPERTIES TIMEOUT 60)
  endif()
endif()
if(TARGET ka_proxy)
  find_package(Threads REQUIRED)
  # The TLS engine in memory: gathered writes, and what it says about kernel TLS.
  ka_unit_test(test_proxy_tls_transport
    SOURCES ${KA_PROXY_TEST_DIR}/test_tls_transport.c LIBS ka_proxy)
  ka_unit_test(test_proxy_relay
    SOURCES ${KA_PROXY_TEST_DIR}/test_relay.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  # Large pass-through frames spliced both ways through slow readers, and with splice off.
  ka_unit_test(test_proxy_splice
    SOURCES ${KA_PROXY_TEST_DIR}/test_splice.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  set_tests_properties(test_proxy_relay PROPERTIES TIMEOUT 20)
  ka_unit_test(test_proxy_relay_defer
    SOURCES ${KA_PROXY_TEST_DIR}/test_relay_defer.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  set_tests_properties(test_proxy_relay_defer PROPERTIES TIMEOUT 20)
  ka_unit_test(test_proxy_relay_held
    SOURCES ${KA_PROXY_TEST_DIR}/test_relay_held.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  set_tests_properties(test_proxy_relay_held PROPERTIES TIMEOUT 20)
  ka_unit_test(test_proxy_relay_principal
    SOURCES ${KA_PROXY_TEST_DIR}/test_relay_principal.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  set_tests_properties(test_proxy_relay_principal PROPERTIES TIMEOUT 20)
  ka_unit_test(test_proxy_reclaim
    SOURCES ${KA_PROXY_TEST_DIR}/test_reclaim.c ${KA_PROXY_TEST_DIR}/socket_fixtures.c LIBS ka_proxy Threads::Threads)
  set_tests_properties(test_proxy_reclaim PROPERTIES TIMEOUT 30)
endif()
find_program(KA_PYTHON3 python3)
if(TARGET kadmit AND KA_PYTHON3)
  add_test(NAME test_proxy_e2e_forwarding
           COMMAND ${KA_PYTHON3} ${KA_PROXY_TEST_DIR}/e2e_forwarding.py $<TARGET_FILE:kadmit>)
  set_tests_properties(test_proxy_e2e_forwarding PROPERTIES TIMEOUT 60)
  # The policy's JSON Schema and the example policies agree with kadmit's validator.
  add_test(NAME test_policy_schema
           COMMAND ${KA_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/policy/test_policy_schema.py
                   $<TARGET_FILE:kadmit>)
  set_tests_properties(test_policy_schema PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# The fuzz target's replay binary replays the seed corpus in ordinary builds.
if(NOT KADMIT_FUZZ)
  include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/proxy.cmake)
endif()
