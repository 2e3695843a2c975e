# The CUDA kernels (docs/kernels.md, "GPU paged attention" and "GPU forward pass"), their tests and benchmark:
# -DPAGODA_CUDA=ON. With the rest of the build, pagoda_core links them and `--device cuda` runs them
# (model/device_forward.cpp, compiled with PAGODA_WITH_CUDA).
# They need only the CUDA toolkit (nvcc and the runtime): src/cuda includes two of pagoda's headers (kv/kv_dtype.h,
# util/result.h) and links nothing of pagoda_core, so -DPAGODA_CUDA_KERNELS_ONLY=ON builds them on a machine that
# has none of the CPU build's Debian libraries (the GPU machines' image; scripts/cuda/device_check.sh).
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100, H200): sm_90 machine code
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)  # what CMake 3.25 knows how to ask nvcc for; the headers src/cuda includes are C++17
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)  # cudart linked in: the binaries need only the driver
find_package(Threads REQUIRED)
# The static CUDA runtime, named for C++ targets that link the kernels (pagoda_core with PAGODA_CUDA=ON).
find_library(PAGODA_CUDART_STATIC cudart_static HINTS ${CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES} REQUIRED)

file(GLOB PAGODA_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cuda/*.cu)
add_library(pagoda_cuda_kernels STATIC ${PAGODA_CUDA_SOURCES})
target_include_directories(pagoda_cuda_kernels PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(pagoda_cuda_kernels PUBLIC ${PAGODA_CUDART_STATIC} Threads::Threads ${CMAKE_DL_LIBS} rt)
# The resource report (registers, shared memory, spills) in the build log: docs/kernels.md quotes it.
target_compile_options(pagoda_cuda_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-v>)

if(PAGODA_BUILD_TESTS)
  enable_testing()
  add_executable(pagoda_cuda_tests ${CMAKE_SOURCE_DIR}/tests/cuda/paged_attention_cuda_test.cu)
  target_link_libraries(pagoda_cuda_tests PRIVATE pagoda_cuda_kernels)
  add_test(NAME cuda_paged_attention COMMAND pagoda_cuda_tests)
  # Exit status 77: no GPU on this machine (reported as skipped, not passed).
  set_tests_properties(cuda_paged_attention PROPERTIES LABELS cuda SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()

add_executable(pagoda_cuda_attention_bench ${CMAKE_SOURCE_DIR}/bench/cuda_paged_attention.cu)
target_link_libraries(pagoda_cuda_attention_bench PRIVATE pagoda_cuda_kernels)
