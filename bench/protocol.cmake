# protocol/ benchmarks: decode cost of the admission and metadata frames.
# Run: cmake --build <dir> --target bench_protocol_decode && <dir>/bench/bench_protocol_decode
add_executable(bench_protocol_decode ${CMAKE_CURRENT_LIST_DIR}/protocol/bench_decode.c)
target_link_libraries(bench_protocol_decode PRIVATE ka_protocol)
target_compile_options(bench_protocol_decode PRIVATE ${KADMIT_WARNINGS})

# The gateway's endpoint rewrite of a 200,000-partition Metadata response, against memcpy.
# Run (from the repository root): <dir>/bench/bench_protocol_endpoints [frame] [iters]
add_executable(bench_protocol_endpoints ${CMAKE_CURRENT_LIST_DIR}/protocol/bench_endpoints.c)
target_link_libraries(bench_protocol_endpoints PRIVATE ka_protocol)
target_compile_options(bench_protocol_endpoints PRIVATE ${KADMIT_WARNINGS})
