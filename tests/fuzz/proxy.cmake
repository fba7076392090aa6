# proxy/ fuzz targets: the frame splitter under random chunkings, and the SCRAM
# client's parsers of server messages. Seeds in tests/fuzz/corpus/<target>/.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_proxy_core)
  ka_fuzz(fuzz_proxy_frame
          SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_frame.c ${KA_FUZZ_DIR}/../unit/proxy/frame_fixtures.c
          LIBS ka_proxy_core INCLUDES ${KA_FUZZ_DIR}/../unit/proxy)
  ka_fuzz(fuzz_proxy_scram SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_scram.c LIBS ka_control_core)
endif()
