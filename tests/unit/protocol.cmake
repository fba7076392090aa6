# protocol/ unit tests: reader and writer primitives, headers, every codec's
# round trip, ApiVersions clamping, decode error text, and the generated
# tables of API keys and Kafka error codes, and the gateway's endpoint rewrite.
set(KA_PROTOCOL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/protocol)
ka_unit_test(test_protocol_reader_writer
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_reader_writer.c LIBS ka_protocol)
ka_unit_test(test_protocol_header
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_header.c LIBS ka_protocol)
ka_unit_test(test_protocol_codec_roundtrip
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_codec_roundtrip.c
          ${KA_PROTOCOL_TEST_DIR}/generated_samples.c
  LIBS ka_protocol)
ka_unit_test(test_protocol_apiversions_clamp
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_apiversions_clamp.c LIBS ka_protocol)
ka_unit_test(test_protocol_decode_error
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_decode_error.c LIBS ka_protocol)
ka_unit_test(test_protocol_endpoints
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_endpoints.c LIBS ka_protocol)
ka_unit_test(test_protocol_tables
  SOURCES ${KA_PROTOCOL_TEST_DIR}/test_tables.c LIBS ka_protocol)

# Regenerating the codecs must reproduce the checked-in files exactly. The
# check never skips: without the pinned kafka-clients jar in the cache (see
# protocol/gen/fetch-specs.sh) it fails and says how to get it.
add_test(NAME protocol_generated_up_to_date
         COMMAND sh ${PROJECT_SOURCE_DIR}/protocol/gen/check.sh)

# The fuzz targets' replay binaries (a plain main over files) build with any
# compiler; here they replay the seed corpus as regression tests.
option(KADMIT_FUZZ_REPLAY "Build <target>_replay binaries for the protocol fuzz targets" ON)
if(KADMIT_FUZZ_REPLAY AND NOT KADMIT_FUZZ)
  include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/protocol.cmake)
endif()
