# proxy/ fuzz targets: the frame splitter under random chunkings.
#
# Included from tests/fuzz/CMakeLists.txt in fuzz builds (KADMIT_FUZZ=ON,
# clang) and from tests/unit/proxy.cmake otherwise, where only the replay
# binary is built (any compiler) and replays the seed corpus as a test.
set(KA_PROXY_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/proxy)
set(KA_PROXY_FUZZ_SOURCES ${KA_PROXY_FUZZ_DIR}/fuzz_frame.c
    ${CMAKE_CURRENT_LIST_DIR}/../unit/proxy/frame_fixtures.c)
if(TARGET ka_proxy_core)
  if(KADMIT_FUZZ)
    ka_fuzz_target(fuzz_proxy_frame SOURCES ${KA_PROXY_FUZZ_SOURCES} LIBS ka_proxy_core)
    target_include_directories(fuzz_proxy_frame PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../unit/proxy)
  endif()
  add_executable(fuzz_proxy_frame_replay ${KA_PROXY_FUZZ_SOURCES}
                 ${CMAKE_CURRENT_LIST_DIR}/ka_fuzz_replay.c)
  target_link_libraries(fuzz_proxy_frame_replay PRIVATE ka_proxy_core)
  target_include_directories(fuzz_proxy_frame_replay PRIVATE
                             ${CMAKE_CURRENT_LIST_DIR}/../unit/proxy)
  target_compile_options(fuzz_proxy_frame_replay PRIVATE ${KADMIT_WARNINGS})
  if(KADMIT_TESTS)
    add_test(NAME fuzz_proxy_frame_replay_corpus
             COMMAND fuzz_proxy_frame_replay ${KA_PROXY_FUZZ_DIR}/corpus)
  endif()
endif()

# The SCRAM client's parsers of server messages (corpus in tests/fuzz/corpus/fuzz_proxy_scram).
if(TARGET ka_proxy_core)
  set(KA_SCRAM_FUZZ_SOURCES ${KA_PROXY_FUZZ_DIR}/fuzz_scram.c)
  if(KADMIT_FUZZ)
    ka_fuzz_target(fuzz_proxy_scram SOURCES ${KA_SCRAM_FUZZ_SOURCES} LIBS ka_proxy_core)
  endif()
  add_executable(fuzz_proxy_scram_replay ${KA_SCRAM_FUZZ_SOURCES}
                 ${CMAKE_CURRENT_LIST_DIR}/ka_fuzz_replay.c)
  target_link_libraries(fuzz_proxy_scram_replay PRIVATE ka_proxy_core)
  target_compile_options(fuzz_proxy_scram_replay PRIVATE ${KADMIT_WARNINGS})
  if(KADMIT_TESTS)
    add_test(NAME fuzz_proxy_scram_replay_corpus
             COMMAND fuzz_proxy_scram_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/fuzz_proxy_scram)
  endif()
endif()
