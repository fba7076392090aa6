# policy/ fuzz target: the policy parser and the merge patches of API
# overrides (the state file) on untrusted bytes. Seeds in corpus/fuzz_policy_patch/.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_policy)
  ka_fuzz(fuzz_policy_patch SOURCES ${KA_FUZZ_DIR}/policy/fuzz_policy_patch.c LIBS ka_policy)
endif()
