# admission/ unit tests: whole request frames through decode, decide and
# re-encode or merge, against synthetic cluster views; no sockets.
set(KA_ADMISSION_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/admission)
ka_unit_test(test_admission SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission PRIVATE ${KA_ADMISSION_TEST_DIR})
# The steps a two-phase (ledger) decision runs apart, reasons, and freshness.
ka_unit_test(test_admission_seams SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_seams.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_seams PRIVATE ${KA_ADMISSION_TEST_DIR})
# KIP-578's config APIs: alter (split, refusals, merge, changes) and describe.
ka_unit_test(test_admission_configs SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_configs.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_configs PRIVATE ${KA_ADMISSION_TEST_DIR})

# Metadata v0-3 and StreamsGroupHeartbeat: creations that once passed unjudged.
ka_unit_test(test_admission_backdoors SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_backdoors.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_backdoors PRIVATE ${KA_ADMISSION_TEST_DIR})
# Every judged item of a final decision reported for audit events.
ka_unit_test(test_admission_judged SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_judged.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_judged PRIVATE ${KA_ADMISSION_TEST_DIR})

# Protected topics: DeleteTopics and DeleteRecords from frames real clients sent.
ka_unit_test(test_admission_delete SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_delete.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_delete PRIVATE ${KA_ADMISSION_TEST_DIR})

# The admission fuzz target's replay binary replays the seed corpus in ordinary builds.
if(NOT KADMIT_FUZZ)
  include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/admission.cmake)
endif()

# Topic configs against topic rules' config bounds: CreateTopics items, alter refusals, audit.
ka_unit_test(test_admission_topic_configs
  SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_topic_configs.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_topic_configs PRIVATE ${KA_ADMISSION_TEST_DIR})
# Which broker answers end a reservation (invariant 12).
ka_unit_test(test_admission_errors SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_errors.c
  LIBS ka_admission)

# kadmit's own topics under configured names: deletes, trims, partitions and configs refused.
ka_unit_test(test_admission_own_topics
  SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_own_topics.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_own_topics PRIVATE ${KA_ADMISSION_TEST_DIR})
# Config changes that can destroy a protected topic's data, from real clients' frames.
ka_unit_test(test_admission_config_protect
  SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission_config_protect.c
  ${KA_ADMISSION_TEST_DIR}/adm_fixture.c LIBS ka_admission)
target_include_directories(test_admission_config_protect PRIVATE ${KA_ADMISSION_TEST_DIR})
