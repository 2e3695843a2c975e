// SwiGLU's kernel sets: the vector exp against the correctly rounded e^x, silu_mul of each set against the portable
// one, and the property the engine relies on for batch invariance: an element's value does not depend on the range
// (the thread's share of the tokens) it was computed in.
#include "kernels/cpu/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/isa_skip.h"
#include "util/rng.h"

namespace pagoda {
namespace {

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return ia > ib ? int64_t{ia} - ib : int64_t{ib} - ia;
}

TEST(Activations, VectorExpIsWithinTwoUlpsOfTheRoundedExp) {
  if (!isa_runs_or_skip(KernelIsa::kAvx2)) return;
  std::vector<float> x;
  for (int i = 0; i <= 400000; ++i) x.push_back(-87.0f + 175.0f * static_cast<float>(i) / 400000.0f);
  for (float f : {0.0f, -0.0f, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f, 1.0f, -1.0f, 88.0f, -87.0f}) x.push_back(f);
  std::vector<float> got(x.size());
  exp_avx2(x.data(), static_cast<int64_t>(x.size()), got.data());
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
    const int64_t d = ulps(got[i], want);
    ASSERT_LE(d, 2) << "exp(" << x[i] << "): " << got[i] << " against " << want;
    worst = std::max(worst, d);
  }
  RecordProperty("worst_ulps", static_cast<int>(worst));
}

TEST(Activations, VectorExpClampsInsteadOfOverflowing) {
  if (!isa_runs_or_skip(KernelIsa::kAvx2)) return;
  const float x[4] = {-1000.0f, -88.0f, 89.0f, 1000.0f};
  float got[4];
  exp_avx2(x, 4, got);
  for (float v : got) EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  EXPECT_LT(got[0], 1e-37f);
  EXPECT_GT(got[3], 1e38f);
}

std::vector<float> random_values(int64_t n, double scale, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = static_cast<float>((rng.next_double() * 2 - 1) * scale);
  return v;
}

TEST(Activations, EverySetsSiluMulIsWithinFourUlpsOfThePortableOne) {
  const int64_t n = 4099;  // not a multiple of 8: the tail goes through the padded vector
  for (double scale : {1.0, 8.0, 40.0}) {
    const std::vector<float> gate = random_values(n, scale, 11), up = random_values(n, 2.0, 12);
    std::vector<float> want = gate;
    ASSERT_TRUE(silu_mul_isa(want.data(), up.data(), n, KernelIsa::kPortable));
    for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<float> got = gate;
      ASSERT_TRUE(silu_mul_isa(got.data(), up.data(), n, isa));
      for (int64_t i = 0; i < n; ++i) {
        if (std::fabs(want[i]) < 1e-30f) {  // silu of a large negative gate: both are zero to within 1e-30
          EXPECT_LT(std::fabs(got[i]), 1e-30f) << i;
          continue;
        }
        ASSERT_LE(ulps(got[i], want[i]), 4) << kernel_isa_name(isa) << " silu(" << gate[i] << ") * " << up[i] << ": "
                                            << got[i] << " against " << want[i];
      }
    }
  }
}

TEST(Activations, SiluMulOfAnElementDoesNotDependOnItsRange) {
  const int64_t n = 1000;
  const std::vector<float> gate = random_values(n, 6.0, 21), up = random_values(n, 1.5, 22);
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!isa_runs_or_skip(isa)) continue;
    std::vector<float> whole = gate;
    ASSERT_TRUE(silu_mul_isa(whole.data(), up.data(), n, isa));
    std::vector<float> pieces = gate;
    for (int64_t begin = 0, len = 1; begin < n; begin += len, len = len % 13 + 3) {
      const int64_t m = std::min(len, n - begin);
      ASSERT_TRUE(silu_mul_isa(pieces.data() + begin, up.data() + begin, m, isa));
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), pieces.data(), sizeof(float) * n)) << kernel_isa_name(isa);
  }
}

TEST(Activations, SiluMulKeepsNanAndSignedInfinityOfTheGate) {
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!isa_runs_or_skip(isa)) continue;
    float gate[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.0f};
    const float up[3] = {1.0f, 2.0f, 3.0f};
    ASSERT_TRUE(silu_mul_isa(gate, up, 3, isa));
    EXPECT_TRUE(std::isnan(gate[0])) << kernel_isa_name(isa);
    EXPECT_EQ(gate[1], std::numeric_limits<float>::infinity()) << kernel_isa_name(isa);
    EXPECT_EQ(gate[2], 0.0f) << kernel_isa_name(isa);
  }
}

}  // namespace
}  // namespace pagoda
