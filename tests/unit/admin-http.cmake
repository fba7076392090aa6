# admin-http/ unit tests: every endpoint, the HTTP/1.1 connection rules, the
# connection limit with its probe reserve and the Host check,
# against a server on a real libuv loop (in a thread) with a fake proxy
# behind ka_admin_ops_t; and the session without sockets.
set(KA_ADMIN_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/admin-http)
if(TARGET ka_admin)
  add_library(ka_admin_fixtures STATIC ${KA_ADMIN_TEST_DIR}/admin_fixtures.c)
  target_link_libraries(ka_admin_fixtures PUBLIC ka_admin PkgConfig::CMOCKA)
  target_compile_options(ka_admin_fixtures PRIVATE ${KADMIT_WARNINGS})
  foreach(name endpoints connection limits session)
    ka_unit_test(test_admin_${name}
      SOURCES ${KA_ADMIN_TEST_DIR}/test_${name}.c LIBS ka_admin_fixtures ka_admin)
    target_include_directories(test_admin_${name} PRIVATE ${KA_ADMIN_TEST_DIR})
  endforeach()
  set_tests_properties(test_admin_connection test_admin_limits PROPERTIES TIMEOUT 60)

  # The fuzz target's replay binary replays the seed corpus in ordinary builds.
  if(NOT KADMIT_FUZZ)
    include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/admin-http.cmake)
  endif()
endif()
