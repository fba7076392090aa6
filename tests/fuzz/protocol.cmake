# protocol/ fuzz targets: one per generated decoder (request and response of
# each API), the headers, and ApiVersions clamping. Seeds live in
# tests/fuzz/corpus/<target>/ (written by protocol/gen/generate.py).
#
# Included from tests/fuzz/CMakeLists.txt in fuzz builds (KADMIT_FUZZ=ON,
# clang) and from tests/unit/protocol.cmake otherwise, where only the
# <target>_replay binaries are built (any compiler) and replay the seeds as
# CTest tests.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)

# ka_protocol_fuzz(<name> SOURCES ... [DEFINITIONS ...]): a fuzz target on ka_protocol.
function(ka_protocol_fuzz name)
  ka_fuzz(${name} LIBS ka_protocol ${ARGN})
endfunction()

foreach(api apiversions:18 metadata:3 createtopics:19 createpartitions:37
            alterpartitionreassignments:45 describeconfigs:32 incrementalalterconfigs:44
            saslhandshake:17 saslauthenticate:36 describecluster:60 deletetopics:20
            alterconfigs:33 streamsgroupheartbeat:88 deleterecords:21 describelogdirs:35)
  string(REPLACE ":" ";" parts ${api})
  list(GET parts 0 api_name)
  list(GET parts 1 api_key)
  foreach(direction request response)
    string(TOUPPER ${direction} dir_upper)
    ka_protocol_fuzz(fuzz_${api_name}_${direction}
      SOURCES ${KA_FUZZ_DIR}/protocol/fuzz_codec.c
      DEFINITIONS KA_FUZZ_API_KEY=${api_key} KA_FUZZ_DIRECTION=KA_${dir_upper})
  endforeach()
endforeach()
ka_protocol_fuzz(fuzz_headers SOURCES ${KA_FUZZ_DIR}/protocol/fuzz_headers.c)
ka_protocol_fuzz(fuzz_apiversions_clamp
  SOURCES ${KA_FUZZ_DIR}/protocol/fuzz_apiversions_clamp.c)
# The gateway's endpoint rewrite; seeds from tests/data/frames/gateway (tests/tools/frames_to_seeds.py).
ka_protocol_fuzz(fuzz_endpoints SOURCES ${KA_FUZZ_DIR}/protocol/fuzz_endpoints.c)
