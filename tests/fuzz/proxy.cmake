# proxy/ fuzz targets: the frame splitter under random chunkings, the relay's
# mode switches (TLS sniffing, SASL v0 raw and opaque, held frames fed as their
# buffer grows), a client's first SASL token (PLAIN, SCRAM client-first), and the SCRAM client's parsers of server messages. Seeds in tests/fuzz/corpus/<target>/.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_proxy_core)
  ka_fuzz(fuzz_proxy_frame
          SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_frame.c ${KA_FUZZ_DIR}/../unit/proxy/frame_fixtures.c
          LIBS ka_proxy_core INCLUDES ${KA_FUZZ_DIR}/../unit/proxy)
  ka_fuzz(fuzz_proxy_relay_modes
          SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_relay_modes.c ${KA_FUZZ_DIR}/../unit/proxy/frame_fixtures.c
          LIBS ka_proxy_core INCLUDES ${KA_FUZZ_DIR}/../unit/proxy)
  ka_fuzz(fuzz_proxy_sasl_principal SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_sasl_principal.c
          LIBS ka_proxy_core)
  ka_fuzz(fuzz_proxy_scram SOURCES ${KA_FUZZ_DIR}/proxy/fuzz_scram.c LIBS ka_control_core)
endif()
