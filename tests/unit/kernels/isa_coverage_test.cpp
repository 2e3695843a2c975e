// Reports the kernel sets that tests skipped (isa_skip.h): for each test, when it ends, and for the whole run, as its
// last line, so that a run on a CPU without AVX-512 (or without VNNI) says so instead of passing as if it had
// compared every set:
//   [ KERNELS  ] kernel sets exercised: portable, avx2; skipped: avx512 (12 tests); default: avx2 (widest on this CPU)
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/isa_skip.h"

namespace pagoda {

IsaCoverage& isa_coverage() {
  static IsaCoverage coverage;
  return coverage;
}

namespace {

std::string coverage_line(const IsaCoverage& c) {
  std::string exercised, skipped;
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    const std::string name = kernel_isa_name(isa);
    if (c.exercised.count(name)) exercised += (exercised.empty() ? "" : ", ") + name;
    if (auto it = c.skipped.find(name); it != c.skipped.end())
      skipped += (skipped.empty() ? "" : ", ") + name + " (" + std::to_string(it->second.size()) + " tests)";
  }
  return "kernel sets exercised: " + (exercised.empty() ? "none" : exercised) +
         "; skipped: " + (skipped.empty() ? "none" : skipped) + "; default: " + describe_kernel_isa();
}

// A listener's end events come before the default printer's (googletest calls them in reverse order), so a test's
// skip line comes just before its "[       OK ]", and the coverage line after the run's summary (which the printer
// writes at the iteration's end, before the program's end).
class IsaCoverageListener : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string test = std::string(info.test_suite_name()) + "." + info.name();
    for (const auto& [name, tests] : isa_coverage().skipped) {
      if (!tests.count(test)) continue;
      // ctest lists a test whose output has "[  SKIPPED ]" as skipped even when it failed (gtest_discover_tests'
      // SKIP_REGULAR_EXPRESSION wins over its exit code), so a failed test's line must not carry that marker.
      std::printf("%s %s: the %s kernels were not run (this CPU lacks their instructions)\n",
                  info.result()->Failed() ? "[ ISA SKIP ]" : "[  SKIPPED ]", test.c_str(), name.c_str());
    }
    std::fflush(stdout);
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::printf("[ KERNELS  ] %s\n", coverage_line(isa_coverage()).c_str());
    std::fflush(stdout);
  }
};

// Registered before gtest_main's main() runs the tests; googletest owns and deletes the listener.
[[maybe_unused]] const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new IsaCoverageListener);
  return true;
}();

TEST(IsaCoverage, RecordsWhatRanAndWhatWasSkipped) {
  const std::string me = "IsaCoverage.RecordsWhatRanAndWhatWasSkipped";
  EXPECT_TRUE(isa_runs_or_skip("portable"));
  EXPECT_EQ(isa_coverage().exercised["portable"].count(me), 1u);
  const bool avx512 = isa_runs_or_skip(KernelIsa::kAvx512);
  EXPECT_EQ(avx512, cpu_can_run(KernelIsa::kAvx512));
  EXPECT_EQ((avx512 ? isa_coverage().exercised : isa_coverage().skipped)["avx512"].count(me), 1u);
  // The line names exactly the sets recorded, in the kernels' order, skipped ones with their number of tests.
  IsaCoverage c;
  c.exercised["avx2"].insert("A.b");
  c.exercised["portable"].insert("A.b");
  c.skipped["avx512"] = {"A.b", "C.d"};
  EXPECT_EQ(coverage_line(c).rfind("kernel sets exercised: portable, avx2; skipped: avx512 (2 tests); default: ", 0),
            0u)
      << coverage_line(c);
  EXPECT_EQ(coverage_line(IsaCoverage{}).rfind("kernel sets exercised: none; skipped: none; default: ", 0), 0u);
}

}  // namespace
}  // namespace pagoda
