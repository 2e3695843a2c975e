// Tests that compare every kernel set run only the sets this CPU has: calling into a set's file at all may execute
// its instructions (a sanitizer build's prologue does), so a set the CPU lacks is never entered. Such a set is
// reported as skipped: a "[  SKIPPED ]" line naming the test and the set, and the test property skipped_<set>.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/cpu_features.h"

namespace pagoda {

// Whether this CPU runs `isa`'s kernels (with_vnni: AVX-512's integer kernels also need AVX-512 VNNI); when not,
// reports the set as skipped for the running test.
inline bool isa_runs_or_skip(KernelIsa isa, bool with_vnni = false) {
  if (cpu_can_run(isa) && !(with_vnni && isa == KernelIsa::kAvx512 && !cpu_features().avx512_vnni)) return true;
  const std::string name = kernel_isa_name(isa);
  ::testing::Test::RecordProperty("skipped_" + name, "this CPU lacks the instructions");
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[  SKIPPED ] %s.%s: the %s kernels (this CPU lacks their instructions)\n", info ? info->test_suite_name() : "?",
              info ? info->name() : "?", name.c_str());
  return false;
}

}  // namespace pagoda
