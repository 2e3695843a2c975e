#include "kernels/cpu_features.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

namespace pagoda {
namespace {

// Sets PAGODA_ISA for one test and restores the previous value.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) {
    if (const char* old = std::getenv("PAGODA_ISA")) old_ = old;
    if (value)
      setenv("PAGODA_ISA", value, 1);
    else
      unsetenv("PAGODA_ISA");
  }
  ~ScopedIsaEnv() {
    if (old_)
      setenv("PAGODA_ISA", old_->c_str(), 1);
    else
      unsetenv("PAGODA_ISA");
  }

 private:
  std::optional<std::string> old_;
};

TEST(CpuFeatures, KernelSetsNestAndTheWidestIsRunnable) {
  EXPECT_TRUE(cpu_can_run(KernelIsa::kPortable));
  if (cpu_can_run(KernelIsa::kAvx512)) {
    EXPECT_TRUE(cpu_can_run(KernelIsa::kAvx2));
  }
  EXPECT_TRUE(cpu_can_run(widest_kernel_isa()));
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(cpu_can_run(KernelIsa::kAvx2), f.avx2 && f.fma && f.f16c);
  const std::string flags = cpu_flags_string(f);
  EXPECT_EQ(flags.find("avx512f") != std::string::npos, f.avx512f) << flags;
}

TEST(CpuFeatures, PagodaIsaUnsetOrEmptyMeansTheWidest) {
  for (const char* value : {static_cast<const char*>(nullptr), ""}) {
    ScopedIsaEnv env(value);
    auto isa = kernel_isa_from_env();
    ASSERT_TRUE(isa.ok());
    EXPECT_FALSE(isa->has_value());
    EXPECT_EQ(default_kernel_isa(), widest_kernel_isa());
    EXPECT_NE(describe_kernel_isa().find("widest"), std::string::npos);
  }
}

TEST(CpuFeatures, PagodaIsaForcesASetTheCpuRuns) {
  ScopedIsaEnv env("portable");
  auto isa = kernel_isa_from_env();
  ASSERT_TRUE(isa.ok());
  ASSERT_TRUE(isa->has_value());
  EXPECT_EQ(**isa, KernelIsa::kPortable);
  EXPECT_EQ(default_kernel_isa(), KernelIsa::kPortable);
  EXPECT_EQ(describe_kernel_isa(), "portable (PAGODA_ISA)");
}

TEST(CpuFeatures, PagodaIsaUnknownOrUnrunnableIsAnErrorNamingIt) {
  {
    ScopedIsaEnv env("sse9");
    auto isa = kernel_isa_from_env();
    ASSERT_FALSE(isa.ok());
    EXPECT_NE(isa.error().message.find("'sse9'"), std::string::npos);
    EXPECT_EQ(default_kernel_isa(), widest_kernel_isa());  // the kernels never run an unknown set
  }
  if (!cpu_can_run(KernelIsa::kAvx512)) {
    ScopedIsaEnv env("avx512");
    auto isa = kernel_isa_from_env();
    ASSERT_FALSE(isa.ok());
    EXPECT_NE(isa.error().message.find("lacks"), std::string::npos);
  }
}

}  // namespace
}  // namespace pagoda
