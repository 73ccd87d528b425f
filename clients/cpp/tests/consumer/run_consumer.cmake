# CTest case package.consumer: install the built client into a fresh prefix,
# check the installed layout, configure and build tests/consumer against it with
# find_package(game_sidecar), and run it against the real sidecar.
#   cmake -DBUILD_DIR= -DCONSUMER_DIR= -DWORK_DIR= -DCXX= -DSIDECAR_EXE= -DCONFIG= -P run_consumer.cmake
if(DEFINED ENV{GAME_SIDECAR_EXE} AND NOT "$ENV{GAME_SIDECAR_EXE}" STREQUAL "")
  set(SIDECAR_EXE "$ENV{GAME_SIDECAR_EXE}")
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

# The layout a game vendors: headers under game_sidecar/ only, message headers
# but no gRPC stubs, and the package config.
if(EXISTS "${prefix}/include/sidecar")
  message(FATAL_ERROR "installed a bare include/sidecar/ folder")
endif()
file(GLOB messages "${prefix}/include/game_sidecar/v1/*.pb.h")
file(GLOB stubs "${prefix}/include/game_sidecar/v1/*.grpc.pb.h")
if(NOT messages OR stubs)
  message(FATAL_ERROR "want game_sidecar/v1/*.pb.h and no *.grpc.pb.h; got: ${messages}")
endif()
file(GLOB_RECURSE configs "${prefix}/*/game_sidecarConfig.cmake")
if(NOT configs)
  message(FATAL_ERROR "no game_sidecarConfig.cmake under ${prefix}")
endif()
file(GLOB_RECURSE headers "${prefix}/include/game_sidecar/*.h")
foreach(h ${headers})
  file(STRINGS "${h}" grpc_includes REGEX "#include [<\"]grpc")
  if(grpc_includes)
    message(FATAL_ERROR "${h} includes gRPC: ${grpc_includes}")
  endif()
endforeach()

run(${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build" "-DCMAKE_PREFIX_PATH=${prefix}"
    "-DCMAKE_CXX_COMPILER=${CXX}")
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer" "${SIDECAR_EXE}" "${CONFIG}")
