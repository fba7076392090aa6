# admin-http/ fuzz target: raw bytes into the HTTP session and router (no
# sockets). Seeds live in tests/fuzz/admin-http/corpus/.
#
# Included from tests/fuzz/CMakeLists.txt in fuzz builds (KADMIT_FUZZ=ON,
# clang) and from tests/unit/admin-http.cmake otherwise, where only the
# replay binary is built (any compiler) and replays the seeds as a test.
set(KA_ADMIN_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/admin-http)
if(TARGET ka_admin)
  if(KADMIT_FUZZ)
    ka_fuzz_target(fuzz_admin_http SOURCES ${KA_ADMIN_FUZZ_DIR}/fuzz_admin_http.c LIBS ka_admin)
  endif()
  add_executable(fuzz_admin_http_replay ${KA_ADMIN_FUZZ_DIR}/fuzz_admin_http.c
                 ${CMAKE_CURRENT_LIST_DIR}/ka_fuzz_replay.c)
  target_link_libraries(fuzz_admin_http_replay PRIVATE ka_admin)
  target_compile_options(fuzz_admin_http_replay PRIVATE ${KADMIT_WARNINGS})
  if(KADMIT_TESTS)
    add_test(NAME fuzz_admin_http_replay_corpus
             COMMAND fuzz_admin_http_replay ${KA_ADMIN_FUZZ_DIR}/corpus)
  endif()
endif()
