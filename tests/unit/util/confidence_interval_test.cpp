// The intervals behind the benchmarks' reported shares: Wilson (textbook values), the normal mean interval, and
// Newcombe's paired difference (method 10, degenerate tables).
#include "util/confidence_interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagoda {
namespace {

TEST(ConfidenceInterval, WilsonIntervalKnownValues) {
  const Proportion p = wilson_proportion(7, 20);  // textbook: 0.1812 .. 0.5671
  EXPECT_DOUBLE_EQ(p.rate, 0.35);
  EXPECT_NEAR(p.low, 0.1812, 5e-4);
  EXPECT_NEAR(p.high, 0.5671, 5e-4);
  const Proportion zero = wilson_proportion(0, 20);
  EXPECT_EQ(zero.low, 0.0);
  EXPECT_NEAR(zero.high, 0.1611, 5e-4);
  const Proportion all = wilson_proportion(20, 20);
  EXPECT_NEAR(all.low, 0.8389, 5e-4);
  EXPECT_EQ(all.high, 1.0);
  EXPECT_EQ(wilson_proportion(0, 0).n, 0);
}

TEST(ConfidenceInterval, MeanIntervalIsNormalApproximation) {
  const MeanInterval m = mean_interval({1, 2, 3});
  EXPECT_DOUBLE_EQ(m.mean, 2.0);
  EXPECT_NEAR(m.high - m.mean, 1.959963984540054 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(m.mean - m.low, m.high - m.mean, 1e-12);
  EXPECT_EQ(mean_interval({}).n, 0);
}

TEST(ConfidenceInterval, PairedDifferenceIsNewcombesMethodTen) {
  // 12 both, 9 only the first, 2 only the second, 21 neither (n = 44). Expected values from a separate Python
  // transcription of method 10 (no continuity correction, phi = (ad - bc) / sqrt of the margins' product):
  // difference 0.1591, interval 0.0182 .. 0.2892.
  std::vector<bool> x, y;
  auto add = [&](int count, bool a, bool b) {
    for (int i = 0; i < count; ++i) x.push_back(a), y.push_back(b);
  };
  add(12, true, true);
  add(9, true, false);
  add(2, false, true);
  add(21, false, false);
  const PairedDifference d = paired_difference(x, y);
  EXPECT_EQ(d.n, 44);
  EXPECT_EQ(d.only_a, 9);
  EXPECT_EQ(d.only_b, 2);
  EXPECT_NEAR(d.difference, 0.1591, 5e-4);
  EXPECT_NEAR(d.low, 0.0182, 5e-4);
  EXPECT_NEAR(d.high, 0.2892, 5e-4);
  const PairedDifference swapped = paired_difference(y, x);  // the other direction negates the interval
  EXPECT_NEAR(swapped.low, -d.high, 1e-12);
  EXPECT_NEAR(swapped.high, -d.low, 1e-12);
}

TEST(ConfidenceInterval, PairedDifferenceStaysWideWhenNothingDiffers) {
  const std::vector<bool> all(20, true);
  const PairedDifference d = paired_difference(all, all);
  EXPECT_EQ(d.difference, 0.0);
  EXPECT_LT(d.low, -0.1);  // 20 agreeing items do not prove a difference below 10 points
  EXPECT_GT(d.high, 0.1);
  EXPECT_EQ(paired_difference({}, {}).n, 0);
}

}  // namespace
}  // namespace pagoda
