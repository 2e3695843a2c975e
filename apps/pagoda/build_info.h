// What this binary is: version, git commit, build type and compiler (generated at build time by
// cmake/build_info.cmake), for `pagoda --version`, `pagoda version` and `pagoda inspect --system`.
#pragma once

#include <string>

namespace pagoda::cli {

struct BuildInfo {
  const char* version;     // the project version in CMakeLists.txt
  const char* commit;      // short git commit, "(with uncommitted changes)" when the tree differed from it
  const char* build_type;  // CMAKE_BUILD_TYPE
  const char* compiler;    // e.g. "GNU 12.2.0"
};

const BuildInfo& build_info();

// The version report: several lines, each "key: value", ending with a newline.
// With `system`, also the CPU model, its flags and the thread count.
std::string version_report(bool system);

}  // namespace pagoda::cli
