# check_install.cmake: `cmake --install` into a scratch DESTDIR, then checks
# the layout packagers rely on (GNUInstallDirs): the binary in bin, the docs
# in share/doc/kadmit, the example policies in share/kadmit/examples, and
# that the installed binary runs. Registered as the ctest `install_layout`.
#   cmake -DBUILD_DIR=<build dir> -P check_install.cmake
if(NOT BUILD_DIR)
  message(FATAL_ERROR "BUILD_DIR is required")
endif()
set(stage "${BUILD_DIR}/install-test")
file(REMOVE_RECURSE "${stage}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "DESTDIR=${stage}" ${CMAKE_COMMAND} --install "${BUILD_DIR}"
          --prefix /usr
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}")
endif()
foreach(f bin/kadmit share/doc/kadmit/README.md share/doc/kadmit/admin-api.md
          share/doc/kadmit/policy.schema.json share/kadmit/examples/policy.json
          share/kadmit/examples/README.md)
  if(NOT EXISTS "${stage}/usr/${f}")
    message(FATAL_ERROR "not installed: usr/${f}\n${out}")
  endif()
endforeach()
execute_process(COMMAND "${stage}/usr/bin/kadmit" --version RESULT_VARIABLE rc
                OUTPUT_VARIABLE version ERROR_VARIABLE version)
if(NOT rc EQUAL 0 OR NOT version MATCHES "^kadmit ")
  message(FATAL_ERROR "the installed kadmit does not run: ${rc} ${version}")
endif()
# The example policy installed is one kadmit accepts.
execute_process(COMMAND "${stage}/usr/bin/kadmit" --check-policy
                        "${stage}/usr/share/kadmit/examples/policy.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE check ERROR_VARIABLE check)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed example policy is refused: ${check}")
endif()
file(REMOVE_RECURSE "${stage}")
message(STATUS "installed and ran from DESTDIR: ${version}")
