# Unity builds, one per source directory (docs/build-time.md).
#
# CI has 2 cores and compiles everything twice (Release, then clang with ASan+UBSan). Most of a pagoda file's compile
# time is spent on the headers every file shares (nlohmann::json, the standard library, GoogleTest) and on compiling
# the same templates again in each file: measured on a Zen 3, the 8 files of src/api that compile together took
# 36 s as one translation unit against 193 s one by one. So each directory's files are compiled as one translation
# unit (CMake's UNITY_BUILD, GROUP mode): a directory, not a running batch of N files, so that which files share a
# unit never depends on files elsewhere, and a name clash (two files' anonymous-namespace helpers with the same name)
# shows up in the directory where it is.
#
# A file with its own compile options (the kernels' instruction sets and -O3, a sanitizer exception) is compiled on
# its own: CMake leaves such files out of unity sources.
#
# PAGODA_UNITY_BUILD=OFF compiles every file on its own, as a check that each file still includes what it uses.
option(PAGODA_UNITY_BUILD "Compile each source directory as one translation unit (faster builds)" ON)
# The decode path's code (the forward pass, the engine's step, KV management, the thread pool) stays file by file in
# Release builds: compiled together, GCC's inlining across those files changes, and one A/B on the Zen 3 measured
# SmolLM2 decode 8% slower (medians of 6 interleaved rounds, 112 against 122 tok/s; within noise once these stayed
# apart). They are cheap to compile (about 110 s of CPU time). The kernels are file by file anyway (own options).
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  set(pagoda_unity_separate_default "src/model;src/model/arch;src/engine;src/kv;src/util")
else()
  set(pagoda_unity_separate_default "")
endif()
set(PAGODA_UNITY_SEPARATE_DIRS "${pagoda_unity_separate_default}" CACHE STRING
    "Source directories (relative to the checkout) whose files are compiled one by one")

# pagoda_unity_by_directory(TARGET): one unity source per directory of TARGET's sources. Call it in the CMakeLists.txt
# that defines TARGET (source properties are scoped to that directory).
function(pagoda_unity_by_directory target)
  if(NOT PAGODA_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  get_target_property(sources ${target} SOURCES)
  get_target_property(target_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(source MATCHES "^\\$<" OR NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${target_dir} OUTPUT_VARIABLE path)
    cmake_path(GET path PARENT_PATH dir)
    file(RELATIVE_PATH group ${CMAKE_SOURCE_DIR} ${dir})
    if(group IN_LIST PAGODA_UNITY_SEPARATE_DIRS)
      continue()
    endif()
    string(REGEX REPLACE "[^A-Za-z0-9]" "_" group "${group}")
    set_source_files_properties(${path} PROPERTIES UNITY_GROUP ${group})
  endforeach()
endfunction()
