# admission/ fuzz target: the whole admission path (decode, judge, re-encode,
# answer, merge) on untrusted request and response frames, and the ledger's
# steps against the one-call form. Seeds in corpus/fuzz_admission/, built
# from the captured frames in tests/data/frames.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_admission)
  ka_fuzz(fuzz_admission SOURCES ${KA_FUZZ_DIR}/admission/fuzz_admission.c LIBS ka_admission)
  # KIP-578's config APIs; seeds in corpus/fuzz_configs/, from tests/data/frames/kip578.
  ka_fuzz(fuzz_configs SOURCES ${KA_FUZZ_DIR}/admission/fuzz_configs.c LIBS ka_admission)
endif()
