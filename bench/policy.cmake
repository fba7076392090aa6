# policy/ benchmarks: decision time of the admission engine.
# Run: cmake --build <dir> --target bench_policy_decide && <dir>/bench/bench_policy_decide
add_executable(bench_policy_decide ${CMAKE_CURRENT_LIST_DIR}/policy/bench_decide.c)
target_link_libraries(bench_policy_decide PRIVATE ka_policy)
target_compile_options(bench_policy_decide PRIVATE ${KADMIT_WARNINGS})
