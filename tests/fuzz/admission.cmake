# admission/ fuzz target: the whole admission path (decode, judge, re-encode,
# answer, merge) on untrusted request and response frames, and the ledger's
# steps against the one-call form. Seeds in corpus/fuzz_admission/, built
# from the captured frames in tests/data/frames.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_admission)
  ka_fuzz(fuzz_admission SOURCES ${KA_FUZZ_DIR}/admission/fuzz_admission.c LIBS ka_admission)
endif()
