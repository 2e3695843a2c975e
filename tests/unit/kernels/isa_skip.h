// Tests that compare every kernel set run only the sets this CPU has: calling into a set's file at all may execute
// its instructions (a sanitizer build's prologue does), so a set the CPU lacks is never entered. Every such test
// asks isa_runs_or_skip() before it enters a set, and then calls the set expecting it to run. A set the CPU lacks is
// reported, never passed over in silence: the test property skipped_<set>, a "[  SKIPPED ]" line naming the test
// and the set when the test ends (ctest then lists the test as skipped), and the run's closing line "kernel sets
// exercised: ...; skipped: ..." (both printed by isa_coverage_test.cpp's listener).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "kernels/cpu_features.h"

namespace pagoda {

// What the tests of this process did with each kernel set: set name -> the tests ("Suite.Name") that ran it, and
// those that skipped it.
struct IsaCoverage {
  std::map<std::string, std::set<std::string>> exercised, skipped;
};
IsaCoverage& isa_coverage();  // one per process: isa_coverage_test.cpp

inline std::string running_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : "?";
}

// Whether this CPU runs `isa`'s kernels (with_vnni: AVX-512's integer kernels also need AVX-512 VNNI); when not,
// records the set as skipped by the running test.
inline bool isa_runs_or_skip(KernelIsa isa, bool with_vnni = false) {
  const std::string name = kernel_isa_name(isa);
  if (cpu_can_run(isa) && !(with_vnni && isa == KernelIsa::kAvx512 && !cpu_features().avx512_vnni)) {
    isa_coverage().exercised[name].insert(running_test_name());
    return true;
  }
  isa_coverage().skipped[name].insert(running_test_name());
  ::testing::Test::RecordProperty("skipped_" + name, "this CPU lacks the instructions");
  return false;
}

// The same for a set named as the kernels' *_isa entry points take it ("portable" or "scalar", "avx2", "avx512").
inline bool isa_runs_or_skip(const char* name) {
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512})
    if (std::strcmp(name, kernel_isa_name(isa)) == 0) return isa_runs_or_skip(isa);
  if (std::strcmp(name, "scalar") == 0) return isa_runs_or_skip(KernelIsa::kPortable);
  ADD_FAILURE() << "no kernel set is called '" << name << "'";
  return false;
}

}  // namespace pagoda
