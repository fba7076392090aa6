# protocol/ fuzz targets: one per generated decoder (request and response of
# each API), the headers, and ApiVersions clamping. Seeds live in
# tests/fuzz/corpus/<target>/ (written by protocol/gen/generate.py).
#
# Included from tests/fuzz/CMakeLists.txt in fuzz builds (KADMIT_FUZZ=ON,
# clang) and from tests/unit/protocol.cmake otherwise, where only the
# <target>_replay binaries are built (any compiler) and replay the seeds as
# CTest tests.
set(KA_PROTOCOL_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(KA_PROTOCOL_FUZZ_CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus)

# ka_protocol_fuzz(<name> SOURCES ... [DEFINITIONS ...]): the libFuzzer
# target (fuzz builds only) and its replay twin.
function(ka_protocol_fuzz name)
  cmake_parse_arguments(P "" "" "SOURCES;DEFINITIONS" ${ARGN})
  if(KADMIT_FUZZ)
    ka_fuzz_target(${name} SOURCES ${P_SOURCES} LIBS ka_protocol)
    target_compile_definitions(${name} PRIVATE ${P_DEFINITIONS})
  endif()
  add_executable(${name}_replay ${P_SOURCES} ${KA_PROTOCOL_FUZZ_DIR}/ka_fuzz_replay.c)
  target_link_libraries(${name}_replay PRIVATE ka_protocol)
  target_compile_definitions(${name}_replay PRIVATE ${P_DEFINITIONS})
  target_compile_options(${name}_replay PRIVATE ${KADMIT_WARNINGS})
  if(KADMIT_TESTS AND EXISTS ${KA_PROTOCOL_FUZZ_CORPUS}/${name})
    add_test(NAME ${name}_replay_corpus
             COMMAND ${name}_replay ${KA_PROTOCOL_FUZZ_CORPUS}/${name})
  endif()
endfunction()

foreach(api apiversions:18 metadata:3 createtopics:19 createpartitions:37
            alterpartitionreassignments:45 describeconfigs:32 incrementalalterconfigs:44)
  string(REPLACE ":" ";" parts ${api})
  list(GET parts 0 api_name)
  list(GET parts 1 api_key)
  foreach(direction request response)
    string(TOUPPER ${direction} dir_upper)
    ka_protocol_fuzz(fuzz_${api_name}_${direction}
      SOURCES ${KA_PROTOCOL_FUZZ_DIR}/protocol/fuzz_codec.c
      DEFINITIONS KA_FUZZ_API_KEY=${api_key} KA_FUZZ_DIRECTION=KA_${dir_upper})
  endforeach()
endforeach()
ka_protocol_fuzz(fuzz_headers SOURCES ${KA_PROTOCOL_FUZZ_DIR}/protocol/fuzz_headers.c)
ka_protocol_fuzz(fuzz_apiversions_clamp
  SOURCES ${KA_PROTOCOL_FUZZ_DIR}/protocol/fuzz_apiversions_clamp.c)
