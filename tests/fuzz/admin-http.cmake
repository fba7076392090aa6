# admin-http/ fuzz target: raw bytes into the HTTP session and router (no
# sockets). Seeds live in tests/fuzz/corpus/fuzz_admin_http/.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_admin)
  ka_fuzz(fuzz_admin_http SOURCES ${KA_FUZZ_DIR}/admin-http/fuzz_admin_http.c LIBS ka_admin)
endif()
# The what-if body parser (POST /v1/what-if), judged by the engine when it parses. Seeds live
# in tests/fuzz/corpus/fuzz_whatif/.
if(TARGET ka_admin)
  ka_fuzz(fuzz_whatif SOURCES ${KA_FUZZ_DIR}/admin-http/fuzz_whatif.c LIBS ka_admin)
endif()
