# policy/ unit tests: the policy model, the cluster view, the reservation
# ledger, the engine's verdicts and the properties of place mode.
set(KA_POLICY_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/policy)
add_library(ka_policy_fixtures STATIC ${KA_POLICY_TEST_DIR}/policy_fixtures.c)
target_link_libraries(ka_policy_fixtures PUBLIC ka_policy PkgConfig::CMOCKA)
target_compile_options(ka_policy_fixtures PRIVATE ${KADMIT_WARNINGS})
foreach(name model cluster reservations engine engine_partial place_properties placement patch
        rules_parse rules_configs engine_rules idle_interval engine_seams)
  ka_unit_test(test_policy_${name}
    SOURCES ${KA_POLICY_TEST_DIR}/test_${name}.c LIBS ka_policy_fixtures ka_policy)
endforeach()

# policy/'s files use each other one way only: includes and, read from the library with nm,
# which object defines each symbol another needs (docs/architecture.md, "Inside policy/").
find_program(KA_POLICY_PYTHON3 python3 REQUIRED)
if(KA_POLICY_PYTHON3)
  add_test(NAME test_policy_layers
           COMMAND ${KA_POLICY_PYTHON3} ${KA_POLICY_TEST_DIR}/test_policy_layers.py
                   ${PROJECT_SOURCE_DIR}/policy $<TARGET_FILE:ka_policy>)
  set_tests_properties(test_policy_layers PROPERTIES TIMEOUT 60)
endif()

# The policy fuzz target's replay binary replays the seed corpus in ordinary builds.
if(NOT KADMIT_FUZZ)
  include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/policy.cmake)
endif()

# The view builder over answers captured from a real broker; it decodes them
# with protocol/'s codecs first.
ka_unit_test(test_policy_view_build
  SOURCES ${KA_POLICY_TEST_DIR}/test_view_build.c LIBS ka_policy_fixtures ka_policy ka_protocol)
