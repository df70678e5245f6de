# stoke's build options. Warnings and -Werror apply to stoke's own targets only.
set(_stoke_top OFF)
if(CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)
  set(_stoke_top ON)
endif()

include(CheckLanguage)
check_language(CUDA)
set(_stoke_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_stoke_cuda_default ON)
endif()
option(STOKE_WITH_CUDA "Build the CUDA device path (on when the toolkit is found)" ${_stoke_cuda_default})
option(STOKE_BUILD_TESTS "Build stoke's tests" ${_stoke_top})
option(STOKE_BUILD_TOOLS "Build the stoke command and benchmark programs" ${_stoke_top})
option(STOKE_BUILD_EXAMPLES "Build the examples" ${_stoke_top})
# The libtorch example alone (its MPI test runs it), e.g. in the sanitizer builds.
option(STOKE_BUILD_TORCH_EXAMPLE "Build examples/libtorch_train even without the other examples"
       ${STOKE_BUILD_EXAMPLES})
option(STOKE_WERROR "Treat warnings as errors in stoke's own targets" OFF)
set(STOKE_SANITIZE "" CACHE STRING
    "Sanitizer build: address (ASan+UBSan), thread (TSan), fuzzer (clang: libFuzzer targets) or empty")

if(STOKE_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper: the GPUs we test on
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

if(STOKE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
elseif(STOKE_SANITIZE STREQUAL "thread")
  # -Wno-tsan: Asio and moodycamel use std::atomic_thread_fence, which TSan does not
  # model; GCC warns on every use. Their fences sit beside mutexes and atomics TSan sees.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
  add_link_options(-fsanitize=thread)
elseif(STOKE_SANITIZE STREQUAL "fuzzer")
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT STOKE_SANITIZE STREQUAL "")
  message(FATAL_ERROR
          "STOKE_SANITIZE must be address, thread, fuzzer or empty, not '${STOKE_SANITIZE}'")
endif()

function(stoke_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(STOKE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()
