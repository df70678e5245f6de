# Builds tests/consumer against stoke via add_subdirectory and via an installed
# find_package(stoke), and runs both. -DSTOKE_SOURCE= -DWORK= -DGENERATOR=
# -DWITH_TORCH=ON adds the libtorch consumer (find_package(stoke COMPONENTS torch)).
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
set(consumer ${STOKE_SOURCE}/tests/consumer)
set(data /usr/share/datasets/fashion-mnist)
set(launcher)
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()

# 1. add_subdirectory
set(torch -DWITH_TORCH=${WITH_TORCH})
run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/sub -G ${GENERATOR} -DSTOKE_SOURCE=${STOKE_SOURCE}
    ${launcher} ${torch})
run(${CMAKE_COMMAND} --build ${WORK}/sub)
run(${WORK}/sub/consumer ${data})
if(WITH_TORCH)
  run(${WORK}/sub/torch_consumer ${data})
endif()

# 2. install, then find_package
run(${CMAKE_COMMAND} -S ${STOKE_SOURCE} -B ${WORK}/lib -G ${GENERATOR} -DSTOKE_BUILD_TESTS=OFF
    -DSTOKE_BUILD_TOOLS=OFF -DSTOKE_BUILD_EXAMPLES=OFF -DSTOKE_WITH_CUDA=OFF
    -DCMAKE_INSTALL_PREFIX=${WORK}/prefix ${launcher})
run(${CMAKE_COMMAND} --build ${WORK}/lib)
run(${CMAKE_COMMAND} --install ${WORK}/lib)
run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/pkg -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix
    ${launcher} ${torch})
run(${CMAKE_COMMAND} --build ${WORK}/pkg)
run(${WORK}/pkg/consumer ${data})
if(WITH_TORCH)
  run(${WORK}/pkg/torch_consumer ${data})
endif()
message(STATUS "consumer built and ran both ways")
