# control/ fuzz target: the ledger's and the limits topic's records, as read back
# from Kafka. Seeds in corpus/fuzz_control_records/.
include(${CMAKE_CURRENT_LIST_DIR}/ka_fuzz.cmake)
if(TARGET ka_control_core)
  ka_fuzz(fuzz_control_records SOURCES ${KA_FUZZ_DIR}/control/fuzz_control_records.c
          LIBS ka_control_core)
endif()
# The --ledger-properties file kadmit's own Kafka clients read (ka_rdk_side.h).
if(TARGET ka_control)
  ka_fuzz(fuzz_control_props SOURCES ${KA_FUZZ_DIR}/control/fuzz_control_props.c
          LIBS ka_control)
endif()
