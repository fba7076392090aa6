# admission/ unit tests: whole request frames through decode, decide and
# re-encode or merge, against synthetic cluster views; no sockets.
set(KA_ADMISSION_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/admission)
ka_unit_test(test_admission SOURCES ${KA_ADMISSION_TEST_DIR}/test_admission.c LIBS ka_admission)
