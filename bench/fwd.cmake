# fwd/ benchmark tools: a frame-level load generator and a Kafka-shaped echo sink,
# used by bench/run.sh to measure raw forwarding (direct, through kadmit, through HAProxy).
# Built in the normal build so CI compiles them; never run as tests.
add_library(ka_fwd_common STATIC ${CMAKE_CURRENT_LIST_DIR}/fwd/fwd_common.c)
target_compile_options(ka_fwd_common PRIVATE ${KADMIT_WARNINGS})
foreach(tool fwd_gen fwd_sink)
  add_executable(bench_${tool} ${CMAKE_CURRENT_LIST_DIR}/fwd/${tool}.c)
  target_link_libraries(bench_${tool} PRIVATE ka_fwd_common)
  target_compile_options(bench_${tool} PRIVATE ${KADMIT_WARNINGS})
endforeach()

# md_serve: a generated metadata broker (any partition count) for the
# refresh-under-load benchmark (bench/fwd_refresh.py). Bench only.
add_executable(bench_md_serve ${CMAKE_CURRENT_LIST_DIR}/fwd/md_serve.c)
target_link_libraries(bench_md_serve PRIVATE ka_fwd_common ka_protocol)
target_compile_options(bench_md_serve PRIVATE ${KADMIT_WARNINGS})
