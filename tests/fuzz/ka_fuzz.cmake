# ka_fuzz(<name> SOURCES ... [LIBS ...] [INCLUDES ...] [DEFINITIONS ...] [CORPUS <dir>])
#
# Declares one fuzz target: the libFuzzer executable <name> in fuzz builds (KADMIT_FUZZ=ON,
# clang), and always its twin <name>_replay, the same sources with a plain main
# (ka_fuzz_replay.c) so that seeds and crash files replay under any compiler and ASan. CTest
# replays CORPUS (default tests/fuzz/corpus/<name>) through the twin when tests are on.
#
# Each module's tests/fuzz/<module>.cmake calls it; that file is included from
# tests/fuzz/CMakeLists.txt in fuzz builds and from tests/unit/<module>.cmake otherwise.
include_guard(GLOBAL)
set(KA_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

function(ka_fuzz name)
  cmake_parse_arguments(F "" "CORPUS" "SOURCES;LIBS;INCLUDES;DEFINITIONS" ${ARGN})
  if(NOT F_CORPUS)
    set(F_CORPUS ${KA_FUZZ_DIR}/corpus/${name})
  endif()
  add_executable(${name}_replay ${F_SOURCES} ${KA_FUZZ_DIR}/ka_fuzz_replay.c)
  set(targets ${name}_replay)
  if(KADMIT_FUZZ)
    add_executable(${name} ${F_SOURCES})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    list(APPEND targets ${name})
  endif()
  foreach(t IN LISTS targets)
    target_link_libraries(${t} PRIVATE ${F_LIBS})
    target_include_directories(${t} PRIVATE ${F_INCLUDES})
    target_compile_definitions(${t} PRIVATE ${F_DEFINITIONS})
    target_compile_options(${t} PRIVATE ${KADMIT_WARNINGS})
  endforeach()
  if(KADMIT_TESTS AND EXISTS ${F_CORPUS})
    add_test(NAME ${name}_replay_corpus COMMAND ${name}_replay ${F_CORPUS})
  endif()
endfunction()
