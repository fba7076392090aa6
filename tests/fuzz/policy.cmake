# policy/ fuzz target: the policy parser and the merge patches of API
# overrides (the state file) on untrusted bytes. Seeds in corpus/fuzz_policy_patch/.
#
# Included from tests/fuzz/CMakeLists.txt in fuzz builds (KADMIT_FUZZ=ON,
# clang) and from tests/unit/policy.cmake otherwise, where only the replay
# binary is built and replays the seeds as a test.
set(KA_POLICY_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/policy)
if(TARGET ka_policy)
  if(KADMIT_FUZZ)
    ka_fuzz_target(fuzz_policy_patch SOURCES ${KA_POLICY_FUZZ_DIR}/fuzz_policy_patch.c
                   LIBS ka_policy)
  endif()
  add_executable(fuzz_policy_patch_replay ${KA_POLICY_FUZZ_DIR}/fuzz_policy_patch.c
                 ${CMAKE_CURRENT_LIST_DIR}/ka_fuzz_replay.c)
  target_link_libraries(fuzz_policy_patch_replay PRIVATE ka_policy)
  target_compile_options(fuzz_policy_patch_replay PRIVATE ${KADMIT_WARNINGS})
  if(KADMIT_TESTS)
    add_test(NAME fuzz_policy_patch_replay_corpus
             COMMAND fuzz_policy_patch_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/fuzz_policy_patch)
  endif()
endif()
